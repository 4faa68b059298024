package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/cadre-ai/cadre"
)

// treeView redraws the live agent tree on a terminal: one line per agent,
// the root's streamed answer below it, and the token budget.
//
// It looks at the run every interval and redraws, in place, only when the
// frame would change (or the terminal was resized, or a prompt erased it),
// so it writes at most 1/interval frames a second and nothing while the run
// is idle. Every line fits the terminal's width and the frame fits its
// height: a frame taller than the screen could not be erased in place, so
// when the agents do not fit, the root and the most recently active agents
// are shown and a line says how many are hidden. The last frame stays on
// screen.
type treeView struct {
	con      *console
	src      treeSource
	run      string
	budget   int64
	interval time.Duration
	now      func() time.Time
	// size is the terminal's width and height in cells.
	size func() (width, height int)

	mu      sync.Mutex
	text    strings.Builder // the root's text of its latest reply
	replied bool            // the root's latest reply has ended; the next delta starts a new one
	notes   []string        // lines worth keeping (failures, limits)

	// Owned by the drawing goroutine.
	last       []string // the frame last drawn
	lastW      int
	lastH      int
	stop, done chan struct{}
}

// treeSource is what the view reads a run's agents from; a cadre.Engine
// is one.
type treeSource interface {
	Tree(ctx context.Context, run string) (*cadre.Tree, error)
}

// The size of a terminal whose size cannot be read, and the smallest the
// view draws for.
const (
	defaultTreeWidth, defaultTreeHeight = 100, 24
	minTreeWidth, minTreeHeight         = 20, 4
	// maxTreeText is how many rows of the root's answer a frame shows.
	maxTreeText = 8
	// maxTreeNotes is how many notes (failures, limits) are kept.
	maxTreeNotes = 5
	// minTreeTask is the fewest cells an agent's task gets before its
	// line leaves out the turns and tokens.
	minTreeTask = 20
)

// makeTreeView returns a view that collects events but draws nothing until
// it is started.
func makeTreeView(con *console, budget int64) *treeView {
	v := &treeView{con: con, budget: budget, interval: 100 * time.Millisecond, now: time.Now,
		stop: make(chan struct{}), done: make(chan struct{})}
	v.size = v.termSize
	return v
}

func (v *treeView) handle(ev cadre.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch d := ev.Data.(type) {
	case cadre.ModelDelta:
		if ev.Agent == cadre.RootID {
			if v.replied || d.Restart {
				v.text.Reset()
				v.replied = false
			}
			if d.Restart {
				// The text so far is void; the new reply follows the note.
				v.text.WriteString(replyRestarted + "\n")
			}
			v.text.WriteString(d.Text)
		}
		return
	case cadre.ModelResponse:
		if ev.Agent == cadre.RootID {
			// The text stays on screen, while children work, until the
			// root's next reply starts.
			v.replied = true
		}
		return
	}
	if n := describeEvent(ev).Note; n != "" {
		v.note(n)
	}
}

func (v *treeView) note(s string) {
	v.notes = append(v.notes, s)
	if len(v.notes) > maxTreeNotes {
		v.notes = v.notes[len(v.notes)-maxTreeNotes:]
	}
}

// start draws the run's agents, read from src, until the view is closed.
func (v *treeView) start(src treeSource, run string) {
	v.src, v.run = src, run
	go v.loop()
}

func (v *treeView) loop() {
	defer close(v.done)
	t := time.NewTicker(v.interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			v.tick()
		case <-v.stop:
			v.final()
			return
		}
	}
}

// close draws the last frame and leaves it on screen. The view must have
// been started.
func (v *treeView) close() {
	close(v.stop)
	<-v.done
	v.con.keep()
}

// termSize reads the size of the terminal the console writes to.
func (v *treeView) termSize() (int, int) {
	if f := terminalFile(v.con.w); f != nil {
		// A terminal may report a size of zero (a serial console, some
		// containers): the defaults are better than a frame of nothing.
		if w, h, err := term.GetSize(int(f.Fd())); err == nil && w > 0 && h > 0 {
			return w, h
		}
	}
	return defaultTreeWidth, defaultTreeHeight
}

