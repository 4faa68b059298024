package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/agentdef"
)

// definitionFile writes a definition an agent created (agent_create) as a
// markdown file with frontmatter, which later runs load like any project
// agent. The file must give the agent no more than the definition does:
// its tools are listed, never left out (which would let it inherit every
// tool of whoever starts it), and its rules are written as the fields they
// were read from (tools: Bash(git *), disallowedTools:, permission:). The
// file is read back as a later run will read it; one that would load with
// other tools or rules is refused, saying which.
func definitionFile(def *cadre.Definition) ([]byte, error) {
	if def.Tools == nil {
		return nil, fmt.Errorf("the agent %s was not saved: its definition does not list its tools, and its file would let it use every tool of whoever starts it; create it with a list of tools (an empty one for none)", def.Name)
	}
	fields, err := ruleFields(def)
	if err != nil {
		return nil, fmt.Errorf("the agent %s was not saved: %w", def.Name, err)
	}
	// An Agent(…) entry grants the tools that follow the agents started
	// as well; those the definition does not have are taken away again.
	var extra []string
	for range 2 {
		data, err := writeDefinition(def, fields, extra)
		if err != nil {
			return nil, err
		}
		more, err := checkSaved(def, data)
		if err != nil {
			return nil, fmt.Errorf("the agent %s was not saved: its file would not load as it is: %w", def.Name, err)
		}
		if len(more) == 0 {
			return data, nil
		}
		extra = append(extra, more...)
	}
	return nil, fmt.Errorf("the agent %s was not saved: its file would give it tools it does not have (%s)", def.Name, strings.Join(extra, ", "))
}

// savedFields are the fields of an agent file that hold a definition's
// rules.
type savedFields struct {
	patterned  map[string]bool // tools granted by entries with arguments, not bare
	tools      []string        // entries with arguments: Bash(git *)
	disallowed []string        // entries of disallowedTools: Bash(rm *)
	permission yaml.MapSlice   // OpenCode's permission map, in order
}

// ruleFields reads back, from the rules' sources, the fields they were
// read from. The rules of a created agent are those of every agent above
// it, one group for each field of each file (see local's creatorGrants):
// one file has room for one tools list and one permission map, so rules
// from more than one of either cannot be written.
func ruleFields(def *cadre.Definition) (savedFields, error) {
	sf := savedFields{patterned: map[string]bool{}}
	var toolsGroup, permGroup string
	for _, r := range def.Rules {
		kind := r.Group[strings.LastIndexByte(r.Group, '/')+1:]
		switch kind {
		case "tools":
			if toolsGroup != "" && toolsGroup != r.Group {
				return sf, fmt.Errorf("it must pass the rules of two tools lists (%s and %s), and an agent file holds one", groupOwner(toolsGroup), groupOwner(r.Group))
			}
			toolsGroup = r.Group
			if err := sf.addToolsRule(r); err != nil {
				return sf, err
			}
		case "permission":
			if permGroup != "" && permGroup != r.Group {
				return sf, fmt.Errorf("it must pass the rules of two permission fields (%s and %s), and an agent file holds one", groupOwner(permGroup), groupOwner(r.Group))
			}
			permGroup = r.Group
			if err := sf.addPermRule(r); err != nil {
				return sf, err
			}
		default:
			return sf, fmt.Errorf("its rule %s was not read from an agent file, and cannot be written in one", ruleText(r))
		}
	}
	return sf, nil
}

// groupOwner names the agent whose file a group of rules came from.
func groupOwner(group string) string {
	if i := strings.LastIndexByte(group, '/'); i > 0 {
		return "agent " + group[:i]
	}
	return "its own"
}

func ruleText(r cadre.ToolRule) string {
	if r.Source != "" {
		return "`" + r.Source + "`"
	}
	return fmt.Sprintf("`%s %s %q`", r.Action, r.Tool, r.Pattern)
}

// addToolsRule adds a rule of a tools list: the entry of tools or
// disallowedTools it came from. The rule that denies every call of a tool
// granted by patterns comes back with them.
func (sf *savedFields) addToolsRule(r cadre.ToolRule) error {
	if e, ok := strings.CutPrefix(r.Source, "disallowedTools: "); ok {
		if !slices.Contains(sf.disallowed, e) {
			sf.disallowed = append(sf.disallowed, e)
		}
		return nil
	}
	e, ok := strings.CutPrefix(r.Source, "tools: ")
	switch {
	case !ok:
		return fmt.Errorf("its rule %s was not read from an agent file's tools or disallowedTools, and cannot be written in one", ruleText(r))
	case r.Action == cadre.PermissionDeny && r.MatchesAll():
		return nil // what the entries with arguments make
	case r.Action != cadre.PermissionAllow:
		return fmt.Errorf("its rule %s cannot be written in an agent file's tools list", ruleText(r))
	}
	if r.Tool != cadre.RuleAgents {
		sf.patterned[r.Tool] = true
	}
	if !slices.Contains(sf.tools, e) {
		sf.tools = append(sf.tools, e)
	}
	return nil
}

