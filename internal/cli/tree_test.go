package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
)

var treeT0 = time.Date(2025, 3, 20, 9, 0, 0, 0, time.UTC)

// treeAgent is an agent of a fake run snapshot.
func treeAgent(id string, def string, st cadre.Status, task string, turns int, tokens int64, started, ended time.Duration) cadre.AgentInfo {
	a := cadre.AgentInfo{ID: cadre.AgentID(id), Parent: cadre.AgentID(id).Parent(), Depth: cadre.AgentID(id).Depth(), Definition: def,
		Task: task, Status: st, Turns: turns, Usage: cadre.Usage{InputTokens: tokens}, Started: treeT0.Add(started)}
	if ended > 0 {
		a.Ended = treeT0.Add(ended)
	}
	return a
}

// sampleTree has every status and a grandchild created after its parent's
// younger sibling, so creation order and tree order differ.
func sampleTree() []cadre.AgentInfo {
	return []cadre.AgentInfo{
		treeAgent("root", "root", cadre.StatusWaiting, "When is the next release, and draft its announcement.", 1, 480, 0, 0),
		treeAgent("root/researcher.1", "researcher", cadre.StatusRunning, "Find the release date in CHANGELOG.md.", 2, 12_345, 100*time.Millisecond, 0),
		treeAgent("root/writer.1", "writer", cadre.StatusDone, "Draft a one-line announcement.", 3, 608, 100*time.Millisecond, 2*time.Second),
		treeAgent("root/researcher.1/critic.1", "critic", cadre.StatusFailed, "Check the date.", 1, 90, time.Second, 1500*time.Millisecond),
		treeAgent("root/reviewer.1", "reviewer", cadre.StatusQueued, "Review the announcement.", 0, 0, 3*time.Second, 0),
		treeAgent("root/editor.1", "editor", cadre.StatusCancelled, "Edit it.", 1, 20, 3*time.Second, 4*time.Second),
	}
}

func lineWith(lines []string, s string) (int, string) {
	for i, l := range lines {
		if strings.Contains(l, s) {
			return i, l
		}
	}
	return -1, ""
}

func TestTreeFrameShowsEachAgent(t *testing.T) {
	f := treeFrame{Agents: sampleTree(), Now: treeT0.Add(5 * time.Second), Used: 13_543, Budget: 500_000,
		Text: "The release is on 3 March.\nAnnouncement follows.", Width: 120, Height: 40}
	lines := f.render()
	tests := []struct {
		name   string
		label  string // the start of the line, indentation included
		fields []string
	}{
		{"root", "⏸ root ", []string{"waiting", "turns 1", "480 tok", "5.0s", "When is the next release, and draft its announcement."}},
		{"running", "  ▶ researcher.1 ", []string{"running", "turns 2", "12k tok", "4.9s", "Find the release date in CHANGELOG.md."}},
		{"grandchild", "    ✗ critic.1 ", []string{"failed", "turns 1", "90 tok", "0.5s", "Check the date."}},
		{"done", "  ✓ writer.1 ", []string{"done", "turns 3", "608 tok", "1.9s", "Draft a one-line announcement."}},
		{"queued", "  … reviewer.1 ", []string{"queued", "turns 0", "0 tok", "2.0s", "Review the announcement."}},
		{"cancelled", "  ⊘ editor.1 ", []string{"cancelled", "turns 1", "20 tok", "1.0s", "Edit it."}},
	}
	var order []int
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i, line := lineWith(lines, tt.label)
			if i < 0 || !strings.HasPrefix(line, tt.label) {
				t.Fatalf("no line starts with %q in\n%s", tt.label, strings.Join(lines, "\n"))
			}
			order = append(order, i)
			for _, want := range tt.fields {
				if !strings.Contains(line, want) {
					t.Errorf("line %q lacks %q", line, want)
				}
			}
		})
	}
	for i := 1; i < len(order); i++ {
		if order[i] <= order[i-1] {
			t.Errorf("agents are not in tree order (root, researcher, its critic, then the root's other children): lines %v of\n%s", order, strings.Join(lines, "\n"))
			break
		}
	}
	// The columns after the names line up.
	_, root := lineWith(lines, "⏸ root")
	_, critic := lineWith(lines, "critic.1")
	if a, b := strings.Index(root, "waiting"), strings.Index(critic, "failed"); displayWidth(root[:a]) != displayWidth(critic[:b]) {
		t.Errorf("status columns differ:\n%s\n%s", root, critic)
	}
	// The answer below the agents, the budget at the bottom.
	ans, _ := lineWith(lines, "The release is on 3 March.")
	next, _ := lineWith(lines, "Announcement follows.")
	if ans < order[len(order)-1] || next != ans+1 || lines[ans-1] != "" {
		t.Errorf("the root's answer is not below the agents after a blank line:\n%s", strings.Join(lines, "\n"))
	}
	if last := lines[len(lines)-1]; last != "tokens 13k of 500k budget (2%)" {
		t.Errorf("budget line %q", last)
	}
}

