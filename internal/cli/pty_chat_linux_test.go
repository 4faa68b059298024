//go:build linux

package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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
	state := t.TempDir()
	step := 0
	var opt ptyOptions
	typeLine := func(s string) { opt.master.Write([]byte(s + "\r")) }
	opt = ptyOptions{cols: 120, rows: 40, stdoutPipe: true, env: []string{"XDG_STATE_HOME=" + state}, watch: func(s *screen) {
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
	// The history has the lines typed, not the answer to the approval.
	b, err := os.ReadFile(filepath.Join(state, "cadre", "chat_history"))
	if want := "say hello\nstart the helper\n/stop root/helper.1\nwrite two files\nwrite a third\n/exit\n"; err != nil || string(b) != want {
		t.Errorf("history file %q (%v), want %q", b, err, want)
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

// lineEditScript answers a task, and the same task edited, differently.
const lineEditScript = `
root:
  - when: "again, say hello"
    text: "The edited line arrived."
  - when: "say hello"
    text: "Hello from cadre."
  - text: "I did not understand."
    repeat: true
`

// cursorLine is the line of the screen the cursor is on.
func cursorLine(s *screen) string { return s.line(s.row) }

// The line editor of cadre chat: Up recalls the line typed before, Ctrl+A
// goes to its start, and the edited line is the follow-up the model gets.
// Ctrl+C clears a line and, on an empty one, says how to leave without
// leaving; Tab completes a command; Ctrl+D leaves. A second session, with
// the same state folder, recalls the lines of the first.
func TestPtyChatLineEditing(t *testing.T) {
	dir := t.TempDir()
	state := t.TempDir()
	writeFile(t, filepath.Join(dir, "script.yaml"), lineEditScript)
	model := "scripted:" + filepath.Join(dir, "script.yaml")
	env := []string{"XDG_STATE_HOME=" + state}

	step := 0
	var opt ptyOptions
	send := func(s string) { opt.master.Write([]byte(s)) }
	opt = ptyOptions{cols: 100, rows: 30, stdoutPipe: true, env: env, watch: func(s *screen) {
		all := strings.Join(s.history(), "\n")
		prompts := strings.Count(all, "›")
		switch {
		case step == 0 && prompts >= 1:
			step++
			send("say hello\r")
		case step == 1 && strings.Contains(all, "Hello from cadre.") && prompts >= 2 && cursorLine(s) == "›":
			step++
			send("\x1b[A") // Up
		case step == 2 && cursorLine(s) == "› say hello":
			step++
			send("\x01again, \r") // Ctrl+A, then text before the recalled line
		case step == 3 && strings.Contains(all, "The edited line arrived.") && prompts >= 3 && cursorLine(s) == "›":
			step++
			send("scratch\x03") // Ctrl+C on a line with text: cleared
		case step == 4 && strings.Contains(all, "› scratch^C") && cursorLine(s) == "›":
			step++
			send("\x03") // Ctrl+C on an empty line
		case step == 5 && strings.Contains(all, "(type /exit or press Ctrl+D to leave)") && cursorLine(s) == "›":
			step++
			send("/he\t")
		case step == 6 && cursorLine(s) == "› /help":
			step++
			send("\r")
		case step == 7 && slices.Contains(s.history(), chatHelp) && cursorLine(s) == "›":
			step++
			send("\x04") // Ctrl+D
		}
	}}
	run := runOnPty(t, dir, &opt, "chat", "--no-tree", "-m", model)
	shown := strings.Join(run.screen.history(), "\n")
	if step != 8 || run.code != 0 {
		t.Fatalf("the session stopped at step %d, exit %d; the terminal:\n%s", step, run.code, shown)
	}
	if want := "Hello from cadre.\nThe edited line arrived.\n"; run.stdout != want {
		t.Errorf("stdout %q, want %q", run.stdout, want)
	}
	if strings.Contains(run.stdout, "did not understand") || strings.Contains(shown, "sent when this turn ends") {
		t.Errorf("a line reached the model that should not have; stdout %q; the terminal:\n%s", run.stdout, shown)
	}
	if bytes.Contains(run.raw.Bytes(), []byte("\x1b[A")) {
		t.Errorf("the arrow key was echoed to the terminal as an escape sequence")
	}
	t.Logf("the terminal:\n%s", shown)

	hist := filepath.Join(state, "cadre", "chat_history")
	b, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	if want := "say hello\nagain, say hello\n/help\n"; string(b) != want {
		t.Errorf("history file %q, want %q", b, want)
	}
	if fi, err := os.Stat(hist); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("history file mode %v (%v), want 0600", fi.Mode(), err)
	}

	// The next session: Up twice recalls the edited line of the first.
	step = 0
	opt = ptyOptions{cols: 100, rows: 30, stdoutPipe: true, env: env, watch: func(s *screen) {
		all := strings.Join(s.history(), "\n")
		switch {
		case step == 0 && cursorLine(s) == "›":
			step++
			send("\x1b[A\x1b[A")
		case step == 1 && cursorLine(s) == "› again, say hello":
			step++
			send("\r")
		case step == 2 && strings.Contains(all, "The edited line arrived.") && cursorLine(s) == "›":
			step++
			send("\x04")
		}
	}}
	run = runOnPty(t, dir, &opt, "chat", "--no-tree", "-m", model)
	shown = strings.Join(run.screen.history(), "\n")
	if step != 3 || run.code != 0 {
		t.Fatalf("the second session stopped at step %d, exit %d; the terminal:\n%s", step, run.code, shown)
	}
	if want := "The edited line arrived.\n"; run.stdout != want {
		t.Errorf("the second session's stdout %q, want %q", run.stdout, want)
	}
}

// Ctrl+C typed while a turn runs stops the turn, not the session: the
// next line is a follow-up of the stopped run.
func TestPtyChatInterruptTurn(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "script.yaml"), `
root:
  - when: "are you there"
    text: "Still here."
  - when: "wait forever"
    text: "Waiting."
    hang: true
  - text: "I did not understand."
    repeat: true
`)
	step := 0
	var opt ptyOptions
	send := func(s string) { opt.master.Write([]byte(s)) }
	opt = ptyOptions{cols: 100, rows: 30, stdoutPipe: true, watch: func(s *screen) {
		all := strings.Join(s.history(), "\n")
		switch {
		case step == 0 && cursorLine(s) == "›":
			step++
			send("wait forever\r")
		case step == 1 && slices.ContainsFunc(s.lines(), func(l string) bool { return treeRootLine.MatchString(l) && strings.Contains(l, " running ") }):
			step++
			send("\x03")
		case step == 2 && strings.Contains(all, "stopping the run") && strings.Count(all, "›") >= 2 && cursorLine(s) == "›":
			step++
			send("are you there\r")
		case step == 3 && strings.Count(all, "›") >= 3 && cursorLine(s) == "›":
			step++
			send("\x04")
		}
	}}
	run := runOnPty(t, dir, &opt, "chat", "-m", "scripted:"+filepath.Join(dir, "script.yaml"))
	shown := strings.Join(run.screen.history(), "\n")
	if step != 4 || run.code != 0 {
		t.Fatalf("the session stopped at step %d, exit %d; the terminal:\n%s", step, run.code, shown)
	}
	if run.stdout != "Still here.\n" {
		t.Errorf("stdout %q, want the follow-up's answer alone", run.stdout)
	}
	if runs := storedRuns(t, dir); len(runs) != 1 {
		t.Errorf("%d runs, want the stopped one, followed up", len(runs))
	}
	// Each turn's last frame stays, drawn in place: no line of the frame
	// shown when Ctrl+C was pressed is left behind.
	if roots := len(slices.DeleteFunc(run.screen.history(), func(l string) bool { return !treeRootLine.MatchString(l) })); roots != 2 {
		t.Errorf("the root is on the terminal %d times, want twice: once for each turn's last frame; the terminal:\n%s", roots, shown)
	}
	t.Logf("the terminal:\n%s", shown)
}

