package telemetry_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/otlptest"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/telemetry"
)

// dyingStore stands for a process that dies once the helper has started:
// the helper's first model result cannot be journaled, and nothing is
// written after that, so the run is left as a killed process leaves it.
type dyingStore struct {
	*memstore.Store
	mu   sync.Mutex
	dead bool
}

var errDied = errors.New("the process died")

func (d *dyingStore) died() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dead
}

func (d *dyingStore) Append(ctx context.Context, entries []cadre.JournalEntry) error {
	d.mu.Lock()
	for _, e := range entries {
		if e.Agent == "root/researcher.1/helper.1" && e.Kind != "start" {
			d.dead = true
		}
	}
	dead := d.dead
	d.mu.Unlock()
	if dead {
		return errDied
	}
	return d.Store.Append(ctx, entries)
}

func (d *dyingStore) PutAgent(ctx context.Context, a *cadre.AgentRecord) error {
	if d.died() {
		return errDied
	}
	return d.Store.PutAgent(ctx, a)
}

func (d *dyingStore) UpdateRun(ctx context.Context, r *cadre.RunRecord) error {
	if d.died() {
		return errDied
	}
	return d.Store.UpdateRun(ctx, r)
}

func (d *dyingStore) AppendEvents(ctx context.Context, evs []cadre.Event) error {
	if d.died() {
		return errDied
	}
	return d.Store.AppendEvents(ctx, evs)
}

// TestResumedRunContinuesTheTrace runs the tree until the process "dies"
// with the helper started, then resumes it with another engine, observer
// and tracer provider, as another process would: the spans of both go to
// the run's one trace, and every span's parent is in it.
func TestResumedRunContinuesTheTrace(t *testing.T) {
	ms := memstore.New()
	rec := otlptest.NewReceiver()
	url := otlptest.HTTP(t, rec)
	m := scriptedModel(t, treeScript)

	p1 := httpProviders(t, url)
	o1 := telemetry.New(telemetry.Config{TracerProvider: p1.tp, MeterProvider: p1.mp, Resolve: resolve})
	e1 := engine(o1, m, &dyingStore{Store: ms})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id, err := e1.Start(ctx, "When is the release?", cadre.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e1.Wait(ctx, id); err == nil {
		t.Fatal("the run completed although its store died")
	}
	crashed := struct{ RunID string }{id}
	p1.shutdown(t)
	before, _ := rec.Got()

	p2 := httpProviders(t, url)
	o2 := telemetry.New(telemetry.Config{TracerProvider: p2.tp, MeterProvider: p2.mp, Resolve: resolve})
	e2 := engine(o2, m, ms)
	if err := e2.Resume(ctx, crashed.RunID); err != nil {
		t.Fatal(err)
	}
	res, err := e2.Wait(ctx, crashed.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != cadre.StatusDone {
		t.Fatalf("the resumed run %s: %s", res.Status, res.Error)
	}
	p2.shutdown(t)
	all, _ := rec.Got()
	after := all[len(before):]
	if len(before) == 0 || len(after) == 0 {
		t.Fatalf("%d spans before the crash and %d after the resume, want some of both", len(before), len(after))
	}

	trace := telemetry.TraceID(res.RunID).String()
	ids := map[string]bool{}
	for _, s := range all {
		if s.Trace != trace {
			t.Errorf("span %s is in trace %s, not the run's %s", s.Name, s.Trace, trace)
		}
		ids[s.ID] = true
	}
	for _, s := range all {
		if s.Parent != "" && !ids[s.Parent] {
			t.Errorf("span %s (%v) has parent %s, which neither process exported", s.Name, s.Attrs["gen_ai.agent.id"], s.Parent)
		}
	}
	// The helper's model calls before the crash and after the resume hang
	// under one span: the helper's, which has the ID both processes
	// derive, under the span of the researcher's call that started it.
	helper := telemetry.AgentSpanID(res.RunID, "root/researcher.1/helper.1").String()
	var resumedHelper *otlptest.Span
	for i, s := range after {
		if s.Attrs["gen_ai.operation.name"] == "invoke_agent" && s.Attrs["gen_ai.agent.id"] == "root/researcher.1/helper.1" {
			resumedHelper = &after[i]
		}
	}
	if resumedHelper == nil {
		t.Fatal("the resumed process made no span for the helper")
	}
	if resumedHelper.ID != helper || resumedHelper.Attrs["cadre.resumed"] != true {
		t.Errorf("the resumed helper's span: ID %s (want %s), attributes %v", resumedHelper.ID, helper, resumedHelper.Attrs)
	}
	var chats int
	for _, s := range after {
		if s.Attrs["gen_ai.operation.name"] == "chat" && s.Attrs["gen_ai.agent.id"] == "root/researcher.1/helper.1" {
			chats++
			if s.Parent != helper {
				t.Errorf("a chat span of the resumed helper has parent %s, not the helper's span %s", s.Parent, helper)
			}
		}
	}
	if chats == 0 {
		t.Error("the resumed helper made no chat span")
	}
}