func TestTreeFrameLabels(t *testing.T) {
	tests := []struct {
		name string
		a    cadre.AgentInfo
		want string
	}{
		{"root", treeAgent("root", "root", cadre.StatusRunning, "t", 0, 0, 0, 0), "▶ root"},
		{"root of a definition", treeAgent("root", "reviewer", cadre.StatusRunning, "t", 0, 0, 0, 0), "▶ root (reviewer)"},
		{"child", treeAgent("root/alpha.2", "alpha", cadre.StatusDone, "t", 0, 0, 0, 0), "  ✓ alpha.2"},
		{"child named apart from its definition", treeAgent("root/sub.1", "", cadre.StatusDone, "t", 0, 0, 0, 0), "  ✓ sub.1"},
		{"other definition", treeAgent("root/a/x.1", "Code Reviewer", cadre.StatusFailed, "t", 0, 0, 0, 0), "    ✗ x.1 (Code Reviewer)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := agentLabel(tt.a); got != tt.want {
				t.Errorf("label %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTreeFrameBudgetLine(t *testing.T) {
	for _, tt := range []struct {
		used, budget int64
		want         string
	}{
		{0, 500_000, "tokens 0 of 500k budget (0%)"},
		{250_000, 500_000, "tokens 250k of 500k budget (50%)"},
		{1_200_000, 1_000_000, "tokens 1.2M of 1.0M budget (120%)"},
		{4321, -1, "tokens 4321 (no budget)"},
		{7, 0, "tokens 7 (no budget)"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			f := treeFrame{Now: treeT0, Used: tt.used, Budget: tt.budget, Width: 80, Height: 24}
			lines := f.render()
			if len(lines) != 1 || lines[0] != tt.want {
				t.Errorf("frame %q, want the budget line %q", lines, tt.want)
			}
		})
	}
}

// Every line fits the width in terminal cells, whatever the text holds:
// wide characters, emoji, combining marks, escape sequences.
func TestTreeFrameFitsWidth(t *testing.T) {
	agents := sampleTree()
	agents[1].Task = "調べる：リリース日はいつですか。変更履歴を読んで、日付を報告してください。" + strings.Repeat("漢", 40)
	agents[2].Task = "Write 🎉🎉🎉 an announcement with e\u0301mphasis " + strings.Repeat("word ", 40)
	agents[3].Task = "Erase\x1b[2J the\rscreen\ttab"
	text := "答え：三月三日です。" + strings.Repeat("字", 100) + "\n\x1b[31mred\x1b[0m\r\n" + strings.Repeat("x", 300)
	for _, width := range []int{20, 33, 40, 61, 80, 200} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			f := treeFrame{Agents: agents, Now: treeT0.Add(5 * time.Second), Used: 1, Budget: 10, Text: text, Notes: []string{strings.Repeat("ノート", 50)}, Width: width, Height: 60}
			lines := f.render()
			for _, l := range lines {
				if w := displayWidth(l); w > width-1 {
					t.Errorf("line of %d cells on a terminal of %d: %q", w, width, l)
				}
				if strings.ContainsFunc(l, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
					t.Errorf("line holds a control character: %q", l)
				}
			}
			if _, l := lineWith(lines, "Erase"); width >= 80 && !strings.Contains(l, "Erase[2J the screen tab") {
				t.Errorf("control characters were not dropped: %q", l)
			}
		})
	}
}

