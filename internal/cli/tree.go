package cli

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/local"
)

// treeView redraws the live agent tree on a terminal: one line per agent,
// the root's streamed answer below it, and the token budget. It redraws at
// most every interval, in place, and leaves the last frame on screen.
type treeView struct {
	con      *console
	run      *local.Run
	budget   int64
	interval time.Duration

	mu    sync.Mutex
	text  strings.Builder // the root's text of its current reply
	notes []string        // lines worth keeping (failures, limits)
	stop  chan struct{}
	done  chan struct{}
}

func newTreeView(con *console, run *local.Run, budget int64) *treeView {
	v := &treeView{con: con, run: run, budget: budget, interval: 100 * time.Millisecond, stop: make(chan struct{}), done: make(chan struct{})}
	go v.loop()
	return v
}

func (v *treeView) handle(ev cadre.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	str := func(k string) string { s, _ := ev.Data[k].(string); return s }
	switch ev.Type {
	case cadre.EventModelDelta:
		if ev.Agent == cadre.RootID {
			v.text.WriteString(str("text"))
		}
	case cadre.EventModelResponse:
		if ev.Agent == cadre.RootID && ev.Data["tool_calls"] != 0 {
			v.text.Reset()
		}
	case cadre.EventAgentFailed:
		v.note(fmt.Sprintf("%s failed: %s", ev.Agent, clipLine(str("error"), 200)))
	case cadre.EventDepthLimit, cadre.EventAgentLimit, cadre.EventCycleDetected, cadre.EventBudgetExhausted, cadre.EventWarning:
		msg := str("message")
		if msg == "" {
			msg = fmt.Sprint(ev.Data)
		}
		v.note(fmt.Sprintf("%s %s: %s", ev.Agent, ev.Type, clipLine(msg, 200)))
	case cadre.EventSay:
		v.note(str("text"))
	}
}

func (v *treeView) note(s string) {
	v.notes = append(v.notes, s)
	if len(v.notes) > 5 {
		v.notes = v.notes[len(v.notes)-5:]
	}
}

func (v *treeView) loop() {
	defer close(v.done)
	t := time.NewTicker(v.interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			v.draw()
		case <-v.stop:
			v.draw()
			return
		}
	}
}

func (v *treeView) close() {
	close(v.stop)
	<-v.done
	v.con.keep()
}

func (v *treeView) width() int {
	if f, ok := v.con.w.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
			return w
		}
	}
	return 100
}

// frame renders the current state as lines.
func (v *treeView) frame(width int) []string {
	tree := v.run.Tree()
	now := time.Now()
	var lines []string
	for _, a := range tree {
		end := now
		if !a.Ended.IsZero() {
			end = a.Ended
		}
		name := a.Definition
		if a.ID != cadre.RootID {
			name = string(a.ID)[strings.LastIndexByte(string(a.ID), '/')+1:]
		}
		line := fmt.Sprintf("%s%s %s %s  turns %d  %s tok  %s  %s",
			strings.Repeat("  ", a.Depth), statusMark(a.Status), name, a.Status, a.Turns,
			humanTokens(a.Usage.Total()), end.Sub(a.Started).Round(100*time.Millisecond), strings.Join(strings.Fields(a.Task), " "))
		lines = append(lines, fit(line, width))
	}
	v.mu.Lock()
	text := strings.TrimSpace(v.text.String())
	notes := append([]string(nil), v.notes...)
	v.mu.Unlock()
	for _, n := range notes {
		lines = append(lines, fit("! "+n, width))
	}
	if text != "" {
		tl := strings.Split(text, "\n")
		if len(tl) > 8 {
			tl = tl[len(tl)-8:]
		}
		lines = append(lines, "")
		for _, l := range tl {
			lines = append(lines, fit(l, width))
		}
	}
	u := v.run.Usage().Total()
	if v.budget > 0 {
		lines = append(lines, fit(fmt.Sprintf("tokens %s of %s (%d%%)", humanTokens(u), humanTokens(v.budget), u*100/v.budget), width))
	} else {
		lines = append(lines, fmt.Sprintf("tokens %s", humanTokens(u)))
	}
	return lines
}

func (v *treeView) draw() { v.con.draw(v.frame(v.width())) }

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

// fit cuts a line to the terminal width.
func fit(s string, width int) string {
	r := []rune(s)
	if len(r) <= width-1 {
		return s
	}
	return string(r[:width-2]) + "…"
}
