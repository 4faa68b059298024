package agentdef

import (
	"slices"
	"strings"
)

// Names of cadre's built-in tools.
const (
	ToolReadFile    = "read_file"
	ToolListFiles   = "list_files"
	ToolSearchFiles = "search_files"
	ToolWriteFile   = "write_file"
	ToolEditFile    = "edit_file"
	ToolRunCommand  = "run_command"
	ToolWebFetch    = "web_fetch"
	ToolWebSearch   = "web_search"
	ToolTodoWrite   = "todo_write"
	ToolTodoRead    = "todo_read"
	ToolSkill       = "skill"
)

// GroupDelegation names every delegation tool in a tools list:
// "tools: Read, delegation" grants all of [DelegationTools].
const GroupDelegation = "delegation"

// BuiltinTools returns the names of cadre's built-in tools, in a stable
// order. The slice is new on every call.
func BuiltinTools() []string {
	return []string{ToolReadFile, ToolListFiles, ToolSearchFiles, ToolWriteFile, ToolEditFile, ToolRunCommand, ToolWebFetch, ToolWebSearch, ToolTodoWrite, ToolTodoRead, ToolSkill}
}

// SubagentTools returns the names of the tools through which agents
// delegate, report and talk to each other: what Task and Agent entries of
// other dialects map to. The slice is new on every call.
func SubagentTools() []string {
	return []string{
		"spawn_agent", "start_background_agent", "send_agent_message", "list_agents",
		"cancel_agent", "wait_agent", "answer_agent", "agent_onboard", "agent_onboard_reply",
		"call_agent", "agent_fork", "agent_create", "agent_call",
	}
}

// DelegationTools returns the tools through which an agent starts and
// follows other agents: what the group name "delegation" grants. Each is
// granted only as listed; send_agent_message and ask_caller are not among
// them (every subagent may report and ask). The slice is new on every call.
func DelegationTools() []string {
	return []string{
		"spawn_agent", "start_background_agent", "list_agents", "cancel_agent", "wait_agent", "answer_agent",
		"agent_onboard", "agent_onboard_reply", "call_agent", "agent_fork", "agent_create", "agent_call",
	}
}

// TaskTools returns what Claude Code's Task and Agent (and OpenCode's task)
// grant: starting a subagent, in the foreground (spawn_agent) or the
// background (start_background_agent), and following the agents started:
// wait_agent, answer_agent, list_agents, cancel_agent. Onboarding
// (agent_onboard, agent_onboard_reply, agent_fork, call_agent), agent_call
// and agent_create are cadre's own: list them by name, or write
// "delegation". The slice is new on every call.
func TaskTools() []string {
	return []string{"spawn_agent", "start_background_agent", "list_agents", "cancel_agent", "wait_agent", "answer_agent"}
}

// IsKnownTool reports whether name is one of cadre's built-in or subagent
// tools.
func IsKnownTool(name string) bool {
	return slices.Contains(BuiltinTools(), name) || slices.Contains(SubagentTools(), name)
}

// ResolveTool maps one tool name of any dialect (Read, bash, file_read,
// read_file, mcp__github__search, …) to cadre's tool names. Task and Agent
// resolve to [TaskTools], "delegation" to [DelegationTools]. A name
// mcp__server__tool (or mcp__server, or a pattern such as mcp__server__*,
// which name every tool of the server, or those matching) resolves to
// itself when server is among mcpServers.
// Arguments in parentheses are not part of the name; see ParseToolEntry.
func ResolveTool(name string, mcpServers []string) ([]string, bool) {
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, false
	}
	if IsKnownTool(name) {
		return []string{name}, true
	}
	if server, ok := mcpServer(name); ok {
		if slices.Contains(mcpServers, server) {
			return []string{name}, true
		}
		return nil, false
	}
	switch l := strings.ToLower(name); l {
	case "task", "agent":
		return TaskTools(), true
	case GroupDelegation:
		return DelegationTools(), true
	default:
		if tools, ok := dialectTools[l]; ok {
			return slices.Clone(tools), true
		}
	}
	if t, ok := ToolAlias(name); ok {
		return []string{t}, true
	}
	return nil, false
}