// On a narrow terminal the turns and tokens make way for the task; the
// status and elapsed time stay.
func TestTreeFrameNarrow(t *testing.T) {
	for _, tt := range []struct {
		width   int
		compact bool
	}{{40, true}, {60, true}, {100, false}, {200, false}} {
		t.Run(fmt.Sprint(tt.width), func(t *testing.T) {
			f := treeFrame{Agents: sampleTree(), Now: treeT0.Add(5 * time.Second), Budget: 100, Width: tt.width, Height: 30}
			lines := f.render()
			for i, a := range treeOrder(sampleTree()) {
				l := lines[i]
				if !strings.Contains(l, "  "+string(a.Status)+" ") || !regexp.MustCompile(`  \d+\.\ds  `).MatchString(l) {
					t.Errorf("line %q lacks the status or the elapsed time", l)
				}
				if got := strings.Contains(l, " turns "); got == tt.compact {
					t.Errorf("line %q: shows the turns %v on %d columns", l, got, tt.width)
				}
				task := l[strings.LastIndex(l, "  ")+2:]
				least := min(minTreeTask, displayWidth(a.Task))
				if tt.width < 60 {
					least = 2 // too narrow for more than the start of it
				}
				if displayWidth(task) < least || !strings.HasPrefix(a.Task, strings.TrimSuffix(task, "…")) {
					t.Errorf("line %q shows %q of the task %q", l, task, a.Task)
				}
			}
		})
	}
}

func TestRuneWidth(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want int
	}{
		{"abc", 3},
		{"é", 1},       // precomposed
		{"e\u0301", 1}, // combining accent
		{"漢字", 4},
		{"ｱ", 1}, // halfwidth katakana
		{"Ａ", 2}, // fullwidth A
		{"한국", 4},
		{"🎉", 2},
		{"✓▶…", 3},
		{"a\u200bb", 2},
		{"\x1b", 0},
	} {
		if got := displayWidth(tt.s); got != tt.want {
			t.Errorf("displayWidth(%q) = %d, want %d", tt.s, got, tt.want)
		}
	}
	if got := fitWidth("漢字漢字", 5); got != "漢字…" {
		t.Errorf("fitWidth cut wide characters to %q", got)
	}
	if got := fitWidth("abcdef", 6); got != "abcdef" {
		t.Errorf("fitWidth cut a line that fits: %q", got)
	}
	if got := wrapWidth("漢字漢字漢", 5); strings.Join(got, "|") != "漢字|漢字|漢" {
		t.Errorf("wrapWidth = %q", got)
	}
}

func TestElapsedText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second:                          "0.0s",
		0:                                     "0.0s",
		649 * time.Millisecond:                "0.6s",
		9990 * time.Millisecond:               "9.9s",
		12*time.Second + 700*time.Millisecond: "12s",
		65 * time.Second:                      "1m05s",
		2*time.Hour + 3*time.Minute + 59*time.Second: "2h03m",
	} {
		if got := elapsedText(d); got != want {
			t.Errorf("elapsedText(%s) = %q, want %q", d, got, want)
		}
	}
}

// manyAgents is a run of n children below the root: the first half done
// (the later, the later they ended), the rest running.
func manyAgents(n int) []cadre.AgentInfo {
	agents := []cadre.AgentInfo{treeAgent("root", "root", cadre.StatusWaiting, "Do it all.", 1, 100, 0, 0)}
	for i := 1; i <= n; i++ {
		st, ended := cadre.StatusRunning, time.Duration(0)
		if i <= n/2 {
			st, ended = cadre.StatusDone, time.Duration(i)*time.Second
		}
		agents = append(agents, treeAgent(fmt.Sprintf("root/worker.%d", i), "worker", st, fmt.Sprintf("Part %d.", i), 1, 10, time.Duration(i)*time.Millisecond, ended))
	}
	return agents
}

