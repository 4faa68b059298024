package agentdef

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeSkill(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name, SkillFile)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Skills load from the user's and the project's folders of every dialect;
// the project's win on a name; broken ones are errors naming the file and
// line, and the rest load.
func TestLoadSkills(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	os.Mkdir(filepath.Join(proj, ".git"), 0o755)
	writeSkill(t, filepath.Join(home, ".claude", "skills"), "pdf", "---\nname: pdf\ndescription: Fill PDF forms.\nallowed-tools: Read, Bash(python *)\n---\nUse fill.py.\n")
	writeSkill(t, filepath.Join(home, ".claude", "skills"), "changelog", "---\nname: changelog\ndescription: The user's changelog style.\n---\nUser version.\n")
	writeSkill(t, filepath.Join(proj, ".claude", "skills"), "changelog", "---\nname: changelog\ndescription: The project's changelog style.\n---\nProject version.\n")
	writeSkill(t, filepath.Join(proj, ".opencode", "skill"), "git-release", "---\r\nname: git-release\r\ndescription: Cut a release.\r\nallowed-tools: [Bash, Read]\r\n---\r\nTag it.\r\n")
	writeSkill(t, filepath.Join(proj, ".cadre", "skills"), "broken", "---\nname: broken\ndescription: it says: two colons\n---\nBody.\n")
	writeSkill(t, filepath.Join(proj, ".cadre", "skills"), "noname", "---\ndescription: No name.\n---\nBody.\n")
	writeSkill(t, filepath.Join(proj, ".cadre", "skills"), "Bad Name", "---\nname: Bad Name\ndescription: x\n---\nBody.\n")
	writeSkill(t, filepath.Join(proj, ".cadre", "skills"), "empty", "---\nname: empty\ndescription: Nothing below.\n---\n\n")
	os.MkdirAll(filepath.Join(proj, ".claude", "skills", "not-a-skill"), 0o755)

	skills, diags := LoadSkills(LoadOptions{Dir: proj, Home: home}, nil)
	var names []string
	for _, s := range skills {
		names = append(names, s.Name+":"+s.Scope)
	}
	if want := []string{"changelog:project", "git-release:project", "pdf:user"}; !slices.Equal(names, want) {
		t.Errorf("skills %q, want %q", names, want)
	}
	for _, s := range skills {
		switch s.Name {
		case "changelog":
			if s.Body != "Project version.\n" {
				t.Errorf("changelog: the project's should win: %q", s.Body)
			}
		case "git-release":
			if s.Body != "Tag it.\n" || !slices.Equal(s.AllowedTools, []string{"Bash", "Read"}) {
				t.Errorf("git-release: %q %q", s.Body, s.AllowedTools)
			}
		case "pdf":
			if !slices.Equal(s.AllowedTools, []string{"Read", "Bash(python *)"}) || s.Dir != filepath.Join(home, ".claude", "skills", "pdf") {
				t.Errorf("pdf: %q %s", s.AllowedTools, s.Dir)
			}
		}
	}
	var got []string
	for _, d := range diags {
		rel, _ := filepath.Rel(proj, d.File)
		got = append(got, filepath.ToSlash(rel)+": "+d.String()[len(d.File):])
	}
	for _, want := range []string{
		".cadre/skills/broken/SKILL.md: :3:1: error: the frontmatter is not valid YAML",
		".cadre/skills/noname/SKILL.md: :1:1: error: missing name: add name: noname (the folder's name); the skill is left out",
		`.cadre/skills/Bad Name/SKILL.md: :2:1: error: name "Bad Name" is not a skill name`,
		".cadre/skills/empty/SKILL.md: :4:1: error: empty body",
	} {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, want) }) {
			t.Errorf("no diagnostic %q in\n%s", want, strings.Join(got, "\n"))
		}
	}
}