// dialectTools are the names Claude Code and OpenCode (and cadre, in other
// spellings) give cadre's built-in tools, in lower case, and the tools each
// names.
var dialectTools = map[string][]string{
	"read": {ToolReadFile}, "file_read": {ToolReadFile}, "readfile": {ToolReadFile}, "view": {ToolReadFile}, "read_file": {ToolReadFile},
	"grep": {ToolSearchFiles}, "search": {ToolSearchFiles}, "file_search": {ToolSearchFiles}, "search_files": {ToolSearchFiles},
	"glob": {ToolListFiles}, "ls": {ToolListFiles}, "list": {ToolListFiles}, "list_files": {ToolListFiles}, "listfiles": {ToolListFiles},
	"write": {ToolWriteFile}, "file_write": {ToolWriteFile}, "writefile": {ToolWriteFile}, "write_file": {ToolWriteFile},
	"edit": {ToolEditFile}, "multiedit": {ToolEditFile}, "patch": {ToolEditFile}, "file_edit": {ToolEditFile}, "edit_file": {ToolEditFile},
	"bash": {ToolRunCommand}, "shell": {ToolRunCommand}, "shell_execute": {ToolRunCommand}, "run_command": {ToolRunCommand},
	"webfetch": {ToolWebFetch}, "fetch": {ToolWebFetch}, "web_fetch": {ToolWebFetch},
	"websearch": {ToolWebSearch}, "web_search": {ToolWebSearch},
	// The task list: write it, and read it back.
	"todowrite": {ToolTodoWrite, ToolTodoRead}, "todoread": {ToolTodoWrite, ToolTodoRead}, "todo_write": {ToolTodoWrite, ToolTodoRead},
	"todo_read": {ToolTodoWrite, ToolTodoRead}, "taskcreate": {ToolTodoWrite, ToolTodoRead}, "taskget": {ToolTodoWrite, ToolTodoRead},
	"tasklist": {ToolTodoWrite, ToolTodoRead}, "taskupdate": {ToolTodoWrite, ToolTodoRead},
	"skill": {ToolSkill}, "skills": {ToolSkill},
}

// toolAliases are the names other agent tools (Gemini CLI, Cline, Cursor,
// Continue, Codex) give to what one built-in tool of cadre does, each
// unambiguous.
var toolAliases = map[string]string{
	"list_directory": ToolListFiles, "list_dir": ToolListFiles, "view_subdirectory": ToolListFiles,
	"file_glob_search": ToolListFiles, "glob_search": ToolListFiles,
	"search_file_content": ToolSearchFiles, "grep_search": ToolSearchFiles,
	"read_many_files": ToolReadFile, "view_file": ToolReadFile,
	"write_to_file": ToolWriteFile, "create_file": ToolWriteFile, "create_new_file": ToolWriteFile,
	"replace_in_file": ToolEditFile, "str_replace": ToolEditFile, "replace": ToolEditFile,
	"edit_existing_file": ToolEditFile, "single_find_and_replace": ToolEditFile, "apply_patch": ToolEditFile,
	"run_terminal_command": ToolRunCommand, "run_terminal_cmd": ToolRunCommand, "run_shell_command": ToolRunCommand,
	"execute_command": ToolRunCommand, "terminal": ToolRunCommand, "exec": ToolRunCommand,
	"fetch_url_content": ToolWebFetch, "url_fetch": ToolWebFetch,
	"google_web_search": ToolWebSearch, "search_web": ToolWebSearch, "web-search": ToolWebSearch,
}

// ToolAlias returns the built-in tool an alias of another agent tool
// names, such as list_directory (list_files) or run_terminal_command
// (run_command). Agent files that use one load with an info note.
func ToolAlias(name string) (string, bool) {
	t, ok := toolAliases[strings.ToLower(strings.TrimSpace(name))]
	return t, ok
}

// mcpServer returns the server part of an mcp__server__tool (or
// mcp__server) name.
func mcpServer(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return "", false
	}
	server, _, _ := strings.Cut(rest, "__")
	return server, server != ""
}

// ParseToolEntry splits an entry such as "Bash(git *)" into its name and
// argument text. hasArgs is false when there are no parentheses; ok is false
// when a parenthesis is not closed at the end of the entry.
func ParseToolEntry(entry string) (name, args string, hasArgs, ok bool) {
	entry = strings.TrimSpace(entry)
	open := strings.IndexByte(entry, '(')
	if open < 0 {
		return entry, "", false, !strings.ContainsRune(entry, ')')
	}
	if !strings.HasSuffix(entry, ")") {
		return strings.TrimSpace(entry[:open]), "", true, false
	}
	return strings.TrimSpace(entry[:open]), strings.TrimSpace(entry[open+1 : len(entry)-1]), true, true
}

// SplitToolList splits a comma-separated tool list. Commas inside
// parentheses do not split, so "Bash(git *), Agent(a, b)" is two entries.
// Entries are trimmed; empty ones are dropped.
func SplitToolList(s string) []string {
	var out []string
	depth, start := 0, 0
	add := func(e string) {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				add(s[start:i])
				start = i + 1
			}
		}
	}
	add(s[start:])
	return out
}

// splitArgs splits the argument text of an Agent(a, b) entry into names.
func splitArgs(args string) []string {
	var out []string
	for _, a := range strings.Split(args, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// isForeignTool reports whether name is a tool of Claude Code or OpenCode
// that has no counterpart in cadre (WebSearch, TodoWrite, …): a real name,
// not a misspelling.
func isForeignTool(name string) bool {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "codesearch", "notebookedit", "notebookread",
		"bashoutput", "taskoutput", "killshell", "killbash", "slashcommand", "exitplanmode",
		"listmcpresourcestool", "readmcpresourcetool", "lsp", "question":
		return true
	}
	return false
}