// A frame taller than the terminal could not be erased in place: it keeps
// the root and the most active agents and says how many it hides.
func TestTreeFrameFitsHeight(t *testing.T) {
	tests := []struct {
		name      string
		agents    int
		height    int
		text      string
		notes     []string
		wantShown []string // agents that must be on screen
		wantHide  string
	}{
		{"all fit", 6, 24, "", nil, []string{"worker.1 ", "worker.6 "}, ""},
		{"running before done", 40, 20, "", nil, []string{"worker.25 ", "worker.40 "}, "… 24 more agents not shown: 4 running, 20 done"},
		{"latest done next", 10, 12, "", nil, []string{"worker.5 ", "worker.4 ", "worker.6 ", "worker.10 "}, "… 2 more agents not shown: 2 done"},
		{"with answer and notes", 40, 24, strings.Repeat("line\n", 20), []string{"a failed", "b failed", "c failed"}, []string{"worker.40 "}, "more agents not shown"},
		{"tiny terminal", 40, 4, "answer", []string{"n"}, nil, "… 40 more agents not shown: 20 running, 20 done"},
		{"no room for children", 3, 4, "", nil, nil, "… 3 more agents not shown: 2 running, 1 done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := treeFrame{Agents: manyAgents(tt.agents), Now: treeT0.Add(time.Minute), Used: 10, Budget: 100, Text: tt.text, Notes: tt.notes, Width: 80, Height: tt.height}
			lines := f.render()
			frame := strings.Join(lines, "\n")
			if len(lines) > tt.height-1 {
				t.Fatalf("%d lines on a terminal of %d rows:\n%s", len(lines), tt.height, frame)
			}
			if !strings.HasPrefix(lines[0], "⏸ root") || !strings.HasPrefix(lines[len(lines)-1], "tokens ") {
				t.Errorf("the frame does not start with the root and end with the budget:\n%s", frame)
			}
			for _, w := range tt.wantShown {
				if i, _ := lineWith(lines, w); i < 0 {
					t.Errorf("%s is not shown:\n%s", w, frame)
				}
			}
			shown := strings.Count(frame, "worker.")
			_, hid := lineWith(lines, "more agent")
			if tt.wantHide == "" {
				if hid != "" || shown != tt.agents {
					t.Errorf("%d of %d agents shown, hidden line %q:\n%s", shown, tt.agents, hid, frame)
				}
				return
			}
			if !strings.Contains(hid, tt.wantHide) {
				t.Errorf("hidden line %q, want %q:\n%s", hid, tt.wantHide, frame)
			}
			var n int
			fmt.Sscanf(hid, "… %d more", &n)
			if shown+n != tt.agents {
				t.Errorf("%d shown and %d hidden of %d agents:\n%s", shown, n, tt.agents, frame)
			}
			if tt.height >= 20 && shown < (tt.height-1)/3 {
				t.Errorf("only %d agents shown on %d rows:\n%s", shown, tt.height, frame)
			}
		})
	}
}

// fakeTree is a run snapshot a test changes between frames.
type fakeTree struct {
	mu     sync.Mutex
	agents []cadre.AgentInfo
	used   int64
}

func (f *fakeTree) Tree(context.Context, string) (*cadre.Tree, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &cadre.Tree{Agents: append([]cadre.AgentInfo(nil), f.agents...), Usage: cadre.Usage{OutputTokens: f.used}}, nil
}

// newTestTreeView is a view of src that a test drives by hand.
func newTestTreeView(con *console, src treeSource, budget int64) *treeView {
	v := makeTreeView(con, budget)
	v.src = src
	return v
}

// countingWriter counts the writes a console makes: one per frame.
type countingWriter struct {
	writes int
	last   string
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	w.last = string(p)
	return len(p), nil
}