// snapshot is what the next frame shows.
func (v *treeView) snapshot(final bool) treeFrame {
	w, h := v.size()
	f := treeFrame{Now: v.now(), Budget: v.budget, Width: w, Height: h}
	if t, err := v.src.Tree(context.Background(), v.run); err == nil {
		f.Agents, f.Used, f.Cost = t.Agents, t.Usage.Total(), t.Cost
	}
	v.mu.Lock()
	if !final {
		// The last frame leaves the answer out: it is printed on stdout next.
		f.Text = v.text.String()
	}
	f.Notes = slices.Clone(v.notes)
	v.mu.Unlock()
	return f
}

// tick redraws the frame if it changed, the terminal was resized, or the
// frame is no longer on screen (a prompt erased it). While a prompt holds
// the terminal it does nothing.
func (v *treeView) tick() {
	f := v.snapshot(false)
	lines := f.render()
	if !v.con.mu.TryLock() {
		return // something is being written; the next tick draws
	}
	shown, open := v.con.frame == len(v.last), v.con.open
	v.con.mu.Unlock()
	if open {
		return // a prompt is open; the frame is redrawn when it is answered
	}
	if shown && f.Width == v.lastW && f.Height == v.lastH && slices.Equal(lines, v.last) {
		return
	}
	v.draw(lines, f)
}

// final draws the last frame whatever it was before.
func (v *treeView) final() {
	f := v.snapshot(true)
	v.draw(f.render(), f)
}

func (v *treeView) draw(lines []string, f treeFrame) {
	v.con.draw(lines)
	v.last, v.lastW, v.lastH = lines, f.Width, f.Height
}

// treeFrame is one frame's worth of a run: a snapshot of its agents and
// what the view collected from its events.
type treeFrame struct {
	Agents []cadre.AgentInfo // in creation order, as Engine.Tree gives them
	Now    time.Time
	Used   int64   // tokens used by the whole tree
	Cost   float64 // what the tree's model calls cost, at the configured prices
	Budget int64   // the token budget; 0 or less means none
	Text   string
	Notes  []string
	Width  int // terminal cells
	Height int // terminal rows
}

// render lays the frame out in lines that fit Width, and at most Height-1
// of them, so that the cursor, on the row below the frame, can still reach
// the frame's first line to erase it.
func (f treeFrame) render() []string {
	width, height := max(f.Width, minTreeWidth), max(f.Height, minTreeHeight)
	cols := width - 1 // a line filling the last column may wrap on some terminals
	rows := height - 1

	agents := treeOrder(f.Agents)
	budget := fitWidth(f.budgetLine(), cols)

	// The budget line and the root are always shown; the answer, the
	// notes and the other agents share the rest.
	rest := rows - 1
	if len(agents) > 0 {
		rest--
	}
	var text []string
	for _, l := range strings.Split(strings.TrimSpace(f.Text), "\n") {
		text = append(text, wrapWidth(sanitize(l), cols)...)
	}
	if strings.TrimSpace(f.Text) == "" {
		text = nil
	}
	textRows := min(len(text), maxTreeText, max(rest/3-1, 0))
	if textRows > 0 {
		text = text[len(text)-textRows:]
		rest -= textRows + 1 // and a blank line above it
	} else {
		text = nil
	}
	notes := f.Notes
	if n := min(len(notes), max(rest/4, 0)); n < len(notes) {
		notes = notes[len(notes)-n:]
	}
	rest -= len(notes)

	shown, hidden := chooseAgents(agents, max(rest, 0))
	var lines []string
	nameCol := 0
	for _, a := range shown {
		nameCol = max(nameCol, displayWidth(agentLabel(a)))
	}
	nameCol = min(nameCol, cols/3)
	// On a narrow terminal the turns and tokens make way for the task.
	compact := false
	for _, a := range shown {
		if cols-displayWidth(f.agentStats(a, nameCol, false)) < minTreeTask {
			compact = true
		}
	}
	for _, a := range shown {
		line := f.agentStats(a, nameCol, compact) + sanitize(strings.Join(strings.Fields(a.Task), " "))
		lines = append(lines, fitWidth(line, cols))
	}
	if len(hidden) > 0 {
		lines = append(lines, fitWidth(hiddenLine(hidden), cols))
	}
	for _, n := range notes {
		lines = append(lines, fitWidth("! "+sanitize(n), cols))
	}
	if len(text) > 0 {
		lines = append(lines, "")
		lines = append(lines, text...)
	}
	lines = append(lines, budget)
	if len(lines) > rows {
		// A terminal too small for even the root and the budget.
		lines = append(lines[:rows-1], budget)
	}
	return lines
}

