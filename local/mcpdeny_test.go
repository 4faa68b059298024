package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/agentdef"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/model/scripted"
	"github.com/cadre-ai/cadre/tool"
)

// mcpTool stands for a tool of an MCP server, named as package mcp names
// them (mcp__SERVER__TOOL); it records its calls.
type mcpTool struct {
	name  string
	mu    sync.Mutex
	calls int
}

func (m *mcpTool) Spec() cadre.ToolSpec {
	return cadre.ToolSpec{Name: m.name, Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (m *mcpTool) Call(context.Context, json.RawMessage) (string, error) {
	m.mu.Lock()
	m.calls++
	m.mu.Unlock()
	return "created", nil
}

func (m *mcpTool) called() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// Every form Claude Code and OpenCode files use to take away the tools of
// an MCP server, or one of them, takes mcp__github__create_issue from a
// worker: it is not offered, and a call of it never reaches the tool. The
// tools the file leaves alone stay. This holds whether or not the servers
// were given when the file was parsed (a program may parse files without
// them): a pattern that also takes one of cadre's own tools (*create*
// takes agent_create), or one that matches none of them, once kept its
// MCP part only when a server was given.
func TestMCPDeniesTakeToolsAway(t *testing.T) {
	for _, servers := range [][]string{{"github", "wiki"}, nil} {
		t.Run(fmt.Sprintf("parsed with servers %v", servers), func(t *testing.T) { mcpDenies(t, servers) })
	}
}

func mcpDenies(t *testing.T, servers []string) {
	for name, frontmatter := range map[string]string{
		"disallowed pattern also of cadre's": "disallowedTools: \"*create*\"",
		"disallowed opencode tool":           "disallowedTools: github_create_issue",
		"tools map opencode tool":            "tools:\n  \"*\": true\n  github_create_issue: false",
		"permission pattern also of cadre's": "permission:\n  \"*s*\": deny",
		"permission pattern of no tool":      "permission:\n  \"*_issue\": deny",
		"disallowed server":                  "disallowedTools: mcp__github",
		"disallowed server pattern":          "disallowedTools: mcp__github__*",
		"disallowed tool":                    "disallowedTools: mcp__github__create_issue",
		"disallowed tool pattern":            "disallowedTools: mcp__github__create_*",
		"disallowed opencode form":           "disallowedTools: github_*",
		"tools map pattern":                  "tools:\n  \"*\": true\n  \"mcp__github__*\": false",
		"tools map opencode form":            "tools:\n  \"github_*\": false",
		"permission pattern":                 "permission:\n  \"mcp__github__*\": deny",
		"permission server":                  "permission:\n  mcp__github: deny",
		"permission tool":                    "permission:\n  mcp__github__create_issue: deny",
		"permission opencode form":           "permission:\n  \"github_*\": deny",
		"permission after star":              "permission:\n  \"*\": allow\n  \"mcp__*\": deny",
	} {
		t.Run(name, func(t *testing.T) {
			checkNoLeaks(t)
			issue := &mcpTool{name: "mcp__github__create_issue"}
			pages := &mcpTool{name: "mcp__wiki__edit_page"}
			var offered []string
			var results map[string]cadre.Message
			m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
				switch defName(req.Agent) {
				case "root":
					if req.Turn == 1 {
						return calls(tc("s", loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": "file it"})), nil
					}
					return text("root done"), nil
				case "worker":
					if req.Turn == 1 {
						for _, s := range req.Tools {
							offered = append(offered, s.Name)
						}
						return calls(tc("c", issue.name, map[string]string{"title": "x"})), nil
					}
					results = toolResults(*req)
					return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "worker done"})), nil
				}
				return nil, errors.New("unexpected agent " + string(req.Agent))
			})
			worker, diags := agentdef.Parse("worker.md", []byte("---\nname: worker\ndescription: Files issues.\n"+frontmatter+"\n---\nYou file issues.\n"),
				agentdef.ParseOptions{MCPServers: servers})
			if worker == nil {
				t.Fatalf("rejected: %v", diags)
			}
			for _, d := range diags {
				// Without the servers, a name of a server's tool is told
				// of as naming nothing cadre has.
				if d.Severity != agentdef.SeverityInfo && servers != nil {
					t.Errorf("diagnostic: %v", d)
				}
			}
			res, err, _ := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Tools: []cadre.Tool{issue, pages},
				Runner: &tool.Executor{Approver: &tool.Approver{Mode: tool.ApproveAll}}, Definitions: []*cadre.Definition{worker}}, "go")
			if err != nil {
				t.Fatal(err)
			}
			if res.Answer != "root done" {
				t.Errorf("answer %q", res.Answer)
			}
			if slices.Contains(offered, issue.name) {
				t.Errorf("the worker was offered %s: %v", issue.name, offered)
			}
			if name != "permission after star" && !slices.Contains(offered, pages.name) {
				t.Errorf("the worker lost %s: %v", pages.name, offered)
			}
			if n := issue.called(); n != 0 {
				t.Errorf("%s ran %d times", issue.name, n)
			}
			if r := results["c"]; !r.IsError {
				t.Errorf("the call: %+v", r)
			}
		})
	}
}

// A rule that denies a tool of an MCP server is enforced where the call
// runs as well, for an agent whose tool list was not narrowed (a
// definition built by a program, with rules only).
func TestMCPDenyRuleAtDispatch(t *testing.T) {
	issue := &mcpTool{name: "mcp__github__create_issue"}
	var results map[string]cadre.Message
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Turn == 1 {
			return calls(tc("c", issue.name, map[string]string{"title": "x"})), nil
		}
		results = toolResults(*req)
		return text("done"), nil
	})
	root := &cadre.Definition{Name: "lead", Description: "Leads.", Prompt: "You lead.",
		Rules: []cadre.ToolRule{{Tool: "mcp__github", Action: cadre.PermissionDeny, Source: "deny mcp__github"}}}
	_, err, _ := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Tools: []cadre.Tool{issue}, RootDefinition: root}, "go")
	if err != nil {
		t.Fatal(err)
	}
	if n := issue.called(); n != 0 {
		t.Errorf("%s ran %d times", issue.name, n)
	}
	if r := results["c"]; !r.IsError || !strings.Contains(r.Content, "deny mcp__github") {
		t.Errorf("the call: %+v", r)
	}
}

// An allowlist entry naming a server, or a pattern, grants the tools it
// names and no others; a denylist entry takes away what it names.
func TestFilterToolsByServer(t *testing.T) {
	from := []cadre.Tool{&shell{}, &mcpTool{name: "mcp__github__create_issue"}, &mcpTool{name: "mcp__github__list_issues"}, &mcpTool{name: "mcp__githubx__y"}}
	for _, tc := range []struct {
		name        string
		tools, deny []string
		want        []string
	}{
		{"server", []string{"mcp__github"}, nil, []string{"mcp__github__create_issue", "mcp__github__list_issues"}},
		{"pattern", []string{"run_command", "mcp__github__*"}, nil, []string{"run_command", "mcp__github__create_issue", "mcp__github__list_issues"}},
		{"pattern and deny", []string{"mcp__*"}, []string{"mcp__github__create_*"}, []string{"mcp__github__list_issues", "mcp__githubx__y"}},
		{"deny server", nil, []string{"mcp__github"}, []string{"run_command", "mcp__githubx__y"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, x := range filterTools(from, &cadre.Definition{Name: "w", Tools: tc.tools, DisallowedTools: tc.deny}) {
				got = append(got, x.Spec().Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
