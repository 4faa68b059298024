// Package agentdef reads subagent definitions: markdown files whose YAML
// frontmatter describes the agent and whose body is its system prompt,
// verbatim. It understands the files written for Claude Code, OpenCode,
// Netclaw and llm-do as they are, maps their tool names to cadre's, and
// finds them by scope.
//
// # Files
//
// A definition is a file ending in .md or .agent:
//
//	---
//	name: code-analyst
//	description: Reads code and explains structure, risks and call paths.
//	tools: Read, Grep, Glob, Bash(git log *)
//	model: inherit
//	---
//	You analyse source code. …
//
// Everything after the line that closes the frontmatter is the prompt, byte
// for byte (leading blank lines are dropped). A UTF-8 byte order mark, CRLF
// line endings, a blank line after the opening "---", frontmatter indented as
// a whole and a closing line of more than three dashes are all accepted.
//
// The fields, by origin:
//
//   - name, description (required); tools and disallowedTools (a
//     comma-separated string whose entries may carry arguments, as in
//     "Bash(git *), Agent(a, b)", a YAML list, "*" for everything, or an
//     OpenCode map of booleans); model (an alias such as sonnet or inherit, a
//     named model, provider:model or provider/model).
//   - Netclaw: modelRole (main, fallback, compaction; any case),
//     timeoutSeconds, visibility (user-facing or internal; hyphens and case
//     are ignored), emitStructuredFindings.
//   - Claude Code: maxTurns; background (the agent always runs in the
//     background: spawn_agent starts it as start_background_agent does);
//     permissionMode: plan (read-only) takes away the tools that write
//     files, run commands or create agents and those of MCP servers, and the
//     modes that approve more (acceptEdits, bypassPermissions, dontAsk) are
//     not honoured, with a warning; hooks are not run, with a warning;
//     color, permissionMode, skills, effort, memory, hooks and mcpServers
//     are kept in Definition.Extra.
//   - OpenCode: mode (primary makes the agent internal), temperature, steps
//     (the number of turns), hidden, disable (the file is skipped), tools as
//     a map (a tool set to false is disallowed; with "*": false only the
//     tools set to true remain) and permission (see Rules below). Without a
//     name, an OpenCode file is named after the file.
//   - llm-do .agent files: the same shape; toolsets and compatible_models
//     are kept in Extra.
//   - cadre: report (tool or tag: how the agent reports to its parent),
//     protocol (tools, text or auto), onboarding (false, optional or
//     required) and maxQuestions, askCaller, say, maxDepth, and outputSchema
//     (a JSON Schema the report must match, as YAML or as a JSON string).
//
// Any other field is kept in Extra as parsed; a field that looks like a
// misspelt known one gets a warning. A value cadre cannot use (a timeout
// that is not a number, an unknown visibility) rejects the file with an
// error saying what would do; nothing falls back to a default silently.
//
// A field left out takes its default: without tools the agent has its
// parent's tools; timeoutSeconds is 300 (cadre.DefaultTimeout);
// visibility is user-facing; without model or modelRole the agent uses its
// parent's model; emitStructuredFindings, askCaller and say are false;
// report is tool, protocol auto, onboarding optional and maxQuestions
// cadre.DefaultMaxQuestions. (Netclaw itself defaults timeoutSeconds to 60
// and modelRole to compaction; a file that relies on those should say so.)
//
// Tool names of other dialects map to cadre's built-in tools (see
// [BuiltinTools]): Read→read_file, Grep→search_files, Glob and LS→list_files,
// Write→write_file, Edit and MultiEdit→edit_file, Bash→run_command,
// WebFetch→web_fetch, WebSearch→web_search, the unambiguous names of
// other agent tools (see [ToolAlias]), and Task or Agent→[TaskTools] (spawn_agent,
// start_background_agent and the tools that follow the agents they start).
// Each delegation tool of [DelegationTools] is granted only when listed, or
// all of them by the group name "delegation". A name of a tool of an MCP
// server stays as it is when the server is one of the configured MCP
// servers: mcp__server__tool, mcp__server (every tool of the server), or a
// pattern such as mcp__server__*; OpenCode's server_tool and server_* are
// read as mcp__server__tool and mcp__server__*. The engine matches these
// against the tools it has (see rule.NameMatches). What a file takes away
// holds whichever MCP servers were given to the parser (a program may give
// none): a pattern that denies (web*, *search*) takes the tools of MCP
// servers it matches as well as cadre's, and OpenCode's SERVER_TOOL of a
// server not given is taken away under each name it may stand for
// (mcp__a__b_c and mcp__a_b__c for a_b_c). A name cadre cannot
// resolve in a list of tools the agent may use is a warning and the agent
// loads without it; with Strict it is an error and the agent is rejected.
// In a list of tools it may not use, a tool of Claude Code or OpenCode that
// cadre lacks (NotebookEdit, TodoWrite) is ignored, and any other name that
// takes nothing away is a warning, since it may be a misspelling that
// leaves a tool allowed: an unknown name, a tool of a server that is not
// configured, a pattern that matches none of cadre's tools (by their names
// or by the names of other dialects: Bash* takes run_command) and cannot
// name a tool of an MCP server. A pattern path.Match cannot read is an
// error.
//
// # Rules
//
// Entries with arguments and OpenCode's permission field become
// Definition.Rules (see cadre.ToolRule; package rule enforces them when a
// call is made):
//
//   - In tools, Bash(git *) grants run_command for the commands that match
//     (a rule denying every other command, then one allowing the pattern);
//     Read(…), Write(…), Edit(…), Grep(…) and Glob(…) or LS(…) grant
//     read_file, write_file, edit_file, search_files and list_files for the
//     paths that match (.gitignore patterns, relative to the workspace
//     root); WebFetch(domain:example.com) grants web_fetch for that host;
//     Agent(a, b) and Task(a, b) grant [TaskTools] for starting a and b
//     only. A bare entry for the same tool grants every call.
//   - In disallowedTools, the same entries deny what they match, further
//     than they would allow: Read(…) for both tools that read the contents
//     of files (read_file, search_files), Edit(…) and Write(…) for both
//     tools that write them (list_files shows names only: Glob(…) or LS(…)
//     deny it). Denials are read after the allowlist, so deny
//     beats allow, as in Claude Code.
//   - permission is a map from a permission to allow, ask or deny, or to a
//     map from patterns to those, read in the order written, the last
//     matching rule winning: read, edit (edit_file and write_file), list
//     (list_files), bash (run_command), webfetch (web_fetch) and task
//     (agents) take patterns, and so do cadre's and Claude Code's names of
//     the built-in tools; glob, grep and names of tools of MCP servers
//     (mcp__server__tool, mcp__server, patterns such as mcp__server__* and
//     OpenCode's server_*) take a whole-tool answer, and a delegation tool by
//     name allow or deny (task: ask asks before any agent starts); "*" is
//     every tool and every agent. permission: deny (or allow, or ask) alone is about
//     everything. A tool whose last rule denies every call is disallowed;
//     when the last "*" rule denies, only the tools a later rule leaves
//     remain. external_directory has no effect (the file tools never leave
//     the workspace) and doom_loop is a warning (cadre does not watch for
//     repeated calls); rules about OpenCode tools cadre lacks are ignored,
//     and a pattern that matches none of cadre's tools and cannot name a
//     tool of an MCP server is a warning when it denies or asks.
//
// The rules of tools and disallowedTools and those of permission form two
// groups, each of which must allow a call. A rule cadre cannot honour
// rejects the file with an error at its place that says what to write
// instead: arguments of a tool cadre cannot match (an MCP tool, a
// delegation tool), a Bash pattern that allows more than one command (&&,
// |, ;, a redirection, $(…)), a WebFetch rule that is not domain:, a pattern
// under glob, grep or "*", a .gitignore exception (!), a permission that is
// not allow, ask or deny, or a permission cadre does not know that denies
// or asks (it may be a misspelling). A permission or disallowedTools field
// the line reader cannot recover from broken YAML rejects the file too. A
// tool confined to some paths beside a tool that reaches the same files
// without rules (Read(src/**) with a bare Grep) is a warning.
//
// # Broken YAML
//
// Many real files are not valid YAML, nearly always because of a one-line
// description containing ": ", literal "\n" escapes mixed with line breaks,
// or a value starting with "**". When the YAML parser fails, the frontmatter
// is read again line by line, treating only known field names at column 0
// as fields (descriptions often contain example dialogue with "user:" or
// "Context:" at the start of a line). Fields that parse on their own are
// kept; name, description, tools and model are recovered as text; the
// agent loads with a warning saying so and why.
//
// # Scopes
//
// [Load] reads, lowest precedence first: the built-in agents ([Builtin]);
// the user's (~/.cadre/agents, ~/.claude/agents, ~/.config/opencode/agent
// and agents); the project's (.cadre/agents, .claude/agents,
// .opencode/agent and .opencode/agents in every directory from the
// repository root down to the working directory, nearer directories taking
// precedence); then each extra directory in order. Sub-folders are scanned,
// through symbolic links too (each real folder once); files not ending in
// .md or .agent are never read. Names are compared ignoring case. A
// definition from a nearer scope replaces one of the same name from a
// farther scope, with an info line, except when it is an unchanged copy of
// a built-in agent (as cadre init writes). Two files of one scope with the
// same name: the first in path order wins and the other is rejected (an
// error within one folder, a warning across the folders of one scope).
//
// # Diagnostics
//
// Nothing is logged or printed. [Parse] and [Load] return what they found
// together with a [Diagnostic] for everything worth telling: errors for
// rejected files (no frontmatter, malformed YAML that could not be
// recovered, missing name or description, empty body, duplicate name, bad
// value, a rule cadre cannot honour, unknown tool under Strict), warnings
// for files that loaded with something left out or recovered, and info
// lines (a README without
// frontmatter skipped, an override). One bad file never stops the scan.
//
// # Concurrency
//
// The package has no state. [Parse], [Load], [Builtin] and [Init] are safe
// to call concurrently. A [Catalog] is immutable once returned and safe for
// concurrent readers; the definitions it hands out are shared and must not
// be modified.
package agentdef
