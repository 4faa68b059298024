package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
)

func TestInitCommand(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	res := runCadre(t, dir, home, "init")
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	wantCreated := []string{
		"created  .cadre/config.yaml",
		"created  .cadre/agents/research-assistant.md",
		"created  .cadre/agents/code-analyst.md",
		"created  .cadre/agents/summarizer.md",
		"created  .cadre/AGENTS.md",
	}
	lines := strings.Split(res.stdout, "\n")
	if diff := cmp.Diff(wantCreated, lines[:5]); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	if !strings.Contains(res.stdout, "Next: choose a model") {
		t.Errorf("no next step in %q", res.stdout)
	}

	// The config file cadre wrote is one cadre reads without complaint,
	// and it sets what it says.
	data, err := os.ReadFile(filepath.Join(dir, ".cadre", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var fc fileConfig
	if err := parseConfig("config.yaml", data, &fc); err != nil {
		t.Fatalf("the generated config does not parse: %v", err)
	}
	if fc.Approve != "ask" || fc.Model != "" || fc.Strict != nil || fc.Limits != (limitsConfig{}) {
		t.Errorf("generated config sets %+v", fc)
	}
	// Uncommenting the examples (the first model: of three) gives a valid
	// config whose limits are the defaults it claims.
	example := regexp.MustCompile(`^(\s*)# ?(\s*)((?:[A-Za-z]+:(?: .*)?)|(?:- .*))$`)
	var uncommented []string
	models := 0
	for _, l := range strings.Split(string(data), "\n") {
		if m := example.FindStringSubmatch(l); m != nil {
			if strings.HasPrefix(m[3], "model: ") && m[2] == "" {
				models++
				if models > 1 {
					uncommented = append(uncommented, l)
					continue
				}
			}
			l = m[1] + m[2] + m[3]
		}
		uncommented = append(uncommented, l)
	}
	var full fileConfig
	if err := parseConfig("uncommented.yaml", []byte(strings.Join(uncommented, "\n")), &full); err != nil {
		t.Fatalf("the uncommented examples do not parse: %v\n%s", err, strings.Join(uncommented, "\n"))
	}
	c := &config{fileConfig: full}
	if diff := cmp.Diff(cadre.Limits{}.WithDefaults(), c.limits()); diff != "" {
		t.Errorf("limits shown are not the defaults (-want +got):\n%s", diff)
	}
	if full.Model != "openai:gpt-4o-mini" || len(full.Models) != 3 || len(full.Providers) != 3 || full.Store == "" || len(full.AgentsDirs) != 1 || full.Strict == nil {
		t.Errorf("uncommented config: %+v", full)
	}

	// The stock agents are in effect, from the project.
	res = runCadre(t, dir, home, "agents", "validate")
	if res.code != 0 || strings.TrimSpace(res.stdout) != "" {
		t.Errorf("validate after init: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	// Once a stock agent is edited, it replaces the built-in one, and
	// validate says so.
	analyst := filepath.Join(dir, ".cadre", "agents", "code-analyst.md")
	stock, err := os.ReadFile(analyst)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(analyst, append(stock, []byte("\nAlways check the tests first.\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	res = runCadre(t, dir, home, "agents", "validate")
	if res.code != 0 || strings.TrimSpace(res.stdout) != ".cadre/agents/code-analyst.md:2:1: info: agent code-analyst replaces cadre's built-in agent of that name" {
		t.Errorf("validate after editing code-analyst: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	res = runCadre(t, dir, home, "agents", "list")
	for _, name := range []string{"research-assistant", "code-analyst", "summarizer"} {
		if !strings.Contains(res.stdout, ".cadre/agents/"+name+".md") {
			t.Errorf("%s not loaded from the project:\n%s", name, res.stdout)
		}
	}

	// A second run overwrites nothing and says what it kept.
	mine := filepath.Join(dir, ".cadre", "AGENTS.md")
	if err := os.WriteFile(mine, []byte("my guidance\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res = runCadre(t, dir, home, "init")
	if res.code != 0 || strings.Contains(res.stdout, "created") || strings.Contains(res.stdout, "Next:") {
		t.Errorf("second init: exit %d\n%s", res.code, res.stdout)
	}
	if !strings.Contains(res.stdout, "kept     .cadre/AGENTS.md (it exists; cadre init never overwrites)") {
		t.Errorf("second init does not say it kept AGENTS.md:\n%s", res.stdout)
	}
	if got, _ := os.ReadFile(mine); string(got) != "my guidance\n" {
		t.Errorf("AGENTS.md overwritten: %q", got)
	}
}

func TestInitCommandDir(t *testing.T) {
	wd, home := t.TempDir(), t.TempDir()
	res := runCadre(t, wd, home, "init", "sub/project")
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	if _, err := os.Stat(filepath.Join(wd, "sub", "project", ".cadre", "agents", "code-analyst.md")); err != nil {
		t.Error(err)
	}
	if !strings.Contains(res.stdout, "created  sub/project/.cadre/config.yaml") {
		t.Errorf("stdout %q", res.stdout)
	}
	if res := runCadre(t, wd, home, "init", "a", "b"); res.code != 1 {
		t.Errorf("two directories: exit %d", res.code)
	}
}

func TestInitCommandError(t *testing.T) {
	wd, home := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(wd, ".cadre"), []byte("a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runCadre(t, wd, home, "init")
	if res.code != 1 || !strings.Contains(res.stderr, filepath.Join(wd, ".cadre")+" is a file: move it away and run cadre init again") {
		t.Errorf("exit %d stderr %q", res.code, res.stderr)
	}
}
