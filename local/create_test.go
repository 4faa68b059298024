package local

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/model/scripted"
)

// A definition an agent writes with agent_create gets what its creator
// may use: the creator's tools when it names none (not every tool of
// whoever starts it later), and the rules the creator's calls must pass,
// one group for each of the creator's, so that the file saved for later
// runs can say them.
func TestCreatedAgentGetsCreatorsGrants(t *testing.T) {
	checkNoLeaks(t)
	var (
		mu    sync.Mutex
		saved []cadre.Definition
	)
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent != cadre.RootID {
			return nil, errors.New("unexpected agent " + string(req.Agent))
		}
		if req.Turn == 1 {
			return calls(
				tc("a", loop.ToolCreateAgent, map[string]any{"name": "inherits", "description": "Inherits.", "instructions": "Work."}),
				tc("b", loop.ToolCreateAgent, map[string]any{"name": "narrow", "description": "Narrow.", "instructions": "Work.", "tools": []string{}}),
			), nil
		}
		return text("done"), nil
	})
	root := parseDef(t, "lead", "tools: Bash(git *), agent_create, agent_call")
	_, err, _ := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Tools: []cadre.Tool{&shell{}},
		RootDefinition: root, Definitions: defs("helper"),
		CreateAgent: func(_ context.Context, _ cadre.AgentID, def *cadre.Definition) (string, error) {
			mu.Lock()
			saved = append(saved, *def)
			mu.Unlock()
			return "", nil
		}}, "make agents")
	if err != nil {
		t.Fatal(err)
	}
	if len(saved) != 2 {
		t.Fatalf("%d definitions saved", len(saved))
	}
	slices.SortFunc(saved, func(a, b cadre.Definition) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	inherits, narrow := saved[0], saved[1]
	if !slices.Equal(inherits.Tools, []string{"run_command"}) {
		t.Errorf("a created agent naming no tools got %v, want its creator's (run_command)", inherits.Tools)
	}
	if narrow.Tools == nil || len(narrow.Tools) != 0 {
		t.Errorf("a created agent with no tools got %v", narrow.Tools)
	}
	for _, d := range saved {
		if len(d.Rules) != len(root.Rules) {
			t.Fatalf("%s: rules %+v, want the creator's %+v", d.Name, d.Rules, root.Rules)
		}
		for i, r := range d.Rules {
			want := root.Rules[i]
			want.Group = "lead/" + want.Group
			if r != want {
				t.Errorf("%s: rule %d is %+v, want %+v", d.Name, i, r, want)
			}
		}
	}
}
