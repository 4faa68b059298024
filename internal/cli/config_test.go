package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/tool/builtin"
)

// configErrorCase is a config file that must be refused: the error points
// at line and says each of want.
type configErrorCase struct {
	name, yaml string
	line       int
	want       []string
}

func checkConfigErrors(t *testing.T, tests []configErrorCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fc fileConfig
			err := parseConfig("/p/.cadre/config.yaml", []byte(tt.yaml), &fc)
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("want a *ConfigError, got %v", err)
			}
			if ce.File != "/p/.cadre/config.yaml" || ce.Line != tt.line {
				t.Errorf("at %s:%d, want line %d (%v)", ce.File, ce.Line, tt.line, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	checkConfigErrors(t, []configErrorCase{
		{"unknown key", "model: openai:x\nlimts:\n  maxDepth: 2\n", 2, []string{"limts", "README.md"}},
		{"unknown nested key", "limits:\n  maxDeph: 2\n", 2, []string{"maxDeph"}},
		{"bad approve", "approve: sometimes\n", 1, []string{"approve", `"sometimes"`, "ask, all or none"}},
		{"bad protocol", "model: x\nprotocol: smoke\n", 2, []string{"protocol", "auto, tools or text"}},
		{"bad report", "report: email\n", 1, []string{"report", "tool or tag"}},
		{"negative depth", "limits:\n  maxDepth: -1\n", 2, []string{"maxDepth"}},
		{"no agents", "model: m\nlimits:\n  maxDepth: 1\n  maxAgents: 0\n", 4, []string{"maxAgents", "0 is not valid", "the root alone", "leave the key out"}},
		{"no turns", "limits:\n  maxTurns: 0\n", 2, []string{"maxTurns", "0 is not valid"}},
		{"nothing at once", "limits:\n  maxConcurrent: 0\n", 2, []string{"maxConcurrent", "0 is not valid"}},
		{"budget below -1", "limits:\n  budgetTokens: -5\n", 2, []string{"budgetTokens", "-1 for no budget"}},
		{"named model without model", "models:\n  fast:\n    maxTokens: 10\n", 2, []string{"models.fast", "provider:model"}},
		{"unknown provider", "providers:\n  openia: {baseURL: x}\n", 2, []string{"providers.openia", "openai"}},
		{"bad model input", "models:\n  eyes:\n    model: openai:x\n    input: [text, video]\n", 4, []string{"models.eyes.input", `"video"`, "text, image and audio"}},
		{"bad provider input", "providers:\n  ollama:\n    input:\n      - text\n      - pictures\n", 5, []string{"providers.ollama.input", `"pictures"`, "[text, image]"}},
		{"bad stall timeout", "providers:\n  openai:\n    stallTimeout: soon\n", 3, []string{"stallTimeout", `"soon"`}},
		{"wrong type", "limits:\n  maxTurns: many\n", 2, []string{"maxTurns"}},
		{"string for a list", "agentsDirs: a b\n", 1, []string{"agentsDirs", "a list"}},
		{"bad fetch rule", "model: m\nwebFetch:\n  allow:\n    - 127.0.0.1:8080\n    - http://intranet/\n", 5, []string{"webFetch.allow", `"http://intranet/"`, "not a URL", "10.0.0.0/8"}},
		{"bad fetch rule inline", "webFetch:\n  allow: [\"10.0.0.0/99\"]\n", 2, []string{"webFetch.allow", `"10.0.0.0/99"`, "prefix length"}},
		{"bad fetch port", "webFetch: {allow: [\"localhost:http\"]}\n", 1, []string{"webFetch.allow", `the port "http"`}},
		{"fetch allow not a list", "webFetch:\n  allow: 10.0.0.0/8\n", 2, []string{"allow", "a list"}},
		{"unknown webFetch key", "webFetch:\n  allowed: [x]\n", 2, []string{"allowed"}},
		{"bad envPassthrough", "mcpServers:\n  demo:\n    command: x\n    envPassthrough: [OK_NAME, \"BAD-NAME\"]\n", 4, []string{"mcpServers.demo", `"BAD-NAME"`, "AWS_*"}},
		{"envPassthrough on url", "mcpServers:\n  demo:\n    url: http://h/mcp\n    envPassthrough: [A]\n", 4, []string{"mcpServers.demo", "envPassthrough is for servers cadre starts"}},
		{"unknown files key", "files:\n  allowHardlinks: true\n", 2, []string{"allowHardlinks"}},
		{"files flag not a boolean", "files:\n  allowHardLinks: sometimes\n", 2, []string{"allowHardLinks"}},
		{"unknown search provider", "model: m\nwebSearch:\n  provider: google\n", 2, []string{"webSearch", `"google"`, "searxng or brave"}},
		{"searxng without url", "webSearch: {provider: searxng}\n", 1, []string{"webSearch", "needs url"}},
		{"search url not http", "webSearch: {provider: searxng, url: \"localhost:8888\"}\n", 1, []string{"webSearch", "not an http or https address"}},
		{"unknown webSearch key", "webSearch:\n  provider: brave\n  apiKey: x\n", 3, []string{"apiKey"}},
	})
}

func TestConfigPrecedence(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(home, ".cadre", "config.yaml"), "model: openai:from-user\napprove: none\nlimits:\n  maxDepth: 5\n  maxTurns: 9\n")
	writeFile(t, filepath.Join(proj, ".cadre", "config.yaml"), "model: openai:from-project\nlimits:\n  maxDepth: 2\n")
	env := map[string]string{"HOME": home}
	a := &app{io: IO{Dir: proj, Getenv: func(k string) string { return env[k] }}}
	cfg, err := a.loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Model != "openai:from-project" || cfg.Approve != "none" || cfg.Limits.MaxDepth != 2 || cfg.Limits.MaxTurns != 9 {
		t.Fatalf("merged %+v", cfg.fileConfig)
	}
	env["CADRE_MODEL"] = "openai:from-env"
	cfg, _ = a.loadConfig()
	if cfg.Model != "openai:from-env" {
		t.Fatalf("env: %s", cfg.Model)
	}
	f := runFlags{model: "openai:from-flag", maxDepth: 1}
	f.apply(cfg)
	if cfg.Model != "openai:from-flag" || cfg.Limits.MaxDepth != 1 || cfg.Limits.MaxTurns != 9 {
		t.Fatalf("flags: %+v", cfg.fileConfig)
	}

	// A bad project file stops every command with the place to fix.
	writeFile(t, filepath.Join(proj, ".cadre", "config.yaml"), "model: x\nbogus: 1\n")
	var stderr bytes.Buffer
	code := Main(context.Background(), []string{"run", "task"}, IO{Dir: proj, Getenv: func(k string) string { return env[k] }, Stderr: &stderr, Stdout: &bytes.Buffer{}})
	if code == 0 || !strings.Contains(stderr.String(), filepath.Join(proj, ".cadre", "config.yaml")+":2:") || !strings.Contains(stderr.String(), "bogus") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

// maxDepth: 0 in a config file means no subagents, as --max-depth 0
// does; a file without the key keeps the default, and a later file's 0
// overrides an earlier depth.
func TestConfigZeroDepth(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(home, ".cadre", "config.yaml"), "limits:\n  maxDepth: 4\n")
	a := &app{io: IO{Dir: proj, Getenv: func(k string) string { return map[string]string{"HOME": home}[k] }}}
	cfg, err := a.loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.limits().MaxDepth; got != 4 {
		t.Fatalf("maxDepth from the user's file: %d", got)
	}
	writeFile(t, filepath.Join(proj, ".cadre", "config.yaml"), "limits:\n  maxDepth: 0\n")
	if cfg, err = a.loadConfig(); err != nil {
		t.Fatal(err)
	}
	if got := cfg.limits().MaxDepth; got != cadre.NoSubagents {
		t.Fatalf("maxDepth: 0 gave %d, want no subagents (%d)", got, cadre.NoSubagents)
	}
}

