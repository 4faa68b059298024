package local

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/agentdef"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/model/scripted"
	"github.com/cadre-ai/cadre/tool"
)

// shell is a run_command that records the commands that reach it.
type shell struct {
	mu  sync.Mutex
	ran []string
}

func (s *shell) Spec() cadre.ToolSpec {
	return cadre.ToolSpec{Name: "run_command", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)}
}

func (s *shell) Call(_ context.Context, args json.RawMessage) (string, error) {
	var a struct{ Command string }
	if err := json.Unmarshal(args, &a); err != nil {
		return "", err
	}
	s.mu.Lock()
	s.ran = append(s.ran, a.Command)
	s.mu.Unlock()
	return "ran " + a.Command, nil
}

func (s *shell) commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ran)
}

// parseDef reads an agent file as cadre loads it.
func parseDef(t *testing.T, name, frontmatter string) *cadre.Definition {
	t.Helper()
	d, diags := agentdef.Parse(name+".md", []byte("---\nname: "+name+"\ndescription: The "+name+" agent.\n"+frontmatter+"\n---\nYou are "+name+".\n"), agentdef.ParseOptions{})
	if d == nil {
		t.Fatalf("%s rejected: %v", name, diags)
	}
	return d
}

// toolResults returns the tool messages of a request, by call id.
func toolResults(req cadre.Request) map[string]cadre.Message {
	out := map[string]cadre.Message{}
	for _, m := range req.Messages {
		if m.Role == cadre.RoleTool {
			out[m.ToolCallID] = m
		}
	}
	return out
}

// Bash(git *) is enforced where the call is run, whichever runner runs it:
// git status runs, ls and git status; rm -rf x never reach the tool, and
// the model is told which rule refused them and what it allows.
func TestRulesEnforcedAtDispatch(t *testing.T) {
	for name, runner := range map[string]ToolRunner{
		"executor": &tool.Executor{Approver: &tool.Approver{Mode: tool.ApproveAll}},
		"direct":   nil,
	} {
		t.Run(name, func(t *testing.T) {
			checkNoLeaks(t)
			sh := &shell{}
			var results map[string]cadre.Message
			m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
				if req.Turn == 1 {
					return calls(
						tc("a", "run_command", map[string]string{"command": "git status"}),
						tc("b", "run_command", map[string]string{"command": "ls"}),
						tc("c", "run_command", map[string]string{"command": "git status; rm -rf x"}),
						tc("d", "run_command", map[string]string{"command": "git log > /tmp/x"}),
					), nil
				}
				results = toolResults(*req)
				return text("done"), nil
			})
			root := parseDef(t, "gitter", "tools: Bash(git *)")
			_, err, _ := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Tools: []cadre.Tool{sh},
				Runner: runner, RootDefinition: root}, "look at the repo")
			if err != nil {
				t.Fatal(err)
			}
			if got := sh.commands(); !slices.Equal(got, []string{"git status"}) {
				t.Errorf("commands that ran: %q", got)
			}
			if r := results["a"]; r.IsError || r.Content != "ran git status" {
				t.Errorf("git status: %+v", r)
			}
			for _, id := range []string{"b", "c", "d"} {
				r := results[id]
				if !r.IsError || !strings.Contains(r.Content, "tools: Bash(git *)") || !strings.Contains(r.Content, "gitter.md:4:8") || !strings.Contains(r.Content, "`git *`") {
					t.Errorf("%s: %+v", id, r)
				}
			}
		})
	}
}