// addPermRule adds a rule of a permission field, from its source:
// "permission: KEY: ACTION", "permission: KEY: "PATTERN": ACTION", or
// "permission: ACTION" for everything. A key comes back once: its rules
// must be together.
func (sf *savedFields) addPermRule(r cadre.ToolRule) error {
	rest, ok := strings.CutPrefix(r.Source, "permission: ")
	if !ok {
		return fmt.Errorf("its rule %s was not read from an agent file's permission field, and cannot be written in one", ruleText(r))
	}
	key, action, pattern, nested := "*", rest, "", false
	if i := strings.Index(rest, `: "`); i >= 0 {
		q, err := strconv.QuotedPrefix(rest[i+2:])
		after, okAction := strings.CutPrefix(rest[i+2+len(q):], ": ")
		if err != nil || !okAction {
			return fmt.Errorf("its rule %s cannot be read back", ruleText(r))
		}
		pattern, _ = strconv.Unquote(q)
		key, action, nested = rest[:i], after, true
	} else if i := strings.LastIndex(rest, ": "); i >= 0 {
		key, action = rest[:i], rest[i+2:]
	}
	n := len(sf.permission)
	last := func() *yaml.MapItem {
		if n == 0 {
			return nil
		}
		return &sf.permission[n-1]
	}
	if it := last(); it != nil && it.Key == key {
		// One entry of the file makes several rules (edit: edit_file and
		// write_file), or a key's patterns follow each other.
		inner, isMap := it.Value.(yaml.MapSlice)
		switch {
		case !nested && !isMap && it.Value == action:
			return nil
		case nested && isMap:
			if len(inner) > 0 && inner[len(inner)-1].Key == pattern && inner[len(inner)-1].Value == action {
				return nil
			}
			it.Value = append(inner, yaml.MapItem{Key: pattern, Value: action})
			return nil
		}
	}
	if slices.ContainsFunc(sf.permission, func(it yaml.MapItem) bool { return it.Key == key }) {
		return fmt.Errorf("its permission rules about %s are not together (%s), which a permission map cannot say", key, ruleText(r))
	}
	var value any = action
	if nested {
		value = yaml.MapSlice{{Key: pattern, Value: action}}
	}
	sf.permission = append(sf.permission, yaml.MapItem{Key: key, Value: value})
	return nil
}

// writeDefinition writes the file: the definition's tools (those granted
// by entries with arguments as those entries), the entries of
// disallowedTools (with extra), and the permission map.
func writeDefinition(def *cadre.Definition, sf savedFields, extra []string) ([]byte, error) {
	tools := []string{}
	for _, t := range def.Tools {
		if !sf.patterned[t] {
			tools = append(tools, t)
		}
	}
	tools = append(tools, sf.tools...)
	fm := yaml.MapSlice{{Key: "name", Value: def.Name}, {Key: "description", Value: def.Description}, {Key: "tools", Value: tools}}
	if d := append(slices.Clone(sf.disallowed), extra...); len(d) > 0 {
		fm = append(fm, yaml.MapItem{Key: "disallowedTools", Value: d})
	}
	if len(sf.permission) > 0 {
		fm = append(fm, yaml.MapItem{Key: "permission", Value: sf.permission})
	}
	if def.Model != "" {
		fm = append(fm, yaml.MapItem{Key: "model", Value: def.Model})
	}
	head, err := yaml.Marshal(fm)
	if err != nil {
		return nil, fmt.Errorf("write the definition of %s: %w", def.Name, err)
	}
	return []byte("---\n" + string(head) + "---\n" + def.Prompt), nil
}

// checkSaved reads a written file back and compares what it grants with
// the definition: the tools it would use, and its rules, group by group.
// It returns the tools the file grants beyond the definition's, to be
// taken away.
func checkSaved(def *cadre.Definition, data []byte) ([]string, error) {
	var servers []string
	for _, n := range def.Tools {
		if rest, ok := strings.CutPrefix(n, "mcp__"); ok {
			if s, _, _ := strings.Cut(rest, "__"); s != "" && !slices.Contains(servers, s) {
				servers = append(servers, s)
			}
		}
	}
	got, diags := agentdef.Parse(def.Name+".md", data, agentdef.ParseOptions{MCPServers: servers})
	for _, d := range diags {
		if d.Severity == agentdef.SeverityError {
			return nil, fmt.Errorf("%s", d.Message)
		}
	}
	if got == nil {
		return nil, fmt.Errorf("it does not load")
	}
	has := func(d *cadre.Definition, t string) bool {
		return (d.Tools == nil || slices.Contains(d.Tools, t)) && !slices.Contains(d.DisallowedTools, t)
	}
	var more, missing []string
	for _, t := range got.Tools {
		if has(got, t) && !has(def, t) {
			more = append(more, t)
		}
	}
	for _, t := range def.Tools {
		if has(def, t) && !has(got, t) {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("it would not have %s", strings.Join(missing, ", "))
	}
	if len(more) > 0 {
		return more, nil
	}
	if a, b := ruleKinds(def.Rules), ruleKinds(got.Rules); !slices.Equal(a, b) {
		return nil, fmt.Errorf("its rules would read differently")
	}
	return nil, nil
}

// ruleKinds lists rules as what decides calls: group kind, tool, pattern,
// syntax and action, in order.
func ruleKinds(rules []cadre.ToolRule) []string {
	var out []string
	for _, r := range rules {
		kind := r.Group[strings.LastIndexByte(r.Group, '/')+1:]
		out = append(out, strings.Join([]string{kind, r.Tool, r.Pattern, string(r.Syntax), string(r.Action)}, "\x00"))
	}
	slices.SortStableFunc(out, func(a, b string) int {
		ka, _, _ := strings.Cut(a, "\x00")
		kb, _, _ := strings.Cut(b, "\x00")
		return strings.Compare(ka, kb)
	})
	return out
}
