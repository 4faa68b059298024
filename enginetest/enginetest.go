// Package enginetest is the conformance suite for cadre.Engine
// implementations: it holds an engine to the contract written in package
// cadre's documentation, through the interface alone. The local engine
// passes it, and an engine written elsewhere uses it the same way:
//
//	func TestConformance(t *testing.T) {
//		enginetest.Run(t, func(t *testing.T, s enginetest.Setup) cadre.Engine {
//			return myengine.New(myengine.Config{Model: s.Model, Definitions: s.Definitions, Limits: s.Limits})
//		})
//	}
//
// Run calls newEngine once per subtest. Every agent of the runs it starts
// uses Setup.Model, a scripted model whose replies the subtests choose;
// an engine that keeps runs durably should give each engine a store of its
// own. Subtests have stable names (Complete, CancelAgent, …) for -run.
//
// What the suite checks:
//
//   - a run completes with the root's answer, every agent in the Result and
//     the Tree, parents before children;
//   - StartOptions.ID names the run;
//   - the run outlives the context given to Start, and Wait gives up with
//     its own context without ending the run;
//   - the event stream starts with run_started, ends with run_completed or
//     run_failed and then ends; every event names the run; agent_spawned
//     comes before the child's events, a child's end before its parent's,
//     and stored events' Seqs increase; two watchers read the same events;
//   - each child's report reaches its parent once;
//   - Cancel of an agent stops exactly its subtree, deepest first, and the
//     run completes; Cancel of the run ends it as cancelled with a
//     *cadre.RunError; Abort ends a run whose calls hang; cancelling a run
//     that has ended wraps cadre.ErrNotRunning;
//   - an unknown run is an error wrapping cadre.ErrNotFound, from Wait,
//     Cancel, Tree and Events alike.
package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/model/scripted"
)

// Setup is what an engine under test is made from.
type Setup struct {
	// Model is the model of every agent.
	Model cadre.Model
	// Definitions are the subagents the root may spawn.
	Definitions []*cadre.Definition
	// Limits are the run's limits.
	Limits cadre.Limits
}

// Timeout bounds each wait of the suite: a run that has not ended by then
// is reported as stuck. It is a failsafe, never a measure of speed.
const Timeout = 60 * time.Second

// Run runs the suite against the engines newEngine makes.
func Run(t *testing.T, newEngine func(t *testing.T, s Setup) cadre.Engine) {
	s := suite{newEngine: newEngine}
	for _, st := range []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"Complete", s.complete},
		{"StartID", s.startID},
		{"StartContext", s.startContext},
		{"WaitContext", s.waitContext},
		{"Watchers", s.watchers},
		{"CancelAgent", s.cancelAgent},
		{"CancelRun", s.cancelRun},
		{"Abort", s.abort},
		{"Unknown", s.unknown},
	} {
		t.Run(st.name, st.fn)
	}
}

type suite struct {
	newEngine func(t *testing.T, s Setup) cadre.Engine
}

// definitions returns user-facing definitions of the given names.
func definitions(names ...string) []*cadre.Definition {
	var out []*cadre.Definition
	for _, n := range names {
		out = append(out, &cadre.Definition{Name: n, Description: "The " + n + " agent.", Prompt: "You are " + n + ".", Visibility: cadre.VisibilityUserFacing})
	}
	return out
}

func reply(text string) *cadre.Response {
	return &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: text}, Usage: cadre.Usage{InputTokens: 10, OutputTokens: 5}}
}

func call(id, tool string, args map[string]string) cadre.ToolCall {
	b, _ := json.Marshal(args)
	return cadre.ToolCall{ID: id, Name: tool, Arguments: string(b)}
}

func calls(cs ...cadre.ToolCall) *cadre.Response {
	return &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, ToolCalls: cs}, Usage: cadre.Usage{InputTokens: 10, OutputTokens: 5}}
}

// lastText is the content of a request's last message.
func lastText(req *cadre.Request) string {
	if len(req.Messages) == 0 {
		return ""
	}
	return req.Messages[len(req.Messages)-1].Content
}

