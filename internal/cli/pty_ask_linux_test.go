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
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "asker.md"), askerAgent)
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
	opt := ptyOptions{cols: 100, rows: 30, stdoutPipe: true}
	run, shown := runSteps(t, dir, opt, []ptyStep{
		{func(_ *screen, all string) bool {
			return strings.Contains(all, "root asks: Which colour should the file say?") && strings.Contains(all, "Your answer:")
		}, "blue\r"},
		{func(_ *screen, all string) bool {
			return strings.Contains(all, "root wants to run write_file") && strings.Contains(all, "Allow? [y/N]")
		}, "y\r"},
	}, "run", "--store", "none", "--agent", "asker", "-m", "scripted:"+filepath.Join(dir, "script.yaml"), "Write the colour")
	if strings.TrimSpace(run.stdout) != "I wrote blue." {
		t.Fatalf("stdout %q; the terminal:\n%s", run.stdout, shown)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "colour.txt")); err != nil || string(b) != "blue\n" {
		t.Errorf("colour.txt: %q, %v", b, err)
	}
}