// The live tree, redrawn while the user types a line, leaves that line as
// it was typed: half a command typed before redraws and the other half
// after make the whole command.
func TestPtyChatTypingDuringRedraws(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "helper.md"), "---\nname: helper\ndescription: Helps for as long as it takes.\n---\nYou help.\n")
	writeFile(t, filepath.Join(dir, "script.yaml"), `
root:
  - when: "start the helper"
    tool_calls:
      - name: start_background_agent
        arguments: {agent: helper, prompt: "work until stopped"}
  - when: "Background agent started"
    text: "The helper is working."
  - when: "cancelled"
    text: "The helper was stopped."
  - text: "I did not understand."
    repeat: true
helper:
  - text: "working"
    hang: true
    repeat: true
`)
	helperLine := regexp.MustCompile(`^  \S helper\.1 +running .* ([\d.hms]+) +work until stopped$`)
	helperCancelled := regexp.MustCompile(`(?m)^  ⊘ helper\.1 +cancelled `)
	anyRootLine := regexp.MustCompile(`^\S root +(queued|running|waiting|done|failed|cancelled) `)
	elapsed := func(s *screen) string {
		for _, l := range s.lines() {
			if m := helperLine.FindStringSubmatch(l); m != nil {
				return m[1]
			}
		}
		return ""
	}
	step, redraws, last := 0, 0, ""
	var typedLine string
	var opt ptyOptions
	send := func(s string) { opt.master.Write([]byte(s)) }
	opt = ptyOptions{cols: 120, rows: 30, stdoutPipe: true, watch: func(s *screen) {
		all := strings.Join(s.history(), "\n")
		switch {
		case step == 0 && cursorLine(s) == "›":
			step++
			send("start the helper\r")
		case step == 1 && elapsed(s) != "":
			step++
			last = elapsed(s)
			send("/stop ro")
		case step == 2 && cursorLine(s) == "/stop ro" && elapsed(s) != last && elapsed(s) != "":
			// The frame above was drawn again with the line on screen.
			last = elapsed(s)
			if redraws++; redraws == 3 {
				step++
				typedLine = cursorLine(s)
				send("ot/helper.1\r")
			}
		case step == 3 && helperCancelled.MatchString(all) && strings.Count(all, "›") >= 2 && cursorLine(s) == "›":
			step++
			send("\x04")
		}
	}}
	run := runOnPty(t, dir, &opt, "chat", "-m", "scripted:"+filepath.Join(dir, "script.yaml"))
	shown := strings.Join(run.screen.history(), "\n")
	if step != 4 || run.code != 0 {
		t.Fatalf("the session stopped at step %d after %d redraws, exit %d; the terminal:\n%s", step, redraws, run.code, shown)
	}
	if typedLine != "/stop ro" {
		t.Errorf("after three redraws of the tree the line typed shows %q, want %q", typedLine, "/stop ro")
	}
	if !strings.Contains(run.stdout, "The helper was stopped.") {
		t.Errorf("stdout %q: the command typed across the redraws did not stop the helper; the terminal:\n%s", run.stdout, shown)
	}
	// The command stays on the terminal, above the tree, which is there
	// once: drawn again in place after the line was entered.
	hist := run.screen.history()
	at := slices.Index(hist, "/stop root/helper.1")
	roots := 0
	for i, l := range hist {
		if anyRootLine.MatchString(l) {
			roots++
			if at < 0 || i < at {
				t.Errorf("line %d, %q, is a frame's root line left above the command typed", i, l)
			}
		}
	}
	if at < 0 || roots != 1 {
		t.Errorf("the command typed is at line %d, and the root is on the terminal %d times, want once below it:\n%s", at, roots, shown)
	}
	t.Logf("the terminal:\n%s", shown)
}

