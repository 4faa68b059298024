package cadre

// Permission is what a rule of an agent definition decides about a call.
type Permission string

// Permissions, from the most to the least permissive. Allow lets a call run
// (a tool that changes something still goes through the approval policy);
// ask sends the call to the approval policy whatever the tool; deny refuses
// it with a message the model can act on.
const (
	PermissionAllow Permission = "allow"
	PermissionAsk   Permission = "ask"
	PermissionDeny  Permission = "deny"
)

// PatternSyntax says how the pattern of a ToolRule is read. Package rule
// compiles and matches patterns; the syntaxes are described here.
type PatternSyntax string

// Pattern syntaxes.
const (
	// SyntaxCommand is Claude Code's Bash(…) pattern, matched against one
	// simple command of a command line: * stands for any text, spaces
	// included; every other character stands for itself; a trailing " *"
	// also matches nothing ("git *" matches "git"), and a trailing ":*"
	// (Claude Code's older form) means the same as " *".
	SyntaxCommand PatternSyntax = "command"
	// SyntaxGitignore is Claude Code's Read(…), Edit(…) and Write(…)
	// pattern, a line of a .gitignore file matched against a path relative
	// to the workspace root: * and ? do not cross "/", ** crosses any
	// number of directories, [abc] is a class; a pattern without "/" (other
	// than a trailing one) matches at any depth; a pattern that matches a
	// directory also matches everything below it; a trailing "/" matches
	// directories only. "//abs/path" is an absolute path and "~/path" is
	// under the home directory.
	SyntaxGitignore PatternSyntax = "gitignore"
	// SyntaxWildcard is OpenCode's pattern, matched against the whole text
	// of the command, path (relative to the workspace root), URL or agent
	// name: * stands for any text, "/" included, ? for one character, and
	// every other character for itself; a trailing " *" also matches
	// nothing.
	SyntaxWildcard PatternSyntax = "wildcard"
	// SyntaxDomain is Claude Code's WebFetch(domain:example.com): the host
	// of the URL, compared ignoring case; "*.example.com" matches every
	// subdomain of example.com, and not example.com itself.
	SyntaxDomain PatternSyntax = "domain"
	// SyntaxName is an agent name of Claude Code's Agent(a, b) and
	// Task(a, b), compared ignoring case.
	SyntaxName PatternSyntax = "name"
)

// Rule targets that are not tool names.
const (
	// RuleAgents is the Tool of rules about which definitions an agent may
	// start (Claude Code's Agent(…) and Task(…), OpenCode's task): they are
	// checked for every tool that starts an agent and for every task of a
	// <spawn_agents> block.
	RuleAgents = "agents"
	// RuleAnyTool is the Tool of rules about every tool and about starting
	// agents (OpenCode's "*" permission). Their pattern is always empty.
	RuleAnyTool = "*"
)

// A ToolRule is one rule of an agent definition about the calls of one tool.
//
// The rules of a definition are read in order, group by group: for a call
// of tool T, among the rules of a group whose Tool is T or RuleAnyTool, the
// last one whose pattern matches decides, and a call no rule matches is
// allowed (the tool is in the agent's tool list, or the call would not have
// reached its rules). A call must pass every group; a file that writes both
// a Claude Code tools list and an OpenCode permission map gets one group
// for each, so neither can widen what the other allows.
// OpenCode's permission maps read this way as written; agentdef orders the
// rules of Claude Code files so that deny beats ask and ask beats allow, as
// Claude Code does, and puts a rule that denies every call before the
// patterns of an allowlist entry such as Bash(git *).
//
// An agent's calls must pass its own definition's rules and those of every
// agent above it: a subagent's rules can narrow what its parent may do, never
// widen it.
type ToolRule struct {
	// Tool is a cadre tool name (run_command, edit_file, mcp__github__search),
	// mcp__SERVER or a pattern of tool names (mcp__github__*), which name
	// the tools of a server or those matching, RuleAgents or RuleAnyTool.
	Tool string `json:"tool"`
	// Pattern is what the call must match, read as Syntax says; empty
	// matches every call.
	Pattern string        `json:"pattern,omitempty"`
	Syntax  PatternSyntax `json:"syntax,omitempty"`
	Action  Permission    `json:"action"`
	// Source is the rule as the file writes it (tools: Bash(git *), or
	// permission: bash: "git *": allow), and Where its place
	// (file:line:col), for messages.
	Source string `json:"source,omitempty"`
	Where  string `json:"where,omitempty"`
	// Group names the rules that are read together (agentdef uses "tools"
	// for Claude Code's tools and disallowedTools, "permission" for
	// OpenCode's permission field).
	Group string `json:"group,omitempty"`
}

// MatchesAll reports whether the rule's pattern matches every call.
func (r ToolRule) MatchesAll() bool { return r.Pattern == "" }