func TestTreeViewRedrawsOnlyOnChange(t *testing.T) {
	src := &fakeTree{agents: sampleTree()[:2], used: 680}
	out := &countingWriter{}
	con := &console{w: out}
	v := newTestTreeView(con, src, 1000)
	now := treeT0.Add(time.Second)
	v.now = func() time.Time { return now }
	w, h := 80, 24
	v.size = func() (int, int) { return w, h }

	steps := []struct {
		name   string
		change func()
		redraw bool
	}{
		{"first frame", func() {}, true},
		{"nothing changed", func() {}, false},
		{"less than a tenth of a second later", func() { now = now.Add(30 * time.Millisecond) }, false},
		{"a tenth later", func() { now = now.Add(100 * time.Millisecond) }, true},
		{"status changed", func() {
			src.mu.Lock()
			src.agents[1].Status = cadre.StatusDone
			src.agents[1].Ended = now
			src.mu.Unlock()
		}, true},
		{"time passes with only ended agents' clocks", func() {
			src.mu.Lock()
			src.agents[0].Status, src.agents[0].Ended = cadre.StatusDone, now
			src.mu.Unlock()
			v.tick()
			now = now.Add(time.Minute)
		}, false},
		{"tokens used", func() { src.mu.Lock(); src.used++; src.mu.Unlock() }, true},
		{"root streams text", func() {
			v.handle(cadre.Event{Type: cadre.EventModelDelta, Agent: cadre.RootID, Data: cadre.ModelDelta{Text: "Hello"}})
		}, true},
		{"a child streams text", func() {
			v.handle(cadre.Event{Type: cadre.EventModelDelta, Agent: "root/researcher.1", Data: cadre.ModelDelta{Text: "Hi"}})
		}, false},
		{"resized", func() { w = 60 }, true},
		{"resized taller", func() { h = 30 }, true},
		{"a prompt erased the frame", func() { con.mu.Lock(); con.frame = 0; con.mu.Unlock() }, true},
	}
	for _, st := range steps {
		st.change()
		before := out.writes
		v.tick()
		if redrew := out.writes > before; redrew != st.redraw {
			t.Errorf("%s: redrew %v, want %v", st.name, redrew, st.redraw)
		}
	}

	// While a prompt holds the terminal, the view does not draw or wait.
	con.mu.Lock()
	src.mu.Lock()
	src.used += 100
	src.mu.Unlock()
	before := out.writes
	v.tick()
	con.mu.Unlock()
	if out.writes != before {
		t.Error("the view drew while a prompt held the terminal")
	}
	v.tick()
	if out.writes != before+1 {
		t.Error("the view did not draw once the prompt was answered")
	}
}

func TestTreeViewRootText(t *testing.T) {
	src := &fakeTree{agents: sampleTree()[:1]}
	con := &console{w: &countingWriter{}}
	v := newTestTreeView(con, src, 0)
	v.now = func() time.Time { return treeT0 }
	v.size = func() (int, int) { return 80, 24 }
	delta := func(s string) {
		v.handle(cadre.Event{Type: cadre.EventModelDelta, Agent: cadre.RootID, Data: cadre.ModelDelta{Text: s}})
	}
	reply := func(calls int) {
		v.handle(cadre.Event{Type: cadre.EventModelResponse, Agent: cadre.RootID, Data: cadre.ModelResponse{ToolCalls: calls}})
	}
	frame := func(final bool) string { return strings.Join(v.snapshot(final).render(), "\n") }

	delta("I will ask ")
	delta("the researcher.")
	if f := frame(false); !strings.Contains(f, "\nI will ask the researcher.\n") {
		t.Errorf("streamed text not shown:\n%s", f)
	}
	reply(1)
	if f := frame(false); !strings.Contains(f, "I will ask the researcher.") {
		t.Errorf("the text went away while the children work:\n%s", f)
	}
	delta("The release is on 3 March.")
	f := frame(false)
	if strings.Contains(f, "I will ask") || !strings.Contains(f, "The release is on 3 March.") {
		t.Errorf("the next reply did not replace the text:\n%s", f)
	}
	reply(0)
	if f := frame(true); strings.Contains(f, "3 March") {
		t.Errorf("the last frame repeats the answer printed on stdout:\n%s", f)
	}
	v.handle(cadre.Event{Type: cadre.EventAgentFailed, Agent: "root/a.1", Data: cadre.AgentFailed{Error: "boom\x1b[2J"}})
	if f := frame(true); !strings.Contains(f, "! root/a.1 failed: boom[2J") {
		t.Errorf("failure note missing or not sanitised:\n%s", f)
	}
}

