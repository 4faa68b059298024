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
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "helper.md"), helperAgent)
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
	opt := ptyOptions{cols: 120, rows: 40, stdoutPipe: true, env: []string{"XDG_STATE_HOME=" + state}}
	run, screen := runSteps(t, dir, opt, []ptyStep{
		{shows("", 1), "say hello\r"},
		{shows("Hello from cadre.", 2), "start the helper\r"},
		{shows("root/helper.1", 0), "/stop root/helper.1\r"},
		{shows("The helper was stopped.", 3), "write two files\r"},
		{shows("Allow? [y/N]", 0), "a\r"},
		{shows("Both written.", 4), "write a third\r"},
		{shows("Third written.", 5), "/exit\r"},
	}, "chat", "--no-tree", "-m", "scripted:"+filepath.Join(dir, "script.yaml"))
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

// Agents the sessions use: one that works until it is stopped, and one
// that may ask its caller.
const (
	helperAgent = "---\nname: helper\ndescription: Helps for as long as it takes.\n---\nYou help.\n"
	askerAgent  = "---\nname: asker\ndescription: Asks before it writes.\naskCaller: true\n---\nYou ask.\n"
)

// ptyStep is one step of a session on a terminal: once ready says the
// screen (all is its history, joined) shows what the step waits for, the
// user types keys.
type ptyStep struct {
	ready func(s *screen, all string) bool
	keys  string
}

// runSteps runs the binary with args in dir on a terminal as opt says and
// takes the steps in order, each once. The session must take them all and
// exit 0. It returns the run and the terminal's history, joined.
func runSteps(t *testing.T, dir string, opt ptyOptions, steps []ptyStep, args ...string) (*ptyRun, string) {
	t.Helper()
	step := 0
	opt.watch = func(s *screen) {
		if step < len(steps) && steps[step].ready(s, strings.Join(s.history(), "\n")) {
			step++
			opt.master.Write([]byte(steps[step-1].keys))
		}
	}
	run := runOnPty(t, dir, &opt, args...)
	shown := strings.Join(run.screen.history(), "\n")
	if step != len(steps) || run.code != 0 {
		t.Fatalf("the session stopped at step %d of %d, exit %d; the terminal:\n%s", step, len(steps), run.code, shown)
	}
	return run, shown
}

// cursorAt is ready when the cursor is on line.
func cursorAt(line string) func(*screen, string) bool {
	return func(s *screen, _ string) bool { return cursorLine(s) == line }
}

// shows is ready when the terminal shows text and the prompt at least
// prompts times.
func shows(text string, prompts int) func(*screen, string) bool {
	return func(_ *screen, all string) bool {
		return strings.Contains(all, text) && strings.Count(all, "›") >= prompts
	}
}

// idleAfter is ready when the terminal shows text and the prompt at least
// prompts times, and the cursor waits on an empty line.
func idleAfter(text string, prompts int) func(*screen, string) bool {
	return func(s *screen, all string) bool {
		return strings.Contains(all, text) && strings.Count(all, "›") >= prompts && cursorLine(s) == "›"
	}
}

// rootRunning is ready when the tree shows the root running.
func rootRunning(s *screen, _ string) bool {
	return slices.ContainsFunc(s.lines(), func(l string) bool { return treeRootLine.MatchString(l) && strings.Contains(l, " running ") })
}

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

	opt := ptyOptions{cols: 100, rows: 30, stdoutPipe: true, env: env}
	run, shown := runSteps(t, dir, opt, []ptyStep{
		{shows("", 1), "say hello\r"},
		{idleAfter("Hello from cadre.", 2), "\x1b[A"},             // Up
		{cursorAt("› say hello"), "\x01again, \r"},                // Ctrl+A, then text before the recalled line
		{idleAfter("The edited line arrived.", 3), "scratch\x03"}, // Ctrl+C on a line with text: cleared
		{idleAfter("› scratch^C", 0), "\x03"},                     // Ctrl+C on an empty line
		{idleAfter("(type /exit or press Ctrl+D to leave)", 0), "/he\t"},
		{cursorAt("› /help"), "\r"},
		{func(s *screen, _ string) bool {
			return slices.Contains(s.history(), chatHelp) && cursorLine(s) == "›"
		}, "\x04"}, // Ctrl+D
	}, "chat", "--no-tree", "-m", model)
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
	run, _ = runSteps(t, dir, opt, []ptyStep{
		{cursorAt("›"), "\x1b[A\x1b[A"},
		{cursorAt("› again, say hello"), "\r"},
		{idleAfter("The edited line arrived.", 0), "\x04"},
	}, "chat", "--no-tree", "-m", model)
	if want := "The edited line arrived.\n"; run.stdout != want {
		t.Errorf("the second session's stdout %q, want %q", run.stdout, want)
	}
}

// TestPtyChatMuteTerminal runs a session on a terminal that never says
// where its cursor is: the line editor would wait for the answer before
// its first prompt, for ever. cadre says so and reads plain lines.
func TestPtyChatMuteTerminal(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "script.yaml"), lineEditScript)
	model := "scripted:" + filepath.Join(dir, "script.yaml")
	opt := ptyOptions{cols: 100, rows: 30, stdoutPipe: true, mute: true, env: []string{"XDG_STATE_HOME=" + t.TempDir()}}
	run, shown := runSteps(t, dir, opt, []ptyStep{
		{shows("did not say where its cursor is", 0), "say hello\r"},
		{shows("Hello from cadre.", 0), "\x04"}, // Ctrl+D: the end of what is typed
	}, "chat", "--no-tree", "-m", model)
	if want := "Hello from cadre.\n"; run.stdout != want {
		t.Errorf("stdout %q, want %q; the terminal:\n%s", run.stdout, want, shown)
	}
	if n := bytes.Count(run.raw.Bytes(), []byte("\x1b[6n")); n != 1 {
		t.Errorf("cadre asked the terminal where its cursor is %d times, want once; the terminal:\n%s", n, shown)
	}
}