// agentLabel is the indented mark and name of an agent: its definition,
// with the number of its ID ("researcher.2").
func agentLabel(a cadre.AgentInfo) string {
	name := a.Definition
	if a.ID != cadre.RootID {
		seg := string(a.ID)[strings.LastIndexByte(string(a.ID), '/')+1:]
		if name == "" || strings.HasPrefix(seg, name+".") {
			name = seg
		} else {
			name = seg + " (" + name + ")"
		}
	} else if name == "" {
		name = string(cadre.RootID)
	} else if name != string(cadre.RootID) {
		name = string(cadre.RootID) + " (" + name + ")"
	}
	return strings.Repeat("  ", a.Depth) + statusMark(a.Status) + " " + sanitize(name)
}

// agentStats is an agent's line up to its task: its label, padded to
// nameCol, its status, turns, tokens and elapsed time. Compact leaves out
// the turns and tokens.
func (f treeFrame) agentStats(a cadre.AgentInfo, nameCol int, compact bool) string {
	end := f.Now
	if !a.Ended.IsZero() {
		end = a.Ended
	}
	label := agentLabel(a)
	pad := strings.Repeat(" ", max(nameCol-displayWidth(label), 0))
	if compact {
		return fmt.Sprintf("%s%s  %-9s  %5s  ", label, pad, a.Status, elapsedText(end.Sub(a.Started)))
	}
	cost := ""
	if a.Cost != 0 {
		cost = " " + costText(a.Cost)
	}
	return fmt.Sprintf("%s%s  %-9s  turns %-2d %5s tok%s  %5s  ",
		label, pad, a.Status, a.Turns, humanTokens(a.Usage.Total()), cost, elapsedText(end.Sub(a.Started)))
}

func (f treeFrame) budgetLine() string {
	line := fmt.Sprintf("tokens %s (no budget)", humanTokens(f.Used))
	if f.Budget > 0 {
		line = fmt.Sprintf("tokens %s of %s budget (%d%%)", humanTokens(f.Used), humanTokens(f.Budget), f.Used*100/f.Budget)
	}
	if f.Cost != 0 {
		line += ", cost " + costText(f.Cost)
	}
	return line
}

