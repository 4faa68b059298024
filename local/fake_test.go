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

// events collects a run's events from its stream (Engine.Events).
type events struct {
	mu   sync.Mutex
	all  []cadre.Event
	done chan struct{} // closed when the stream has ended
	err  error         // the stream's error, if it ended with one
}

// watch collects the events of run id until its stream ends, calling
// onEvent, when not nil, with each, in order. A watcher that falls behind
// fails the test: these runs are small and the tests' buffer large.
func watch(t *testing.T, e *Engine, id string, onEvent func(cadre.Event)) *events {
	t.Helper()
	ev := &events{done: make(chan struct{})}
	go func() {
		defer close(ev.done)
		for e, err := range e.Events(context.Background(), id) {
			if err != nil {
				ev.err = err
				return
			}
			if e.Type == cadre.EventSkipped {
				t.Errorf("the test's watcher fell behind: %+v", e.Data)
			}
			ev.mu.Lock()
			ev.all = append(ev.all, e)
			ev.mu.Unlock()
			if onEvent != nil {
				onEvent(e)
			}
		}
	}()
	return ev
}

// wait waits until the stream has ended.
func (e *events) wait(t *testing.T) {
	t.Helper()
	select {
	case <-e.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the event stream did not end")
	}
	if e.err != nil {
		t.Errorf("the event stream ended with %v", e.err)
	}
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

// data is the payload of e, or the zero payload when it is of another type.
func data[T cadre.Payload](e cadre.Event) T {
	d, _ := e.Data.(T)
	return d
}

// testConfig gives cfg an event buffer no test run fills.
func testConfig(cfg Config) Config {
	if cfg.EventBuffer == 0 {
		cfg.EventBuffer = 1 << 16
	}
	return cfg
}

// runTask starts an engine on task and waits for it with a failsafe,
// collecting its events.
func runTask(t *testing.T, cfg Config, task string) (*cadre.Result, error, *events) {
	t.Helper()
	return runWatched(t, cfg, task, nil)
}

// runWatched is runTask with onEvent called with each event, in order.
func runWatched(t *testing.T, cfg Config, task string, onEvent func(cadre.Event)) (*cadre.Result, error, *events) {
	t.Helper()
	e := New(testConfig(cfg))
	id, err := e.Start(context.Background(), task, cadre.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev := watch(t, e, id, onEvent)
	res, werr := waitRun(t, e, id)
	ev.wait(t)
	return res, werr, ev
}

// waitRun waits for a run with a failsafe.
func waitRun(t *testing.T, e *Engine, id string) (*cadre.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := e.Wait(ctx, id)
	if ctx.Err() != nil {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		tree, _ := e.Tree(context.Background(), id)
		t.Fatalf("run did not finish; tree %+v\n%s", tree, buf[:n])
	}
	return res, err
}

// start starts a run of e on task.
func start(t *testing.T, e *Engine, task string) string {
	t.Helper()
	id, err := e.Start(context.Background(), task, cadre.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// testRun is a run a test started or resumed.
type testRun struct {
	e  *Engine
	id string
}

// begin starts a run of e on task.
func begin(e *Engine, task string) (testRun, error) {
	id, err := e.Start(context.Background(), task, cadre.StartOptions{})
	return testRun{e, id}, err
}

// resumeRun resumes the run id with e.
func resumeRun(e *Engine, id string) (testRun, error) {
	return testRun{e, id}, e.Resume(context.Background(), id)
}

func (r testRun) ID() string { return r.id }

func (r testRun) Wait() (*cadre.Result, error) { return r.e.Wait(context.Background(), r.id) }

func (r testRun) CancelAgent(id cadre.AgentID, reason string) error {
	return r.e.Cancel(context.Background(), r.id, cadre.CancelOptions{Agent: id, Reason: reason})
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
