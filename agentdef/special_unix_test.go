//go:build unix

package agentdef

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// loadWithin loads the project proj, failing the test when the loader
// has not returned within a minute (it hung, or read without end).
func loadWithin(t *testing.T, proj string) []Diagnostic {
	t.Helper()
	done := make(chan []Diagnostic, 1)
	go func() {
		plugins, diags := FindPlugins(LoadOptions{Dir: proj, Home: t.TempDir(), NoBuiltin: true})
		_, d := Load(LoadOptions{Dir: proj, Home: t.TempDir(), NoBuiltin: true})
		_, s := LoadSkills(LoadOptions{Dir: proj, Home: t.TempDir(), NoBuiltin: true}, plugins)
		done <- append(append(diags, d...), s...)
	}()
	select {
	case d := <-done:
		return d
	case <-time.After(time.Minute):
		t.Fatal("the loader did not return")
		return nil
	}
}

// Files a repository holds where cadre looks for agents, skills and
// plugins are read only as regular files of bounded size: a SKILL.md, a
// plugin.json or an agent a plugin names that is a link to /dev/zero was
// read until memory ran out, and a FIFO SKILL.md hung the loader. Each is
// told as unreadable, and the rest loads.
func TestLoaderReadsRegularFilesOnly(t *testing.T) {
	proj := t.TempDir()
	os.Mkdir(filepath.Join(proj, ".git"), 0o755)
	link := func(name string) {
		t.Helper()
		p := filepath.Join(proj, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/dev/zero", p); err != nil {
			t.Fatal(err)
		}
	}
	link(".claude/skills/zero/SKILL.md")
	link(".claude/plugins/zeroplug/.claude-plugin/plugin.json")
	writeTestFile(t, filepath.Join(proj, ".claude", "plugins", "kit", ".claude-plugin", "plugin.json"), `{"name": "kit", "agents": "./zero.md"}`)
	link(".claude/plugins/kit/zero.md")
	fifo := filepath.Join(proj, ".claude", "skills", "fifo", SkillFile)
	os.MkdirAll(filepath.Dir(fifo), 0o755)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(proj, ".claude", "agents", "ok.md"), "---\nname: ok\ndescription: Fine.\n---\nFine.\n")

	diags := loadWithin(t, proj)
	var text []string
	for _, d := range diags {
		text = append(text, d.File+": "+d.Message)
	}
	all := strings.Join(text, "\n")
	for _, want := range []string{"zero/SKILL.md", "zeroplug", "fifo/SKILL.md", "not a regular file"} {
		if !strings.Contains(all, want) {
			t.Errorf("nothing told of %s:\n%s", want, all)
		}
	}
	cat, _ := Load(LoadOptions{Dir: proj, Home: t.TempDir(), NoBuiltin: true})
	if d, _ := cat.Get("ok"); d == nil {
		t.Error("the ordinary agent was not loaded")
	}
}

// A repository's plugins folder full of links to itself, or to /, is
// searched once per real folder and only inside itself: each link to "."
// doubled the search (twenty of them took hours), and a link to / searched
// the machine.
func TestPluginSearchFollowsNoLoops(t *testing.T) {
	proj := t.TempDir()
	os.Mkdir(filepath.Join(proj, ".git"), 0o755)
	plugins := filepath.Join(proj, ".claude", "plugins")
	writeTestFile(t, filepath.Join(plugins, "real", ".claude-plugin", "plugin.json"), `{"name": "real"}`)
	for i := range 20 {
		if err := os.Symlink(".", filepath.Join(plugins, "loop"+string(rune('a'+i)))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/", filepath.Join(plugins, "root")); err != nil {
		t.Fatal(err)
	}
	// And the plugins folder itself, in another project, a link to /.
	other := t.TempDir()
	os.Mkdir(filepath.Join(other, ".git"), 0o755)
	os.Mkdir(filepath.Join(other, ".claude"), 0o755)
	if err := os.Symlink("/", filepath.Join(other, ".claude", "plugins")); err != nil {
		t.Fatal(err)
	}
	if p, diags := FindPlugins(LoadOptions{Dir: other, Home: t.TempDir(), NoBuiltin: true}); len(p) != 0 || len(diags) != 1 || !strings.Contains(diags[0].Message, "is a link out of the project") {
		t.Errorf("a plugins folder linked to /: %d plugins, %v", len(p), diags)
	}
	// Links that stay in the repository, and the user's folder linked to
	// their dotfiles, are searched.
	repo, dotfiles, home := t.TempDir(), t.TempDir(), t.TempDir()
	os.Mkdir(filepath.Join(repo, ".git"), 0o755)
	writeTestFile(t, filepath.Join(repo, "tools", "claude-plugins", "shared", ".claude-plugin", "plugin.json"), `{"name": "shared"}`)
	app := filepath.Join(repo, "packages", "app")
	os.MkdirAll(filepath.Join(app, ".claude"), 0o755)
	if err := os.Symlink("../../../tools/claude-plugins", filepath.Join(app, ".claude", "plugins")); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dotfiles, "plugins", "mine", ".claude-plugin", "plugin.json"), `{"name": "mine"}`)
	os.Mkdir(filepath.Join(home, ".claude"), 0o755)
	if err := os.Symlink(filepath.Join(dotfiles, "plugins"), filepath.Join(home, ".claude", "plugins")); err != nil {
		t.Fatal(err)
	}
	p, diags := FindPlugins(LoadOptions{Dir: app, Home: home, NoBuiltin: true})
	var names []string
	for _, x := range p {
		names = append(names, x.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"mine", "shared"}) || len(diags) != 0 {
		t.Errorf("plugins %v, diagnostics %v; want mine and shared", names, diags)
	}
	done := make(chan []Plugin, 1)
	go func() {
		p, _ := FindPlugins(LoadOptions{Dir: proj, Home: t.TempDir(), NoBuiltin: true})
		done <- p
	}()
	select {
	case p := <-done:
		if len(p) != 1 || p[0].Name != "real" {
			t.Errorf("plugins %+v, want real once", p)
		}
	case <-time.After(time.Minute):
		t.Fatal("the plugin search did not return")
	}
}
