package local

import (
	"context"
	"sync"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/model/scripted"
)

// A child whose reply only reports to its parent ends there, with one model
// call, and its report reaches the parent once; a definition or the
// engine's config can give it its second call back. The journal of the run
// replays to what the agents stepped.
func TestOneCallPerReportingChild(t *testing.T) {
	cases := []struct {
		name      string
		engine    bool // Config.TurnAfterReport
		def       bool // Definition.TurnAfterReport
		wantCalls int  // of each worker
	}{
		{"by default", false, false, 1},
		{"turnAfterReport in the definition", false, true, 2},
		{"turnAfterReport in the engine's config", true, false, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkNoLeaks(t)
			var (
				mu    sync.Mutex
				turns = map[cadre.AgentID]int{}
			)
			m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
				mu.Lock()
				turns[req.Agent]++
				mu.Unlock()
				if defName(req.Agent) == "root" {
					if req.Turn == 1 {
						return calls(
							tc("a", loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": "first"}),
							tc("b", loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": "second"}),
						), nil
					}
					return text("root saw: " + req.Messages[len(req.Messages)-2].Content + " | " + lastContent(req)), nil
				}
				if req.Turn == 1 {
					return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "report of " + req.Messages[0].Content[len(req.Messages[0].Content)-5:]})), nil
				}
				return text("Done."), nil
			})
			d := defs("worker")
			d[0].TurnAfterReport = c.def
			store := memstore.New()
			var live steps
			cfg := Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: d, Store: store,
				TurnAfterReport: c.engine, stepped: live.record}
			res, err, ev := runTask(t, cfg, "go")
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != cadre.StatusDone || res.Answer != "root saw: report of first | report of econd" {
				t.Fatalf("status %s, answer %q", res.Status, res.Answer)
			}
			for _, id := range []cadre.AgentID{"root/worker.1", "root/worker.2"} {
				if turns[id] != c.wantCalls {
					t.Errorf("%s made %d model calls, want %d", id, turns[id], c.wantCalls)
				}
			}
			if n := len(ev.of(cadre.EventAgentCompleted)); n != 3 {
				t.Errorf("%d agent_completed events, want 3", n)
			}
			for _, a := range res.Agents {
				if a.Status != cadre.StatusDone {
					t.Errorf("%s ended %s", a.ID, a.Status)
				}
				if a.Parent != "" && a.Result == "" {
					t.Errorf("%s has no result", a.ID)
				}
			}
			checkReplay(t, store, res.RunID, &live)
		})
	}
}
