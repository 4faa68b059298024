package local

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/model/scripted"
	"github.com/cadre-ai/cadre/sqlite"
)

// workersPrompt is long, as a real definition's prompt is: the Starts that
// name another's configuration do not repeat it.
var workersPrompt = "You are a worker. " + strings.Repeat("Check your work twice before you report it. ", 40)

// workersConfig is a root that spawns n workers in one reply; each worker
// reports "done <its id>" and ends, and the root answers once all have.
// systems records the system prompt of every model call, by agent.
func workersConfig(s cadre.Store, n int, systems *sync.Map) Config {
	m := scripted.Func(func(_ context.Context, req *cadre.Request) (*cadre.Response, error) {
		systems.Store(fmt.Sprintf("%s#%d", req.Agent, req.Turn), req.System)
		msg := cadre.Message{Role: cadre.RoleAssistant}
		switch {
		case req.Agent != cadre.RootID:
			msg.ToolCalls = []cadre.ToolCall{{ID: "r", Name: loop.ToolSendAgentMessage, Arguments: fmt.Sprintf(`{"text":"done %s"}`, req.Agent)}}
		case req.Turn == 1:
			for i := range n {
				msg.ToolCalls = append(msg.ToolCalls, cadre.ToolCall{ID: fmt.Sprint("c", i), Name: loop.ToolSpawnAgent,
					Arguments: fmt.Sprintf(`{"agent":"worker","task":"unit %d"}`, i+1)})
			}
		default:
			msg.Content = "final answer"
		}
		return &cadre.Response{Message: msg}, nil
	})
	return Config{
		Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Store: s,
		Definitions: []*cadre.Definition{{Name: "worker", Description: "Does a unit of work.", Prompt: workersPrompt, Visibility: cadre.VisibilityUserFacing}},
		Tools:       []cadre.Tool{fakeTool{name: "read_file"}},
	}
}

// firstEntry is the first entry of an agent's journal.
func firstEntry(t *testing.T, s cadre.Store, run string, agent cadre.AgentID) cadre.JournalEntry {
	t.Helper()
	entries, err := s.Journal(context.Background(), run, agent)
	if err != nil || len(entries) == 0 {
		t.Fatalf("the journal of %s: %d entries, %v", agent, len(entries), err)
	}
	return entries[0]
}

// checkWorkers checks a run of n workers: every worker's model calls had
// the definition's prompt, the first worker's Start holds its whole
// configuration, and at least want of the others' name it instead, each
// a fraction of its size.
func checkWorkers(t *testing.T, s cadre.Store, run string, n, want int, systems *sync.Map) {
	t.Helper()
	whole := firstEntry(t, s, run, "root/worker.1")
	in, err := loop.Decode(whole.Kind, whole.Data)
	if err != nil {
		t.Fatal(err)
	}
	if st := in.(loop.Start); st.ConfigFrom != "" || !strings.Contains(st.Config.System, workersPrompt) {
		t.Fatalf("the first worker's Start takes its configuration from %q, system %.80q", st.ConfigFrom, st.Config.System)
	}
	named := 0
	for i := 2; i <= n; i++ {
		id := cadre.RootID.Child("worker", i)
		e := firstEntry(t, s, run, id)
		in, err := loop.Decode(e.Kind, e.Data)
		if err != nil {
			t.Fatal(err)
		}
		st := in.(loop.Start)
		if st.ConfigFrom == "" {
			continue
		}
		named++
		if len(e.Data)*4 > len(whole.Data) {
			t.Errorf("the Start of %s takes %d bytes, the whole one %d", id, len(e.Data), len(whole.Data))
		}
		if st.ConfigFrom.Parent() != cadre.RootID || st.ConfigFrom == id {
			t.Errorf("the Start of %s names the configuration of %s", id, st.ConfigFrom)
		}
	}
	if named < want {
		t.Errorf("%d of the %d other workers' Starts name another's configuration, want at least %d", named, n-1, want)
	}
	for i := 1; i <= n; i++ {
		id := cadre.RootID.Child("worker", i)
		if sys, _ := systems.Load(string(id) + "#1"); !strings.Contains(fmt.Sprint(sys), workersPrompt) {
			t.Errorf("%s was called with the system prompt %.80q", id, sys)
		}
	}
}