// With stdout on the terminal too, the answer is printed above the line
// being typed; Ctrl+D while a turn runs ends the turn and the session, as
// /exit does.
func TestPtyChatAnswerOnTerminalAndCtrlDInTurn(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "script.yaml"), `
root:
  - when: "say hello"
    text: "Hello from cadre."
  - when: "wait forever"
    text: "Waiting."
    hang: true
  - text: "I did not understand."
    repeat: true
`)
	step := 0
	var opt ptyOptions
	send := func(s string) { opt.master.Write([]byte(s)) }
	opt = ptyOptions{cols: 100, rows: 30, watch: func(s *screen) {
		switch {
		case step == 0 && cursorLine(s) == "›":
			step++
			send("say hel")
		case step == 1 && cursorLine(s) == "› say hel":
			step++
			send("lo\r")
		case step == 2 && slices.Contains(s.history(), "Hello from cadre.") && cursorLine(s) == "›":
			step++
			send("wait forever\r")
		case step == 3 && slices.ContainsFunc(s.lines(), func(l string) bool { return treeRootLine.MatchString(l) && strings.Contains(l, " running ") }):
			step++
			send("\x04")
		}
	}}
	run := runOnPty(t, dir, &opt, "chat", "-m", "scripted:"+filepath.Join(dir, "script.yaml"))
	hist := run.screen.history()
	shown := strings.Join(hist, "\n")
	if step != 4 || run.code != 0 {
		t.Fatalf("the session stopped at step %d, exit %d; the terminal:\n%s", step, run.code, shown)
	}
	// The answer is on a line of its own, once, below its turn's tree.
	at := slices.Index(hist, "Hello from cadre.")
	if at < 1 || strings.Count(shown, "Hello from cadre.") != 1 || !strings.HasPrefix(hist[at-1], "tokens ") {
		t.Errorf("the answer is not on a line of its own below its tree; the terminal:\n%s", shown)
	}
	if i := slices.Index(hist, "› wait forever"); i < at {
		t.Errorf("the second task is not below the first answer; the terminal:\n%s", shown)
	}
	if roots := len(slices.DeleteFunc(slices.Clone(hist), func(l string) bool { return !treeRootLine.MatchString(l) })); roots != 2 {
		t.Errorf("the root is on the terminal %d times, want twice: once for each turn's last frame; the terminal:\n%s", roots, shown)
	}
	if runs := storedRuns(t, dir); len(runs) != 1 || runs[0].Status != "cancelled" {
		t.Errorf("runs %+v, want one, cancelled as the session ended", runs)
	}
	t.Logf("the terminal:\n%s", shown)
}

