package agentdef

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/cadre-ai/cadre"
)

// knownKeys are the frontmatter fields cadre reads, in every dialect.
func knownKeys() []string {
	return append([]string{
		"name", "description", "tools", "disallowedTools", "model", "modelRole", "timeoutSeconds",
		"visibility", "emitStructuredFindings", "maxTurns", "steps", "maxSteps", "maxDepth",
		"temperature", "report", "protocol", "onboarding", "maxQuestions", "askCaller", "say",
		"outputSchema", "mode", "disable", "hidden", "background",
	}, extraKeys()...)
}

// extraKeys are fields cadre keeps in Definition.Extra without acting on
// them (or acting on them elsewhere).
func extraKeys() []string {
	return []string{
		"color", "permissionMode", "skills", "effort", "memory", "hooks", "mcpServers",
		"permission", "top_p", "toolsets", "compatible_models", "version", "author", "tags", "category",
	}
}

// text reads a field that holds text. Numbers and booleans are taken as
// they were written.
func (b *builder) text(f field) (string, bool) {
	switch v := f.value.(type) {
	case string:
		return v, true
	case nil:
		return "", true
	case bool, uint64, int64, int, float64:
		if f.text != "" {
			return f.text, true
		}
		return fmt.Sprint(v), true
	}
	b.p.bad(f, "write it as text")
	return "", false
}

// integer reads a whole number in [lo, hi].
func (b *builder) integer(f field, lo, hi int, want string) (int, bool) {
	n, ok := toInt(f.value)
	if !ok || n < int64(lo) || n > int64(hi) {
		b.p.bad(f, want)
		return 0, false
	}
	return int(n), true
}

func toInt(v any) (int64, bool) {
	switch n := v.(type) {
	case uint64:
		if n > math.MaxInt32 {
			return 0, false
		}
		return int64(n), true
	case int64:
		return n, true
	case int:
		return int64(n), true
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > math.MaxInt32 {
			return 0, false
		}
		return int64(n), true
	case string:
		i, err := strconv.ParseInt(strings.TrimSpace(n), 10, 32)
		return i, err == nil
	}
	return 0, false
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, !math.IsNaN(n) && !math.IsInf(n, 0)
	case uint64:
		return float64(n), true
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case string:
		x, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
		return x, err == nil && !math.IsNaN(x) && !math.IsInf(x, 0)
	}
	return 0, false
}

// boolean reads true or false (also written as text).
func (b *builder) boolean(f field) (bool, bool) {
	switch v := f.value.(type) {
	case bool:
		return v, true
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	b.p.bad(f, "write true or false")
	return false, false
}

// oneOf reads a text field that set accepts.
func (b *builder) oneOf(f field, want string, set func(string) bool) {
	s, ok := f.value.(string)
	if !ok || !set(strings.TrimSpace(s)) {
		b.p.bad(f, "use "+want)
	}
}

func (b *builder) onboarding(f field) {
	switch v := f.value.(type) {
	case bool:
		if v {
			b.def.Onboarding = cadre.OnboardingOptional
		} else {
			b.def.Onboarding = cadre.OnboardingOff
		}
		return
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "false", "off", "no":
			b.def.Onboarding = cadre.OnboardingOff
			return
		case "optional":
			b.def.Onboarding = cadre.OnboardingOptional
			return
		case "required":
			b.def.Onboarding = cadre.OnboardingRequired
			return
		}
	}
	b.p.bad(f, "use false, optional or required")
}

// outputSchema reads a JSON Schema written as YAML or as a JSON string.
func (b *builder) outputSchema(f field) {
	var schema map[string]any
	switch v := f.value.(type) {
	case map[string]any:
		schema = jsonSafe(v).(map[string]any)
	case string:
		if err := json.Unmarshal([]byte(v), &schema); err != nil || schema == nil {
			b.p.bad(f, "write a JSON Schema object, as YAML fields or as a JSON string such as '{\"type\": \"object\"}'")
			return
		}
	default:
		b.p.bad(f, "write a JSON Schema object, such as type: object with properties:")
		return
	}
	if t, ok := schema["type"]; ok {
		good := false
		switch t := t.(type) {
		case string:
			good = true
		case []any:
			good = len(t) > 0 && !slices.ContainsFunc(t, func(x any) bool { _, s := x.(string); return !s })
		}
		if !good {
			b.p.valueDiag(SeverityError, f, "outputSchema: type must be a JSON Schema type name such as object, or a list of them")
			return
		}
	}
	data, err := json.Marshal(schema)
	if err != nil {
		b.p.valueDiag(SeverityError, f, "outputSchema cannot be written as JSON: %v", err)
		return
	}
	b.def.OutputSchema = data
}

