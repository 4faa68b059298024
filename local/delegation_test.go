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

// A spawn past the depth limit is refused with a depth_limit event and an
// error the model can act on; the agent does the work itself and the run
// completes.
func TestDepthLimitInRun(t *testing.T) {
	checkNoLeaks(t)
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch defName(req.Agent) {
		case "root":
			if req.Turn == 1 {
				return calls(tc("a", loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": "level one"})), nil
			}
			return text("root: " + lastContent(req)), nil
		case "worker":
			for _, s := range req.Tools {
				if s.Name == loop.ToolSpawnAgent {
					return nil, errors.New("spawn_agent offered at the depth limit")
				}
			}
			if req.Turn == 1 {
				return calls(tc("b", loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": "level two"})), nil
			}
			if !strings.Contains(lastContent(req), "depth limit reached") {
				return nil, errors.New("no depth error: " + lastContent(req))
			}
			return calls(tc("s", loop.ToolSendAgentMessage, map[string]string{"text": "did it myself"})), nil
		}
		return text("?"), nil
	})
	res, err, ev := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: defs("worker"), Limits: cadre.Limits{MaxDepth: 1}}, "go")
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "root: did it myself" {
		t.Errorf("answer %q", res.Answer)
	}
	dl := ev.of(cadre.EventDepthLimit)
	if len(dl) != 1 || dl[0].Agent != "root/worker.1" || data[cadre.DepthLimit](dl[0]).AttemptedDepth != 2 || data[cadre.DepthLimit](dl[0]).MaxDepth != 1 {
		t.Errorf("depth_limit events %+v", dl)
	}
	if len(res.Agents) != 2 {
		t.Errorf("%d agents, want 2", len(res.Agents))
	}
}

// Reports of definitions with emitStructuredFindings become findings when
// they are long enough.
func TestFindings(t *testing.T) {
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch defName(req.Agent) {
		case "root":
			if req.Turn == 1 {
				return calls(
					tc("a", loop.ToolSpawnAgent, map[string]string{"agent": "auditor", "task": "long"}),
					tc("b", loop.ToolSpawnAgent, map[string]string{"agent": "auditor", "task": "short"}),
					tc("c", loop.ToolSpawnAgent, map[string]string{"agent": "plain", "task": "long too"}),
				), nil
			}
			return text("done"), nil
		}
		if req.Turn > 1 {
			return text("bye"), nil
		}
		report := "The configuration file leaks a secret token on line 12." + strings.Repeat("x", 2000)
		if strings.Contains(req.Messages[0].Content, "short") {
			report = "too short"
		}
		return calls(tc("s", loop.ToolSendAgentMessage, map[string]string{"text": report})), nil
	})
	d := defs("auditor", "plain")
	d[0].EmitStructuredFindings = true
	res, err, ev := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: d}, "audit")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Findings) != 1 {
		t.Fatalf("findings %+v", res.Findings)
	}
	f := res.Findings[0]
	if f.Title != "subagent:auditor" || f.Agent != "root/auditor.1" || len([]rune(f.Content)) != 1800 || !strings.HasPrefix(f.Content, "The configuration file") {
		t.Errorf("finding %s %s %d", f.Title, f.Agent, len(f.Content))
	}
	if n := len(ev.of(cadre.EventFinding)); n != 1 {
		t.Errorf("%d finding events", n)
	}
}

