package agentdef

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/rule"
)

// Rule groups: the rules of a Claude Code tools list (with its
// disallowedTools) and those of an OpenCode permission field are read
// separately, and a call must pass both.
const (
	groupTools      = "tools"
	groupPermission = "permission"
)

// toolEntries reads a tools or disallowedTools value written as a string or
// a list. inherit is set for "*".
func (b *builder) toolEntries(f field) (entries []string, inherit, ok bool) {
	switch v := f.value.(type) {
	case string:
		s := strings.TrimSpace(v)
		if f.raw {
			s = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
		}
		entries = SplitToolList(s)
	case []any:
		entries = []string{}
		for _, x := range v {
			switch x := x.(type) {
			case string:
				entries = append(entries, SplitToolList(x)...)
			case nil:
			case bool, uint64, int64, float64:
				entries = append(entries, fmt.Sprint(x))
			default:
				b.p.bad(f, "list tool names, such as Read, Grep or read_file")
				return nil, false, false
			}
		}
	default:
		b.p.bad(f, "write tool names separated by commas, or a list of them")
		return nil, false, false
	}
	if f.raw {
		for i, e := range entries {
			entries[i] = strings.Trim(e, `"'`)
		}
	}
	for _, e := range entries {
		if e == "*" {
			return nil, true, true
		}
	}
	return entries, false, true
}

// where is a place in the file, as file:line:col.
func (b *builder) where(line, col int) string {
	return fmt.Sprintf("%s:%d:%d", b.p.path, line, col)
}

func (b *builder) fieldWhere(f field) (int, int, string) {
	l, c := b.p.at(f.vline, f.vcol)
	return l, c, b.where(l, c)
}

// grant is what the entries of a tools list give one tool (or the agents
// it may start): every call (bare), or the calls its patterns allow.
type grant struct {
	tool    string
	bare    bool
	allows  []cadre.ToolRule
	entries []string
}

// resolved is a tools list in cadre's names.
type resolved struct {
	names   []string
	grants  []*grant
	unknown []string // entries cadre cannot resolve
	mcp     []string // mcp__ entries whose server is not configured
}

func (r *resolved) grant(tool string) *grant {
	for _, g := range r.grants {
		if g.tool == tool {
			return g
		}
	}
	g := &grant{tool: tool}
	r.grants = append(r.grants, g)
	return g
}

// resolve maps the entries of a tools list to cadre's tools, and their
// arguments (Bash(git *), Read(src/**), Agent(explore)) to rules that
// allow. An entry whose arguments cadre cannot honour is an error.
func (b *builder) resolve(f field, entries []string) resolved {
	r := resolved{names: []string{}}
	line, col, at := b.fieldWhere(f)
	for _, e := range entries {
		name, args, hasArgs, ok := ParseToolEntry(e)
		if !ok {
			r.unknown = append(r.unknown, e)
			continue
		}
		if _, known := ResolveTool(name, nil); !known {
			name = b.mcpName(name)
		}
		if err := rule.CheckName(name); err != nil {
			b.p.add(SeverityError, line, col, "%s: %s: %v; the agent is rejected", f.key, e, err)
			continue
		}
		tools, found := ResolveTool(name, b.p.opts.MCPServers)
		if !found {
			if _, isMCP := mcpServer(name); isMCP {
				r.mcp = append(r.mcp, name)
			} else {
				r.unknown = append(r.unknown, e)
			}
			continue
		}
		for _, t := range tools {
			if !slices.Contains(r.names, t) {
				r.names = append(r.names, t)
			}
		}
		if t, alias := ToolAlias(name); alias {
			b.p.add(SeverityInfo, line, col, "%s: %s is read as cadre's %s", f.key, name, t)
		}
		l := strings.ToLower(name)
		agents := l == "task" || l == "agent"
		if hasArgs && args == "" {
			b.p.add(SeverityError, line, col, "%s: %s: the parentheses are empty: write a pattern, such as %s(git *), or %s alone for every call; the agent is rejected", f.key, e, name, name)
			continue
		}
		if !hasArgs || args == "*" {
			if agents {
				r.grant(cadre.RuleAgents).bare = true
			}
			for _, t := range tools {
				r.grant(t).bare = true
			}
			continue
		}
		rules, err := entryRules(name, args, cadre.PermissionAllow)
		if err != nil {
			b.p.add(SeverityError, line, col, "%s: %s: %v; the agent is rejected", f.key, e, err)
			continue
		}
		for _, ru := range rules {
			ru.Source, ru.Where, ru.Group = f.key+": "+e, at, groupTools
			if err := rule.Check(ru); err != nil {
				b.p.add(SeverityError, line, col, "%s: %s: %v; the agent is rejected", f.key, e, err)
				break
			}
			g := r.grant(ru.Tool)
			g.allows = append(g.allows, ru)
			if !slices.Contains(g.entries, e) {
				g.entries = append(g.entries, e)
			}
		}
	}
	return r
}

