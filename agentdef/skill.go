package agentdef

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/cadre-ai/cadre/internal/safefile"
)

// SkillFile is the file that makes a folder a skill.
const SkillFile = "SKILL.md"

// A Skill is a folder of instructions (and files they use) an agent loads
// when a task calls for it, as Claude Code and OpenCode define them: a
// SKILL.md with a name and a description in its frontmatter, and the
// instructions below it.
type Skill struct {
	// Name is the skill's name, as the model asks for it.
	Name string
	// Description says what the skill does and when to use it.
	Description string
	// AllowedTools are the tools the skill expects (allowed-tools). A
	// skill never grants a tool: the agent has only what its own
	// definition gives.
	AllowedTools []string
	// Body is the text below the frontmatter.
	Body string
	// Dir is the skill's folder; File its SKILL.md.
	Dir, File string
	// Scope is where it was found: user or project (or dir for a plugin's).
	Scope string
}

// skillName is what a skill may be called: lower-case letters, digits and
// hyphens, as the skill format asks, and the ':' of a plugin's skill.
var skillName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*(:[a-z0-9][a-z0-9-]*)?$`)

// skillRoots are the folders holding skill folders, under a home or
// project directory.
func skillRoots(dir string, home bool) []string {
	roots := []string{
		filepath.Join(dir, ".cadre", "skills"),
		filepath.Join(dir, ".claude", "skills"),
	}
	if home {
		return append(roots, filepath.Join(dir, ".config", "opencode", "skill"), filepath.Join(dir, ".config", "opencode", "skills"))
	}
	return append(roots, filepath.Join(dir, ".opencode", "skill"), filepath.Join(dir, ".opencode", "skills"))
}

// LoadSkills finds the skills of the user's home and the project the
// options name (the same folders as agents: ~/.claude/skills,
// .claude/skills, .cadre/skills, .opencode/skill and skills), each a folder
// holding SKILL.md. A project's skill replaces the user's of the same name.
// A broken SKILL.md is an error diagnostic naming the file and line, and
// the skill is left out; the others load.
//
// plugins are those whose skills (plugin:name) are loaded too: the
// catalog's [Catalog.Plugins], found when its agents were loaded.
func LoadSkills(opts LoadOptions, plugins []Plugin) ([]*Skill, []Diagnostic) {
	var (
		out   []*Skill
		diags []Diagnostic
	)
	add := func(roots []string, scope, prefix string) {
		for _, r := range roots {
			entries, err := os.ReadDir(r)
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					diags = append(diags, Diagnostic{File: r, Severity: SeverityWarning, Message: fmt.Sprintf("the skills in this folder cannot be read: %v", err)})
				}
				continue
			}
			for _, e := range entries {
				dir := filepath.Join(r, e.Name())
				if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
					continue
				}
				file := filepath.Join(dir, SkillFile)
				data, err := safefile.ReadRegular(file, maxFileSize)
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				if err != nil {
					diags = append(diags, Diagnostic{File: file, Severity: SeverityError, Message: fmt.Sprintf("cannot be read: %v", err)})
					continue
				}
				sk, ds := ParseSkill(file, data)
				diags = append(diags, ds...)
				if sk == nil {
					continue
				}
				sk.Scope = scope
				if prefix != "" {
					sk.Name = prefix + ":" + sk.Name
				}
				if i := slices.IndexFunc(out, func(o *Skill) bool { return o.Name == sk.Name }); i >= 0 {
					if out[i].Scope == scope {
						diags = append(diags, Diagnostic{File: file, Severity: SeverityWarning,
							Message: fmt.Sprintf("duplicate skill name %s: %s has it too; this one is left out", sk.Name, out[i].File)})
						continue
					}
					out[i] = sk
					continue
				}
				out = append(out, sk)
			}
		}
	}
	home := opts.Home
	if home == "" && !opts.NoUser {
		home, _ = os.UserHomeDir()
	}
	if !opts.NoUser && home != "" {
		add(skillRoots(home, true), ScopeUser, "")
	}
	for _, p := range plugins {
		add([]string{filepath.Join(p.Dir, "skills")}, ScopePlugin, p.Name)
	}
	if !opts.NoProject {
		for _, level := range projectLevels(opts.Dir, opts.RepoRoot, home) {
			add(skillRoots(level, false), ScopeProject, "")
		}
	}
	slices.SortStableFunc(out, func(a, b *Skill) int { return strings.Compare(a.Name, b.Name) })
	return out, diags
}

// ParseSkill reads one SKILL.md. The skill is nil when the file is broken;
// the diagnostics say where and what to write.
func ParseSkill(path string, data []byte) (*Skill, []Diagnostic) {
	var diags []Diagnostic
	bad := func(line int, format string, args ...any) (*Skill, []Diagnostic) {
		diags = append(diags, Diagnostic{File: path, Line: line, Column: 1, Severity: SeverityError, Message: fmt.Sprintf(format, args...) + "; the skill is left out"})
		return nil, diags
	}
	fm, st := splitFrontmatter(data)
	switch st {
	case splitNoFrontmatter:
		return bad(0, "no frontmatter: a SKILL.md starts with a line ---, then name: and description:, then a closing --- line, then the instructions")
	case splitUnclosed:
		return bad(fm.open, "the frontmatter opened here is never closed: add a line --- after the last field")
	}
	parsed, yerr := parseYAML(fm.yaml)
	if yerr != nil {
		line := fm.open
		if yerr.line > 0 {
			line = fm.first + yerr.line - 1
		}
		return bad(line, "the frontmatter is not valid YAML (%s): quote values that hold a colon, or write them as a | block", yerr.msg)
	}
	fields := map[string]field{}
	for _, f := range parsed {
		fields[f.key] = f
	}
	str := func(key string) (string, int) {
		f, ok := fields[key]
		if !ok {
			return "", fm.open
		}
		line := fm.first + f.vline - 1
		switch v := f.value.(type) {
		case string:
			return strings.TrimSpace(v), line
		case nil:
			return "", line
		default:
			return fmt.Sprint(v), line
		}
	}
	name, nline := str("name")
	dirName := filepath.Base(filepath.Dir(path))
	switch {
	case name == "":
		return bad(fm.open, "missing name: add name: %s (the folder's name)", dirName)
	case !skillName.MatchString(name) || len(name) > 64:
		return bad(nline, "name %q is not a skill name: lower-case letters, digits and hyphens, at most 64", name)
	}
	desc, dline := str("description")
	if desc == "" {
		return bad(dline, "missing description: add description: followed by what the skill does and when to use it")
	}
	if len(desc) > 1024 {
		return bad(dline, "the description has %d characters; at most 1024 are read: shorten it", len(desc))
	}
	body := strings.ReplaceAll(string(fm.body), "\r\n", "\n")
	if strings.TrimSpace(body) == "" {
		return bad(fm.close, "empty body: the text after the frontmatter is the skill's instructions")
	}
	sk := &Skill{Name: name, Description: desc, Body: body, Dir: filepath.Dir(path), File: path}
	switch v := fields["allowed-tools"].value.(type) {
	case string:
		sk.AllowedTools = SplitToolList(v)
	case []any:
		for _, t := range v {
			sk.AllowedTools = append(sk.AllowedTools, strings.TrimSpace(fmt.Sprint(t)))
		}
	}
	if name != dirName {
		diags = append(diags, Diagnostic{File: path, Line: nline, Column: 1, Severity: SeverityInfo,
			Message: fmt.Sprintf("the skill is called %s, its folder %s: it is known as %s", name, dirName, name)})
	}
	return sk, diags
}
