package rule

import (
	"fmt"
	"path"
	"strings"

	"github.com/cadre-ai/cadre"
)

// NameMatches reports whether a tool name as a definition writes it (an
// entry of Tools or DisallowedTools, or a rule's Tool) names the tool
// called name. It does when it is name itself; when it is mcp__SERVER, which
// names every tool of that MCP server (mcp__SERVER__…); and when it is a
// pattern with *, ? or [ ] (read as path.Match reads it, such as
// mcp__github__* or mcp__*) that matches name. Names are compared as
// written: tools of MCP servers keep the case of their servers. A pattern
// never names RuleAgents or RuleAnyTool, which are not tools.
func NameMatches(pattern, name string) bool {
	if pattern == name {
		return true
	}
	if name == cadre.RuleAgents || name == cadre.RuleAnyTool || pattern == "" {
		return false
	}
	if IsNamePattern(pattern) {
		ok, err := path.Match(pattern, name)
		return ok && err == nil
	}
	if rest, ok := strings.CutPrefix(pattern, "mcp__"); ok && rest != "" && !strings.Contains(rest, "__") {
		return strings.HasPrefix(name, pattern+"__")
	}
	return false
}

// IsNamePattern reports whether a tool name as a definition writes it is a
// pattern (holds *, ? or [) rather than one name; RuleAnyTool is not.
func IsNamePattern(s string) bool {
	return s != cadre.RuleAnyTool && strings.ContainsAny(s, "*?[")
}

// CheckName reports whether a tool name as a definition writes it can be
// matched: a pattern must be one path.Match reads.
func CheckName(s string) error {
	if !IsNamePattern(s) {
		return nil
	}
	if _, err := path.Match(s, ""); err != nil {
		return fmt.Errorf("%q is not a pattern cadre can match tool names with (write * for any characters, ? for one, [abc] for one of a set, and close every [)", s)
	}
	return nil
}
