package agentdef

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cadre-ai/cadre"
)

// ParseOptions are the settings of Parse. The zero value parses a file with
// no MCP servers configured, not strictly.
type ParseOptions struct {
	// Scope is recorded in the definition: "builtin", "user", "project",
	// "dir" or another label of the caller's.
	Scope string
	// MCPServers are the configured MCP servers: mcp__server__tool names
	// resolve only for these.
	MCPServers []string
	// Models are the configured named models. A model that is neither one
	// of these, an alias (sonnet, opus, haiku, inherit), a full model id nor
	// provider:model gets an info line.
	Models []string
	// Strict rejects an agent whose tools list names a tool cadre cannot
	// resolve, instead of loading it without that tool.
	Strict bool
	// NameFromFile names an agent without a name field after its file, as
	// OpenCode does. Markdown files with a field only OpenCode writes (mode,
	// permission, steps, hidden, disable, temperature, or tools as a map)
	// are named that way whatever this says.
	NameFromFile bool
}

// Default values of a definition's fields that cadre fills when the file
// does not set them.
const (
	DefaultVisibility = cadre.VisibilityUserFacing
	DefaultReport     = cadre.ReportTool
	DefaultProtocol   = cadre.ProtocolAuto
	DefaultOnboarding = cadre.OnboardingOptional
)

// Parse reads one agent file. path is used for messages, the definition's
// File and, for OpenCode files, its name; data is the file's content.
//
// It returns the definition, or nil when the file is rejected (then the
// diagnostics hold at least one error, or one info line for a README or
// INDEX file without frontmatter, or for a disabled OpenCode agent). Parse
// does no I/O and never panics.
func Parse(path string, data []byte, opts ParseOptions) (*cadre.Definition, []Diagnostic) {
	p := &parse{path: path, opts: opts}
	def := p.run(data)
	SortDiagnostics(p.diags)
	if def == nil || HasErrors(p.diags) {
		return nil, p.diags
	}
	return def, p.diags
}

// parse holds the state of one Parse call.
type parse struct {
	path  string
	opts  ParseOptions
	diags []Diagnostic
	fm    *frontmatter
}

func (p *parse) add(sev Severity, line, col int, format string, args ...any) {
	p.diags = append(p.diags, Diagnostic{File: p.path, Line: line, Column: col, Severity: sev, Message: fmt.Sprintf(format, args...)})
}

// at converts a position in the frontmatter block to one in the file.
func (p *parse) at(line, col int) (int, int) {
	if line <= 0 {
		return p.fm.open, p.fm.indent + 1
	}
	return p.fm.first + line - 1, col + p.fm.indent
}

func (p *parse) fieldDiag(sev Severity, f field, format string, args ...any) {
	l, c := p.at(f.line, f.col)
	p.add(sev, l, c, format, args...)
}

func (p *parse) valueDiag(sev Severity, f field, format string, args ...any) {
	l, c := p.at(f.vline, f.vcol)
	p.add(sev, l, c, format, args...)
}

// bad reports a field whose value cadre cannot use; the agent is rejected.
func (p *parse) bad(f field, want string) {
	p.valueDiag(SeverityError, f, "%s: %s is not valid: %s", f.key, describe(f), want)
}

