package builtin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSkillTool(t *testing.T) {
	if NewSkill(nil) != nil {
		t.Error("a skill tool with no skills")
	}
	dir := filepath.Join(t.TempDir(), "pdf")
	outside := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(outside, []byte("launch code"), 0o644)
	os.MkdirAll(filepath.Join(dir, "scripts"), 0o755)
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: pdf\n---\nbody"), 0o644)
	os.WriteFile(filepath.Join(dir, "reference.md"), []byte("Field names are case-sensitive."), 0o644)
	os.WriteFile(filepath.Join(dir, "scripts", "fill.py"), []byte("print('fill')"), 0o644)
	os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("x"), 0o644)
	if err := os.Symlink(outside, filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	tl := NewSkill([]SkillEntry{
		{Name: "pdf", Description: "Fill PDF\n forms.", Body: "\nRun scripts/fill.py.\n", Dir: dir, AllowedTools: []string{"Read", "Bash(python *)"}},
		{Name: "changelog", Description: "Write changelogs.", Body: "Keep a changelog.", Dir: t.TempDir()},
	})
	spec := tl.Spec()
	if !strings.Contains(spec.Description, "The skills:\n- changelog: Write changelogs.\n- pdf: Fill PDF forms.") {
		t.Errorf("description %q", spec.Description)
	}
	call := func(args string) (string, error) { return tl.Call(t.Context(), json.RawMessage(args)) }

	out, err := call(`{"name":"pdf"}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Skill pdf (its folder: " + dir + ")\n\nRun scripts/fill.py.",
		"This skill expects these tools: Read, Bash(python *). It gives none",
		"Files in the skill's folder (read one with skill and file): link.txt, reference.md, scripts/fill.py",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if out, err := call(`{"name":"pdf","file":"scripts/fill.py"}`); err != nil || out != "print('fill')" {
		t.Errorf("a file: %q, %v", out, err)
	}
	for args, want := range map[string]string{
		`{"name":"pdf","file":"link.txt"}`:        "outside the skill's folder",
		`{"name":"pdf","file":"../pdf/../x"}`:     "outside the folder of skill pdf",
		`{"name":"pdf","file":"` + outside + `"}`: "outside the folder of skill pdf",
		`{"name":"pdf","file":"nope.md"}`:         "skill pdf has no file nope.md; its files: link.txt, reference.md, scripts/fill.py",
		`{"name":"pdf","file":"scripts"}`:         "scripts is a folder of skill pdf",
		`{"name":"docx"}`:                         `there is no skill named "docx"; the skills are: changelog, pdf`,
		`{"name":1}`:                              "not valid",
	} {
		out, err := call(args)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(out, "launch code") {
			t.Errorf("%s: %q, %v; want an error with %q", args, out, err, want)
		}
	}
}
