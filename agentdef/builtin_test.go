package agentdef

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
)

func TestBuiltin(t *testing.T) {
	defs := Builtin()
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	if diff := cmp.Diff([]string{"code-analyst", GeneralPurpose, "research-assistant", "summarizer"}, names); diff != "" {
		t.Fatalf("names (-want +got):\n%s", diff)
	}
	entries, err := stock.ReadDir("stock")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, _ := stock.ReadFile("stock/" + e.Name())
		if _, diags := Parse(e.Name(), data, ParseOptions{Strict: true}); len(diags) != 0 {
			t.Errorf("%s: built-in agents must parse cleanly, strictly:%s", e.Name(), diagLines(diags))
		}
	}
	// The stock agents as the Netclaw seed describes them, in cadre's tool
	// names: their purpose, tools, timeouts, the compaction model role, and
	// the points their prompts make.
	for _, tc := range []struct {
		name     string
		tools    []string
		timeout  time.Duration
		role     string
		describe []string // in the description
		prompt   []string // in the prompt
	}{
		{"research-assistant", []string{ToolWebFetch, ToolReadFile, ToolListFiles, ToolSearchFiles}, 120 * time.Second, "",
			[]string{"Researches", "sources"},
			[]string{"web_fetch", "read_file", "second source", "URL", "rather than guessing"}},
		{"code-analyst", []string{ToolReadFile, ToolListFiles, ToolSearchFiles, ToolRunCommand}, 120 * time.Second, "",
			[]string{"source code", "runs build, test and git commands", "file and line"},
			[]string{"the build, the tests", "path and line numbers", "defects", "performance", "fenced blocks"}},
		{"summarizer", []string{ToolReadFile, ToolWebFetch}, 60 * time.Second, "",
			[]string{"Condenses documents, web pages"},
			[]string{"names, numbers, dates", "under 500 words", "public interface"}},
		{GeneralPurpose, nil, cadre.DefaultTimeout, "", []string{"same tools as the agent that starts it"}, []string{"Report what you did"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := slices.IndexFunc(defs, func(d *cadre.Definition) bool { return d.Name == tc.name })
			d := defs[i]
			if diff := cmp.Diff(tc.tools, d.Tools); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if d.ModelRole != tc.role {
				t.Errorf("model role %q, want %q", d.ModelRole, tc.role)
			}
			for _, want := range tc.describe {
				if !strings.Contains(d.Description, want) {
					t.Errorf("the description lacks %q: %s", want, d.Description)
				}
			}
			for _, want := range tc.prompt {
				if !strings.Contains(strings.Join(strings.Fields(d.Prompt), " "), want) {
					t.Errorf("the prompt lacks %q", want)
				}
			}
			if d.Timeout != tc.timeout || !d.UserFacing() || d.Scope != ScopeBuiltin || d.File != "builtin:"+tc.name+".md" {
				t.Errorf("timeout %s user-facing %v scope %q file %q", d.Timeout, d.UserFacing(), d.Scope, d.File)
			}
			if len(d.Description) < 40 || len(d.Prompt) < 200 {
				t.Errorf("description or prompt too thin: %q", d.Description)
			}
		})
	}
	// Each call parses anew: changing one result does not change the next.
	defs[0].Name = "changed"
	if Builtin()[0].Name == "changed" {
		t.Error("Builtin shares its definitions between calls")
	}
}

func TestInit(t *testing.T) {
	dir := t.TempDir()
	created, kept, err := Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	rel := func(ps []string) []string {
		var out []string
		for _, p := range ps {
			r, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(r))
		}
		return out
	}
	want := []string{".cadre/config.yaml", ".cadre/agents/research-assistant.md", ".cadre/agents/code-analyst.md", ".cadre/agents/summarizer.md", ".cadre/AGENTS.md"}
	if diff := cmp.Diff(want, rel(created)); diff != "" || len(kept) != 0 {
		t.Fatalf("created (-want +got):\n%s\nkept %v", diff, kept)
	}

	// The stock agents load from the project, cleanly, replacing the
	// built-in copies without a word.
	cat, diags := Load(LoadOptions{Dir: dir, RepoRoot: dir, NoUser: true})
	if len(diags) != 0 {
		t.Errorf("diagnostics:%s", diagLines(diags))
	}
	for _, name := range []string{"research-assistant", "code-analyst", "summarizer"} {
		if d, ok := cat.Get(name); !ok || d.Scope != ScopeProject {
			t.Errorf("%s: want the project's copy, got %+v", name, d)
		}
	}

	cfg, err := os.ReadFile(filepath.Join(dir, ".cadre", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{"approve: ask", "# model: openai:gpt-4o-mini", "limits:", "# maxDepth: 3", "# budgetTokens: 500000", "# maxConcurrent: 16",
		"# maxAgents: 200", "# maxTurns: 25", "# timeoutSeconds: 0", "# models:", "toolCalling: false", "# providers:", "apiKeyEnv:", "baseURL:",
		"# strict: false", "# agentsDirs:", "# store:"} {
		if !strings.Contains(string(cfg), frag) {
			t.Errorf("config.yaml lacks %q", frag)
		}
	}
	guide, err := os.ReadFile(filepath.Join(dir, ".cadre", "AGENTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{"## When to delegate", "## When not to delegate", "context", "parallel", "spawn_agent", "start_background_agent"} {
		if !strings.Contains(string(guide), frag) {
			t.Errorf("AGENTS.md lacks %q", frag)
		}
	}

	// A second run keeps everything, including a file the user changed.
	mine := filepath.Join(dir, ".cadre", "agents", "summarizer.md")
	if err := os.WriteFile(mine, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	created, kept, err = Init(dir)
	if err != nil || len(created) != 0 {
		t.Fatalf("second Init created %v, err %v", created, err)
	}
	if diff := cmp.Diff(want, rel(kept)); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	if data, _ := os.ReadFile(mine); string(data) != "mine" {
		t.Errorf("Init overwrote %s", mine)
	}

	// A missing file among existing ones is created alone.
	if err := os.Remove(filepath.Join(dir, ".cadre", "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	created, _, err = Init(dir)
	if err != nil || len(created) != 1 || filepath.Base(created[0]) != "AGENTS.md" {
		t.Errorf("created %v, err %v; want AGENTS.md alone", created, err)
	}
}

func TestInitReportsWhereItFailed(t *testing.T) {
	dir := t.TempDir()
	// .cadre is a file, so nothing can be created below it.
	if err := os.WriteFile(filepath.Join(dir, ".cadre"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := Init(dir)
	want := "(" + filepath.Join(dir, ".cadre") + " is a file: move it away and run cadre init again)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want one ending %q", err, want)
	}
}