// webFetch.allow lists of both files add up, and reach web_fetch.
func TestWebFetchAllowConfig(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(home, ".cadre", "config.yaml"), "webFetch:\n  allow: [\"10.0.0.0/8\"]\n")
	writeFile(t, filepath.Join(proj, ".cadre", "config.yaml"), "webFetch:\n  allow:\n    - intranet.example.com:8080\n    - \"*.corp.example\"\n")
	// The project's rules apply when it is trusted (see TestTrustConfigKeys).
	a := &app{io: IO{Dir: proj, Getenv: func(k string) string { return map[string]string{"HOME": home}[k] }}, trustProject: true}
	cfg, err := a.loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	rules, err := cfg.fetchRules()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rules {
		got = append(got, r.String())
	}
	if want := []string{"10.0.0.0/8", "intranet.example.com:8080", "*.corp.example"}; !slices.Equal(got, want) {
		t.Errorf("rules %q, want %q", got, want)
	}
}

// webSearch names the service of web_search; the later file's section
// wins, and Brave's key comes from the variable apiKeyEnv names.
func TestWebSearchConfig(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(home, ".cadre", "config.yaml"), "webSearch: {provider: searxng, url: \"http://localhost:8888\"}\n")
	env := map[string]string{"HOME": home, "MY_BRAVE": "k-1"}
	// The project's section applies when it is trusted (see TestTrustConfigKeys).
	a := &app{io: IO{Dir: proj, Getenv: func(k string) string { return env[k] }}, trustProject: true}
	cfg, err := a.loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if b, err := cfg.searchBackend(a.io.Getenv); err != nil || b.Provider != builtin.SearchSearXNG || b.URL != "http://localhost:8888" {
		t.Errorf("the user's searxng: %+v, %v", b, err)
	}
	writeFile(t, filepath.Join(proj, ".cadre", "config.yaml"), "webSearch:\n  provider: brave\n  apiKeyEnv: MY_BRAVE\n")
	if cfg, err = a.loadConfig(); err != nil {
		t.Fatal(err)
	}
	if b, err := cfg.searchBackend(a.io.Getenv); err != nil || b.Provider != builtin.SearchBrave || b.APIKey != "k-1" || b.URL != "" {
		t.Errorf("the project's brave: %+v, %v", b, err)
	}
	delete(env, "MY_BRAVE")
	if _, err := cfg.searchBackend(a.io.Getenv); err == nil || !strings.Contains(err.Error(), "MY_BRAVE, which is not set") {
		t.Errorf("brave without its key: %v", err)
	}
	b, err := (&config{}).searchBackend(a.io.Getenv)
	if err != nil || b.Provider != "" || !strings.Contains(b.NotConfigured, "webSearch: {provider: searxng") {
		t.Errorf("no section: %+v, %v", b, err)
	}
}