// A subagent's rules cannot be wider than its parent's: a worker whose own
// file grants every command still runs only what its parent's rules allow,
// and it cannot use a delegation tool its parent was not granted.
func TestChildRulesNarrowOnly(t *testing.T) {
	checkNoLeaks(t)
	sh := &shell{}
	var workerResults map[string]cadre.Message
	var workerTools []string
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch defName(req.Agent) {
		case "root":
			if req.Turn == 1 {
				return calls(tc("s", loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": "inspect"})), nil
			}
			return text("root done"), nil
		case "worker":
			if req.Turn == 1 {
				for _, s := range req.Tools {
					workerTools = append(workerTools, s.Name)
				}
				return calls(
					tc("w1", "run_command", map[string]string{"command": "git log"}),
					tc("w2", "run_command", map[string]string{"command": "ls -la"}),
					tc("w3", loop.ToolStartBackground, map[string]string{"prompt": "more"}),
				), nil
			}
			workerResults = toolResults(*req)
			return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "worker done"})), nil
		}
		return nil, errors.New("unexpected agent " + string(req.Agent))
	})
	root := parseDef(t, "lead", "tools: Bash(git *), spawn_agent")
	worker := parseDef(t, "worker", "tools: Bash, delegation")
	res, err, _ := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Tools: []cadre.Tool{sh},
		Runner: &tool.Executor{Approver: &tool.Approver{Mode: tool.ApproveAll}}, RootDefinition: root,
		Definitions: []*cadre.Definition{worker}}, "go")
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "root done" {
		t.Errorf("answer %q", res.Answer)
	}
	if got := sh.commands(); !slices.Equal(got, []string{"git log"}) {
		t.Errorf("commands that ran: %q", got)
	}
	if r := workerResults["w2"]; !r.IsError || !strings.Contains(r.Content, "agent lead") || !strings.Contains(r.Content, "tools: Bash(git *)") {
		t.Errorf("ls -la in the worker: %+v", r)
	}
	if r := workerResults["w3"]; !r.IsError || !strings.Contains(r.Content, "not one of your tools") {
		t.Errorf("start_background_agent in the worker: %+v", r)
	}
	for _, name := range workerTools {
		if name != loop.ToolSpawnAgent && slices.Contains(loop.DelegationTools(), name) {
			t.Errorf("the worker was offered %s, which its parent was not granted: %v", name, workerTools)
		}
	}
}

// Agent(explore) lets the agent start explore and nothing else, on every
// path that starts an agent: tool calls and <spawn_agents> blocks.
func TestAgentRulesAtSpawn(t *testing.T) {
	checkNoLeaks(t)
	var results map[string]cadre.Message
	var system string
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch defName(req.Agent) {
		case "root":
			if req.Turn == 1 {
				system = req.System
				return calls(
					tc("e", loop.ToolSpawnAgent, map[string]string{"agent": "explore", "task": "look"}),
					tc("w", loop.ToolSpawnAgent, map[string]string{"agent": "writer", "task": "write"}),
					tc("b", loop.ToolStartBackground, map[string]string{"agent": "writer", "prompt": "write later"}),
				), nil
			}
			results = toolResults(*req)
			return text("root done"), nil
		case "explore":
			return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "explored"})), nil
		}
		return nil, errors.New("unexpected agent " + string(req.Agent))
	})
	root := parseDef(t, "lead", "tools: Agent(explore)")
	res, err, ev := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", RootDefinition: root,
		Definitions: defs("explore", "writer")}, "go")
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "root done" {
		t.Errorf("answer %q", res.Answer)
	}
	if r := results["e"]; r.IsError || r.Content != "explored" {
		t.Errorf("explore: %+v", r)
	}
	for _, id := range []string{"w", "b"} {
		if r := results[id]; !r.IsError || !strings.Contains(r.Content, "Starting the agent writer") || !strings.Contains(r.Content, "`explore`") {
			t.Errorf("%s: %+v", id, r)
		}
	}
	if len(ev.of(cadre.EventAgentSpawned)) != 1 {
		t.Errorf("%d agents spawned, want 1", len(ev.of(cadre.EventAgentSpawned)))
	}
	if !strings.Contains(system, "explore") || strings.Contains(system, "writer") {
		t.Errorf("the root's prompt offers agents its rules deny:\n%s", system)
	}

	// The text protocol: a <spawn_agents> task naming writer fails, and
	// so does one naming no definition.
	tm := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch defName(req.Agent) {
		case "root":
			if req.Turn == 1 {
				return text("<spawn_agents>\n  <agent name=\"explore\" task=\"look\" />\n  <agent name=\"writer\" task=\"write\" />\n  <agent task=\"anything\" />\n</spawn_agents>"), nil
			}
			return text(lastContent(req)), nil
		case "explore":
			return text("explored"), nil
		}
		return nil, errors.New("unexpected agent " + string(req.Agent))
	})
	cfg := textConfig(tm, defs("explore", "writer")...)
	cfg.RootDefinition = root
	res, err, _ = runTask(t, cfg, "go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Answer, "explored") || !strings.Contains(res.Answer, "Starting the agent writer") ||
		!strings.Contains(res.Answer, "Starting a subagent without a definition") {
		t.Errorf("synthesis:\n%s", res.Answer)
	}
}

