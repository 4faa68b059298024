package local

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
)

func text(s string) *cadre.Response {
	return &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: s}, Usage: cadre.Usage{InputTokens: 10, OutputTokens: 10}}
}

func calls(cs ...cadre.ToolCall) *cadre.Response {
	return &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, ToolCalls: cs}, Usage: cadre.Usage{InputTokens: 10, OutputTokens: 10}}
}

func tc(id, name string, args any) cadre.ToolCall {
	b, _ := json.Marshal(args)
	return cadre.ToolCall{ID: id, Name: name, Arguments: string(b)}
}

// lastUser is the content of the last user or tool message of a request.
func lastContent(req *cadre.Request) string {
	if len(req.Messages) == 0 {
		return ""
	}
	return req.Messages[len(req.Messages)-1].Content
}

// defName is the definition part of an agent id ("root/a.1/b.2" -> "b").
func defName(id cadre.AgentID) string {
	s := string(id)
	s = s[strings.LastIndexByte(s, '/')+1:]
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		s = s[:i]
	}
	return s
}

func defs(names ...string) []*cadre.Definition {
	var out []*cadre.Definition
	for _, n := range names {
		out = append(out, &cadre.Definition{Name: n, Description: "the " + n + " agent", Prompt: "You are " + n + ".", Visibility: cadre.VisibilityUserFacing})
	}
	return out
}

// events collects a run's events.
type events struct {
	mu  sync.Mutex
	all []cadre.Event
}

func (e *events) handle(ev cadre.Event) {
	e.mu.Lock()
	e.all = append(e.all, ev)
	e.mu.Unlock()
}

func (e *events) of(t cadre.EventType) []cadre.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []cadre.Event
	for _, ev := range e.all {
		if ev.Type == t {
			out = append(out, ev)
		}
	}
	return out
}

// run starts an engine on task and waits for it with a failsafe.
func runTask(t *testing.T, cfg Config, task string) (*Result, error, *events) {
	t.Helper()
	ev := &events{}
	cfg.Handlers = append(cfg.Handlers, ev.handle)
	r, err := New(cfg).Start(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var (
		res  *Result
		werr error
	)
	go func() { res, werr = r.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Fatalf("run did not finish; tree %+v\n%s", r.Tree(), buf[:n])
	}
	return res, werr, ev
}

// checkNoLeaks fails when goroutines started by the test are still alive.
func checkNoLeaks(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		var n int
		for range 100 {
			n = runtime.NumGoroutine()
			if n <= before {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		buf := make([]byte, 1<<20)
		k := runtime.Stack(buf, true)
		t.Errorf("goroutines leaked: %d before, %d after\n%s", before, n, buf[:k])
	})
}

var _ = fmt.Sprint

// A meeting lets n goroutines wait until all of them have arrived.
type meeting struct {
	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

func newMeeting(n int) *meeting { return &meeting{arrived: n, all: make(chan struct{})} }

// arrive waits until all have arrived, or at most patience, and reports
// whether all did. Inside a synctest bubble the patience runs out only when
// nothing else in the bubble can move: that is, when the others cannot
// arrive while this one waits.
func (m *meeting) arrive(patience time.Duration) bool {
	m.mu.Lock()
	m.arrived--
	if m.arrived == 0 {
		close(m.all)
	}
	m.mu.Unlock()
	t := time.NewTimer(patience)
	defer t.Stop()
	select {
	case <-m.all:
		return true
	case <-t.C:
		return false
	}
}