// rules are the rules of a tools list: for each tool granted only by
// patterns, a rule that denies every call, then one per pattern.
func (r resolved) rules() []cadre.ToolRule {
	var out []cadre.ToolRule
	for _, g := range r.grants {
		if g.bare || len(g.allows) == 0 {
			continue
		}
		out = append(out, cadre.ToolRule{Tool: g.tool, Action: cadre.PermissionDeny, Group: groupTools, Where: g.allows[0].Where,
			Source: "tools: " + strings.Join(g.entries, ", ")})
		out = append(out, g.allows...)
	}
	return out
}

// entryRules turns the arguments of an entry such as Bash(git *) into
// rules with the given action. Rules that deny reach further than those
// that allow: Read(…) denies to both tools that read the contents of files
// (read_file, search_files), Edit(…) and Write(…) to both that write them.
// list_files shows names only, and is denied by Glob(…) and LS(…).
func entryRules(name, args string, action cadre.Permission) ([]cadre.ToolRule, error) {
	deny := action != cadre.PermissionAllow
	mk := func(syntax cadre.PatternSyntax, pattern string, tools ...string) []cadre.ToolRule {
		if strings.TrimSpace(pattern) == "*" {
			pattern = ""
		}
		var out []cadre.ToolRule
		for _, t := range tools {
			out = append(out, cadre.ToolRule{Tool: t, Pattern: pattern, Syntax: syntax, Action: action})
		}
		return out
	}
	paths := func(allow []string, denied ...string) []cadre.ToolRule {
		if deny {
			return mk(cadre.SyntaxGitignore, args, denied...)
		}
		return mk(cadre.SyntaxGitignore, args, allow...)
	}
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "bash", "shell", "shell_execute", "run_command":
		return mk(cadre.SyntaxCommand, args, ToolRunCommand), nil
	case "read", "file_read", "readfile", "view", "read_file":
		return paths([]string{ToolReadFile}, ToolReadFile, ToolSearchFiles), nil
	case "write", "file_write", "writefile", "write_file":
		return paths([]string{ToolWriteFile}, ToolWriteFile, ToolEditFile), nil
	case "edit", "multiedit", "patch", "file_edit", "edit_file":
		return paths([]string{ToolEditFile}, ToolEditFile, ToolWriteFile), nil
	case "grep", "search", "file_search", "search_files":
		return paths([]string{ToolSearchFiles}, ToolSearchFiles), nil
	case "glob", "ls", "list", "list_files", "listfiles":
		return paths([]string{ToolListFiles}, ToolListFiles), nil
	case "webfetch", "fetch", "web_fetch":
		host, ok := strings.CutPrefix(strings.TrimSpace(args), "domain:")
		if !ok {
			return nil, fmt.Errorf("cadre reads WebFetch rules as WebFetch(domain:example.com); write the host the agent may fetch from")
		}
		return mk(cadre.SyntaxDomain, strings.TrimSpace(host), ToolWebFetch), nil
	case "task", "agent":
		var out []cadre.ToolRule
		for _, n := range splitArgs(args) {
			out = append(out, mk(cadre.SyntaxName, n, cadre.RuleAgents)...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("cadre cannot match the arguments of %s: rules with arguments are for Bash, Read, Edit, Write, Grep, Glob, WebFetch(domain:…) and Agent or Task; list %s without parentheses to grant it whole", name, name)
}

// report tells about the entries that did not resolve. Under Strict, the
// tools list rejects the agent.
func (b *builder) report(f field, r resolved, strict bool) {
	sev, tail := SeverityWarning, "the agent loads without "
	if strict {
		sev, tail = SeverityError, "strict mode rejects the agent: remove "
	}
	left := ""
	if !strict && f.key == "tools" && len(r.names) == 0 {
		left = ", and is left with no tools"
	}
	if n := len(r.unknown); n > 0 {
		what, them := "is not a tool", "it"
		if n > 1 {
			what, them = "are not tools", "them"
		}
		b.p.valueDiag(sev, f, "%s: %s %s cadre knows (cadre's tools: %s; Task and Agent map to spawn_agent and the tools that follow the agents it starts, delegation to every delegation tool); %s%s%s",
			f.key, strings.Join(r.unknown, ", "), what, strings.Join(BuiltinTools(), ", "), tail, them, left)
	}
	if n := len(r.mcp); n > 0 {
		var servers []string
		for _, m := range r.mcp {
			s, _ := mcpServer(m)
			if !slices.Contains(servers, s) {
				servers = append(servers, s)
			}
		}
		what, them := "is a tool", "it"
		if n > 1 {
			what, them = "are tools", "them"
		}
		server, be := "server "+servers[0]+", which is", "it"
		if len(servers) > 1 {
			server, be = "servers "+strings.Join(servers, ", ")+", which are", "them"
		}
		b.p.valueDiag(sev, f, "%s: %s %s of the MCP %s not configured (add %s under mcpServers: in the config); %s%s%s",
			f.key, strings.Join(r.mcp, ", "), what, server, be, tail, them, left)
	}
}

func (b *builder) tools(f field) {
	if f.value == nil {
		return // tools: with no value inherits, like no tools field
	}
	if m, ok := f.value.(map[string]any); ok {
		b.toolMap(f, m)
		return
	}
	entries, inherit, ok := b.toolEntries(f)
	if !ok || inherit {
		return
	}
	r := b.resolve(f, entries)
	b.report(f, r, b.p.opts.Strict)
	b.def.Tools = r.names
	b.allowRules = r.rules()
}

// toolMap reads OpenCode's tools map. Every tool is on unless set to
// false; with "*": false, only the tools set to true are on.
func (b *builder) toolMap(f field, m map[string]any) {
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
	var on, off []string
	allowlist := false
	for _, k := range keys {
		v, ok := m[k].(bool)
		if !ok {
			b.p.valueDiag(SeverityError, f, "tools: %s: %s is not valid: write true or false", k, kindOf(m[k]))
			continue
		}
		switch {
		case k == "*":
			allowlist = !v
		case v:
			on = append(on, k)
		default:
			off = append(off, k)
		}
	}
	if allowlist {
		r := b.resolve(f, on)
		b.report(f, r, b.p.opts.Strict)
		b.def.Tools = inToolOrder(r.names)
		return
	}
	b.deny(f, off)
}

func (b *builder) disallowed(f field) {
	if f.value == nil {
		return
	}
	entries, all, ok := b.toolEntries(f)
	if !ok {
		return
	}
	if all {
		b.def.Tools = []string{}
		return
	}
	b.deny(f, entries)
}

// deny adds tools to the definition's disallowed tools. Patterns such as
// "web*" match cadre's tool names. Taking away a tool cadre does not have
// changes nothing, so only names that look like misspellings are reported.
// An entry with arguments, such as Bash(rm *), denies the calls that match
// them.
func (b *builder) deny(f field, entries []string) {
	var exact, unknown []string
	line, col, at := b.fieldWhere(f)
	for _, e := range entries {
		name, args, hasArgs, ok := ParseToolEntry(e)
		if ok && hasArgs && args != "" && args != "*" {
			rules, err := entryRules(name, args, cadre.PermissionDeny)
			if err != nil {
				b.p.add(SeverityError, line, col, "%s: %s: %v; the agent is rejected", f.key, e, err)
				continue
			}
			for _, ru := range rules {
				ru.Source, ru.Where, ru.Group = f.key+": "+e, at, groupTools
				if err := rule.Check(ru); err != nil {
					b.p.add(SeverityError, line, col, "%s: %s: %v; the agent is rejected", f.key, e, err)
					break
				}
				b.denyRules = append(b.denyRules, ru)
			}
			continue
		}
		if strings.ContainsAny(name, "*?[") {
			b.denyPattern(f, e, name)
			continue
		}
		if l := strings.ToLower(name); l == "task" || l == "agent" {
			// Taking away Claude Code's subagent tool takes away every way
			// of starting or following an agent.
			b.addDisallowed(DelegationTools())
			continue
		}
		exact = append(exact, e)
	}
	r := b.resolve(f, exact)
	if _, fromMap := f.value.(map[string]any); fromMap {
		r.names = inToolOrder(r.names)
	}
	b.addDisallowed(r.names)
	// A tool of a server that is not configured is taken away all the
	// same, in case the list of servers given here is not the one the
	// agent runs with.
	b.addDisallowed(r.mcp)
	if len(r.mcp) > 0 {
		b.p.valueDiag(SeverityWarning, f, "%s: %s: %s, so there is nothing to take away; check the server's name", f.key, strings.Join(r.mcp, ", "), b.notConfigured(r.mcp))
	}
	var asMCP []string
	for _, u := range r.unknown {
		name, _, _, _ := ParseToolEntry(u)
		if isForeignTool(name) {
			continue
		}
		unknown = append(unknown, u)
		// A name OpenCode's way (SERVER_TOOL) of a server not given here
		// is taken away from whichever server the agent runs with.
		names := opencodeMCPNames(name)
		b.addDisallowed(names)
		asMCP = append(asMCP, names...)
	}
	if len(unknown) == 0 {
		return
	}
	what := "is not a tool"
	if len(unknown) > 1 {
		what = "are not tools"
	}
	also := ""
	if len(asMCP) > 0 {
		also = fmt.Sprintf("; should the agent run with an MCP server of such a name, %s is taken away", strings.Join(asMCP, ", "))
	}
	b.p.valueDiag(SeverityWarning, f, "%s: %s %s cadre knows, so there is nothing to take away; check the spelling (cadre's tools: %s)%s",
		f.key, strings.Join(unknown, ", "), what, strings.Join(BuiltinTools(), ", "), also)
}

// opencodeMCPNames returns the names cadre gives the tool of an MCP server
// OpenCode calls name (SERVER_TOOL), one for each place the server's name
// may end, since either name may hold an underscore: mcp__a__b_c and
// mcp__a_b__c for a_b_c. It returns nothing for a name that cannot be one.
func opencodeMCPNames(name string) []string {
	if strings.HasPrefix(name, "mcp__") || rule.CheckName(name) != nil {
		return nil
	}
	var out []string
	for i := 1; i < len(name)-1; i++ {
		if name[i] == '_' {
			out = append(out, "mcp__"+name[:i]+"__"+name[i+1:])
		}
	}
	return out
}

// mcpName returns a name of a tool of an MCP server as OpenCode writes it,
// SERVER_TOOL (or a pattern such as SERVER_*), as cadre names it:
// mcp__SERVER__TOOL, when SERVER is a configured server (the longest, when
// several fit). Any other name is returned as it is. Callers ask first
// whether the name is one of cadre's or another dialect's: web_fetch stays
// web_fetch even beside a server called web.
func (b *builder) mcpName(name string) string {
	if strings.HasPrefix(name, "mcp__") {
		return name
	}
	best := ""
	for _, s := range b.p.opts.MCPServers {
		if len(s) > len(best) && strings.HasPrefix(name, s+"_") {
			best = s
		}
	}
	if best == "" {
		return name
	}
	return "mcp__" + best + "__" + name[len(best)+1:]
}

// knownName reports whether a name (or pattern) is one of cadre's tools or
// a name another dialect gives one, or matches some.
func (b *builder) knownName(name string) bool {
	if rule.IsNamePattern(name) {
		return len(matchTools(name)) > 0
	}
	_, ok := ResolveTool(name, nil)
	return ok || isForeignTool(name)
}

// denyPattern takes away the tools a pattern such as web* or
// mcp__github__* names: those of cadre's own it matches now, and the tools
// of MCP servers it stands for (see mcpPattern), which the engine matches
// against the tools it has (see rule.NameMatches). A pattern that names no
// tool the agent could have is reported: it takes nothing away.
func (b *builder) denyPattern(f field, e, name string) {
	if err := rule.CheckName(name); err != nil {
		b.p.valueDiag(SeverityError, f, "%s: %s: %v; the agent is rejected", f.key, e, err)
		return
	}
	found := matchTools(name)
	b.addDisallowed(found)
	// The tools of MCP servers it stands for are taken away even when no
	// server given here has such tools: the servers the agent runs with
	// may not be the ones given here (a program may parse a file without
	// any), and what a file denies must hold whatever tools it meets.
	mp := mcpPattern(b.mcpName(name))
	b.addDisallowed([]string{mp})
	if len(found) > 0 || b.mayName(mp) {
		return
	}
	if server := patternServer(mp); server != "" && strings.HasPrefix(name, "mcp__") {
		b.p.valueDiag(SeverityWarning, f, "%s: %s: %s, so there is nothing to take away; check the server's name", f.key, e, b.notConfigured([]string{mp}))
		return
	}
	b.p.valueDiag(SeverityWarning, f, "%s: %s matches none of cadre's tools, nor any name other agent files give them (such as Bash, Read or WebFetch), nor a tool of a configured MCP server, so there is nothing to take away; check the spelling (cadre's tools: %s; the tools of an MCP server are mcp__SERVER__TOOL, or SERVER_TOOL as OpenCode writes them; %s)",
		f.key, e, strings.Join(BuiltinTools(), ", "), b.servers())
}

// servers says which MCP servers are configured.
func (b *builder) servers() string {
	if len(b.p.opts.MCPServers) == 0 {
		return "no MCP server is configured"
	}
	return "MCP servers configured: " + strings.Join(b.p.opts.MCPServers, ", ")
}

// notConfigured says which MCP servers of tool names are not configured.
func (b *builder) notConfigured(names []string) string {
	var servers []string
	for _, n := range names {
		if s := patternServer(n); s != "" && !slices.Contains(servers, s) {
			servers = append(servers, s)
		}
	}
	what := "the MCP server " + strings.Join(servers, ", ") + " is not configured"
	if len(servers) > 1 {
		what = "the MCP servers " + strings.Join(servers, ", ") + " are not configured"
	}
	return what + " (" + b.servers() + ")"
}

// mcpPattern returns the pattern of names of tools of MCP servers that a
// pattern of tool names stands for. One written as cadre (and Claude Code)
// name those tools, mcp__SERVER__TOOL, or as a start of that name (mcp*),
// stands for itself; any other (*_issue, mymcp_*) is read as OpenCode
// reads it, against its names of those tools, SERVER_TOOL, and stands for
// mcp__ followed by it.
func mcpPattern(p string) string {
	lit := p
	if i := strings.IndexAny(p, "*?["); i >= 0 {
		lit = p[:i]
	}
	if strings.HasPrefix(lit, "mcp__") || lit != "" && strings.HasPrefix("mcp__", lit) {
		return p
	}
	return "mcp__" + p
}

// mayName reports whether a pattern of names of tools of MCP servers
// (from mcpPattern) may name a tool of a configured server: the server it
// names is configured, or, when it names none for certain, the start of
// the server's name it gives fits one.
func (b *builder) mayName(p string) bool {
	rest, ok := strings.CutPrefix(p, "mcp__")
	if !ok {
		// A start of mcp__ (mcp*): any tool of any server.
		return len(b.p.opts.MCPServers) > 0
	}
	lit := rest
	if i := strings.IndexAny(rest, "*?["); i >= 0 {
		lit = rest[:i]
	}
	if server, _, named := strings.Cut(lit, "__"); named {
		return slices.Contains(b.p.opts.MCPServers, server)
	}
	return slices.ContainsFunc(b.p.opts.MCPServers, func(s string) bool {
		return strings.HasPrefix(s, lit) || strings.HasPrefix(lit, s+"_")
	})
}

// patternServer returns the MCP server a tool name or pattern names, when
// it names one: "github" for mcp__github, mcp__github__x and
// mcp__github__*; "" for mcp__* or mcp__git*__x.
func patternServer(name string) string {
	server, ok := mcpServer(name)
	if !ok || strings.ContainsAny(server, "*?[") {
		return ""
	}
	return server
}

// matchTools returns what a pattern of tool names takes away among the
// tools cadre knows: its tools whose names match it, and those whose names
// in other dialects (Bash, Read, WebFetch, run_terminal_command, …) do,
// ignoring case. A pattern matching Task or Agent takes every delegation
// tool, as those names do.
func matchTools(pattern string) []string {
	p := strings.ToLower(pattern)
	var out []string
	add := func(name string, tools ...string) {
		if ok, _ := path.Match(p, name); !ok {
			return
		}
		for _, t := range tools {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	for _, t := range append(BuiltinTools(), SubagentTools()...) {
		add(t, t)
	}
	for n, tools := range dialectTools {
		add(n, tools...)
	}
	for n, t := range toolAliases {
		add(n, t)
	}
	for _, n := range []string{"task", "agent"} {
		add(n, DelegationTools()...)
	}
	return inToolOrder(out)
}

// inToolOrder sorts tool names read from a map as cadre lists its tools:
// built-in tools, then subagent tools, then others by name.
func inToolOrder(names []string) []string {
	order := append(BuiltinTools(), SubagentTools()...)
	rank := func(n string) int {
		if i := slices.Index(order, n); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(names, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return names
}

func (b *builder) addDisallowed(names []string) {
	for _, n := range names {
		if !slices.Contains(b.def.DisallowedTools, n) {
			b.def.DisallowedTools = append(b.def.DisallowedTools, n)
		}
	}
}

// permKind is what an OpenCode permission key is about.
type permKind uint8

const (
	permUnknown    permKind = iota
	permAny                 // "*": every tool, and starting agents
	permSubject             // a tool whose patterns cadre matches (read, edit, list, bash, webfetch, task)
	permWhole               // a tool cadre knows, matched as a whole only (glob, grep, websearch, todowrite, todoread, skill, MCP tools)
	permDelegation          // a delegation tool by name: allowed or denied whole
	permOutside             // external_directory: cadre's file tools never leave the workspace
	permLoop                // doom_loop
	permForeign             // a tool of OpenCode's that cadre does not have
	permMCP                 // tools of an MCP server (mcp__github, mcp__github__x, mcp__github__*): whole only
	permNone                // a pattern that matches no tool cadre has
)

// opencodeKeys are the permission keys of OpenCode's tools that cadre has,
// and the cadre tools each governs.
func opencodeKeys() map[string][]string {
	return map[string][]string{
		"read": {ToolReadFile}, "edit": {ToolEditFile, ToolWriteFile}, "list": {ToolListFiles},
		"glob": {ToolListFiles}, "grep": {ToolSearchFiles}, "bash": {ToolRunCommand},
		"webfetch": {ToolWebFetch}, "task": {cadre.RuleAgents},
		"websearch": {ToolWebSearch}, "todowrite": {ToolTodoWrite}, "todoread": {ToolTodoRead}, "skill": {ToolSkill},
	}
}

// permTarget says what a permission key is about and which tools (cadre
// names, RuleAgents or RuleAnyTool) its rules go to.
func (b *builder) permTarget(key string) (permKind, []string) {
	key = strings.TrimSpace(key)
	k := strings.ToLower(key)
	if _, known := opencodeKeys()[k]; !known && !b.knownName(key) {
		key = b.mcpName(key)
	}
	if strings.HasPrefix(key, "mcp__") {
		return permMCP, []string{key}
	}
	switch k {
	case "*":
		return permAny, []string{cadre.RuleAnyTool}
	case "glob", "grep", "websearch", "todowrite", "todoread", "skill":
		return permWhole, opencodeKeys()[k]
	case "external_directory":
		return permOutside, nil
	case "doom_loop":
		return permLoop, nil
	case "codesearch", "lsp", "question", "browser":
		return permForeign, nil
	}
	if tools, ok := opencodeKeys()[k]; ok {
		return permSubject, tools
	}
	if strings.ContainsAny(k, "*?") {
		var tools []string
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for n := range opencodeKeys() {
				if !yield(n) {
					return
				}
			}
		}) {
			if ok, _ := path.Match(k, name); ok {
				for _, t := range opencodeKeys()[name] {
					if !slices.Contains(tools, t) {
						tools = append(tools, t)
					}
				}
			}
		}
		builtin := len(tools) > 0
		// It may name tools of MCP servers too, whichever servers are
		// given here: the engine matches it against the tools it has.
		mp := mcpPattern(key)
		if !slices.Contains(tools, mp) {
			tools = append(tools, mp)
		}
		if builtin || b.mayName(mp) {
			return permWhole, tools
		}
		for _, f := range []string{"codesearch", "lsp", "question", "browser"} {
			if ok, _ := path.Match(k, f); ok {
				return permForeign, nil
			}
		}
		return permNone, tools
	}
	if tools, ok := ResolveTool(key, b.p.opts.MCPServers); ok {
		switch {
		case k == "task" || k == "agent":
			return permSubject, []string{cadre.RuleAgents}
		case len(tools) == 1 && slices.Contains(BuiltinTools(), tools[0]):
			return permSubject, tools
		case slices.ContainsFunc(tools, func(t string) bool { return slices.Contains(DelegationTools(), t) }):
			return permDelegation, tools
		}
		return permWhole, tools
	}
	if isForeignTool(key) {
		return permForeign, nil
	}
	return permUnknown, nil
}

// permEntry is one rule of a permission field as written.
type permEntry struct {
	key, pattern, action string
	line, col            int
	source               string
}

// permission reads OpenCode's permission field: a map from permission (a
// tool, or "*" for all) to allow, ask or deny, or to a map from pattern to
// those, read in order, the last matching rule winning; or one of allow,
// ask and deny for everything. The field is also kept in Extra as written.
func (b *builder) permission(f field) {
	entries, ok := b.permEntries(f)
	if !ok {
		return
	}
	said := map[permKind]bool{}
	for _, e := range entries {
		kind, tools := b.permTarget(e.key)
		action := cadre.Permission(strings.ToLower(strings.TrimSpace(e.action)))
		switch action {
		case cadre.PermissionAllow, cadre.PermissionAsk, cadre.PermissionDeny:
		default:
			b.p.add(SeverityError, e.line, e.col, "%s: %q is not a permission: use allow, ask or deny; the agent is rejected", e.source, e.action)
			continue
		}
		pattern := e.pattern
		if strings.TrimSpace(pattern) == "*" {
			pattern = ""
		}
		switch kind {
		case permOutside:
			if !said[kind] {
				b.p.add(SeverityInfo, e.line, e.col, "%s: cadre's file tools never reach outside the workspace, whatever this says", e.source)
			}
			said[kind] = true
			continue
		case permLoop:
			if !said[kind] {
				b.p.add(SeverityWarning, e.line, e.col, "%s: cadre does not watch for a call repeated with the same arguments, so doom_loop has no effect; the agent's turn limit (maxTurns) bounds a loop", e.source)
			}
			said[kind] = true
			continue
		case permForeign:
			continue // a tool cadre does not have: nothing to allow or deny
		case permNone:
			if action != cadre.PermissionAllow {
				b.p.add(SeverityWarning, e.line, e.col, "%s: %s matches none of cadre's tools (read, edit, list, glob, grep, bash, webfetch, websearch, todowrite, todoread, skill, task, or mcp__SERVER__TOOL and SERVER_TOOL for a configured MCP server; %s), so there is nothing for it to %s unless the agent runs with an MCP server whose tools it names (%s): check the spelling", e.source, e.key, b.servers(), action, tools[0])
			}
			if pattern != "" {
				continue // no tool it could name takes patterns
			}
		case permMCP:
			if server := patternServer(tools[0]); server != "" && !slices.Contains(b.p.opts.MCPServers, server) {
				b.p.add(SeverityWarning, e.line, e.col, "%s: %s: %s, so the rule has nothing to act on; check the server's name", e.source, e.key, b.notConfigured(tools))
			}
			if pattern != "" {
				b.p.add(SeverityError, e.line, e.col, "%s: cadre cannot match the arguments of a tool of an MCP server: write allow, ask or deny for the whole tool; the agent is rejected", e.source)
				continue
			}
		case permUnknown:
			if action == cadre.PermissionAllow {
				b.p.add(SeverityWarning, e.line, e.col, "%s: %s is not a permission cadre knows (read, edit, list, glob, grep, bash, webfetch, websearch, todowrite, todoread, skill, task, \"*\" or a tool name); ignored", e.source, e.key)
				continue
			}
			b.p.add(SeverityError, e.line, e.col, "%s: %s is not a permission cadre knows (read, edit, list, glob, grep, bash, webfetch, websearch, todowrite, todoread, skill, task, \"*\" or a tool name), so what it %ss cannot be enforced: check the spelling; the agent is rejected", e.source, e.key, action)
			continue
		case permWhole, permAny, permDelegation:
			if pattern != "" {
				b.p.add(SeverityError, e.line, e.col, "%s: cadre cannot match patterns of %s (only of read, edit, list, bash, webfetch and task): write allow, ask or deny for the whole tool; the agent is rejected", e.source, e.key)
				continue
			}
			if kind == permDelegation && action == cadre.PermissionAsk {
				b.p.add(SeverityError, e.line, e.col, "%s: cadre cannot ask before a delegation tool is used: write task: ask to ask before any agent starts, or allow or deny %s; the agent is rejected", e.source, e.key)
				continue
			}
		}
		for _, t := range tools {
			r := cadre.ToolRule{Tool: t, Pattern: pattern, Action: action, Source: e.source, Where: b.where(e.line, e.col), Group: groupPermission}
			if pattern != "" {
				r.Syntax = cadre.SyntaxWildcard
			}
			if err := rule.Check(r); err != nil {
				b.p.add(SeverityError, e.line, e.col, "%s: %v; the agent is rejected", e.source, err)
				break
			}
			b.permRules = append(b.permRules, r)
		}
	}
}

// permEntries lists the rules of a permission field in the order written,
// with their places.
func (b *builder) permEntries(f field) ([]permEntry, bool) {
	pos := func(n ast.Node) (int, int) {
		if n == nil || n.GetToken() == nil || n.GetToken().Position == nil {
			return b.p.at(f.vline, f.vcol)
		}
		return b.p.at(f.nodePos(n.GetToken().Position))
	}
	if f.value == nil {
		return nil, true // permission: with no value says nothing
	}
	if s, ok := f.value.(string); ok {
		l, c := b.p.at(f.vline, f.vcol)
		return []permEntry{{key: "*", action: s, line: l, col: c, source: "permission: " + s}}, true
	}
	if f.node == nil {
		l, c := b.p.at(f.vline, f.vcol)
		b.p.add(SeverityError, l, c, "permission: could not be read (%s); the agent is rejected, since it would run without the limits the field sets: fix the YAML", describe(f))
		return nil, false
	}
	pairs, ok := mappingPairs(f.node)
	if !ok {
		b.p.bad(f, "write allow, ask or deny, or a map such as bash: ask, edit: deny")
		return nil, false
	}
	var out []permEntry
	good := true
	for _, mv := range pairs {
		key := nodeText(mv.Key)
		kl, kc := pos(mv.Key)
		if s, isText := scalarText(mv.Value); isText {
			out = append(out, permEntry{key: key, action: s, line: kl, col: kc, source: fmt.Sprintf("permission: %s: %s", key, s)})
			continue
		}
		inner, isMap := mappingPairs(mv.Value)
		if !isMap {
			b.p.add(SeverityError, kl, kc, "permission: %s: write allow, ask or deny, or a map from patterns to those, such as \"git *\": allow; the agent is rejected", key)
			good = false
			continue
		}
		for _, iv := range inner {
			pat := nodeText(iv.Key)
			pl, pc := pos(iv.Key)
			s, isText := scalarText(iv.Value)
			if !isText {
				b.p.add(SeverityError, pl, pc, "permission: %s: %s: write allow, ask or deny; the agent is rejected", key, strconv.Quote(pat))
				good = false
				continue
			}
			out = append(out, permEntry{key: key, pattern: pat, action: s, line: pl, col: pc,
				source: fmt.Sprintf("permission: %s: %s: %s", key, strconv.Quote(pat), s)})
		}
	}
	return out, good
}

// mappingPairs returns the key: value pairs of a mapping node, in order.
func mappingPairs(n ast.Node) ([]*ast.MappingValueNode, bool) {
	for {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
			continue
		case *ast.TagNode:
			n = v.Value
			continue
		case *ast.MappingNode:
			return v.Values, true
		case *ast.MappingValueNode:
			return []*ast.MappingValueNode{v}, true
		}
		return nil, false
	}
}

// scalarText returns the text of a scalar node.
func scalarText(n ast.Node) (string, bool) {
	for {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
			continue
		case *ast.TagNode:
			n = v.Value
			continue
		case *ast.StringNode:
			return v.Value, true
		case *ast.LiteralNode:
			return v.Value.Value, true
		}
		return "", false
	}
}

func nodeText(n ast.Node) string {
	if s, ok := scalarText(n); ok {
		return s
	}
	if n == nil || n.GetToken() == nil {
		return ""
	}
	return n.GetToken().Value
}

// finishRules puts the rules read into the definition, takes away the
// tools an OpenCode permission field denies as a whole, and warns where a
// rule leaves a neighbouring tool free.
func (b *builder) finishRules() {
	def := b.def
	var rules []cadre.ToolRule
	rules = append(rules, b.allowRules...)
	rules = append(rules, b.denyRules...)
	rules = append(rules, b.permRules...)
	if len(rules) > 0 {
		def.Rules = rules
	}
	if len(b.permRules) > 0 {
		b.permOffered()
	}
	b.warnNeighbours()
	b.warnDelegation()
}

// permOffered reads which tools an OpenCode permission field takes away
// whole: a tool whose last rule denies every call is disallowed; when the
// last rule about every tool ("*") denies, only the tools a later rule
// allows or asks about remain.
func (b *builder) permOffered() {
	rules := b.permRules
	last := func(tool string) *cadre.ToolRule {
		for i := len(rules) - 1; i >= 0; i-- {
			if rules[i].Tool == tool || rules[i].Tool == cadre.RuleAnyTool {
				return &rules[i]
			}
		}
		return nil
	}
	deniedWhole := func(r *cadre.ToolRule) bool {
		return r != nil && r.MatchesAll() && r.Action == cadre.PermissionDeny
	}
	var denied, kept []string
	agents := last(cadre.RuleAgents)
	for _, t := range append(BuiltinTools(), DelegationTools()...) {
		r := last(t)
		if slices.Contains(DelegationTools(), t) && deniedWhole(agents) {
			// No agent may start: no delegation tool is any use.
			r = agents
		}
		if deniedWhole(r) {
			if r.Tool != cadre.RuleAnyTool {
				denied = append(denied, t)
			}
			continue
		}
		kept = append(kept, t)
	}
	// Rules about tools of MCP servers, and patterns of tool names, name
	// tools that are not known here. One whose last rule allows or asks
	// keeps them; one whose last rule denies them all takes them away,
	// unless a later rule allows or asks about some of them.
	var deniedNames []string
	for i, r := range rules {
		if _, isMCP := mcpServer(r.Tool); !isMCP && !rule.IsNamePattern(r.Tool) {
			continue
		}
		if !deniedWhole(last(r.Tool)) {
			if !slices.Contains(kept, r.Tool) {
				kept = append(kept, r.Tool)
			}
			continue
		}
		reopened := slices.ContainsFunc(rules[i+1:], func(l cadre.ToolRule) bool {
			if l.Action == cadre.PermissionDeny || l.Tool == r.Tool || l.Tool == cadre.RuleAgents {
				return false
			}
			_, isMCP := mcpServer(l.Tool)
			return rule.NameMatches(r.Tool, l.Tool) || isMCP || rule.IsNamePattern(l.Tool)
		})
		if !reopened && !slices.Contains(deniedNames, r.Tool) {
			deniedNames = append(deniedNames, r.Tool)
		}
	}
	b.addDisallowed(inToolOrder(denied))
	b.addDisallowed(deniedNames)
	var star *cadre.ToolRule
	for i := len(rules) - 1; i >= 0; i-- {
		if rules[i].Tool == cadre.RuleAnyTool {
			star = &rules[i]
			break
		}
	}
	if deniedWhole(star) {
		b.permAllow = kept
		if b.permAllow == nil {
			b.permAllow = []string{}
		}
	}
}

// neighbours are the tools that reach what a restricted tool reaches: a
// tool confined to some paths leaves them open if these are not.
func neighbours() map[string][]string {
	return map[string][]string{
		ToolReadFile:  {ToolSearchFiles},
		ToolEditFile:  {ToolWriteFile},
		ToolWriteFile: {ToolEditFile},
	}
}

// warnNeighbours warns when a tool is confined to some paths while a tool
// that reaches the same files is granted without rules.
func (b *builder) warnNeighbours() {
	def := b.def
	has := func(t string) bool {
		return (def.Tools == nil || slices.Contains(def.Tools, t)) && !slices.Contains(def.DisallowedTools, t)
	}
	confined := map[string]*cadre.ToolRule{}
	free := func(t string) bool {
		for _, r := range def.Rules {
			if r.Tool == t || r.Tool == cadre.RuleAnyTool {
				return false
			}
		}
		return true
	}
	for i, r := range def.Rules {
		if r.Pattern != "" && r.Action == cadre.PermissionAllow && confined[r.Tool] == nil {
			confined[r.Tool] = &def.Rules[i]
		}
	}
	for _, t := range []string{ToolReadFile, ToolEditFile, ToolWriteFile} {
		r := confined[t]
		if r == nil || !has(t) {
			continue
		}
		for _, n := range neighbours()[t] {
			if has(n) && free(n) && confined[n] == nil {
				l, c := b.atWhere(r.Where)
				b.p.add(SeverityWarning, l, c, "%s confines %s to some paths, but %s is granted without rules, so it reaches every file of the workspace: give it the same patterns (in tools:, or in permission:) or take it away", r.Source, t, n)
			}
		}
	}
}

// atWhere reads back the line and column of a place made by where.
func (b *builder) atWhere(w string) (int, int) {
	rest := strings.TrimPrefix(w, b.p.path+":")
	ls, cs, _ := strings.Cut(rest, ":")
	l, _ := strconv.Atoi(ls)
	c, _ := strconv.Atoi(cs)
	return l, c
}

// warnDelegation warns about delegation tools listed without the ones that
// make them useful.
func (b *builder) warnDelegation() {
	tools := b.def.Tools
	if tools == nil || b.toolsField == nil {
		return
	}
	f := *b.toolsField
	has := func(t string) bool { return slices.Contains(tools, t) && !slices.Contains(b.def.DisallowedTools, t) }
	if has("agent_onboard") && !has("call_agent") {
		b.p.valueDiag(SeverityWarning, f, "%s: agent_onboard makes onboarding handles that only call_agent runs: add call_agent, or the handles cannot be used", f.key)
	}
	if has("agent_fork") && !has("agent_onboard") {
		b.p.valueDiag(SeverityWarning, f, "%s: agent_fork copies onboarding handles, which only agent_onboard makes: add agent_onboard and call_agent, or remove agent_fork", f.key)
	}
	if has("agent_create") && !has("agent_call") && !has("spawn_agent") && !has("call_agent") {
		b.p.valueDiag(SeverityWarning, f, "%s: agent_create writes agents that agent_call, spawn_agent or call_agent run: add one of them, or remove agent_create", f.key)
	}
}