// In a session, a question of ask_caller and an approval are answered on
// the line the editor reads, with the question's last line as its prompt;
// the answers reach the agent and are not kept in the history.
func TestPtyChatQuestionAndApproval(t *testing.T) {
	dir := t.TempDir()
	state := t.TempDir()
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "asker.md"), "---\nname: asker\ndescription: Asks before it writes.\naskCaller: true\n---\nYou ask.\n")
	writeFile(t, filepath.Join(dir, "script.yaml"), `
root:
  - when: "blue"
    tool_calls:
      - name: write_file
        arguments: {path: colour.txt, content: "blue\n"}
  - when: "created"
    text: "I wrote blue."
  - when: "Write the colour"
    tool_calls:
      - name: ask_caller
        arguments: {question: "Which colour should the file say?"}
  - text: "The user did not say blue."
    repeat: true
`)
	step := 0
	var opt ptyOptions
	send := func(s string) { opt.master.Write([]byte(s)) }
	opt = ptyOptions{cols: 100, rows: 30, stdoutPipe: true, env: []string{"XDG_STATE_HOME=" + state}, watch: func(s *screen) {
		all := strings.Join(s.history(), "\n")
		switch {
		case step == 0 && cursorLine(s) == "›":
			step++
			send("Write the colour\r")
		case step == 1 && strings.Contains(all, "root asks: Which colour should the file say?") && cursorLine(s) == "Your answer:":
			step++
			send("blue\r")
		case step == 2 && strings.Contains(all, "root wants to run write_file") && strings.HasPrefix(cursorLine(s), "Allow? [y/N]"):
			step++
			send("y\r")
		case step == 3 && strings.Count(all, "›") >= 2 && cursorLine(s) == "›":
			step++
			send("\x04")
		}
	}}
	run := runOnPty(t, dir, &opt, "chat", "--agent", "asker", "-m", "scripted:"+filepath.Join(dir, "script.yaml"))
	shown := strings.Join(run.screen.history(), "\n")
	if step != 4 || run.code != 0 {
		t.Fatalf("the session stopped at step %d, exit %d; the terminal:\n%s", step, run.code, shown)
	}
	if run.stdout != "I wrote blue.\n" {
		t.Errorf("stdout %q, want the answer; the terminal:\n%s", run.stdout, shown)
	}
	for _, want := range []string{"Your answer: blue", "(a: always write_file for this run) y"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the terminal lacks %q:\n%s", want, shown)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "colour.txt")); err != nil || string(b) != "blue\n" {
		t.Errorf("colour.txt: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(state, "cadre", "chat_history")); err != nil || string(b) != "Write the colour\n" {
		t.Errorf("history file %q (%v), want the task alone", b, err)
	}
	t.Logf("the terminal:\n%s", shown)
}

// Ctrl+C while an approval waits stops the turn: the approval is not
// answered, the write is not made, and the session goes on.
func TestPtyChatInterruptApproval(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "script.yaml"), `
root:
  - when: "write it"
    tool_calls:
      - name: write_file
        arguments: {path: out.txt, content: "x\n"}
  - text: "Done."
    repeat: true
`)
	step := 0
	var opt ptyOptions
	send := func(s string) { opt.master.Write([]byte(s)) }
	opt = ptyOptions{cols: 100, rows: 30, stdoutPipe: true, watch: func(s *screen) {
		all := strings.Join(s.history(), "\n")
		switch {
		case step == 0 && cursorLine(s) == "›":
			step++
			send("write it\r")
		case step == 1 && strings.HasPrefix(cursorLine(s), "Allow? [y/N]"):
			step++
			send("\x03")
		case step == 2 && strings.Contains(all, "stopping the run") && strings.Count(all, "›") >= 2 && cursorLine(s) == "›":
			step++
			send("\x04")
		}
	}}
	run := runOnPty(t, dir, &opt, "chat", "--no-tree", "-m", "scripted:"+filepath.Join(dir, "script.yaml"))
	shown := strings.Join(run.screen.history(), "\n")
	if step != 3 || run.code != 0 {
		t.Fatalf("the session stopped at step %d, exit %d; the terminal:\n%s", step, run.code, shown)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.txt")); err == nil {
		t.Error("out.txt was written though its approval was interrupted")
	}
	if runs := storedRuns(t, dir); len(runs) != 1 || runs[0].Status != "cancelled" {
		t.Errorf("runs %+v, want one, cancelled", runs)
	}
	t.Logf("the terminal:\n%s", shown)
}
