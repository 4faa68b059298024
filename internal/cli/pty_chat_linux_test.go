//go:build linux

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A session on a terminal: the user types a task and sees the answer,
// follows it up so that the root starts a helper, stops the helper with
// /stop, then asks for two writes and approves the first with "always",
// so the second is not asked about, nor the write of the next follow-up. Each answer is printed as its turn
// ends, and /exit ends the session.
func TestPtyChatSession(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "helper.md"), "---\nname: helper\ndescription: Helps for as long as it takes.\n---\nYou help.\n")
	writeFile(t, filepath.Join(dir, "script.yaml"), `
root:
  - when: "say hello"
    text: "Hello from cadre."
  - when: "start the helper"
    tool_calls:
      - name: start_background_agent
        arguments: {agent: helper, prompt: "work until stopped"}
  - when: "Background agent started"
    text: "The helper is working."
  - when: "cancelled"
    text: "The helper was stopped."
  - when: "write two files"
    tool_calls:
      - name: write_file
        arguments: {path: a.txt, content: "one\n"}
  - when: "a.txt"
    tool_calls:
      - name: write_file
        arguments: {path: b.txt, content: "two\n"}
  - when: "b.txt"
    text: "Both written."
  - when: "write a third"
    tool_calls:
      - name: write_file
        arguments: {path: c.txt, content: "three\n"}
  - when: "c.txt"
    text: "Third written."
  - text: "I did not understand."
    repeat: true
helper:
  - text: "working"
    hang: true
    repeat: true
`)
	step := 0
	var opt ptyOptions
	typeLine := func(s string) { opt.master.Write([]byte(s + "\r")) }
	opt = ptyOptions{cols: 120, rows: 40, stdoutPipe: true, watch: func(s *screen) {
		all := strings.Join(s.history(), "\n")
		prompts := strings.Count(all, "›")
		switch {
		case step == 0 && prompts >= 1:
			step++
			typeLine("say hello")
		case step == 1 && strings.Contains(all, "Hello from cadre.") && prompts >= 2:
			step++
			typeLine("start the helper")
		case step == 2 && strings.Contains(all, "root/helper.1"):
			step++
			typeLine("/stop root/helper.1")
		case step == 3 && strings.Contains(all, "The helper was stopped.") && prompts >= 3:
			step++
			typeLine("write two files")
		case step == 4 && strings.Contains(all, "Allow? [y/N]"):
			step++
			typeLine("a")
		case step == 5 && strings.Contains(all, "Both written.") && prompts >= 4:
			step++
			typeLine("write a third")
		case step == 6 && strings.Contains(all, "Third written.") && prompts >= 5:
			step++
			typeLine("/exit")
		}
	}}
	run := runOnPty(t, dir, &opt, "chat", "--no-tree", "-m", "scripted:"+filepath.Join(dir, "script.yaml"))
	screen := strings.Join(run.screen.history(), "\n")
	if step != 7 || run.code != 0 {
		t.Fatalf("the session stopped at step %d, exit %d; the terminal:\n%s", step, run.code, screen)
	}
	for _, want := range []string{"Hello from cadre.", "The helper was stopped.", "Both written.", "Third written."} {
		if !strings.Contains(run.stdout, want) {
			t.Errorf("stdout lacks %q: %q", want, run.stdout)
		}
	}
	if n := strings.Count(screen, "wants to run write_file"); n != 1 {
		t.Errorf("asked about writes %d times, want once (the others, in this turn and the next, were allowed always); the terminal:\n%s", n, screen)
	}
	if !strings.Contains(screen, "+ one") {
		t.Errorf("the approval did not show what the write writes; the terminal:\n%s", screen)
	}
	if !strings.Contains(screen, "root/helper.1 cancelled") {
		t.Errorf("the stopped helper is not shown as cancelled; the terminal:\n%s", screen)
	}
	for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s was not written: %v", f, err)
		}
	}
}

// A terminal that reports a size of zero gets the default width and
// height rather than a frame of nothing.
func TestZeroSizedTerminal(t *testing.T) {
	_, slave := openPty(t, 0, 0)
	v := &treeView{con: &console{w: slave}}
	if w, h := v.termSize(); w != defaultTreeWidth || h != defaultTreeHeight {
		t.Errorf("size %dx%d, want the defaults %dx%d", w, h, defaultTreeWidth, defaultTreeHeight)
	}
}