// The run's time limit is whole seconds in a config file and any duration
// with --timeout; the one given last counts, and a run's recorded settings
// keep it exactly.
func TestConfigTimeout(t *testing.T) {
	proj := t.TempDir()
	writeFile(t, filepath.Join(proj, ".cadre", "config.yaml"), "model: openai:m\nlimits:\n  timeoutSeconds: 90\n")
	a := &app{io: IO{Dir: proj, Getenv: func(string) string { return "" }}}
	cfg, err := a.loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.limits().Timeout; got != 90*time.Second {
		t.Errorf("from the file: %s, want 1m30s", got)
	}
	for _, flag := range []time.Duration{1500 * time.Millisecond, 500 * time.Millisecond, 2 * time.Hour} {
		cfg, err := a.loadConfig()
		if err != nil {
			t.Fatal(err)
		}
		(&runFlags{timeout: flag}).apply(cfg)
		if got := cfg.limits().Timeout; got != flag {
			t.Errorf("--timeout %s: the run's limit is %s", flag, got)
		}
		b, err := json.Marshal(runSettings{Limits: storedLimits{cfg.Limits}})
		if err != nil {
			t.Fatal(err)
		}
		var rs runSettings
		if err := json.Unmarshal(b, &rs); err != nil {
			t.Fatal(err)
		}
		rs.apply(cfg)
		if got := cfg.limits().Timeout; got != flag {
			t.Errorf("--timeout %s, recorded and read back: %s", flag, got)
		}
	}
	// Settings recorded before --timeout kept its own field.
	var rs runSettings
	if err := json.Unmarshal([]byte(`{"model":"openai:m","limits":{"MaxDepth":0,"TimeoutSeconds":45}}`), &rs); err != nil {
		t.Fatal(err)
	}
	rs.apply(cfg)
	if got := cfg.limits().Timeout; got != 45*time.Second {
		t.Errorf("old settings: %s, want 45s", got)
	}
}

// A config whose anchors each repeat the one before ten times stands for
// billions of values in a few hundred bytes; a project's config comes
// with the repository, and decoding it exhausted the memory of cadre. It
// is refused before it is decoded, at its first alias.
func TestConfigAliasBombIsRefused(t *testing.T) {
	var b strings.Builder
	b.WriteString("model: openai:x\nx-l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "x-l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	var fc fileConfig
	err := parseConfig(".cadre/config.yaml", []byte(b.String()), &fc)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Line != 3 || !strings.Contains(ce.Msg, "more than 100000 values") {
		t.Fatalf("error %v", err)
	}
}