// The loop draws a last frame when closed and leaves it on screen.
func TestTreeViewClose(t *testing.T) {
	src := &fakeTree{agents: sampleTree()[:1]}
	out := &lockedBuffer{}
	con := &console{w: out}
	v := newTestTreeView(con, src, 0)
	v.interval = time.Hour // only the last frame
	v.size = func() (int, int) { return 80, 24 }
	go v.loop()
	v.close()
	if got := out.String(); !strings.Contains(got, "⏸ root") || !strings.HasSuffix(got, "tokens 0 (no budget)\x1b[K\n") {
		t.Errorf("last frame %q", got)
	}
	con.mu.Lock()
	defer con.mu.Unlock()
	if con.frame != 0 {
		t.Errorf("the console would erase the last frame (%d lines)", con.frame)
	}
}

// fruitScript is a run of the scripted model: the root spawns alpha and
// beta in one reply; each takes a while, reports and ends; the root
// answers. Each reply takes a while, so that a frame is drawn between any
// two of them (and the live view is set up before the root streams).
const fruitScript = `
root:
  - delay: 200ms
    text: "Splitting the work."
    tool_calls:
      - name: spawn_agent
        arguments: {agent: alpha, task: "Count the apples in the basket."}
      - name: spawn_agent
        arguments: {agent: beta, task: "Count the pears in the basket."}
    usage: {input: 400, output: 50}
  - delay: 300ms
    text: "There are 3 apples and 4 pears."
    usage: {input: 600, output: 20}
alpha:
  - delay: 800ms
    tool_calls:
      - name: send_agent_message
        arguments: {text: "3 apples"}
    usage: {input: 100, output: 10}
  - text: "Sent."
    repeat: true
beta:
  - delay: 800ms
    tool_calls:
      - name: send_agent_message
        arguments: {text: "4 pears"}
    usage: {input: 100, output: 10}
  - text: "Sent."
    repeat: true
`

const fruitAnswer = "There are 3 apples and 4 pears."

// scriptedProject writes a project with the agents alpha and beta and a
// script for the scripted model, and returns its folder and the model to
// pass to --model.
func scriptedProject(t *testing.T, script string) (dir, model string) {
	t.Helper()
	dir = t.TempDir()
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "alpha.md"), "---\nname: alpha\ndescription: Counts apples.\n---\nYou count apples.\n")
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "beta.md"), "---\nname: beta\ndescription: Counts pears.\n---\nYou count pears.\n")
	writeFile(t, filepath.Join(dir, "script.yaml"), script)
	return dir, "scripted:" + filepath.Join(dir, "script.yaml")
}

// When stderr is not a terminal there is no tree: progress is plain lines.
func TestTreeOffWhenNotTerminal(t *testing.T) {
	dir, model := scriptedProject(t, fruitScript)
	res := runBinary(t, dir, nil, "run", "--store", "none", "--approve", "none", "-m", model, "Count the fruit")
	if res.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", res.code, res.stderr)
	}
	if res.stdout != fruitAnswer+"\n" {
		t.Errorf("stdout %q, want the answer alone", res.stdout)
	}
	if strings.ContainsRune(res.stderr, '\x1b') {
		t.Errorf("stderr holds escape sequences:\n%q", res.stderr)
	}
	for _, want := range []string{
		"root ⇢ root/alpha.1 (alpha, sync): Count the apples in the basket.\n",
		"root ⇢ root/beta.1 (beta, sync): Count the pears in the basket.\n",
		"root/alpha.1 done\n",
		"root/beta.1 done\n",
	} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}
	if strings.Contains(res.stderr, "turns ") || strings.Contains(res.stderr, "budget") {
		t.Errorf("stderr shows the tree:\n%s", res.stderr)
	}
}