// A child gets the soul and identity but not the root's guidance, its
// definition's prompt verbatim first, and the model the spawn asked for.
func TestChildPromptAndModel(t *testing.T) {
	var mu sync.Mutex
	got := map[string]*cadre.Request{}
	record := func(name string) cadre.Model {
		return scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
			mu.Lock()
			if _, ok := got[name+" "+string(req.Agent)]; !ok {
				got[name+" "+string(req.Agent)] = req
			}
			mu.Unlock()
			if req.Agent == cadre.RootID {
				if req.Turn == 1 {
					return calls(
						tc("a", loop.ToolSpawnAgent, map[string]string{"agent": "helper", "task": "t1", "model": "big"}),
						tc("b", loop.ToolSpawnAgent, map[string]string{"agent": "helper", "task": "t2", "model": "nonexistent"}),
					), nil
				}
				return text("ok"), nil
			}
			if req.Turn == 1 {
				return calls(tc("s", loop.ToolSendAgentMessage, map[string]string{"text": "r"})), nil
			}
			return text("bye"), nil
		})
	}
	models := mapModels{"small": record("small"), "big": record("big")}
	_, err, ev := runTask(t, Config{Models: models, RootModel: "small", Definitions: defs("helper"),
		Soul: "SOUL-TEXT", Identity: "IDENTITY-TEXT", Guidance: "GUIDANCE-TEXT"}, "go")
	if err != nil {
		t.Fatal(err)
	}
	child := got["big root/helper.1"]
	if child == nil {
		t.Fatalf("root/helper.1 did not run on the model it was spawned with: %v", keys(got))
	}
	if !strings.HasPrefix(child.System, "You are helper.") || !strings.Contains(child.System, "SOUL-TEXT") ||
		!strings.Contains(child.System, "IDENTITY-TEXT") || strings.Contains(child.System, "GUIDANCE-TEXT") {
		t.Errorf("child system prompt:\n%s", child.System)
	}
	if root := got["small root"]; root == nil || !strings.Contains(root.System, "GUIDANCE-TEXT") {
		t.Error("the root's prompt lacks the guidance")
	}
	if got["small root/helper.2"] == nil {
		t.Errorf("an unusable model request must fall back to the parent's: %v", keys(got))
	}
	if w := ev.of(cadre.EventWarning); len(w) != 1 || !strings.Contains(data[cadre.Warning](w[0]).Message, `"nonexistent"`) {
		t.Errorf("warnings %+v", w)
	}
}

// A definition with background: true runs in the background even when
// spawn_agent asks for it.
func TestBackgroundDefinition(t *testing.T) {
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent == cadre.RootID {
			switch req.Turn {
			case 1:
				return calls(tc("a", loop.ToolSpawnAgent, map[string]string{"agent": "watcher", "task": "watch"})), nil
			case 2:
				if !strings.Contains(lastContent(req), "Background agent started (watcher)") {
					return nil, errors.New("not started in the background: " + lastContent(req))
				}
				return text("waiting"), nil
			}
			return text("got " + lastContent(req)), nil
		}
		if req.Turn == 1 {
			return calls(tc("s", loop.ToolSendAgentMessage, map[string]string{"text": "seen"})), nil
		}
		return text("bye"), nil
	})
	d := defs("watcher")
	d[0].Background = true
	res, err, _ := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: d}, "go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Answer, "seen") {
		t.Errorf("answer %q", res.Answer)
	}
}

// mapModels is a ModelSource with several named models; a definition gets
// its parent's model.
type mapModels map[string]cadre.Model

func (m mapModels) Choose(def *cadre.Definition, parent string) (string, string) { return parent, "" }

func (m mapModels) Open(name string) (cadre.Model, error) {
	if x, ok := m[name]; ok {
		return x, nil
	}
	return nil, errors.New("no model named " + name)
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// When an agent fails while its background children work, they are
// cancelled and end before it: no orphan keeps running, no goroutine leaks.
func TestFailedRootStopsItsChildren(t *testing.T) {
	checkNoLeaks(t)
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent == cadre.RootID {
			if req.Turn == 1 {
				return calls(tc("a", loop.ToolStartBackground, map[string]string{"prompt": "slow work", "agent": "worker"})), nil
			}
			return nil, errors.New("the server exploded")
		}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	res, err, ev := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: defs("worker")}, "go")
	var re *cadre.RunError
	if !errors.As(err, &re) || res.Status != cadre.StatusFailed || !strings.Contains(res.Error, "the server exploded") {
		t.Fatalf("err %v result %+v", err, res)
	}
	cancelled := ev.of(cadre.EventAgentCancelled)
	failed := ev.of(cadre.EventAgentFailed)
	if len(cancelled) != 1 || cancelled[0].Agent != "root/worker.1" || len(failed) != 1 || failed[0].Agent != cadre.RootID {
		t.Fatalf("cancelled %+v failed %+v", cancelled, failed)
	}
	order := map[cadre.AgentID]int{}
	for i, e := range ev.all {
		if e.Type == cadre.EventAgentCancelled || e.Type == cadre.EventAgentFailed {
			order[e.Agent] = i
		}
	}
	if order["root/worker.1"] > order[cadre.RootID] {
		t.Error("the child must end before its parent")
	}
}
