package local

import (
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

// crashStore stands for a process that dies: after it has accepted limit
// journal entries, the next batch that would pass the limit fails, and so
// does every later write. Batches are all or nothing, as in a real store.
type crashStore struct {
	*memstore.Store
	mu      sync.Mutex
	limit   int
	written int
	crashed bool
}

var errCrashed = errors.New("the process died")

func (c *crashStore) dead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.crashed
}

func (c *crashStore) Append(ctx context.Context, entries []cadre.JournalEntry) error {
	c.mu.Lock()
	if c.crashed || c.written+len(entries) > c.limit {
		c.crashed = true
		c.mu.Unlock()
		return errCrashed
	}
	c.written += len(entries)
	c.mu.Unlock()
	return c.Store.Append(ctx, entries)
}

func (c *crashStore) PutAgent(ctx context.Context, a *cadre.AgentRecord) error {
	if c.dead() {
		return errCrashed
	}
	return c.Store.PutAgent(ctx, a)
}

func (c *crashStore) UpdateRun(ctx context.Context, r *cadre.RunRecord) error {
	if c.dead() {
		return errCrashed
	}
	return c.Store.UpdateRun(ctx, r)
}

func (c *crashStore) AppendEvents(ctx context.Context, evs []cadre.Event) error {
	if c.dead() {
		return errCrashed
	}
	return c.Store.AppendEvents(ctx, evs)
}

// mutator is a tool that changes something: it counts its runs per call.
type mutator struct {
	mu   sync.Mutex
	runs map[string]int
}

func (m *mutator) Spec() cadre.ToolSpec {
	return cadre.ToolSpec{Name: "write_file", Description: "writes", Parameters: []byte(`{"type":"object"}`)}
}
func (m *mutator) Mutates() bool { return true }
func (m *mutator) Call(ctx context.Context, args json.RawMessage) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runs[string(args)]++
	return "written", nil
}

// treeScript is a run with a tree of agents: the root spawns two agents at
// once and one in the background; alpha delegates to a leaf; beta reads
// and writes; gamma reports from the background. Every reply depends only
// on the agent and its turn.
func treeScript(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
	id := string(req.Agent)
	send := func(text string) (*cadre.Response, error) {
		return calls(tc(fmt.Sprintf("send-%d", req.Turn), loop.ToolSendAgentMessage, map[string]string{"text": text})), nil
	}
	switch defName(req.Agent) {
	case "root":
		switch req.Turn {
		case 1:
			return calls(
				tc("sa", loop.ToolSpawnAgent, map[string]string{"agent": "alpha", "task": "alpha task"}),
				tc("sb", loop.ToolSpawnAgent, map[string]string{"agent": "beta", "task": "beta task"}),
				tc("sg", loop.ToolStartBackground, map[string]string{"prompt": "gamma task", "agent": "gamma"}),
			), nil
		case 2:
			return calls(tc("wg", loop.ToolWaitAgent, map[string]string{"agentId": "root/gamma.1"})), nil
		}
		return text("final answer"), nil
	case "alpha":
		switch req.Turn {
		case 1:
			return calls(tc("sl", loop.ToolSpawnAgent, map[string]string{"agent": "leaf", "task": "leaf task"})), nil
		case 2:
			return send("report of " + id)
		}
		return text("alpha done"), nil
	case "beta":
		switch req.Turn {
		case 1:
			return calls(tc("r1", "read_file", map[string]string{"path": "in"}), tc("w1", "write_file", map[string]string{"path": "out-" + id})), nil
		case 2:
			return calls(tc("w2", "write_file", map[string]string{"path": "again-" + id})), nil
		case 3:
			return send("report of " + id)
		}
		return text("beta done"), nil
	case "leaf", "gamma":
		if req.Turn == 1 {
			return send("report of " + id)
		}
		return text("done"), nil
	}
	return nil, fmt.Errorf("no reply for %s turn %d", id, req.Turn)
}

type callCounter struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *callCounter) model() *scripted.Model {
	return scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		c.mu.Lock()
		c.calls[fmt.Sprintf("%s#%d", req.Agent, req.Turn)]++
		c.mu.Unlock()
		return treeScript(ctx, req)
	})
}

func treeConfig(m cadre.Model, s cadre.Store, w *mutator) Config {
	return Config{
		Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Store: s,
		Definitions: defs("alpha", "beta", "gamma", "leaf"),
		Tools:       []cadre.Tool{fakeTool{name: "read_file"}, w},
	}
}

