package local

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/model/scripted"
)

// Children of one definition at one depth whose parents have different
// rules are offered different agents: what they have in common is worked
// out per parent, and their system prompts are not shared across rules.
// The narrow lead may start only workers, so its worker's prompt offers no
// helper; the wide lead's worker offers both.
func TestChildKindsFollowTheirParentsRules(t *testing.T) {
	checkNoLeaks(t)
	var (
		mu      sync.Mutex
		systems = map[cadre.AgentID]string{}
	)
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch defName(req.Agent) {
		case "root":
			if req.Turn == 1 {
				return calls(
					tc("n", loop.ToolSpawnAgent, map[string]string{"agent": "narrow", "task": "lead narrowly"}),
					tc("w", loop.ToolSpawnAgent, map[string]string{"agent": "wide", "task": "lead widely"}),
				), nil
			}
			return text("root done"), nil
		case "narrow", "wide":
			if req.Turn == 1 {
				return calls(
					tc("a", loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": "first part for " + string(req.Agent)}),
					tc("b", loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": "second part for " + string(req.Agent)}),
				), nil
			}
			return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "led"})), nil
		case "worker":
			mu.Lock()
			systems[req.Agent] = req.System
			mu.Unlock()
			return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "worked"})), nil
		}
		return nil, errors.New("unexpected agent " + string(req.Agent))
	})
	all := append(defs("worker", "helper", "wide"), parseDef(t, "narrow", "tools: Agent(worker)"))
	res, err, _ := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: all,
		Limits: cadre.Limits{MaxDepth: 3}}, "go")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != cadre.StatusDone || len(res.Agents) != 7 {
		t.Fatalf("status %s with %d agents, want done with 7", res.Status, len(res.Agents))
	}
	if len(systems) != 4 {
		t.Fatalf("%d workers called their model, want 4: %v", len(systems), systems)
	}
	for id, system := range systems {
		if !strings.Contains(system, "the worker agent") {
			t.Errorf("%s is not offered the worker agent:\n%s", id, system)
		}
		narrow := strings.HasPrefix(string(id), "root/narrow")
		if offered := strings.Contains(system, "the helper agent"); offered == narrow {
			t.Errorf("%s (under the narrow lead: %t) is offered the helper agent: %t, want %t:\n%s", id, narrow, offered, !narrow, system)
		}
	}
}