// A rule that asks before an agent starts goes to the approval policy.
func TestAgentRuleAsks(t *testing.T) {
	checkNoLeaks(t)
	var results map[string]cadre.Message
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch defName(req.Agent) {
		case "root":
			if req.Turn == 1 {
				return calls(tc("a", loop.ToolSpawnAgent, map[string]string{"agent": "deployer", "task": "ship it"})), nil
			}
			if req.Turn == 2 {
				return calls(tc("b", loop.ToolSpawnAgent, map[string]string{"agent": "deployer", "task": "ship again"})), nil
			}
			results = toolResults(*req)
			return text("root done"), nil
		case "deployer":
			return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "shipped"})), nil
		}
		return nil, errors.New("unexpected agent " + string(req.Agent))
	})
	root := parseDef(t, "lead", "mode: primary\npermission:\n  task:\n    \"*\": ask")
	var asked []tool.ApprovalRequest
	approver := &tool.Approver{Mode: tool.ApproveAsk, Prompt: func(_ context.Context, req tool.ApprovalRequest) (bool, error) {
		asked = append(asked, req)
		return len(asked) == 1, nil // yes the first time, no the second
	}}
	_, err, ev := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", RootDefinition: root,
		Definitions: defs("deployer"), Runner: &tool.Executor{Approver: approver}}, "go")
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 2 || asked[0].Tool != loop.ToolSpawnAgent || !strings.Contains(asked[0].Summary, "start deployer on: ship it") ||
		!strings.Contains(asked[0].Rule, `permission: task: "*": ask`) {
		t.Fatalf("approval requests %+v", asked)
	}
	if r := results["b"]; !r.IsError || !strings.Contains(r.Content, "declined") {
		t.Errorf("the declined start: %+v", r)
	}
	if len(ev.of(cadre.EventAgentSpawned)) != 1 {
		t.Errorf("%d agents spawned, want 1", len(ev.of(cadre.EventAgentSpawned)))
	}
}

// An agent's rules are part of its journaled config: a resumed run keeps
// them, even when the engine that resumes it no longer has the definition.
func TestRulesSurviveResume(t *testing.T) {
	checkNoLeaks(t)
	sh := &shell{}
	var refusal string
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Turn == 1 {
			return calls(tc("a", "run_command", map[string]string{"command": "ls"})), nil
		}
		refusal = toolResults(*req)["a"].Content
		return text("done"), nil
	})
	mem := memstore.New()
	crash := &crashStore{Store: mem, limit: 2} // the Start and the first model result
	cfg := Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Tools: []cadre.Tool{sh}, Store: crash,
		RootDefinition: parseDef(t, "gitter", "tools: Bash(git *)")}
	r, err := begin(New(cfg), "look")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(); err == nil {
		t.Fatal("the run survived its store")
	}
	cfg.Store, cfg.RootDefinition = mem, nil
	r, err = resumeRun(New(cfg), r.ID())
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "done" {
		t.Errorf("answer %q", res.Answer)
	}
	if got := sh.commands(); len(got) != 0 {
		t.Errorf("commands ran: %q", got)
	}
	if !strings.Contains(refusal, "tools: Bash(git *)") {
		t.Errorf("the resumed call was not refused by the journaled rule: %q", refusal)
	}
}