// start starts a run and fails the test if it cannot.
func start(t *testing.T, e cadre.Engine, task string) string {
	t.Helper()
	id, err := e.Start(t.Context(), task, cadre.StartOptions{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if id == "" {
		t.Fatal("Start returned an empty run ID")
	}
	return id
}

// wait waits for a run with the suite's failsafe.
func wait(t *testing.T, e cadre.Engine, id string) (*cadre.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	res, err := e.Wait(ctx, id)
	if ctx.Err() != nil {
		tree, _ := e.Tree(context.Background(), id)
		t.Fatalf("run %s did not end within %s; its agents: %+v", id, Timeout, tree)
	}
	return res, err
}

// watcher collects a run's events from its stream.
type watcher struct {
	mu   sync.Mutex
	evs  []cadre.Event
	err  error
	done chan struct{}
}

func watch(e cadre.Engine, id string) *watcher {
	w := &watcher{done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ev, err := range e.Events(context.Background(), id) {
			w.mu.Lock()
			if err != nil {
				w.err = err
				w.mu.Unlock()
				return
			}
			w.evs = append(w.evs, ev)
			w.mu.Unlock()
		}
	}()
	return w
}

// all waits for the stream to end and returns its events.
func (w *watcher) all(t *testing.T) []cadre.Event {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(Timeout):
		t.Fatalf("the event stream did not end within %s of the run", Timeout)
	}
	if w.err != nil {
		t.Fatalf("the event stream ended with an error: %v", w.err)
	}
	return w.evs
}

// index returns the position of the first event for which ok holds, or -1.
func index(evs []cadre.Event, ok func(cadre.Event) bool) int {
	return slices.IndexFunc(evs, ok)
}

func is(t cadre.EventType, agent cadre.AgentID) func(cadre.Event) bool {
	return func(e cadre.Event) bool { return e.Type == t && e.Agent == agent }
}

func ended(agent cadre.AgentID) func(cadre.Event) bool {
	return func(e cadre.Event) bool {
		return e.Agent == agent && (e.Type == cadre.EventAgentCompleted || e.Type == cadre.EventAgentFailed || e.Type == cadre.EventAgentCancelled)
	}
}

// checkStream checks what every run's events must be: the run's first and
// last events, the run named by each, causal order of spawns and ends,
// increasing Seqs, and the stream ending after the last.
func checkStream(t *testing.T, id string, evs []cadre.Event, agents []cadre.AgentInfo) {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("the run's event stream was empty")
	}
	if evs[0].Type != cadre.EventRunStarted {
		t.Errorf("the first event is %s, want run_started", evs[0].Type)
	}
	if last := evs[len(evs)-1].Type; last != cadre.EventRunCompleted && last != cadre.EventRunFailed {
		t.Errorf("the last event is %s, want run_completed or run_failed", last)
	}
	var seq int64
	for i, e := range evs {
		if e.Run != id {
			t.Errorf("event %d (%s) names run %q, want %q", i, e.Type, e.Run, id)
		}
		if e.Type == cadre.EventSkipped {
			t.Errorf("a watcher that keeps up was told it skipped events: %+v", e.Data)
		}
		if e.Data != nil && e.Data.EventType() != e.Type {
			t.Errorf("event %d is a %s with the payload of a %s", i, e.Type, e.Data.EventType())
		}
		if e.Seq != 0 {
			if e.Seq <= seq {
				t.Errorf("event %d (%s) has Seq %d after Seq %d", i, e.Type, e.Seq, seq)
			}
			seq = e.Seq
		}
	}
	for _, a := range agents {
		if a.Parent == "" {
			continue
		}
		spawned := index(evs, is(cadre.EventAgentSpawned, a.ID))
		first := index(evs, func(e cadre.Event) bool { return e.Agent == a.ID && e.Type != cadre.EventAgentSpawned })
		if spawned < 0 || first >= 0 && first < spawned {
			t.Errorf("%s: agent_spawned at %d, its first other event at %d", a.ID, spawned, first)
		}
		if child, parent := index(evs, ended(a.ID)), index(evs, ended(a.Parent)); child < 0 || parent < 0 || child > parent {
			t.Errorf("%s ends at event %d, its parent %s at %d: children end first", a.ID, child, a.Parent, parent)
		}
	}
}