// A line typed while cadre waits for the terminal to say where its
// cursor is (here one that never does) is not lost: it is the session's
// first line.
func TestPtyChatTypedWhileAsking(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "script.yaml"), lineEditScript)
	model := "scripted:" + filepath.Join(dir, "script.yaml")
	opt := ptyOptions{cols: 100, rows: 30, stdoutPipe: true, mute: true, env: []string{"XDG_STATE_HOME=" + t.TempDir()}}
	run, shown := runSteps(t, dir, opt, []ptyStep{
		{func(_ *screen, all string) bool { return !strings.Contains(all, "did not say") }, "say hello\r"},
		{shows("Hello from cadre.", 0), "\x04"},
	}, "chat", "--no-tree", "-m", model)
	if want := "Hello from cadre.\n"; run.stdout != want {
		t.Errorf("stdout %q, want %q; the terminal:\n%s", run.stdout, want, shown)
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
	opt := ptyOptions{cols: 100, rows: 30, stdoutPipe: true}
	run, shown := runSteps(t, dir, opt, []ptyStep{
		{cursorAt("›"), "wait forever\r"},
		{rootRunning, "\x03"},
		{idleAfter("stopping the run", 2), "are you there\r"},
		{idleAfter("", 3), "\x04"},
	}, "chat", "-m", "scripted:"+filepath.Join(dir, "script.yaml"))
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
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "helper.md"), helperAgent)
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
	redraws, last := 0, ""
	var typedLine string
	defer func() {
		if t.Failed() {
			t.Logf("the tree was drawn again %d times with the line typed on screen", redraws)
		}
	}()
	opt := ptyOptions{cols: 120, rows: 30, stdoutPipe: true}
	run, shown := runSteps(t, dir, opt, []ptyStep{
		{cursorAt("›"), "start the helper\r"},
		{func(s *screen, _ string) bool {
			last = elapsed(s)
			return last != ""
		}, "/stop ro"},
		{func(s *screen, _ string) bool {
			if cursorLine(s) != "/stop ro" || elapsed(s) == last || elapsed(s) == "" {
				return false
			}
			// The frame above was drawn again with the line on screen.
			last = elapsed(s)
			if redraws++; redraws < 3 {
				return false
			}
			typedLine = cursorLine(s)
			return true
		}, "ot/helper.1\r"},
		{func(s *screen, all string) bool {
			return helperCancelled.MatchString(all) && strings.Count(all, "›") >= 2 && cursorLine(s) == "›"
		}, "\x04"},
	}, "chat", "-m", "scripted:"+filepath.Join(dir, "script.yaml"))
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
	opt := ptyOptions{cols: 100, rows: 30}
	run, shown := runSteps(t, dir, opt, []ptyStep{
		{cursorAt("›"), "say hel"},
		{cursorAt("› say hel"), "lo\r"},
		{func(s *screen, _ string) bool {
			return slices.Contains(s.history(), "Hello from cadre.") && cursorLine(s) == "›"
		}, "wait forever\r"},
		{rootRunning, "\x04"},
	}, "chat", "-m", "scripted:"+filepath.Join(dir, "script.yaml"))
	hist := run.screen.history()
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
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "asker.md"), askerAgent)
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
	opt := ptyOptions{cols: 100, rows: 30, stdoutPipe: true, env: []string{"XDG_STATE_HOME=" + state}}
	run, shown := runSteps(t, dir, opt, []ptyStep{
		{cursorAt("›"), "Write the colour\r"},
		{func(s *screen, all string) bool {
			return strings.Contains(all, "root asks: Which colour should the file say?") && cursorLine(s) == "Your answer:"
		}, "blue\r"},
		{func(s *screen, all string) bool {
			return strings.Contains(all, "root wants to run write_file") && strings.HasPrefix(cursorLine(s), "Allow? [y/N]")
		}, "y\r"},
		{idleAfter("", 2), "\x04"},
	}, "chat", "--agent", "asker", "-m", "scripted:"+filepath.Join(dir, "script.yaml"))
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
	opt := ptyOptions{cols: 100, rows: 30, stdoutPipe: true}
	_, shown := runSteps(t, dir, opt, []ptyStep{
		{cursorAt("›"), "write it\r"},
		{func(s *screen, _ string) bool { return strings.HasPrefix(cursorLine(s), "Allow? [y/N]") }, "\x03"},
		{idleAfter("stopping the run", 2), "\x04"},
	}, "chat", "--no-tree", "-m", "scripted:"+filepath.Join(dir, "script.yaml"))
	if _, err := os.Stat(filepath.Join(dir, "out.txt")); err == nil {
		t.Error("out.txt was written though its approval was interrupted")
	}
	if runs := storedRuns(t, dir); len(runs) != 1 || runs[0].Status != "cancelled" {
		t.Errorf("runs %+v, want one, cancelled", runs)
	}
	t.Logf("the terminal:\n%s", shown)
}
