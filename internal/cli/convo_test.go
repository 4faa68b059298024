package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-ai/cadre"
)

// convoProject is a project folder with a script for the scripted model.
func convoProject(t *testing.T, script string) (dir, home, model string) {
	t.Helper()
	dir, home = t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, ".git", "HEAD"), "ref: refs/heads/main\n")
	writeFile(t, filepath.Join(dir, "script.yaml"), script)
	writeFile(t, filepath.Join(home, ".cadre", "config.yaml"), "sandbox: off\n")
	return dir, home, "scripted:" + filepath.Join(dir, "script.yaml")
}

// storedRuns opens the project's run store and lists its runs, newest
// first.
func storedRuns(t *testing.T, dir string) []*cadre.RunRecord {
	t.Helper()
	loc := filepath.Join(dir, ".cadre", "cadre.db")
	s, err := openStore(context.Background(), loc, loc, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runs, err := s.ListRuns(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

func TestLimitFlagsOfZero(t *testing.T) {
	dir, home, model := convoProject(t, "root:\n  - text: done\n")
	for _, tc := range []struct{ flag, want string }{
		{"--max-agents", "--max-agents=0 is not valid: a run needs at least its root agent"},
		{"--max-turns", "--max-turns=0 is not valid"},
		{"--max-concurrent", "--max-concurrent=0 is not valid"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			res := runCadre(t, dir, home, "run", "-m", model, tc.flag, "0", "task")
			if res.code == 0 || !strings.Contains(res.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want a refusal saying %q", res.code, res.stderr, tc.want)
			}
		})
	}
}

// --max-depth 0 leaves the root without subagents: its spawn is refused
// with a depth_limit event, and the record keeps max_depth 0 with the
// other limits in effect, in one key style.
func TestMaxDepthZeroMeansNoSubagents(t *testing.T) {
	dir, home, model := convoProject(t, `
root:
  - tool_calls:
      - name: spawn_agent
        arguments: {agent: general-purpose, task: "help"}
  - text: "alone"
`)
	res := runCadre(t, dir, home, "run", "--json", "-m", model, "--max-depth", "0", "task")
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	if !strings.Contains(res.stdout, `"type":"depth_limit"`) || !strings.Contains(res.stdout, `"max_depth":0`) || strings.Contains(res.stdout, `"type":"agent_spawned"`) {
		t.Errorf("want a refused spawn with max_depth 0 and no child; events:\n%s", res.stdout)
	}
	runs := storedRuns(t, dir)
	var rs struct {
		Limits map[string]any `json:"limits"`
	}
	if err := json.Unmarshal(runs[0].Config, &rs); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"max_depth": 0.0, "max_concurrent": float64(cadre.DefaultMaxConcurrent), "max_agents": float64(cadre.DefaultMaxAgents),
		"budget_tokens": float64(cadre.DefaultBudgetTokens), "max_turns": float64(cadre.DefaultMaxTurns), "max_questions": float64(cadre.DefaultMaxQuestions)}
	for k, v := range want {
		if rs.Limits[k] != v {
			t.Errorf("runs.config limits[%s] = %v, want %v (all: %v)", k, rs.Limits[k], v, rs.Limits)
		}
	}
	for k := range rs.Limits {
		if strings.ToLower(k) != k {
			t.Errorf("runs.config limit key %q is not snake_case", k)
		}
	}
}

func TestAgentsDirThatDoesNotExist(t *testing.T) {
	dir, home, model := convoProject(t, "root:\n  - text: done\n")
	res := runCadre(t, dir, home, "run", "-m", model, "--agents-dir", "no-such-folder", "task")
	if res.code == 0 || !strings.Contains(res.stderr, "agents folder no-such-folder") {
		t.Errorf("exit %d, stderr %q", res.code, res.stderr)
	}
}

func TestMissingAPIKeyBeforeTheFirstCall(t *testing.T) {
	dir, home, _ := convoProject(t, "")
	for _, tc := range []struct{ model, env string }{{"openai:gpt-4o-mini", "OPENAI_API_KEY"}, {"anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY"}} {
		res := runCadre(t, dir, home, "run", "--store", "none", "-m", tc.model, "task")
		if res.code == 0 || !strings.Contains(res.stderr, tc.env+" is not set") {
			t.Errorf("%s: exit %d, stderr %q", tc.model, res.code, res.stderr)
		}
	}
}

// A failed run says so in exactly one line on a stderr that is not a
// terminal: the reason, and how to go on.
func TestFailedRunIsOneLine(t *testing.T) {
	dir, home, model := convoProject(t, "root:\n  - error: \"the provider is down\"\n")
	res := runCadre(t, dir, home, "run", "--approve", "none", "-m", model, "task")
	lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
	if res.code == 0 || len(lines) != 1 || !strings.Contains(lines[0], "the provider is down") || !strings.Contains(lines[0], "cadre continue") {
		t.Errorf("exit %d, stderr:\n%s", res.code, res.stderr)
	}
}

// cadre continue follows up the newest run, or the one named, with its
// history; a failed run can be followed up too.
func TestContinueCommand(t *testing.T) {
	dir, home, model := convoProject(t, `
root:
  - when: "first task"
    text: "answer one"
  - when: "follow up"
    text: "answer two"
  - when: "try once more"
    text: "answer three"
  - when: "and again"
    error: "the provider is down"
`)
	res := runCadre(t, dir, home, "run", "-m", model, "first task")
	if res.code != 0 || strings.TrimSpace(res.stdout) != "answer one" {
		t.Fatalf("run: exit %d, %q %q", res.code, res.stdout, res.stderr)
	}
	res = runCadre(t, dir, home, "continue", "follow up")
	if res.code != 0 || strings.TrimSpace(res.stdout) != "answer two" {
		t.Fatalf("continue: exit %d, %q %q", res.code, res.stdout, res.stderr)
	}
	runs := storedRuns(t, dir)
	if len(runs) != 1 || runs[0].Answer != "answer two" || runs[0].Status != cadre.StatusDone {
		t.Fatalf("runs after the follow-up: %+v", runs)
	}
	id := runs[0].ID
	res = runCadre(t, dir, home, "continue", id, "and again")
	if res.code == 0 || !strings.Contains(res.stderr, "the provider is down") {
		t.Fatalf("failing follow-up: exit %d, %q", res.code, res.stderr)
	}
	res = runCadre(t, dir, home, "continue", id[:12], "try once more")
	if res.code != 0 || strings.TrimSpace(res.stdout) != "answer three" {
		t.Fatalf("follow-up after a failure: exit %d, %q %q", res.code, res.stdout, res.stderr)
	}
	res = runCadre(t, dir, home, "continue")
	if res.code == 0 || !strings.Contains(res.stderr, "needs a message") {
		t.Errorf("continue without a message: exit %d, %q", res.code, res.stderr)
	}
}

// Without a terminal, cadre chat reads plain lines: the first is the task,
// the next a follow-up in the same run; the session ends with stdin.
func TestChatWithoutTerminal(t *testing.T) {
	dir, home, model := convoProject(t, `
root:
  - when: "first task"
    text: "answer one"
  - when: "follow up"
    text: "answer two"
`)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		w.WriteString("first task\nfollow up\n")
		w.Close()
	}()
	var out, errb bytes.Buffer
	env := map[string]string{"HOME": home}
	code := Main(context.Background(), []string{"chat", "-m", model}, IO{Stdin: r, Stdout: &out, Stderr: &errb, Dir: dir,
		Getenv: func(k string) string { return env[k] }})
	if code != 0 || out.String() != "answer one\nanswer two\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	if runs := storedRuns(t, dir); len(runs) != 1 || runs[0].Answer != "answer two" {
		t.Errorf("want one run followed up; runs: %+v", runs)
	}
}