// complete: the root spawns two workers in one reply; each reports; the
// root answers with both reports.
func (s suite) complete(t *testing.T) {
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch scripted.DefinitionName(req.Agent) {
		case "root":
			if req.Turn == 1 {
				return calls(call("a", loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": "count the apples"}),
					call("b", loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": "count the pears"})), nil
			}
			var got []string
			for _, msg := range req.Messages {
				if msg.Role == cadre.RoleTool {
					got = append(got, msg.Content)
				}
			}
			return reply("done: " + strings.Join(got, ", ")), nil
		case "worker":
			if req.Turn == 1 {
				return calls(call("r", loop.ToolSendAgentMessage, map[string]string{"text": "did " + req.Messages[0].Content})), nil
			}
			return reply("reported"), nil
		}
		return nil, fmt.Errorf("no reply for %s", req.Agent)
	})
	e := s.newEngine(t, Setup{Model: m, Definitions: definitions("worker")})
	id := start(t, e, "count the fruit")
	w := watch(e, id)
	res, err := wait(t, e, id)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if res.Status != cadre.StatusDone || res.Answer != "done: did count the apples, did count the pears" || res.RunID != id {
		t.Errorf("result: run %q, status %s, answer %q", res.RunID, res.Status, res.Answer)
	}
	if len(res.Agents) != 3 {
		t.Fatalf("the result has %d agents, want 3: %+v", len(res.Agents), res.Agents)
	}
	for _, a := range res.Agents {
		if a.Status != cadre.StatusDone {
			t.Errorf("agent %s ended %s, want done", a.ID, a.Status)
		}
	}
	tree, err := e.Tree(t.Context(), id)
	if err != nil {
		t.Fatalf("Tree: %v", err)
	}
	if len(tree.Agents) != 3 || tree.Agents[0].ID != cadre.RootID || tree.Usage.Total() == 0 {
		t.Errorf("tree after the end: %d agents, first %q, usage %+v", len(tree.Agents), firstID(tree.Agents), tree.Usage)
	}
	for i, a := range tree.Agents {
		if a.Parent != "" && !slices.ContainsFunc(tree.Agents[:i], func(p cadre.AgentInfo) bool { return p.ID == a.Parent }) {
			t.Errorf("the tree lists %s before its parent %s", a.ID, a.Parent)
		}
	}
	evs := w.all(t)
	checkStream(t, id, evs, res.Agents)
	reports := map[cadre.AgentID]int{}
	for _, e := range evs {
		if r, ok := e.Data.(cadre.AgentReported); ok {
			reports[r.Child]++
		}
	}
	for _, a := range res.Agents {
		if a.ID != cadre.RootID && reports[a.ID] != 1 {
			t.Errorf("the report of %s reached its parent %d times, want once", a.ID, reports[a.ID])
		}
	}
}

func firstID(agents []cadre.AgentInfo) cadre.AgentID {
	if len(agents) == 0 {
		return ""
	}
	return agents[0].ID
}

func (s suite) startID(t *testing.T) {
	e := s.newEngine(t, Setup{Model: scripted.Func(func(context.Context, *cadre.Request) (*cadre.Response, error) {
		return reply("named"), nil
	})})
	const want = "enginetest-named-run"
	id, err := e.Start(t.Context(), "answer", cadre.StartOptions{ID: want})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if id != want {
		t.Errorf("Start with ID %q returned %q", want, id)
	}
	if res, err := wait(t, e, want); err != nil || res.RunID != want {
		t.Errorf("Wait(%q): %v, %+v", want, err, res)
	}
}

// startContext: the run goes on after the context given to Start ends.
func (s suite) startContext(t *testing.T) {
	release := make(chan struct{})
	e := s.newEngine(t, Setup{Model: scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		select {
		case <-release:
			return reply("still here"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})})
	ctx, cancel := context.WithCancel(context.Background())
	id, err := e.Start(ctx, "outlive the caller", cadre.StartOptions{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	cancel()
	close(release)
	res, err := wait(t, e, id)
	if err != nil || res.Answer != "still here" {
		t.Errorf("a run whose Start context ended: %v, %+v", err, res)
	}
}

// waitContext: Wait returns when its context ends; the run goes on.
func (s suite) waitContext(t *testing.T) {
	release := make(chan struct{})
	e := s.newEngine(t, Setup{Model: scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		select {
		case <-release:
			return reply("finished later"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})})
	id := start(t, e, "take a while")
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("the caller stopped waiting")
	cancel(cause)
	if res, err := e.Wait(ctx, id); !errors.Is(err, cause) || res != nil {
		t.Errorf("Wait with an ended context: %+v, %v; want no result and %v", res, err, cause)
	}
	close(release)
	if res, err := wait(t, e, id); err != nil || res.Answer != "finished later" {
		t.Errorf("the run after a Wait gave up: %v, %+v", err, res)
	}
}

// watchers: two watchers of one run read the same events.
func (s suite) watchers(t *testing.T) {
	release := make(chan struct{})
	e := s.newEngine(t, Setup{Model: scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		<-release
		return reply("seen twice"), nil
	})})
	id := start(t, e, "be watched")
	a, b := watch(e, id), watch(e, id)
	close(release)
	res, err := wait(t, e, id)
	if err != nil {
		t.Fatal(err)
	}
	ea, eb := a.all(t), b.all(t)
	checkStream(t, id, ea, res.Agents)
	// Events that are not stored (model_delta) reach a watcher only while
	// it reads live; one that reads the end from the store has none of
	// them. The stored ones are the same for every watcher.
	ea, eb = withoutDeltas(ea), withoutDeltas(eb)
	if len(ea) != len(eb) {
		t.Fatalf("one watcher read %d events, the other %d", len(ea), len(eb))
	}
	for i := range ea {
		if ea[i].Type != eb[i].Type || ea[i].Seq != eb[i].Seq || ea[i].Agent != eb[i].Agent {
			t.Errorf("event %d: one watcher read %s %d, the other %s %d", i, ea[i].Type, ea[i].Seq, eb[i].Type, eb[i].Seq)
		}
	}
}

// withoutDeltas returns the events of evs but the model's streamed text.
func withoutDeltas(evs []cadre.Event) []cadre.Event {
	var out []cadre.Event
	for _, ev := range evs {
		if ev.Type != cadre.EventModelDelta {
			out = append(out, ev)
		}
	}
	return out
}

// cancelAgent: the root starts middle and other in the background; middle
// spawns leaf. While leaf's model call is in flight, middle is cancelled:
// middle and leaf end cancelled, leaf first; other and the root complete.
func (s suite) cancelAgent(t *testing.T) {
	leafCalled := make(chan struct{}, 1)
	cancelled := make(chan struct{})
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch scripted.DefinitionName(req.Agent) {
		case "root":
			if req.Turn == 1 {
				return calls(call("m", loop.ToolStartBackground, map[string]string{"agent": "middle", "prompt": "delegate"}),
					call("o", loop.ToolStartBackground, map[string]string{"agent": "other", "prompt": "work"})), nil
			}
			return reply("root saw " + lastText(req)), nil
		case "middle":
			if req.Turn == 1 {
				return calls(call("l", loop.ToolSpawnAgent, map[string]string{"agent": "leaf", "task": "wait"})), nil
			}
			return reply("middle went on after it was cancelled"), nil
		case "leaf":
			leafCalled <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		case "other":
			if req.Turn == 1 {
				<-cancelled
				return calls(call("r", loop.ToolSendAgentMessage, map[string]string{"text": "other finished"})), nil
			}
			return reply("sent"), nil
		}
		return nil, fmt.Errorf("no reply for %s", req.Agent)
	})
	e := s.newEngine(t, Setup{Model: m, Definitions: definitions("middle", "leaf", "other")})
	id := start(t, e, "cancel a subtree")
	w := watch(e, id)
	select {
	case <-leafCalled:
	case <-time.After(Timeout):
		t.Fatal("the leaf never made its model call")
	}
	const middle, leaf, other = cadre.AgentID("root/middle.1"), cadre.AgentID("root/middle.1/leaf.1"), cadre.AgentID("root/other.1")
	if err := e.Cancel(t.Context(), id, cadre.CancelOptions{Agent: middle, Reason: "not needed"}); err != nil {
		t.Fatalf("Cancel(%s): %v", middle, err)
	}
	close(cancelled)
	res, err := wait(t, e, id)
	if err != nil {
		t.Fatalf("the run after an agent's cancellation: %v", err)
	}
	status := map[cadre.AgentID]cadre.Status{}
	for _, a := range res.Agents {
		status[a.ID] = a.Status
	}
	for id, want := range map[cadre.AgentID]cadre.Status{cadre.RootID: cadre.StatusDone, middle: cadre.StatusCancelled, leaf: cadre.StatusCancelled, other: cadre.StatusDone} {
		if status[id] != want {
			t.Errorf("%s ended %s, want %s", id, status[id], want)
		}
	}
	evs := w.all(t)
	checkStream(t, id, evs, res.Agents)
	var order []cadre.AgentID
	for _, e := range evs {
		if e.Type == cadre.EventAgentCancelled {
			order = append(order, e.Agent)
		}
	}
	if !slices.Equal(order, []cadre.AgentID{leaf, middle}) {
		t.Errorf("agent_cancelled events for %v, want the leaf, then the middle agent", order)
	}
	if err := e.Cancel(t.Context(), id, cadre.CancelOptions{Agent: leaf}); err == nil {
		t.Errorf("cancelling %s after the run ended succeeded, want an error", leaf)
	}
}

