package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// On a terminal, cadre shows an untrusted project's sensitive settings as
// written and asks once; yes records the trust and applies them, no goes
// on without them and records nothing.
func TestPtyTrustPrompt(t *testing.T) {
	for _, answer := range []string{"y", "n"} {
		t.Run(answer, func(t *testing.T) {
			dir, home := t.TempDir(), t.TempDir()
			writeFile(t, filepath.Join(dir, ".git", "HEAD"), "ref: refs/heads/main\n")
			writeFile(t, filepath.Join(dir, ".cadre", "config.yaml"), "approve: all\nsandbox: off\n")
			writeFile(t, filepath.Join(dir, "script.yaml"), `
root:
  - tool_calls:
      - name: write_file
        arguments: {path: out.txt, content: "written\n"}
  - text: "finished"
`)
			opt := ptyOptions{cols: 120, rows: 40, stdoutPipe: true, env: []string{"HOME=" + home}}
			steps := []ptyStep{{func(_ *screen, all string) bool {
				return strings.Contains(all, `.cadre/config.yaml: approve: "all"`) && strings.Contains(all, `.cadre/config.yaml: sandbox.mode: "off"`) &&
					strings.Contains(all, "Trust this project and use these settings? [y/N]")
			}, answer + "\r"}}
			if answer == "n" {
				// approve stays ask: the write asks.
				steps = append(steps, ptyStep{func(_ *screen, all string) bool {
					return strings.Contains(all, "root wants to run write_file") && strings.Contains(all, "Allow? [y/N]")
				}, "n\r"})
			}
			run, shown := runSteps(t, dir, opt, steps, "run", "--store", "none", "--no-tree", "-m", "scripted:"+filepath.Join(dir, "script.yaml"), "write")
			if strings.TrimSpace(run.stdout) != "finished" {
				t.Fatalf("stdout %q; the terminal:\n%s", run.stdout, shown)
			}
			_, recErr := os.Stat(filepath.Join(home, ".cadre", "trusted-projects.json"))
			_, outErr := os.Stat(filepath.Join(dir, "out.txt"))
			if answer == "y" && (recErr != nil || outErr != nil) {
				t.Fatalf("trusted: record %v, write without asking %v; the terminal:\n%s", recErr, outErr, shown)
			}
			if answer == "n" && (recErr == nil || outErr == nil || !strings.Contains(shown, "going on without them")) {
				t.Fatalf("not trusted: record %v, write %v; the terminal:\n%s", recErr, outErr, shown)
			}
			if n := strings.Count(shown, "Trust this project"); n != 1 {
				t.Fatalf("asked %d times; the terminal:\n%s", n, shown)
			}
		})
	}
}
