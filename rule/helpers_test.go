package rule

import (
	"testing"

	"github.com/cadre-ai/cadre"
)

// set compiles rules for a definition called "tester"; each rule is
// (tool, syntax, pattern, action).
func set(t testing.TB, rules ...cadre.ToolRule) *Set {
	t.Helper()
	s, err := compileSet("tester", rules)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func allow(tool string, syntax cadre.PatternSyntax, pattern string) cadre.ToolRule {
	return cadre.ToolRule{Tool: tool, Syntax: syntax, Pattern: pattern, Action: cadre.PermissionAllow, Source: "allow " + pattern}
}

func deny(tool string, syntax cadre.PatternSyntax, pattern string) cadre.ToolRule {
	return cadre.ToolRule{Tool: tool, Syntax: syntax, Pattern: pattern, Action: cadre.PermissionDeny, Source: "deny " + pattern}
}

func ask(tool string, syntax cadre.PatternSyntax, pattern string) cadre.ToolRule {
	return cadre.ToolRule{Tool: tool, Syntax: syntax, Pattern: pattern, Action: cadre.PermissionAsk, Source: "ask " + pattern}
}

// denyAll is the rule agentdef puts before the patterns of an allowlist
// entry.
func denyAll(tool string) cadre.ToolRule {
	return cadre.ToolRule{Tool: tool, Action: cadre.PermissionDeny, Source: "tools: Bash(…)", Where: "agent.md:3:8"}
}