// hiddenLine says how many agents a frame leaves out, by status.
func hiddenLine(hidden []cadre.AgentInfo) string {
	count := map[cadre.Status]int{}
	for _, a := range hidden {
		count[a.Status]++
	}
	var parts []string
	for _, st := range []cadre.Status{cadre.StatusRunning, cadre.StatusWaiting, cadre.StatusQueued, cadre.StatusDone, cadre.StatusFailed, cadre.StatusCancelled} {
		if n := count[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	// There are always two or more: a hidden agent's row says so.
	return fmt.Sprintf("… %d more agents not shown: %s", len(hidden), strings.Join(parts, ", "))
}

// treeOrder puts agents in tree order: each agent below its parent, after
// its older siblings and their descendants. Agents whose parent is not in
// the list follow, in the order given.
func treeOrder(agents []cadre.AgentInfo) []cadre.AgentInfo {
	known := make(map[cadre.AgentID]bool, len(agents))
	for _, a := range agents {
		known[a.ID] = true
	}
	children := map[cadre.AgentID][]int{}
	var tops []int
	for i, a := range agents {
		if a.ID != cadre.RootID && known[a.Parent] && a.Parent != a.ID {
			children[a.Parent] = append(children[a.Parent], i)
		} else {
			tops = append(tops, i)
		}
	}
	out := make([]cadre.AgentInfo, 0, len(agents))
	seen := make([]bool, len(agents))
	var walk func(i int)
	walk = func(i int) {
		if seen[i] {
			return
		}
		seen[i] = true
		out = append(out, agents[i])
		for _, c := range children[agents[i].ID] {
			walk(c)
		}
	}
	for _, i := range tops {
		walk(i)
	}
	return out
}

// chooseAgents keeps the first agent (the root) and, when the rest do not
// fit in rows, the most recently active of them, leaving a row to say how
// many are hidden. Running agents come first, then waiting, then queued,
// then those that ended, latest first. The agents kept stay in the order
// given.
func chooseAgents(agents []cadre.AgentInfo, rows int) (shown, hidden []cadre.AgentInfo) {
	if len(agents) <= 1+rows {
		return agents, nil
	}
	keep := max(rows-1, 0) // one row says how many are hidden
	rank := func(s cadre.Status) int {
		switch s {
		case cadre.StatusRunning:
			return 0
		case cadre.StatusWaiting:
			return 1
		case cadre.StatusQueued:
			return 2
		}
		return 3
	}
	idx := make([]int, 0, len(agents)-1)
	for i := 1; i < len(agents); i++ {
		idx = append(idx, i)
	}
	slices.SortStableFunc(idx, func(i, j int) int {
		a, b := agents[i], agents[j]
		if ra, rb := rank(a.Status), rank(b.Status); ra != rb {
			return ra - rb
		}
		if !a.Ended.Equal(b.Ended) {
			return b.Ended.Compare(a.Ended)
		}
		return b.Started.Compare(a.Started)
	})
	keepSet := make([]bool, len(agents))
	keepSet[0] = true
	for _, i := range idx[:keep] {
		keepSet[i] = true
	}
	for i, a := range agents {
		if keepSet[i] {
			shown = append(shown, a)
		} else {
			hidden = append(hidden, a)
		}
	}
	return shown, hidden
}

// elapsedText is a duration as the tree shows it: tenths of a second below
// ten seconds, then whole seconds, minutes and hours.
func elapsedText(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
	case d >= time.Hour:
		d = d.Truncate(time.Minute)
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		d = d.Truncate(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d >= 10*time.Second:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return fmt.Sprintf("%.1fs", d.Truncate(100*time.Millisecond).Seconds())
}

func statusMark(s cadre.Status) string {
	switch s {
	case cadre.StatusQueued:
		return "…"
	case cadre.StatusRunning:
		return "▶"
	case cadre.StatusWaiting:
		return "⏸"
	case cadre.StatusDone:
		return "✓"
	case cadre.StatusFailed:
		return "✗"
	case cadre.StatusCancelled:
		return "⊘"
	case cadre.StatusInterrupted:
		return "⚠"
	}
	return "?"
}

func humanTokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// sanitize makes text from a model or a user safe to draw: tabs become
// spaces and other control characters (escape sequences, carriage
// returns) are dropped, so they cannot move the cursor.
func sanitize(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return ' '
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, s)
}

// sanitizeLines is sanitize for text of several lines: it keeps the line
// ends.
func sanitizeLines(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\n' }) {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n':
			return r
		case r == '\t':
			return ' '
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, s)
}

// fitWidth cuts s to at most width terminal cells, ending it with … when
// cut.
func fitWidth(s string, width int) string {
	if displayWidth(s) <= width {
		return s
	}
	n := 0
	for i, r := range s {
		w := runeWidth(r)
		if n+w > width-1 {
			return s[:i] + "…"
		}
		n += w
	}
	return s
}

// wrapWidth cuts s into lines of at most width cells. An empty s is one
// empty line.
func wrapWidth(s string, width int) []string {
	var out []string
	for {
		if displayWidth(s) <= width {
			return append(out, s)
		}
		n, cut := 0, len(s)
		for i, r := range s {
			w := runeWidth(r)
			if n+w > width {
				cut = i
				break
			}
			n += w
		}
		if cut == 0 { // a character wider than the line
			_, cut = utf8.DecodeRuneInString(s)
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
}

// displayWidth is how many terminal cells s takes.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// runeWidth is how many terminal cells r takes: 0 for combining marks and
// zero-width characters, 2 for East Asian wide and fullwidth characters and
// most emoji, 1 for the rest (ambiguous-width characters count as 1, as
// terminals outside East Asian locales draw them).
func runeWidth(r rune) int {
	switch {
	case r < 0x300:
		if r < 0x20 || (r >= 0x7f && r < 0xa0) {
			return 0
		}
		return 1
	case r == 0x200b || r == 0x200c || r == 0x200d || r == 0x2060 || r == 0xfeff,
		r >= 0xfe00 && r <= 0xfe0f,
		unicode.In(r, unicode.Mn, unicode.Me):
		return 0
	}
	for _, rg := range wideRunes {
		if r < rg[0] {
			return 1
		}
		if r <= rg[1] {
			return 2
		}
	}
	return 1
}

// wideRunes are the ranges of East Asian wide and fullwidth characters and
// of emoji drawn two cells wide, in order.
var wideRunes = [...][2]rune{
	{0x1100, 0x115f},   // Hangul Jamo initials
	{0x231a, 0x231b},   // watch, hourglass
	{0x2329, 0x232a},   // angle brackets
	{0x23e9, 0x23ec},   // media buttons
	{0x23f0, 0x23f0},   // alarm clock
	{0x23f3, 0x23f3},   // hourglass
	{0x25fd, 0x25fe},   // small squares
	{0x2614, 0x2615},   // umbrella, hot beverage
	{0x2648, 0x2653},   // zodiac
	{0x267f, 0x267f},   // wheelchair
	{0x2693, 0x2693},   // anchor
	{0x26a1, 0x26a1},   // high voltage
	{0x26aa, 0x26ab},   // circles
	{0x26bd, 0x26be},   // balls
	{0x26c4, 0x26c5},   // snowman, sun
	{0x26ce, 0x26ce},   // ophiuchus
	{0x26d4, 0x26d4},   // no entry
	{0x26ea, 0x26ea},   // church
	{0x26f2, 0x26f3},   // fountain, golf
	{0x26f5, 0x26f5},   // sailboat
	{0x26fa, 0x26fa},   // tent
	{0x26fd, 0x26fd},   // fuel pump
	{0x2705, 0x2705},   // check mark button
	{0x270a, 0x270b},   // fists
	{0x2728, 0x2728},   // sparkles
	{0x274c, 0x274c},   // cross mark
	{0x274e, 0x274e},   // cross mark button
	{0x2753, 0x2755},   // question marks
	{0x2757, 0x2757},   // exclamation mark
	{0x2795, 0x2797},   // plus, minus, divide
	{0x27b0, 0x27b0},   // curly loop
	{0x27bf, 0x27bf},   // double curly loop
	{0x2b1b, 0x2b1c},   // large squares
	{0x2b50, 0x2b50},   // star
	{0x2b55, 0x2b55},   // circle
	{0x2e80, 0x303e},   // CJK radicals, punctuation
	{0x3041, 0x33ff},   // kana, CJK compatibility
	{0x3400, 0x4dbf},   // CJK extension A
	{0x4e00, 0x9fff},   // CJK unified ideographs
	{0xa000, 0xa4cf},   // Yi
	{0xa960, 0xa97f},   // Hangul Jamo extended
	{0xac00, 0xd7a3},   // Hangul syllables
	{0xf900, 0xfaff},   // CJK compatibility ideographs
	{0xfe10, 0xfe19},   // vertical forms
	{0xfe30, 0xfe6f},   // CJK compatibility forms, small forms
	{0xff00, 0xff60},   // fullwidth forms
	{0xffe0, 0xffe6},   // fullwidth signs
	{0x16fe0, 0x16fe4}, // ideographic symbols
	{0x17000, 0x18cff}, // Tangut, Khitan
	{0x1b000, 0x1b2ff}, // kana supplements, Nushu
	{0x1f004, 0x1f004}, // mahjong tile
	{0x1f0cf, 0x1f0cf}, // joker
	{0x1f18e, 0x1f18e}, // AB button
	{0x1f191, 0x1f19a}, // squared words
	{0x1f200, 0x1f2ff}, // enclosed ideographs
	{0x1f300, 0x1f64f}, // pictographs, emoticons
	{0x1f680, 0x1f6ff}, // transport and map
	{0x1f7e0, 0x1f7eb}, // large coloured shapes
	{0x1f900, 0x1f9ff}, // supplemental pictographs
	{0x1fa70, 0x1faff}, // symbols and pictographs extended-A
	{0x20000, 0x3fffd}, // CJK extensions B and later
}