// keep records a field in Extra.
func (b *builder) keep(key string, v any) {
	if b.extra == nil {
		b.extra = map[string]any{}
	}
	b.extra[key] = v
}

// name validates the agent's name. A display name such as "Python Security
// Expert" is turned into python-security-expert with a warning.
func (b *builder) name(f field) {
	s, ok := b.text(f)
	if !ok {
		return
	}
	s = strings.TrimSpace(s)
	if s == "" {
		b.p.fieldDiag(SeverityError, f, "name is empty: add a name such as %s", suggestName(b.p.path))
		return
	}
	if validName(s) {
		b.def.Name = s
		return
	}
	slug := slugName(s)
	if slug == "" {
		b.p.bad(f, "use letters, digits, '-', '_' and '.', such as "+suggestName(b.p.path))
		return
	}
	b.def.Name = slug
	b.keep("displayName", s)
	b.p.valueDiag(SeverityWarning, f, "name %q is not an agent name (letters, digits, '-', '_', '.'); the agent is called %s", clip(s, 60), slug)
}

func (b *builder) nameFromFile() {
	slug := suggestName(b.p.path)
	if slug == "" {
		b.p.add(SeverityError, b.p.fm.open, b.p.fm.indent+1, "missing name, and the file name gives none: add name: to the frontmatter")
		return
	}
	b.def.Name = slug
}

// suggestName is the file's name as an agent name.
func suggestName(path string) string {
	base := filepath.Base(path)
	for _, ext := range []string{".md", ".MD", ".agent"} {
		base = strings.TrimSuffix(base, ext)
	}
	if validName(base) {
		return base
	}
	return slugName(base)
}

// validName reports whether s can name an agent: letters and digits, with
// '-', '_' and '.' inside, at most 128 bytes. Agent IDs are built from
// names, so no slashes or spaces.
func validName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
		case i > 0 && (r == '-' || r == '_' || r == '.'):
		default:
			return false
		}
	}
	return true
}

// slugName lowercases s and joins its words with hyphens.
func slugName(s string) string {
	var sb strings.Builder
	dash := false
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if dash && sb.Len() > 0 {
				sb.WriteByte('-')
			}
			dash = false
			sb.WriteRune(unicode.ToLower(r))
			continue
		}
		dash = true
	}
	out := sb.String()
	if len(out) > 128 {
		out = strings.TrimRight(out[:128], "-")
	}
	if !validName(out) {
		return ""
	}
	return out
}

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

// resolved is a tools list in cadre's names.
type resolved struct {
	names   []string
	args    map[string][]string
	unknown []string // entries cadre cannot resolve
	mcp     []string // mcp__ entries whose server is not configured
}