// TestStartsNameTheirKindsConfiguration: with an in-memory store, the
// workers after the first one of a spawn are journaled with a Start that
// names the first one's configuration; each replays to what the live agent
// stepped (its whole configuration), and cadre's readers give it whole.
func TestStartsNameTheirKindsConfiguration(t *testing.T) {
	checkNoLeaks(t)
	var systems sync.Map
	mem := memstore.New()
	cfg := workersConfig(mem, 5, &systems)
	var live steps
	cfg.stepped = live.record
	res, _, _ := runTask(t, cfg, "do five units")
	if res.Status != cadre.StatusDone || res.Answer != "final answer" {
		t.Fatalf("the run: %s %q %s", res.Status, res.Answer, res.Error)
	}
	checkReplay(t, mem, res.RunID, &live)
	checkWorkers(t, mem, res.RunID, 5, 4, &systems)
}

// TestStartsNameTheirKindsConfigurationOnDisk: with a store on disk,
// children are launched while their Starts are written, and a Start names
// only a configuration already durable: the first batches are whole, the
// later ones named; the journal replays to the live run.
func TestStartsNameTheirKindsConfigurationOnDisk(t *testing.T) {
	checkNoLeaks(t)
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 2*storeAhead*storeBatch + 10
	var systems sync.Map
	cfg := workersConfig(s, n, &systems)
	cfg.Limits = cadre.Limits{MaxAgents: n + 1, MaxConcurrent: 64, BudgetTokens: -1}
	var live steps
	cfg.stepped = live.record
	res, _, _ := runTask(t, cfg, "do many units")
	if res.Status != cadre.StatusDone || len(res.Agents) != n+1 {
		t.Fatalf("the run: %s with %d agents, %s", res.Status, len(res.Agents), res.Error)
	}
	checkReplay(t, s, res.RunID, &live)
	checkWorkers(t, s, res.RunID, n, 1, &systems)
}

// TestResumeStartsThatNameAConfiguration stops a run of workers after each
// number of journal entries and resumes it: a resumed worker whose Start
// names another's configuration gets it, its model calls have the
// definition's prompt, and the run ends as it would have.
func TestResumeStartsThatNameAConfiguration(t *testing.T) {
	checkNoLeaks(t)
	const n = 4
	var systems sync.Map
	full := memstore.New()
	res, _, _ := runTask(t, workersConfig(full, n, &systems), "do four units")
	total := journalSize(full, res.RunID)
	resumed := 0 // workers resumed from a Start that names another's configuration
	for limit := 1; limit < total; limit++ {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			mem := memstore.New()
			crash := &crashStore{Store: mem, limit: limit}
			var systems sync.Map
			r, err := begin(New(workersConfig(crash, n, &systems)), "do four units")
			if err != nil {
				t.Fatal(err)
			}
			r.Wait()
			if !crash.dead() {
				return // this interleaving journaled fewer entries
			}
			var again sync.Map
			r2, err := resumeRun(New(workersConfig(mem, n, &again)), r.ID())
			if err != nil {
				t.Fatal(err)
			}
			res, err := r2.Wait()
			if err != nil || res.Answer != "final answer" {
				t.Fatalf("resumed run: %v, answer %q", err, res.Answer)
			}
			again.Range(func(k, sys any) bool {
				call := k.(string)
				if strings.HasPrefix(call, "root#") {
					return true
				}
				if !strings.Contains(sys.(string), workersPrompt) {
					t.Errorf("resumed, %s was called with the system prompt %.80q", call, sys)
				}
				id, _, _ := strings.Cut(call, "#")
				e := firstEntry(t, mem, r.ID(), cadre.AgentID(id))
				if in, err := loop.Decode(e.Kind, e.Data); err == nil && in.(loop.Start).ConfigFrom != "" {
					resumed++
				}
				return true
			})
			states := replayAll(t, mem, r.ID())
			for i := 1; i <= n; i++ {
				id := cadre.RootID.Child("worker", i)
				if st := states[id]; st == nil || !st.Done() || !strings.Contains(st.Config().System, workersPrompt) {
					t.Errorf("%s: its journal does not replay to a finished agent with the definition's prompt", id)
				}
			}
		})
	}
	if resumed == 0 {
		t.Error("no crash point resumed a worker whose Start names another's configuration")
	}
}
