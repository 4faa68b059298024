//go:build linux

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A root agent with askCaller asks the user on the terminal; a write asks
// for approval there too. The user's answers reach the model.
func TestPtyAskUserAndApprove(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "asker.md"), "---\nname: asker\ndescription: Asks before it writes.\naskCaller: true\n---\nYou ask.\n")
	writeFile(t, filepath.Join(dir, "script.yaml"), `
root:
  - delay: 200ms
    tool_calls:
      - name: ask_caller
        arguments: {question: "Which colour should the file say?"}
  - when: "blue"
    tool_calls:
      - name: write_file
        arguments: {path: colour.txt, content: "blue\n"}
  - when: "created"
    text: "I wrote blue."
  - text: "The user did not say blue."
    repeat: true
`)
	var asked, approved bool
	var opt ptyOptions
	opt = ptyOptions{cols: 100, rows: 30, stdoutPipe: true, watch: func(s *screen) {
		all := strings.Join(s.history(), "\n")
		if !asked && strings.Contains(all, "root asks: Which colour should the file say?") && strings.Contains(all, "Your answer:") {
			asked = true
			opt.master.Write([]byte("blue\r"))
		}
		if asked && !approved && strings.Contains(all, "root wants to run write_file") && strings.Contains(all, "Allow? [y/N]") {
			approved = true
			opt.master.Write([]byte("y\r"))
		}
	}}
	run := runOnPty(t, dir, &opt, "run", "--store", "none", "--agent", "asker", "-m", "scripted:"+filepath.Join(dir, "script.yaml"), "Write the colour")
	if !asked || !approved {
		t.Fatalf("asked %v, approved %v; the terminal:\n%s", asked, approved, strings.Join(run.screen.history(), "\n"))
	}
	if run.code != 0 || strings.TrimSpace(run.stdout) != "I wrote blue." {
		t.Fatalf("exit %d, stdout %q; the terminal:\n%s", run.code, run.stdout, strings.Join(run.screen.history(), "\n"))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "colour.txt")); err != nil || string(b) != "blue\n" {
		t.Errorf("colour.txt: %q, %v", b, err)
	}
}