func describe(f field) string {
	switch v := f.value.(type) {
	case string:
		return strconv.Quote(clip(v, 60))
	case nil:
		return "an empty value"
	case []any, map[string]any:
		return "a " + kindOf(v)
	}
	if f.text != "" {
		return f.text
	}
	return fmt.Sprint(f.value)
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func (p *parse) run(data []byte) *cadre.Definition {
	fm, st := splitFrontmatter(data)
	fenced := false
	if st == splitNoFrontmatter {
		if ff, found, closed := splitFenced(data); found {
			switch fields, yerr := parseYAML(ff.yaml); {
			case !closed:
				p.add(SeverityError, ff.open, 1, "no frontmatter: a fenced YAML block opens here but never closes; write the fields between two lines --- at the top of the file instead")
				return nil
			case yerr != nil || !hasField(fields, "description"):
				p.add(SeverityError, ff.open, 1, "no frontmatter: a fenced YAML block was found at line %d, but it does not hold an agent's fields (description: at least); an agent file starts with a line ---, its fields, a closing --- line, then the prompt", ff.open)
				return nil
			}
			fm, st, fenced = ff, splitOK, true
		}
	}
	switch st {
	case splitNoFrontmatter:
		if isIndexFile(p.path) {
			p.add(SeverityInfo, 0, 0, "no frontmatter: not an agent definition; skipped")
			return nil
		}
		p.add(SeverityError, 0, 0, "no frontmatter: an agent file starts with a line ---, then fields such as name: and description:, then a closing --- line, then the prompt")
		return nil
	case splitUnclosed:
		p.add(SeverityError, fm.open, fm.indent+1, "the frontmatter opened here is never closed: add a line --- after the last field")
		return nil
	}
	p.fm = fm
	if fenced {
		p.add(SeverityWarning, fm.open, 1, "the frontmatter is a fenced YAML block (lines %d-%d), read as if it stood between --- lines: write it that way, at the top of the file, for other tools to read it too", fm.open, fm.close)
	}
	if len(fm.yaml) > maxFrontmatter {
		p.add(SeverityError, fm.open, 1, "the frontmatter is larger than %d KiB: keep long text in the prompt below it", maxFrontmatter>>10)
		return nil
	}

	fields, yerr := parseYAML(fm.yaml)
	recovered := false
	if yerr != nil {
		l, c := p.at(yerr.line, yerr.col)
		if yerr.notMapping {
			p.add(SeverityError, l, c, "the frontmatter is not key: value fields (%s): write it as name: …, description: …", yerr.msg)
			return nil
		}
		var dropped []string
		fields, dropped = recoverFields(fm)
		recovered = true
		got := recoveredNames(fields)
		if !slices.Contains(got, "name") && !p.opts.NameFromFile || !slices.Contains(got, "description") {
			p.add(SeverityError, l, c, "malformed YAML: %s; reading it line by line did not recover %s either: fix the YAML (quote values that contain \": \")", yerr.msg, missingOf(got))
			return nil
		}
		p.add(SeverityWarning, l, c, "frontmatter is not valid YAML (%s); recovered %s by reading it line by line: quote the description, or write it as a | block, to make the file valid", yerr.msg, strings.Join(got, ", "))
		var limits []string
		for _, k := range dropped {
			if k == "permission" || k == "disallowedTools" {
				limits = append(limits, k)
			}
		}
		switch {
		case len(limits) > 0:
			p.add(SeverityError, l, c, "could not read %s from the malformed frontmatter; the agent is rejected, since it would run without the limits %s sets: fix the YAML", strings.Join(limits, " and "), strings.Join(limits, " and "))
			return nil
		case len(dropped) > 0:
			p.add(SeverityWarning, l, c, "could not read %s from the malformed frontmatter; ignored", strings.Join(dropped, ", "))
		}
	}
	if fm.longClose {
		p.add(SeverityInfo, fm.close, 1, "the frontmatter is closed by a line of more than three dashes; --- is the usual form")
	}

	def := &cadre.Definition{
		File:         p.path,
		Scope:        p.opts.Scope,
		Timeout:      cadre.DefaultTimeout,
		Visibility:   DefaultVisibility,
		Report:       DefaultReport,
		Protocol:     DefaultProtocol,
		Onboarding:   DefaultOnboarding,
		MaxQuestions: cadre.DefaultMaxQuestions,
	}
	b := &builder{p: p, def: def, recovered: recovered}
	b.apply(fields)
	if b.disabled {
		return nil
	}

	// A file saved with Windows line ends means the same text: the prompt
	// gets plain line ends.
	body := strings.ReplaceAll(string(fm.body), "\r\n", "\n")
	if strings.TrimSpace(body) == "" {
		p.add(SeverityError, fm.close, 1, "empty body: the text after the frontmatter is the agent's system prompt; write it below this line")
	}
	def.Prompt = body
	return def
}

// recoveredNames lists the keys among name, description, tools and model
// that the line reader found, in that order.
func recoveredNames(fields []field) []string {
	var out []string
	for _, k := range []string{"name", "description", "tools", "model"} {
		if slices.ContainsFunc(fields, func(f field) bool { return f.key == k }) {
			out = append(out, k)
		}
	}
	return out
}

func missingOf(got []string) string {
	var miss []string
	for _, k := range []string{"name", "description"} {
		if !slices.Contains(got, k) {
			miss = append(miss, k)
		}
	}
	return strings.Join(miss, " or ")
}

// isIndexFile reports whether a file is a folder's README or index, which
// agent folders often hold beside the agents.
func isIndexFile(path string) bool {
	base := strings.ToLower(filepath.Base(path))
	base = strings.TrimSuffix(strings.TrimSuffix(base, ".md"), ".agent")
	switch base {
	case "readme", "index", "contributing", "changelog", "license":
		return true
	}
	return false
}

// builder turns fields into a definition.
type builder struct {
	p         *parse
	def       *cadre.Definition
	recovered bool

	visibilitySet bool
	disabled      bool
	// permAllow is set by an OpenCode permission field whose last rule
	// about every tool denies: the only tools it leaves.
	permAllow []string
	// allowRules, denyRules and permRules are the rules of the tools list,
	// of disallowedTools and of the permission field.
	allowRules, denyRules, permRules []cadre.ToolRule
	toolsField                       *field
	maxTurnsFrom                     string
	extra                            map[string]any
}

func (b *builder) apply(fields []field) {
	p, def := b.p, b.def
	// A markdown file with a field only OpenCode writes is an OpenCode
	// file, which takes its name from the file name.
	opencode := false
	if !strings.EqualFold(filepath.Ext(p.path), ".agent") {
		for _, f := range fields {
			switch f.key {
			case "mode", "permission", "steps", "hidden", "disable", "temperature":
				opencode = true
			case "tools":
				if _, ok := f.value.(map[string]any); ok {
					opencode = true
				}
			}
		}
	}
	seen := map[string]bool{}
	var nameField *field
	for i := range fields {
		f := fields[i]
		if seen[f.key] {
			p.fieldDiag(SeverityWarning, f, "%s is set twice; the first value is used", f.key)
			continue
		}
		seen[f.key] = true
		switch f.key {
		case "name":
			nameField = &fields[i]
		case "description":
			if s, ok := b.text(f); ok {
				s = strings.TrimSpace(s)
				if f.raw {
					s = strings.ReplaceAll(s, `\n`, "\n")
				}
				def.Description = s
			}
		case "tools":
			b.toolsField = &fields[i]
			b.tools(f)
		case "disallowedTools":
			b.disallowed(f)
		case "model":
			b.model(f)
		case "modelRole":
			b.oneOf(f, "main, fallback or compaction", func(s string) bool {
				s = strings.ToLower(s)
				if s == "main" || s == "fallback" || s == "compaction" {
					def.ModelRole = s
					return true
				}
				return false
			})
		case "timeoutSeconds":
			if n, ok := b.integer(f, 1, 86400, "a whole number of seconds from 1 to 86400, such as 300"); ok {
				def.Timeout = time.Duration(n) * time.Second
			}
		case "visibility":
			b.oneOf(f, "user-facing or internal", func(s string) bool {
				switch strings.ToLower(strings.NewReplacer("-", "", "_", "", " ", "").Replace(s)) {
				case "userfacing":
					def.Visibility = cadre.VisibilityUserFacing
				case "internal":
					def.Visibility = cadre.VisibilityInternal
				default:
					return false
				}
				b.visibilitySet = true
				return true
			})
		case "emitStructuredFindings":
			if v, ok := b.boolean(f); ok {
				def.EmitStructuredFindings = v
			}
		case "askCaller":
			if v, ok := b.boolean(f); ok {
				def.AskCaller = v
			}
		case "say":
			if v, ok := b.boolean(f); ok {
				def.Say = v
			}
		case "maxTurns", "steps", "maxSteps":
			if n, ok := b.integer(f, 1, 10000, "a whole number of turns, 1 or more"); ok {
				if b.maxTurnsFrom != "" {
					p.fieldDiag(SeverityWarning, f, "%s and %s both set the number of turns; %s is used", b.maxTurnsFrom, f.key, b.maxTurnsFrom)
					continue
				}
				b.maxTurnsFrom = f.key
				def.MaxTurns = n
			}
		case "maxDepth":
			if n, ok := b.integer(f, 1, 100, "a whole number of levels, 1 or more (to stop an agent from delegating, leave Task and Agent out of its tools)"); ok {
				def.MaxDepth = n
			}
		case "temperature":
			if x, ok := toFloat(f.value); ok && x >= 0 && x <= 2 {
				def.Temperature = &x
			} else {
				b.p.bad(f, "a number from 0 to 2, such as 0.2")
			}
		case "report":
			b.oneOf(f, "tool (send_agent_message) or tag (<response>…</response>)", func(s string) bool {
				switch strings.ToLower(s) {
				case "tool":
					def.Report = cadre.ReportTool
				case "tag":
					def.Report = cadre.ReportTag
				default:
					return false
				}
				return true
			})
		case "protocol":
			b.oneOf(f, "tools, text or auto", func(s string) bool {
				switch strings.ToLower(s) {
				case "tools":
					def.Protocol = cadre.ProtocolTools
				case "text":
					def.Protocol = cadre.ProtocolText
				case "auto":
					def.Protocol = cadre.ProtocolAuto
				default:
					return false
				}
				return true
			})
		case "onboarding":
			b.onboarding(f)
		case "maxQuestions":
			if n, ok := b.integer(f, 0, 100, "a whole number of questions, 0 or more"); ok {
				def.MaxQuestions = n
			}
		case "outputSchema":
			b.outputSchema(f)
		case "mode":
			b.oneOf(f, "primary, subagent or all", func(s string) bool {
				switch strings.ToLower(s) {
				case "primary", "subagent", "all":
					b.keep(f.key, strings.ToLower(s))
					return true
				}
				return false
			})
		case "disable":
			if v, ok := b.boolean(f); ok && v {
				p.fieldDiag(SeverityInfo, f, "disabled (disable: true): not loaded")
				b.disabled = true
			}
		case "permission":
			b.permission(f)
			b.keep(f.key, jsonSafe(f.value))
		case "permissionMode":
			b.permissionMode(f)
			b.keep(f.key, jsonSafe(f.value))
		case "hooks":
			if f.value != nil {
				p.fieldDiag(SeverityWarning, f, "hooks are not run by cadre: a hook that blocks or checks calls does nothing here. Say the limits with tools, disallowedTools or permission instead")
			}
			b.keep(f.key, jsonSafe(f.value))
		case "background":
			if v, ok := b.boolean(f); ok {
				def.Background = v
			}
		case "turnAfterReport":
			if v, ok := b.boolean(f); ok {
				def.TurnAfterReport = v
			}
		case "hidden":
			if v, ok := b.boolean(f); ok {
				b.keep(f.key, v)
			}
		default:
			if !slices.Contains(extraKeys(), f.key) {
				if near := nearKey(f.key); near != "" {
					p.fieldDiag(SeverityWarning, f, "unknown field %s: did you mean %s? It is kept but has no effect", f.key, near)
				}
			}
			b.keep(f.key, jsonSafe(f.value))
		}
	}

	if nameField != nil {
		b.name(*nameField)
	}
	if def.Name == "" && nameField == nil {
		if p.opts.NameFromFile || opencode {
			b.nameFromFile()
		} else {
			p.add(SeverityError, p.fm.open, p.fm.indent+1, "missing name: add name: %s to the frontmatter", suggestName(p.path))
		}
	}
	if def.Description == "" && !b.disabled {
		if slices.ContainsFunc(fields, func(f field) bool { return f.key == "description" }) {
			i := slices.IndexFunc(fields, func(f field) bool { return f.key == "description" })
			p.fieldDiag(SeverityError, fields[i], "description is empty: say in a sentence what the agent does and when to use it; models choose agents by it")
		} else {
			p.add(SeverityError, p.fm.open, p.fm.indent+1, "missing description: add description: followed by a sentence on what the agent does and when to use it")
		}
	}
	b.finishRules()
	if b.permAllow != nil {
		if def.Tools == nil {
			def.Tools = b.permAllow
		} else {
			def.Tools = slices.DeleteFunc(def.Tools, func(t string) bool { return !slices.Contains(b.permAllow, t) })
		}
	}
	if mode, _ := b.extra["mode"].(string); mode == "primary" && !b.visibilitySet {
		def.Visibility = cadre.VisibilityInternal
	}
	if len(b.extra) > 0 {
		def.Extra = b.extra
	}
	if b.disabled {
		// A disabled agent is reported once, as info, and not loaded.
		p.diags = slices.DeleteFunc(p.diags, func(d Diagnostic) bool { return d.Severity == SeverityError })
	}
}

// hasField reports whether fields has one named key.
func hasField(fields []field, key string) bool {
	return slices.ContainsFunc(fields, func(f field) bool { return f.key == key })
}
