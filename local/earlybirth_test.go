package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/model/scripted"
)

// heldStore is a store that takes time to write, as a database on disk
// does: the Starts of workers wait at the gate until it opens (or fail,
// with fail set). It notes what it was asked to append, in order, and
// whether an agent's journal was written to before its Start was stored.
type heldStore struct {
	cadre.Store // a memstore, whose InMemory this hides
	gate        chan struct{}
	fail        error

	mu       sync.Mutex
	started  map[cadre.AgentID]bool
	early    []string // entries appended before their agent's Start
	appended []cadre.JournalEntry
}

func newHeldStore() *heldStore {
	return &heldStore{Store: memstore.New(), gate: make(chan struct{}), started: map[cadre.AgentID]bool{}}
}

func (h *heldStore) Append(ctx context.Context, entries []cadre.JournalEntry) error {
	worker := strings.Contains(string(entries[0].Agent), "worker")
	if worker && entries[0].Kind == "start" {
		<-h.gate
		if h.fail != nil {
			return h.fail
		}
	}
	if err := h.Store.Append(ctx, entries); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range entries {
		if e.Kind == "start" {
			h.started[e.Agent] = true
		} else if !h.started[e.Agent] {
			h.early = append(h.early, fmt.Sprintf("%s %d %s", e.Agent, e.Seq, e.Kind))
		}
		e.Data = bytes.Clone(e.Data) // the caller's buffer is used again
		h.appended = append(h.appended, e)
	}
	return nil
}

// heldRun runs a root that spawns three workers on a heldStore. The
// workers' model calls are counted until the gate opens, which the third
// of them opens, or a timeout.
func heldRun(t *testing.T, h *heldStore) (res *cadre.Result, err error, early int) {
	t.Helper()
	var (
		mu     sync.Mutex
		before int // the workers' first model calls before the gate opened
		once   sync.Once
	)
	open := func() { once.Do(func() { close(h.gate) }) }
	defer open()
	timer := time.AfterFunc(10*time.Second, open)
	defer timer.Stop()
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent == cadre.RootID {
			if req.Turn == 1 {
				return calls(
					tc("s1", loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": "one"}),
					tc("s2", loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": "two"}),
					tc("s3", loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": "three"})), nil
			}
			return text("all done"), nil
		}
		if req.Turn == 1 {
			mu.Lock()
			select {
			case <-h.gate:
			default:
				before++
				if before == 3 {
					open()
				}
			}
			mu.Unlock()
		}
		return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "done: " + string(req.Agent)})), nil
	})
	res, err, _ = runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: defs("worker"), Store: h}, "go")
	mu.Lock()
	defer mu.Unlock()
	return res, err, before
}

func mustDecode(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
}

// With a store that takes time to write, the children of a reply call
// their models while their records and Starts are being written: the
// wait for the disk overlaps the model's. Nothing else they do comes
// before their Starts in the journal, and their reports reach their parent
// after it has been told of them.
func TestChildrenCallModelsWhileTheirStartsAreWritten(t *testing.T) {
	checkNoLeaks(t)
	h := newHeldStore()
	res, err, early := heldRun(t, h)
	if err != nil {
		t.Fatal(err)
	}
	if early != 3 {
		t.Errorf("%d of the 3 workers called their model before their Starts were written, want all", early)
	}
	if res.Status != cadre.StatusDone || res.Answer != "all done" || len(res.Agents) != 4 {
		t.Fatalf("status %s, answer %q, %d agents", res.Status, res.Answer, len(res.Agents))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.early) > 0 {
		t.Errorf("entries appended before their agent's Start: %v", h.early)
	}
	// The root's journal: each child's spawned comes before its report.
	spawned := map[string]bool{}
	reports := 0
	var root []cadre.JournalEntry
	for _, e := range h.appended {
		if e.Agent == cadre.RootID {
			root = append(root, e)
		}
	}
	for _, e := range journalInputs(t, h, root) {
		switch in := e.In.(type) {
		case loop.Spawned:
			spawned[string(in.Child)] = true
		case loop.ChildReport:
			if !spawned[string(in.Child)] {
				t.Errorf("the report of %s was journaled before its spawning", in.Child)
			}
			reports++
		}
	}
	if len(spawned) != 3 || reports != 3 {
		t.Errorf("the root journaled %d spawnings and %d reports, want 3 and 3", len(spawned), reports)
	}
}

// A Start that cannot be written fails the run, as any journal write that
// fails does, though the child was launched: the child stops, nothing it
// did is recorded, the run ends failed and says how to carry it on, and
// no goroutine is left behind.
func TestAStartThatCannotBeWrittenStopsTheRun(t *testing.T) {
	checkNoLeaks(t)
	h := newHeldStore()
	h.fail = errors.New("disk full")
	res, err, _ := heldRun(t, h)
	if err == nil || res.Status != cadre.StatusFailed || !strings.Contains(res.Error, "disk full") || !strings.Contains(res.Error, "cadre resume") {
		t.Fatalf("status %s, error %q (%v); want failed because of the store", res.Status, res.Error, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.appended {
		for _, in := range journalInputs(t, h, []cadre.JournalEntry{e}) {
			if strings.Contains(string(e.Agent), "worker") || in.Kind == "child_report" || in.Kind == "spawned" {
				t.Errorf("journaled although the workers' Starts failed: %s %d %s", e.Agent, e.Seq, in.Kind)
			}
		}
	}
}
