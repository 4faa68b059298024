package local

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/model/scripted"
)

// An internal definition is never started at a model's request. On the
// text protocol, a <spawn_agents> block naming one is refused, and the
// model told why; the user-facing agent of the same block does not start
// either, since the block as a whole was not run.
func TestTextSpawnRefusesInternalAgent(t *testing.T) {
	checkNoLeaks(t)
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch defName(req.Agent) {
		case "root":
			switch req.Turn {
			case 1:
				return text(`<spawn_agents><agent name="hidden" task="do it" /><agent name="helper" task="help" /></spawn_agents>`), nil
			case 2:
				return text(`<spawn_agents><agent name="helper" task="help" /></spawn_agents>`), nil
			}
			return text("root final"), nil
		case "helper":
			return text("helped"), nil
		case "hidden":
			return text("the internal agent ran"), nil
		}
		return nil, errors.New("unexpected agent " + string(req.Agent))
	})
	d := defs("helper", "hidden")
	d[1].Visibility = cadre.VisibilityInternal
	res, err, ev := runTask(t, textConfig(m, d...), "Do it")
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "root final" {
		t.Errorf("answer %q", res.Answer)
	}
	for _, e := range ev.of(cadre.EventAgentSpawned) {
		if s := data[cadre.AgentSpawned](e); s.Definition != "helper" {
			t.Errorf("started %s", s.Definition)
		}
	}
	if n := len(ev.of(cadre.EventAgentSpawned)); n != 1 {
		t.Errorf("%d agents started, want the helper of the second block", n)
	}
	root := m.RequestsOf(cadre.RootID)
	if len(root) != 3 {
		t.Fatalf("the root made %d calls, want 3", len(root))
	}
	if got := lastContent(&root[1]); !strings.Contains(got, `"hidden" is an internal agent`) || !strings.Contains(got, "was not run") {
		t.Errorf("the root was told %q", got)
	}
}

// The engine refuses to build a child of an internal definition whatever
// the loop decided (the loop refuses it as well), both as this engine
// starts children and as its Planner builds them for another engine.
func TestEngineRefusesInternalChild(t *testing.T) {
	d := defs("helper", "hidden")
	d[1].Visibility = cadre.VisibilityInternal
	cfg := testConfig(Config{Models: OneModel{Name: "fake", Model: scripted.Func(func(context.Context, *cadre.Request) (*cadre.Response, error) {
		return text("unused"), nil
	})}, RootModel: "fake", Definitions: d})
	for _, mode := range []string{"sync", "background", "onboard", "parallel", "sequential"} {
		t.Run(mode, func(t *testing.T) {
			p := NewPlanner(cfg)
			root, start, err := p.r.newRoot()
			if err != nil {
				t.Fatal(err)
			}
			spec := loop.ChildSpec{Ref: "c1", ID: cadre.RootID.Child("hidden", 1), Definition: "hidden", Task: "do it", Mode: mode, Onboarding: mode == "onboard"}
			if b := p.r.prepare(root, spec); b.child != nil || !strings.Contains(b.err, `"hidden" is an internal agent`) {
				t.Errorf("prepare: child %v, err %q", b.child != nil, b.err)
			}
			if _, refused, _ := p.Child(context.Background(), start.Config, spec); !strings.Contains(refused, `"hidden" is an internal agent`) {
				t.Errorf("Planner.Child: refused %q", refused)
			}
			spec.Definition, spec.ID = "helper", cadre.RootID.Child("helper", 1)
			if b := p.r.prepare(root, spec); b.err != "" {
				t.Errorf("a user-facing agent was refused: %s", b.err)
			}
		})
	}
}