func (b *builder) resolve(entries []string) resolved {
	r := resolved{names: []string{}}
	bare := map[string]bool{}
	for _, e := range entries {
		name, args, hasArgs, ok := ParseToolEntry(e)
		if !ok {
			r.unknown = append(r.unknown, e)
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
		if !hasArgs || args == "" {
			for _, t := range tools {
				bare[t] = true
			}
			continue
		}
		if r.args == nil {
			r.args = map[string][]string{}
		}
		if l := strings.ToLower(name); l == "task" || l == "agent" {
			r.args[AgentArgsKey] = append(r.args[AgentArgsKey], splitArgs(args)...)
			continue
		}
		for _, t := range tools {
			r.args[t] = append(r.args[t], args)
		}
	}
	// A bare entry allows every use of the tool, so its patterns go.
	for t := range bare {
		delete(r.args, t)
	}
	if len(r.args) == 0 {
		r.args = nil
	}
	return r
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
		b.p.valueDiag(sev, f, "%s: %s %s cadre knows (cadre's tools: %s; Task and Agent map to the subagent tools); %s%s%s",
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
	r := b.resolve(entries)
	b.report(f, r, b.p.opts.Strict)
	b.def.Tools = r.names
	b.def.ToolArgs = r.args
}

// toolMap reads OpenCode's tools map. Every tool is on unless set to
// false; with "*": false, only the tools set to true are on.
func (b *builder) toolMap(f field, m map[string]any) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
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
		r := b.resolve(on)
		b.report(f, r, b.p.opts.Strict)
		b.def.Tools = inToolOrder(r.names)
		b.def.ToolArgs = r.args
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
func (b *builder) deny(f field, entries []string) {
	var exact, unknown []string
	for _, e := range entries {
		name, _, _, _ := ParseToolEntry(e)
		if strings.ContainsAny(name, "*?[") {
			b.addDisallowed(matchTools(name))
			continue
		}
		exact = append(exact, e)
	}
	r := b.resolve(exact)
	if _, fromMap := f.value.(map[string]any); fromMap {
		r.names = inToolOrder(r.names)
	}
	b.addDisallowed(r.names)
	for _, u := range r.unknown {
		if name, _, _, _ := ParseToolEntry(u); !isForeignTool(name) {
			unknown = append(unknown, u)
		}
	}
	if len(unknown) == 0 {
		return
	}
	what := "is not a tool"
	if len(unknown) > 1 {
		what = "are not tools"
	}
	b.p.valueDiag(SeverityWarning, f, "%s: %s %s cadre knows, so there is nothing to take away; check the spelling (cadre's tools: %s)",
		f.key, strings.Join(unknown, ", "), what, strings.Join(BuiltinTools(), ", "))
}

// matchTools returns cadre's tools whose names match a pattern.
func matchTools(pattern string) []string {
	var out []string
	for _, t := range append(BuiltinTools(), SubagentTools()...) {
		if ok, _ := path.Match(strings.ToLower(pattern), t); ok {
			out = append(out, t)
		}
	}
	return out
}

// permission reads OpenCode's permission field. A tool whose permission is
// deny is disallowed; with "*": deny, only the tools allowed or asked for
// remain. Permissions by pattern (bash: {"git *": allow}) and ask are left
// to cadre's approval policy. The field is also kept in Extra as written.
func (b *builder) permission(f field) {
	m, ok := f.value.(map[string]any)
	if !ok {
		if s, isText := f.value.(string); isText && strings.EqualFold(strings.TrimSpace(s), "deny") {
			b.permAllow = []string{}
		}
		return
	}
	keys := slices.Sorted(maps.Keys(m))
	var allow, deny []string
	star := ""
	for _, k := range keys {
		action, ok := m[k].(string)
		if !ok {
			continue
		}
		action = strings.ToLower(strings.TrimSpace(action))
		if k == "*" {
			star = action
			continue
		}
		tools, found := ResolveTool(k, b.p.opts.MCPServers)
		if strings.EqualFold(k, "edit") {
			// OpenCode's edit permission covers every tool that changes files.
			tools, found = []string{ToolEditFile, ToolWriteFile}, true
		}
		if !found {
			continue
		}
		switch action {
		case "deny":
			deny = append(deny, tools...)
		case "allow", "ask":
			allow = append(allow, tools...)
		}
	}
	b.addDisallowed(inToolOrder(deny))
	if star == "deny" {
		b.permAllow = append([]string{}, inToolOrder(allow)...)
	}
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

// modelAliases are the model names of Claude Code files.
func modelAliases() []string { return []string{"sonnet", "opus", "haiku", "inherit"} }

func (b *builder) model(f field) {
	s, ok := b.text(f)
	if !ok {
		return
	}
	s = strings.TrimSpace(s)
	b.def.Model = s
	if s == "" || strings.ContainsAny(s, ":/-.") || slices.Contains(modelAliases(), strings.ToLower(s)) || slices.Contains(b.p.opts.Models, s) {
		return
	}
	b.p.valueDiag(SeverityInfo, f, "model %q is not an alias (%s), provider:model, nor a configured model: unless models: in the config names it, the agent uses its parent's model", s, strings.Join(modelAliases(), ", "))
}

// nearKey returns the known field that key looks like a misspelling of.
func nearKey(key string) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	for _, k := range knownKeys() {
		if norm(k) == norm(key) {
			return k
		}
	}
	if len(key) < 4 {
		return ""
	}
	for _, k := range knownKeys() {
		if len(k) >= 4 && editDistance(strings.ToLower(k), strings.ToLower(key)) <= 2 {
			return k
		}
	}
	return ""
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// jsonSafe converts a decoded YAML value into one encoding/json can write:
// maps with keys of any type get string keys.
func jsonSafe(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = jsonSafe(x)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[fmt.Sprint(k)] = jsonSafe(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = jsonSafe(x)
		}
		return out
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Sprint(v)
		}
	}
	return v
}