// journaledTurns lists the model calls whose results are in the journal:
// those were completed and must never be made again.
func journaledTurns(t *testing.T, s cadre.Store, run string) map[string]bool {
	t.Helper()
	ctx := context.Background()
	agents, err := s.ListAgents(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	done := map[string]bool{}
	for _, a := range agents {
		entries, err := s.Journal(ctx, run, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		turn := 0
		for _, e := range journalInputs(t, s, entries) {
			if mr, ok := e.In.(loop.ModelResult); ok && mr.Response != nil {
				turn++
				done[fmt.Sprintf("%s#%d", a.ID, turn)] = true
			}
		}
	}
	return done
}

// journalSize counts the journal entries of every agent of a run: a run
// stopped after each smaller number of them is one crash point.
func journalSize(s cadre.Store, run string) int {
	ctx := context.Background()
	total := 0
	agents, _ := s.ListAgents(ctx, run)
	for _, a := range agents {
		e, _ := s.Journal(ctx, run, a.ID)
		total += len(e)
	}
	return total
}

// TestResumeAfterCrashAtEveryPoint runs the tree once without a crash to
// count its journal, then again with the process dying after each possible
// number of journal entries, and resumes each time. Every resumed run must
// complete with the same answer, every child's report must reach its parent
// exactly once, no model call whose result was journaled may be made
// again, and no write may run twice.
func TestResumeAfterCrashAtEveryPoint(t *testing.T) {
	checkNoLeaks(t)
	full := memstore.New()
	cc := &callCounter{calls: map[string]int{}}
	w := &mutator{runs: map[string]int{}}
	r, err := begin(New(treeConfig(cc.model(), full, w)), "build the tree")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r.Wait(); err != nil || res.Answer != "final answer" {
		t.Fatalf("uninterrupted run: %v %+v", err, res)
	}
	total := journalSize(full, r.ID())
	if total < 20 {
		t.Fatalf("the run journaled only %d entries", total)
	}
	for limit := 1; limit < total; limit++ {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			mem := memstore.New()
			crash := &crashStore{Store: mem, limit: limit}
			w := &mutator{runs: map[string]int{}}
			first := &callCounter{calls: map[string]int{}}
			r, err := begin(New(treeConfig(first.model(), crash, w)), "build the tree")
			if err != nil {
				t.Fatal(err)
			}
			res0, err0 := r.Wait()
			if !crash.dead() {
				// Reports that arrive together may share one journal entry,
				// so an interleaving can journal fewer entries than the
				// first run did. Such a run must still be complete.
				crash.mu.Lock()
				written := crash.written
				crash.mu.Unlock()
				if written >= total || err0 != nil || res0.Answer != "final answer" {
					t.Fatalf("the store never crashed at %d of %d entries: %d written, %v", limit, total, written, err0)
				}
				t.Logf("this interleaving journaled %d entries, fewer than %d", written, limit+1)
				return
			}
			completed := journaledTurns(t, mem, r.ID())

			second := &callCounter{calls: map[string]int{}}
			r2, err := resumeRun(New(treeConfig(second.model(), mem, w)), r.ID())
			if err != nil {
				t.Fatal(err)
			}
			res, err := r2.Wait()
			if err != nil || res.Answer != "final answer" {
				t.Fatalf("resumed run: %v, answer %q", err, res.Answer)
			}
			for call := range second.calls {
				if completed[call] {
					t.Errorf("model call %s was completed before the crash and made again", call)
				}
			}
			for args, n := range w.runs {
				if n > 1 {
					t.Errorf("write %s ran %d times", args, n)
				}
			}
			checkReportsOnce(t, mem, r.ID())
			checkReportEvents(t, mem, r.ID())
			rec, _ := mem.GetRun(context.Background(), r.ID())
			if rec.Status != cadre.StatusDone || rec.Answer != "final answer" {
				t.Errorf("run record %+v", rec)
			}
		})
	}
}

// checkReportsOnce replays every agent's journal and checks that each
// child's report appears exactly once in its parent's conversation.
func checkReportsOnce(t *testing.T, s cadre.Store, run string) {
	t.Helper()
	states := replayAll(t, s, run)
	want := []cadre.AgentID{"root/alpha.1", "root/beta.1", "root/gamma.1", "root/alpha.1/leaf.1"}
	for _, id := range want {
		st, ok := states[id]
		if !ok || !st.Done() {
			t.Errorf("%s did not finish", id)
			continue
		}
		parent := states[id.Parent()]
		n := 0
		for _, m := range parent.Messages() {
			n += strings.Count(m.Content, "report of "+string(id))
		}
		if n != 1 {
			t.Errorf("the report of %s reached %s %d times", id, id.Parent(), n)
		}
	}
	if !states[cadre.RootID].Done() {
		t.Error("the root did not finish")
	}
}

