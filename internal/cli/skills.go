package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/agentdef"
	"github.com/cadre-ai/cadre/tool/builtin"
)

// loadSkills finds the skills of the user and the project, tells their
// problems on w, and returns the skill tool (nil when there are none).
// Definitions that name skills in their skills field get those skills'
// instructions at the end of their prompt, as Claude Code preloads them;
// a skill that is not found is a warning.
func loadSkills(w io.Writer, opts agentdef.LoadOptions, cat *agentdef.Catalog, defs []*cadre.Definition) *builtin.Skill {
	skills, diags := agentdef.LoadSkills(opts, cat.Plugins())
	for _, d := range diags {
		if d.Severity == agentdef.SeverityError || d.Severity == agentdef.SeverityWarning {
			fmt.Fprintf(w, "cadre: %s\n", d.String())
		}
	}
	entries := make([]builtin.SkillEntry, len(skills))
	for i, s := range skills {
		entries[i] = builtin.SkillEntry{Name: s.Name, Description: s.Description, Body: s.Body, Dir: s.Dir, AllowedTools: s.AllowedTools}
	}
	for _, def := range defs {
		names := skillNames(def.Extra["skills"])
		var missing []string
		for _, n := range names {
			i := slices.IndexFunc(skills, func(s *agentdef.Skill) bool { return s.Name == n })
			if i < 0 {
				missing = append(missing, n)
				continue
			}
			def.Prompt = strings.TrimRight(def.Prompt, "\n") + fmt.Sprintf("\n\n<skill name=%q>\n%s\n</skill>\n", n, strings.TrimSpace(skills[i].Body))
		}
		if len(missing) > 0 {
			fmt.Fprintf(w, "cadre: %s: skills: %s not found (skills are folders holding SKILL.md under .claude/skills, .cadre/skills or .opencode/skills); the agent runs without %s\n",
				def.File, strings.Join(missing, ", "), map[bool]string{true: "it", false: "them"}[len(missing) == 1])
		}
	}
	return builtin.NewSkill(entries)
}

// skillNames reads an agent file's skills field: a list, or names split
// by commas.
func skillNames(v any) []string {
	var out []string
	switch x := v.(type) {
	case string:
		for _, s := range strings.Split(x, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	case []any:
		for _, s := range x {
			if n := strings.TrimSpace(fmt.Sprint(s)); n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}
