package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/cadre-ai/cadre"
)

// NameSkill is the name of the skill tool.
const NameSkill = "skill"

// Limits of the skill tool.
const (
	maxSkillFileBytes = 200_000
	maxSkillFiles     = 200
)

// A SkillEntry is one skill the skill tool offers: a folder of
// instructions and the files they use.
type SkillEntry struct {
	Name, Description string
	// Body is the instructions (SKILL.md below its frontmatter).
	Body string
	// Dir is the skill's folder; the tool reads files only inside it.
	Dir string
	// AllowedTools are the tools the skill expects, told to the model;
	// they grant nothing.
	AllowedTools []string
}

// Skill is the skill tool: it lists the skills in its description, gives
// a skill's instructions when the model names one, and a file of the
// skill's folder on request. Files are opened through the folder as a
// root, so a skill's file cannot lead outside it.
type Skill struct {
	skills []SkillEntry
	// dirs are the skills' folders as they were when the tool was made
	// (nil where one could not be read): a folder found elsewhere at a
	// call (the folder replaced by a link to /) is not read.
	dirs []os.FileInfo
}

var _ cadre.Tool = (*Skill)(nil)

// NewSkill returns the skill tool for skills, or nil when there are none:
// a tool with nothing to offer is not offered.
func NewSkill(skills []SkillEntry) *Skill {
	if len(skills) == 0 {
		return nil
	}
	s := slices.Clone(skills)
	slices.SortFunc(s, func(a, b SkillEntry) int { return strings.Compare(a.Name, b.Name) })
	dirs := make([]os.FileInfo, len(s))
	for i := range s {
		dirs[i], _ = os.Stat(s[i].Dir)
	}
	return &Skill{skills: s, dirs: dirs}
}

// Spec implements cadre.Tool.
func (t *Skill) Spec() cadre.ToolSpec {
	var b strings.Builder
	b.WriteString("Load a skill: instructions for a kind of task, with files they may use. When the task matches a skill's " +
		"description, call this with its name before you start, then follow what it says. Give file to read one of the " +
		"skill's files. The skills:")
	for _, s := range t.skills {
		fmt.Fprintf(&b, "\n- %s: %s", s.Name, strings.Join(strings.Fields(s.Description), " "))
	}
	return cadre.ToolSpec{
		Name:        NameSkill,
		Description: b.String(),
		Parameters: json.RawMessage(`{
	"type": "object",
	"properties": {
		"name": {"type": "string", "description": "The skill's name."},
		"file": {"type": "string", "description": "A file of the skill's folder to read, such as reference.md, instead of its instructions."}
	},
	"required": ["name"],
	"additionalProperties": false
}`),
	}
}

type skillArgs struct {
	Name string `json:"name"`
	File string `json:"file"`
}

// Call implements cadre.Tool.
func (t *Skill) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	var a skillArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", fmt.Errorf("the arguments are not valid: %v", err)
	}
	name := strings.TrimSpace(a.Name)
	i := slices.IndexFunc(t.skills, func(s SkillEntry) bool { return s.Name == name })
	if i < 0 {
		names := make([]string, len(t.skills))
		for n, s := range t.skills {
			names[n] = s.Name
		}
		return "", fmt.Errorf("there is no skill named %q; the skills are: %s", name, strings.Join(names, ", "))
	}
	s := t.skills[i]
	root, err := os.OpenRoot(s.Dir)
	if err != nil {
		return "", fmt.Errorf("the folder of skill %s cannot be opened: %v", s.Name, err)
	}
	defer root.Close()
	if fi, err := root.Stat("."); err != nil || t.dirs[i] == nil || !os.SameFile(fi, t.dirs[i]) {
		return "", fmt.Errorf("the folder of skill %s (%s) is not the folder it was when this run started: it was replaced, or it moved; it is not read", s.Name, s.Dir)
	}
	if f := strings.TrimSpace(a.File); f != "" {
		return readSkillFile(root, s.Name, f)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Skill %s (its folder: %s)\n\n%s", s.Name, s.Dir, strings.TrimSpace(s.Body))
	if len(s.AllowedTools) > 0 {
		fmt.Fprintf(&b, "\n\nThis skill expects these tools: %s. It gives none: use those of them you have.", strings.Join(s.AllowedTools, ", "))
	}
	if files := skillFiles(root); len(files) > 0 {
		fmt.Fprintf(&b, "\n\nFiles in the skill's folder (read one with skill and file): %s", strings.Join(files, ", "))
	}
	return b.String(), nil
}

// readSkillFile reads a file of a skill's folder.
func readSkillFile(root *os.Root, skill, name string) (string, error) {
	clean := path.Clean(strings.ReplaceAll(name, `\`, "/"))
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%s is outside the folder of skill %s: give a path inside it, such as reference.md", name, skill)
	}
	// Opened without waiting for a writer, then read only when regular: a
	// FIFO in the folder would hold the call for ever.
	f, err := root.OpenFile(clean, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("skill %s has no file %s; its files: %s", skill, clean, strings.Join(skillFiles(root), ", "))
		}
		return "", fmt.Errorf("%s of skill %s cannot be read: it is outside the skill's folder or not readable (%v)", clean, skill, errors.Unwrap(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return "", fmt.Errorf("%s is a folder of skill %s; its files: %s", clean, skill, strings.Join(skillFiles(root), ", "))
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s of skill %s is not a regular file (a FIFO, a device or a socket), which is not read", clean, skill)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSkillFileBytes+1))
	if err != nil {
		return "", err
	}
	out := strings.ToValidUTF8(string(data), "\uFFFD")
	if len(data) > maxSkillFileBytes {
		out, _ = cutLine(out, maxSkillFileBytes)
		out += fmt.Sprintf("\n[cut: the file is larger than %d bytes]", maxSkillFileBytes)
	}
	return out, nil
}

// skillFiles lists the files of a skill's folder besides SKILL.md, hidden
// ones left out.
func skillFiles(root *os.Root) []string {
	var out []string
	_ = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.IsDir() && p != "SKILL.md" {
			if len(out) == maxSkillFiles {
				out = append(out, "…")
				return fs.SkipAll
			}
			out = append(out, p)
		}
		return nil
	})
	return out
}
