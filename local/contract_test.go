package local

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/enginetest"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/model/scripted"
)

func TestConformance(t *testing.T) {
	for _, store := range []string{"memstore", "none"} {
		t.Run(store, func(t *testing.T) {
			checkNoLeaks(t)
			enginetest.Run(t, func(t *testing.T, s enginetest.Setup) cadre.Engine {
				cfg := Config{Models: OneModel{Name: "suite", Model: s.Model}, RootModel: "suite", Definitions: s.Definitions, Limits: s.Limits}
				if store == "memstore" {
					cfg.Store = memstore.New()
				}
				return New(cfg)
			})
		})
	}
}

// A run the engine does not hold is read from its store: Wait gives the
// result of one that ended, Tree its agents, Events its stored events; a
// run still marked running there is not going on in this engine.
func TestStoredRuns(t *testing.T) {
	checkNoLeaks(t)
	mem := memstore.New()
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent == cadre.RootID && req.Turn == 1 {
			return calls(tc("a", loop.ToolSpawnAgent, map[string]string{"agent": "finder", "task": "find the date, and explain how it was found"})), nil
		}
		if req.Agent == cadre.RootID {
			return text("the date is 3 March"), nil
		}
		if req.Turn == 1 {
			return calls(tc("s", loop.ToolSendAgentMessage, map[string]string{"text": "3 March, from the changelog's last entry"})), nil
		}
		return text("sent"), nil
	})
	d := defs("finder")
	d[0].EmitStructuredFindings = true
	cfg := Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: d, Store: mem}
	live := New(cfg)
	id := start(t, live, "when is it?")
	want, err := waitRun(t, live, id)
	if err != nil {
		t.Fatal(err)
	}

	other := New(cfg) // another process, with the same store
	got, err := other.Wait(t.Context(), id)
	if err != nil {
		t.Fatalf("Wait of a stored run: %v", err)
	}
	if got.Status != want.Status || got.Answer != want.Answer || got.Usage != want.Usage || len(got.Agents) != 2 || len(got.Findings) != 1 {
		t.Errorf("the stored result %+v\ndiffers from the live one %+v", got, want)
	}
	tree, err := other.Tree(t.Context(), id)
	if err != nil || len(tree.Agents) != 2 || tree.Agents[0].ID != cadre.RootID || tree.Usage != want.Usage {
		t.Errorf("the stored tree: %v, %+v", err, tree)
	}
	var types []cadre.EventType
	for ev, err := range other.Events(t.Context(), id) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
	}
	if len(types) == 0 || types[0] != cadre.EventRunStarted || types[len(types)-1] != cadre.EventRunCompleted {
		t.Errorf("the stored events: %v", types)
	}

	// A run marked running in the store belongs to another process.
	if err := mem.CreateRun(t.Context(), &cadre.RunRecord{ID: "elsewhere", Task: "t", Status: cadre.StatusRunning, Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Wait(t.Context(), "elsewhere"); !errors.Is(err, cadre.ErrNotRunning) {
		t.Errorf("Wait of a run going on elsewhere: %v, want cadre.ErrNotRunning", err)
	}
	if err := other.Cancel(t.Context(), "elsewhere", cadre.CancelOptions{}); !errors.Is(err, cadre.ErrNotRunning) {
		t.Errorf("Cancel of a run going on elsewhere: %v, want cadre.ErrNotRunning", err)
	}
}

// A second run of an ID the engine is running is refused; once the first
// has ended, the ID is the store's to refuse.
func TestStartDuplicateID(t *testing.T) {
	checkNoLeaks(t)
	release := make(chan struct{})
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		<-release
		return text("done"), nil
	})
	e := New(Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake"})
	if _, err := e.Start(t.Context(), "first", cadre.StartOptions{ID: "twice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Start(t.Context(), "second", cadre.StartOptions{ID: "twice"}); err == nil || !strings.Contains(err.Error(), "already going on") {
		t.Errorf("a second run with the ID of a live one: %v", err)
	}
	close(release)
	if res, err := waitRun(t, e, "twice"); err != nil || res.Answer != "done" {
		t.Errorf("the first run: %v %+v", err, res)
	}
}

// Answer answers the root's question while AskUser asks it; the first
// answer is the agent's, a second one finds no question.
func TestAnswer(t *testing.T) {
	checkNoLeaks(t)
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Turn == 1 {
			return calls(tc("q", loop.ToolAskCaller, map[string]string{"question": "Which year?"})), nil
		}
		return text("the answer was " + lastContent(req)), nil
	})
	root := defs("asker")[0]
	root.AskCaller = true
	asked := make(chan struct{})
	e := New(testConfig(Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", RootDefinition: root,
		AskUser: func(ctx context.Context, agent cadre.AgentID, q string) (string, error) {
			close(asked)
			return AwaitAnswer(ctx, agent, q)
		}}))
	id := start(t, e, "ask me")
	ev := watch(t, e, id, nil)
	<-asked
	if err := e.Answer(t.Context(), id, "root/nobody.1", "1969"); !errors.Is(err, cadre.ErrNoQuestion) {
		t.Errorf("Answer to an agent with no question: %v, want cadre.ErrNoQuestion", err)
	}
	if err := e.Answer(t.Context(), id, cadre.RootID, "1969"); err != nil {
		t.Fatalf("Answer: %v", err)
	}
	if err := e.Answer(t.Context(), id, cadre.RootID, "1970"); !errors.Is(err, cadre.ErrNoQuestion) {
		t.Errorf("a second Answer: %v, want cadre.ErrNoQuestion", err)
	}
	res, err := waitRun(t, e, id)
	if err != nil || !strings.Contains(res.Answer, "1969") {
		t.Fatalf("the run: %v, %+v", err, res)
	}
	ev.wait(t)
	if a := ev.of(cadre.EventAnswer); len(a) != 1 || data[cadre.Answer](a[0]) != (cadre.Answer{Question: "Which year?", Answer: "1969", From: "user"}) {
		t.Errorf("agent_answer events %+v", a)
	}
	if err := e.Answer(t.Context(), "nope", cadre.RootID, "x"); !errors.Is(err, cadre.ErrNotFound) {
		t.Errorf("Answer to an unknown run: %v, want cadre.ErrNotFound", err)
	}
}

