package agentdef

import (
	"encoding/json"
	"fmt"
	"math"
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
		"outputSchema", "mode", "disable", "hidden", "background", "turnAfterReport",
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

// permissionMode reads Claude Code's permissionMode. plan, its read-only
// mode, takes away every tool that writes files, runs commands or creates
// agents, and the tools of MCP servers, of which cadre cannot tell which
// write. The modes that approve more calls without asking
// (acceptEdits, bypassPermissions, dontAsk) are not honoured: an agent
// file never loosens the run's approval policy.
func (b *builder) permissionMode(f field) {
	mode, ok := b.text(f)
	if !ok {
		return
	}
	switch strings.ToLower(strings.TrimSpace(mode)) {
	case "", "default":
	case "plan":
		b.addDisallowed([]string{ToolWriteFile, ToolEditFile, ToolRunCommand, "agent_create", "mcp__*"})
		b.p.fieldDiag(SeverityInfo, f, "permissionMode: plan: the agent gets no tool that writes files, runs commands or creates agents, and no tool of an MCP server")
	case "acceptedits", "bypasspermissions", "dontask":
		b.p.fieldDiag(SeverityWarning, f, "permissionMode: %s is not honoured: an agent file cannot change how its calls are approved; the run's approval policy (--approve, or approve: in the config) applies", mode)
	default:
		b.p.fieldDiag(SeverityWarning, f, "permissionMode: %s is not a mode cadre knows (default, plan, acceptEdits, bypassPermissions, dontAsk); it has no effect", mode)
	}
}