// hanging is a model whose calls last until they are aborted; started
// receives one value per call.
func hanging(started chan<- struct{}) *scripted.Model {
	return scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if scripted.DefinitionName(req.Agent) == "root" && req.Turn == 1 {
			return calls(call("w", loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": "hang"})), nil
		}
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
}

// cancelRun: cancelling the run ends every agent and the run as cancelled.
func (s suite) cancelRun(t *testing.T) {
	started := make(chan struct{}, 4)
	e := s.newEngine(t, Setup{Model: hanging(started), Definitions: definitions("worker")})
	id := start(t, e, "be cancelled")
	w := watch(e, id)
	<-started
	if err := e.Cancel(t.Context(), id, cadre.CancelOptions{Reason: "changed my mind"}); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	res, err := wait(t, e, id)
	var re *cadre.RunError
	if !errors.As(err, &re) || re.Status != cadre.StatusCancelled || re.Run != id || !strings.Contains(re.Reason, "changed my mind") {
		t.Fatalf("Wait of a cancelled run: %v, want a *cadre.RunError, cancelled, with the reason", err)
	}
	if res == nil || res.Status != cadre.StatusCancelled {
		t.Fatalf("the result of a cancelled run: %+v", res)
	}
	for _, a := range res.Agents {
		if a.Status != cadre.StatusCancelled {
			t.Errorf("%s ended %s, want cancelled", a.ID, a.Status)
		}
	}
	evs := w.all(t)
	checkStream(t, id, evs, res.Agents)
	if last := evs[len(evs)-1]; last.Type != cadre.EventRunFailed {
		t.Errorf("the last event of a cancelled run is %s, want run_failed", last.Type)
	}
	if err := e.Cancel(t.Context(), id, cadre.CancelOptions{}); !errors.Is(err, cadre.ErrNotRunning) {
		t.Errorf("cancelling a run that ended: %v, want an error wrapping cadre.ErrNotRunning", err)
	}
}

// abort: Abort stops a run whose calls hang, and goes with no agent.
func (s suite) abort(t *testing.T) {
	started := make(chan struct{}, 4)
	e := s.newEngine(t, Setup{Model: hanging(started), Definitions: definitions("worker")})
	id := start(t, e, "be aborted")
	<-started
	if err := e.Cancel(t.Context(), id, cadre.CancelOptions{Agent: cadre.RootID, Abort: true}); err == nil {
		t.Error("Cancel with an agent and Abort succeeded, want an error: Abort stops a whole run")
	}
	if err := e.Cancel(t.Context(), id, cadre.CancelOptions{Abort: true}); err != nil {
		t.Fatalf("Cancel with Abort: %v", err)
	}
	res, err := wait(t, e, id)
	if err == nil || res == nil || res.Status != cadre.StatusCancelled {
		t.Errorf("an aborted run: %v, %+v; want it cancelled", err, res)
	}
}

func (s suite) unknown(t *testing.T) {
	e := s.newEngine(t, Setup{Model: scripted.Func(func(context.Context, *cadre.Request) (*cadre.Response, error) {
		return reply("unused"), nil
	})})
	const id = "enginetest-no-such-run"
	ctx := t.Context()
	if _, err := e.Wait(ctx, id); !errors.Is(err, cadre.ErrNotFound) {
		t.Errorf("Wait: %v, want an error wrapping cadre.ErrNotFound", err)
	}
	if err := e.Cancel(ctx, id, cadre.CancelOptions{}); !errors.Is(err, cadre.ErrNotFound) {
		t.Errorf("Cancel: %v, want an error wrapping cadre.ErrNotFound", err)
	}
	if _, err := e.Tree(ctx, id); !errors.Is(err, cadre.ErrNotFound) {
		t.Errorf("Tree: %v, want an error wrapping cadre.ErrNotFound", err)
	}
	n := 0
	var last error
	for _, err := range e.Events(ctx, id) {
		n++
		last = err
	}
	if n != 1 || !errors.Is(last, cadre.ErrNotFound) {
		t.Errorf("Events gave %d items, the last error %v; want one error wrapping cadre.ErrNotFound", n, last)
	}
}