// An engine holds the runs that ended until keptRuns more have; it answers
// for older ones from the store, or not at all without one.
func TestEndedRunsForgotten(t *testing.T) {
	checkNoLeaks(t)
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		return text("answer to " + lastContent(req)), nil
	})
	for _, withStore := range []bool{true, false} {
		cfg := Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake"}
		if withStore {
			cfg.Store = memstore.New()
		}
		e := New(cfg)
		var ids []string
		for i := range keptRuns + 1 {
			id := start(t, e, "task "+string(rune('a'+i)))
			if _, err := waitRun(t, e, id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if e.live(ids[0]) != nil || e.live(ids[1]) == nil {
			t.Fatalf("store %v: the engine holds the first run %v and the second %v, want only the second", withStore, e.live(ids[0]) != nil, e.live(ids[1]) != nil)
		}
		res, err := e.Wait(t.Context(), ids[0])
		switch {
		case withStore && (err != nil || res.Answer != "answer to task a"):
			t.Errorf("a forgotten run with a store: %v, %+v", err, res)
		case !withStore && !errors.Is(err, cadre.ErrNotFound):
			t.Errorf("a forgotten run without a store: %v, want cadre.ErrNotFound", err)
		}
		// The events of the last run are kept; without a store, those of
		// the run before it are not.
		last, before := readAll(e, ids[len(ids)-1]), readAll(e, ids[len(ids)-2])
		if last.err != nil || len(last.types) < 4 || last.types[len(last.types)-1] != cadre.EventRunCompleted {
			t.Errorf("store %v: the events of the last run: %v, %v", withStore, last.types, last.err)
		}
		switch {
		case withStore && (before.err != nil || len(before.types) < 3):
			t.Errorf("the stored events of an earlier run: %v, %v", before.types, before.err)
		case !withStore && !errors.Is(before.err, cadre.ErrNotRunning):
			t.Errorf("the events of an earlier run without a store: %v, %v; want cadre.ErrNotRunning", before.types, before.err)
		}
	}
}

type readEvents struct {
	types []cadre.EventType
	err   error
}

func readAll(e *Engine, id string) readEvents {
	var r readEvents
	for ev, err := range e.Events(context.Background(), id) {
		if err != nil {
			r.err = err
			break
		}
		r.types = append(r.types, ev.Type)
	}
	return r
}
