package agentdef

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cadre-ai/cadre"
)

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Plugins under ~/.claude/plugins (at any depth), the project's
// .claude/plugins and PluginDirs give agents and skills named plugin:name,
// so two plugins' code-reviewer do not collide, and Agent(plugin:agent)
// rules name them.
func TestPlugins(t *testing.T) {
	home, proj, extra := t.TempDir(), t.TempDir(), t.TempDir()
	os.Mkdir(filepath.Join(proj, ".git"), 0o755)
	agent := func(name string) string {
		return "---\nname: " + name + "\ndescription: The " + name + ".\n---\nYou are " + name + ".\n"
	}
	mk := filepath.Join(home, ".claude", "plugins", "marketplaces", "acme", "plugins", "review-kit")
	writeTestFile(t, filepath.Join(mk, ".claude-plugin", "plugin.json"), `{"name": "review-kit", "version": "1.0.0", "agents": ["./extra/security.md"]}`)
	writeTestFile(t, filepath.Join(mk, "agents", "code-reviewer.md"), agent("code-reviewer"))
	writeTestFile(t, filepath.Join(mk, "extra", "security.md"), agent("security"))
	writeTestFile(t, filepath.Join(mk, "skills", "triage", SkillFile), "---\nname: triage\ndescription: Sort issues.\n---\nSort them.\n")
	pp := filepath.Join(proj, ".claude", "plugins", "house")
	writeTestFile(t, filepath.Join(pp, ".claude-plugin", "plugin.json"), `{"name": "house"}`)
	writeTestFile(t, filepath.Join(pp, "agents", "code-reviewer.md"), agent("code-reviewer"))
	writeTestFile(t, filepath.Join(proj, ".claude", "agents", "lead.md"),
		"---\nname: lead\ndescription: Leads.\ntools: Read, Agent(house:code-reviewer)\n---\nLead.\n")
	writeTestFile(t, filepath.Join(proj, ".claude", "plugins", "broken", ".claude-plugin", "plugin.json"), `{"name": `)
	writeTestFile(t, filepath.Join(proj, ".claude", "plugins", "twin", ".claude-plugin", "plugin.json"), `{"name": "house"}`)
	writeTestFile(t, filepath.Join(extra, ".claude-plugin", "plugin.json"), `{"name": "ops", "agents": "../../etc"}`)

	cat, diags := Load(LoadOptions{Dir: proj, Home: home, NoBuiltin: true, PluginDirs: []string{extra, filepath.Join(proj, "nowhere")}})
	names := cat.Names()
	for _, want := range []string{"review-kit:code-reviewer", "review-kit:security", "house:code-reviewer", "lead"} {
		if !slices.Contains(names, want) {
			t.Errorf("no agent %s in %q", want, names)
		}
	}
	if d, _ := cat.Get("house:code-reviewer"); d == nil || d.Scope != ScopePlugin || d.Prompt != "You are code-reviewer.\n" {
		t.Errorf("house:code-reviewer: %+v", d)
	}
	lead, _ := cat.Get("lead")
	if lead == nil || !slices.ContainsFunc(lead.Rules, func(r cadre.ToolRule) bool { return r.Tool == cadre.RuleAgents && r.Pattern == "house:code-reviewer" }) {
		t.Errorf("lead's rules do not name house:code-reviewer: %+v", lead)
	}
	var msgs []string
	for _, d := range diags {
		if d.Severity == SeverityError {
			msgs = append(msgs, d.String())
		}
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{
		filepath.Join("broken", ".claude-plugin", "plugin.json") + ": error: is not valid JSON",
		filepath.Join("twin", ".claude-plugin", "plugin.json") + ": error: plugin name house is taken by",
		`error: "agents": ../../etc is outside the plugin's folder`,
		filepath.Join(proj, "nowhere") + ": error: the plugin folder cannot be read",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no error %q in\n%s", want, all)
		}
	}
	skills, _ := LoadSkills(LoadOptions{Dir: proj, Home: home}, cat.Plugins())
	if len(skills) != 1 || skills[0].Name != "review-kit:triage" {
		t.Errorf("skills %+v", skills)
	}
}
