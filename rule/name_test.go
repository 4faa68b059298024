package rule

import (
	"testing"

	"github.com/cadre-ai/cadre"
)

func TestNameMatches(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"read_file", "read_file", true},
		{"read_file", "read_files", false},
		{"mcp__github", "mcp__github__create_issue", true},
		{"mcp__github", "mcp__githubx__create_issue", false},
		{"mcp__github", "mcp__github", true},
		{"mcp__github__*", "mcp__github__create_issue", true},
		{"mcp__github__*", "mcp__gitlab__create_issue", false},
		{"mcp__*", "mcp__gitlab__create_issue", true},
		{"mcp__*", "read_file", false},
		{"mcp__github__create_*", "mcp__github__create_issue", true},
		{"mcp__github__create_*", "mcp__github__list_issues", false},
		{"mcp__git*__*_issue", "mcp__github__create_issue", true},
		{"web_*", "web_fetch", true},
		{"mcp__github__x", "mcp__github__create_issue", false},
		{"mcp__GitHub__*", "mcp__github__create_issue", false},
		{"a*", cadre.RuleAgents, false},
		{"*", cadre.RuleAgents, false},
		{"mcp__github__[", "mcp__github__[", true},
		{"mcp__github__[", "mcp__github__x", false},
	} {
		if got := NameMatches(tc.pattern, tc.name); got != tc.want {
			t.Errorf("NameMatches(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

// A rule about mcp__SERVER or a pattern of tool names is about every tool
// it names: it decides their calls, and Chain.About (which Guard asks)
// says so.
func TestRuleAboutToolsOfServer(t *testing.T) {
	for _, tool := range []string{"mcp__github", "mcp__github__*", "mcp__*"} {
		chain := Chain{set(t, cadre.ToolRule{Tool: tool, Action: cadre.PermissionDeny, Source: "permission: " + tool + ": deny"})}
		if !chain.About("mcp__github__create_issue") {
			t.Errorf("%s: the chain is not about mcp__github__create_issue", tool)
		}
		if v := chain.Call("mcp__github__create_issue"); v.Action != cadre.PermissionDeny {
			t.Errorf("%s: mcp__github__create_issue is %s", tool, v.Action)
		}
		if chain.About("read_file") || chain.About(cadre.RuleAgents) {
			t.Errorf("%s: the chain is about read_file or agents", tool)
		}
	}
	// The last rule that names the tool decides: a later allow of one tool
	// of the server lets that tool through, and only that one.
	chain := Chain{set(t,
		cadre.ToolRule{Tool: "mcp__github__*", Action: cadre.PermissionDeny},
		cadre.ToolRule{Tool: "mcp__github__list_issues", Action: cadre.PermissionAllow})}
	if v := chain.Call("mcp__github__list_issues"); v.Action != cadre.PermissionAllow {
		t.Errorf("list_issues: %s", v.Action)
	}
	if v := chain.Call("mcp__github__create_issue"); v.Action != cadre.PermissionDeny {
		t.Errorf("create_issue: %s", v.Action)
	}
	if err := Check(cadre.ToolRule{Tool: "mcp__github__[", Action: cadre.PermissionDeny}); err == nil {
		t.Error("a rule whose tool is a broken pattern was accepted")
	}
}