// checkReportEvents checks that every report the journals show a parent
// received has exactly one agent_reported event in the store: the events a
// crash kept from being written are written by the resumed run, and none
// twice.
func checkReportEvents(t *testing.T, s cadre.Store, run string) {
	t.Helper()
	ctx := context.Background()
	agents, _ := s.ListAgents(ctx, run)
	type key struct{ parent, child cadre.AgentID }
	want := map[key]int{}
	for _, a := range agents {
		entries, _ := s.Journal(ctx, run, a.ID)
		st := loop.New()
		for _, e := range journalInputs(t, s, entries) {
			for _, act := range st.Step(e.In) {
				if em, ok := act.(loop.Emit); ok {
					if rep, ok := em.Event.(cadre.AgentReported); ok {
						want[key{a.ID, rep.Child}]++
					}
				}
			}
		}
	}
	if len(want) < 4 {
		t.Fatalf("the journals show %d reports, want at least 4", len(want))
	}
	evs, err := s.Events(ctx, run, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[key]int{}
	for _, ev := range evs {
		if rep, ok := ev.Data.(cadre.AgentReported); ok {
			got[key{ev.Agent, rep.Child}]++
		}
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s received %d reports of %s, the store has %d agent_reported events of them", k.parent, n, k.child, got[k])
		}
	}
	for k, n := range got {
		if want[k] == 0 {
			t.Errorf("the store has %d agent_reported events of %s to %s, which its journal never received", n, k.child, k.parent)
		}
	}
}

// A mutating call in flight when the process died is not repeated: the
// agent is told it was interrupted.
func TestResumeDoesNotRepeatWrites(t *testing.T) {
	mem := memstore.New()
	w := &mutator{runs: map[string]int{}}
	cfg := treeConfig(nil, mem, w)
	id := "run-writes"
	// Write the journal of an agent whose write call was in flight.
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(mem.CreateRun(ctx, &cadre.RunRecord{ID: id, Task: "t", Status: cadre.StatusRunning, Started: time.Now()}))
	must(mem.PutAgent(ctx, &cadre.AgentRecord{Run: id, ID: cadre.RootID, Status: cadre.StatusRunning, Started: time.Now()}))
	start := loop.Start{Config: loop.Config{ID: cadre.RootID, MaxDepth: 3, Definition: "root", Model: "fake", System: "s",
		Tools: []cadre.ToolSpec{w.Spec()}, MaxTurns: 5}, Task: "t", Messages: []cadre.Message{{Role: cadre.RoleUser, Content: "t"}}}
	mr := loop.ModelResult{Response: &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, ToolCalls: []cadre.ToolCall{{ID: "w", Name: "write_file", Arguments: `{"path":"x"}`}}}}}
	var entries []cadre.JournalEntry
	for i, in := range []loop.Input{start, mr} {
		data, err := json.Marshal(in)
		must(err)
		entries = append(entries, cadre.JournalEntry{Run: id, Agent: cadre.RootID, Seq: int64(i + 1), Kind: in.Kind(), Data: data, Time: time.Now()})
	}
	must(mem.Append(ctx, entries))

	var seen string
	cfg.Models = OneModel{Name: "fake", Model: scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		seen = lastContent(req)
		return text("checked"), nil
	})}
	r, err := resumeRun(New(cfg), id)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Wait()
	if err != nil || res.Answer != "checked" {
		t.Fatalf("%v %+v", err, res)
	}
	if len(w.runs) != 0 {
		t.Errorf("the interrupted write ran again: %v", w.runs)
	}
	if !strings.Contains(seen, "may or may not have taken effect") {
		t.Errorf("the model was not told the write was interrupted: %q", seen)
	}
}

func TestResumeRefusals(t *testing.T) {
	if _, err := resumeRun(New(Config{Models: OneModel{}}), "x"); !errors.Is(err, ErrNoStore) {
		t.Errorf("no store: %v", err)
	}
	mem := memstore.New()
	if _, err := resumeRun(New(Config{Models: OneModel{}, Store: mem}), "nope"); !errors.Is(err, cadre.ErrNotFound) {
		t.Errorf("unknown run: %v", err)
	}
	mem.CreateRun(context.Background(), &cadre.RunRecord{ID: "old", Task: "t", Status: cadre.StatusDone, Started: time.Now()})
	if _, err := resumeRun(New(Config{Models: OneModel{}, Store: mem}), "old"); err == nil || !strings.Contains(err.Error(), "already ended") {
		t.Errorf("finished run: %v", err)
	}
}
