package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre/agentdef"
)

// agentsResult is what one in-process cadre command produced (any
// command, not only cadre agents).
type agentsResult struct {
	code           int
	stdout, stderr string
}

// runCadre runs cadre in-process in dir, with HOME set to home and no other
// environment.
func runCadre(t *testing.T, dir, home string, args ...string) agentsResult {
	t.Helper()
	var out, errb bytes.Buffer
	env := map[string]string{"HOME": home}
	code := Main(context.Background(), args, IO{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Dir: dir,
		Getenv: func(k string) string { return env[k] },
	})
	return agentsResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// agentsProject makes a repository with agents in several scopes and
// returns its directory and a home directory.
func agentsProject(t *testing.T, files map[string]string) (dir, home string) {
	t.Helper()
	dir, home = t.TempDir(), t.TempDir()
	files[".git/HEAD"] = "ref: refs/heads/main\n"
	for name, content := range files {
		base := dir
		if rest, ok := strings.CutPrefix(name, "~/"); ok {
			base, name = home, rest
		}
		p := filepath.Join(base, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, home
}

const (
	reviewerAgent = `---
name: reviewer
description: Reviews diffs for defects.
tools: Read, Grep, Bash(git diff *), NotebookEdit
model: sonnet
color: green
---
You review diffs.

  Keep this indentation.
`
	plainAgent = "---\nname: plain\ndescription: A plain helper.\n---\nHelp.\n"
	brokenFile = "---\nname: broken\ntimeoutSeconds: soon\n---\nBroken.\n"
)

func TestAgentsList(t *testing.T) {
	dir, home := agentsProject(t, map[string]string{
		".claude/agents/reviewer.md":  reviewerAgent,
		".cadre/agents/plain.md":      plainAgent,
		".cadre/agents/broken.md":     brokenFile,
		"~/.claude/agents/plain.md":   "---\nname: plain\ndescription: The user's plain.\n---\nUser.\n",
		".cadre/agents/notes.txt":     "ignored",
		".cadre/agents/summarizer.md": "---\nname: summarizer\ndescription: Mine.\n---\nMine.\n",
	})

	t.Run("table", func(t *testing.T) {
		res := runCadre(t, dir, home, "agents", "list")
		if res.code != 0 {
			t.Fatalf("exit %d: %s", res.code, res.stderr)
		}
		lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
		if !regexp.MustCompile(`^NAME\s+SCOPE\s+MODEL\s+TOOLS\s+VISIBILITY\s+STATUS\s+FILE$`).MatchString(lines[0]) {
			t.Errorf("header %q", lines[0])
		}
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`(?m)^reviewer\s+project\s+sonnet\s+read_file, search_files, run_command\s+user-facing\s+1 warning\s+\.claude/agents/reviewer\.md$`),
			regexp.MustCompile(`(?m)^plain\s+project\s+\(parent's\)\s+\(parent's\)\s+user-facing\s+ok\s+\.cadre/agents/plain\.md$`),
			regexp.MustCompile(`(?m)^plain\s+user\s+.*overridden by \.cadre/agents/plain\.md\s+` + regexp.QuoteMeta(filepath.Join(home, ".claude", "agents", "plain.md")) + `$`),
			regexp.MustCompile(`(?m)^general-purpose\s+builtin\s+\(parent's\)\s+\(parent's\)\s+user-facing\s+ok\s+builtin:general-purpose\.md$`),
			regexp.MustCompile(`(?m)^summarizer\s+project\s+\(parent's\)\s+\(parent's\)\s+user-facing\s+ok\s+\.cadre/agents/summarizer\.md$`),
			regexp.MustCompile(`(?m)^research-assistant\s+builtin\s+\(parent's\)\s+web_fetch, read_file, list_files, search_files\s+user-facing\s+ok\s+builtin:research-assistant\.md$`),
		} {
			if !want.MatchString(res.stdout) {
				t.Errorf("no line matching %s in\n%s", want, res.stdout)
			}
		}
		if strings.Contains(res.stdout, "broken") || strings.Contains(res.stdout, "notes") || strings.Contains(res.stdout, "builtin:summarizer") {
			t.Errorf("rejected or ignored files listed:\n%s", res.stdout)
		}
		if !strings.Contains(res.stderr, "1 file rejected, 1 file with warnings: run cadre agents validate") {
			t.Errorf("stderr %q", res.stderr)
		}
	})

	t.Run("json", func(t *testing.T) {
		res := runCadre(t, dir, home, "agents", "list", "--json")
		if res.code != 0 {
			t.Fatalf("exit %d: %s", res.code, res.stderr)
		}
		var rows []map[string]any
		if err := json.Unmarshal([]byte(res.stdout), &rows); err != nil {
			t.Fatalf("not a JSON array: %v\n%s", err, res.stdout)
		}
		var reviewer, userPlain map[string]any
		for _, r := range rows {
			if r["name"] == "plain" && r["scope"] == "user" {
				userPlain = r
			}
			for _, k := range []string{"name", "file", "scope", "description", "tools", "model", "visibility", "status"} {
				if _, ok := r[k]; !ok {
					t.Errorf("row %v lacks %q", r["name"], k)
				}
			}
			if r["name"] == "reviewer" {
				reviewer = r
			}
		}
		want := map[string]any{
			"name": "reviewer", "file": filepath.Join(dir, ".claude", "agents", "reviewer.md"), "scope": "project",
			"description": "Reviews diffs for defects.", "tools": []any{"read_file", "search_files", "run_command"},
			"model": "sonnet", "visibility": "user-facing", "status": "1 warning", "warnings": float64(1),
		}
		if diff := cmp.Diff(want, reviewer); diff != "" {
			t.Errorf("reviewer (-want +got):\n%s", diff)
		}
		if userPlain["status"] != "overridden" || userPlain["overridden_by"] != filepath.Join(dir, ".cadre", "agents", "plain.md") {
			t.Errorf("the user's plain: %v", userPlain)
		}
	})

	t.Run("agents_dir_repeated", func(t *testing.T) {
		first, second := t.TempDir(), t.TempDir()
		for d, model := range map[string]string{first: "haiku", second: "opus"} {
			content := "---\nname: helper\ndescription: Helps.\nmodel: " + model + "\n---\nHelp.\n"
			if err := os.WriteFile(filepath.Join(d, "helper.md"), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		res := runCadre(t, dir, home, "agents", "list", "--json", "--agents-dir", first, "--agents-dir", second)
		if res.code != 0 {
			t.Fatalf("exit %d: %s", res.code, res.stderr)
		}
		var rows []map[string]any
		if err := json.Unmarshal([]byte(res.stdout), &rows); err != nil {
			t.Fatalf("%v\n%s", err, res.stdout)
		}
		var got []string
		for _, r := range rows {
			if r["name"] == "helper" {
				got = append(got, fmt.Sprintf("%v %v %v %v", r["file"], r["model"], r["status"], r["overridden_by"]))
			}
		}
		want := []string{
			filepath.Join(second, "helper.md") + " opus ok <nil>",
			filepath.Join(first, "helper.md") + " haiku overridden " + filepath.Join(second, "helper.md"),
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("the later --agents-dir wins (-want +got):\n%s", diff)
		}
	})

	t.Run("strict", func(t *testing.T) {
		res := runCadre(t, dir, home, "agents", "list", "--strict")
		if res.code != 0 {
			t.Fatalf("exit %d: %s", res.code, res.stderr)
		}
		if regexp.MustCompile(`(?m)^reviewer `).MatchString(res.stdout) || !strings.Contains(res.stderr, "2 files rejected") {
			t.Errorf("strict should reject reviewer (NotebookEdit):\n%s%s", res.stdout, res.stderr)
		}
	})
}

func TestAgentsShow(t *testing.T) {
	dir, home := agentsProject(t, map[string]string{
		".claude/agents/reviewer.md": reviewerAgent,
		".cadre/agents/plain.md":     plainAgent,
		".cadre/config.yaml":         "models:\n  sonnet:\n    model: anthropic:claude-sonnet-4-5\n",
	})
	res := runCadre(t, dir, home, "agents", "show", "reviewer")
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	for _, want := range []string{
		"name:                  reviewer\n",
		"scope:                 project\n",
		"file:                  .claude/agents/reviewer.md\n",
		"model:                 sonnet → anthropic:claude-sonnet-4-5\n",
		"tools:                 read_file, search_files, run_command\n",
		"rules:                 deny  run_command: every call  (tools: Bash(git diff *))\n" +
			"                       allow run_command: command \"git diff *\"  (tools: Bash(git diff *))\n",
		"timeout:               5m0s of inactivity\n",
		"visibility:            user-facing\n",
		"report:                tool\n",
		"onboarding:            optional (at most 5 questions)\n",
		"  color:               \"green\"\n",
		"  .claude/agents/reviewer.md:4:8: warning: tools: NotebookEdit is not a tool",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, res.stdout)
		}
	}
	if !strings.HasSuffix(res.stdout, "prompt:\nYou review diffs.\n\n  Keep this indentation.\n") {
		t.Errorf("the prompt must end the output verbatim:\n%s", res.stdout)
	}

	res = runCadre(t, dir, home, "agents", "show", "plain")
	if !strings.Contains(res.stdout, "model:                 (none): the parent's model\n") || !strings.Contains(res.stdout, "tools:                 the parent's tools\n") {
		t.Errorf("plain:\n%s", res.stdout)
	}

	res = runCadre(t, dir, home, "agents", "show", "--json", "reviewer")
	var def map[string]any
	if err := json.Unmarshal([]byte(res.stdout), &def); err != nil || def["name"] != "reviewer" || def["prompt"] == nil {
		t.Errorf("--json: %v\n%s", err, res.stdout)
	}

	res = runCadre(t, dir, home, "agents", "show", "reveiwer")
	if res.code != 1 || !strings.Contains(res.stderr, `no agent named "reveiwer"; did you mean reviewer?`) {
		t.Errorf("unknown name: exit %d, stderr %q", res.code, res.stderr)
	}
	res = runCadre(t, dir, home, "agents", "show")
	if res.code != 1 || !strings.Contains(res.stderr, "needs one agent name") {
		t.Errorf("no name: exit %d, stderr %q", res.code, res.stderr)
	}
}

// An OpenCode file given by --agents-dir: named after its file, its
// permissions turned into tools, its kept fields shown with what cadre
// makes of them.
func TestAgentsShowOpenCode(t *testing.T) {
	dir, home := agentsProject(t, map[string]string{
		"oc/docs.md": "---\ndescription: Writes docs.\nmode: subagent\nhidden: true\npermission:\n  \"*\": deny\n  read: allow\n  edit: allow\n  bash: deny\n---\nDocs.\n",
	})
	res := runCadre(t, dir, home, "agents", "show", "--agents-dir", "oc", "docs")
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	for _, want := range []string{
		"name:                  docs\n",
		"scope:                 dir\n",
		"file:                  oc/docs.md\n",
		"tools:                 read_file, write_file, edit_file\n",
		"disallowed tools:      run_command\n",
		"other fields (kept as written):\n",
		"  hidden:              true\n",
		"  mode:                \"subagent\"  (OpenCode: a primary agent is internal)\n",
		"  permission:          {\"*\":\"deny\",\"bash\":\"deny\",\"edit\":\"allow\",\"read\":\"allow\"}  (OpenCode: read as the rules above, enforced on every call)\n",
		"prompt:\nDocs.\n",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, res.stdout)
		}
	}
	// Without the folder, the agent is not there.
	if res := runCadre(t, dir, home, "agents", "show", "docs"); res.code != 1 || !strings.Contains(res.stderr, `no agent named "docs"`) {
		t.Errorf("without --agents-dir: exit %d, stderr %q", res.code, res.stderr)
	}
}

// A rule cadre cannot honour rejects the file, and validate says where and
// what to write instead.
func TestAgentsValidateRules(t *testing.T) {
	dir, home := agentsProject(t, map[string]string{
		".claude/agents/builder.md":  "---\nname: builder\ndescription: Builds.\ntools: Read, Bash(npm run build && npm test)\n---\nBuild.\n",
		".opencode/agent/planner.md": "---\ndescription: Plans.\nmode: subagent\npermission:\n  edit:\n    \"*\": deny\n    \"plans/**\": allow\n  grep:\n    \"secret*\": deny\n---\nPlan.\n",
	})
	res := runCadre(t, dir, home, "agents", "validate")
	if res.code != 1 {
		t.Errorf("exit %d, want 1", res.code)
	}
	for _, want := range []string{
		".claude/agents/builder.md:4:8: error: tools: Bash(npm run build && npm test): this rule allows a command line with &&",
		"write one rule per command, such as Bash(npm run build) and Bash(npm test); the agent is rejected",
		`.opencode/agent/planner.md:9:5: error: permission: grep: "secret*": deny: cadre cannot match patterns of grep`,
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, res.stdout)
		}
	}
}

func TestAgentsShowRejectedFile(t *testing.T) {
	dir, home := agentsProject(t, map[string]string{".cadre/agents/broken.md": brokenFile})
	res := runCadre(t, dir, home, "agents", "show", "broken")
	if res.code != 1 || !strings.Contains(res.stderr, "agent broken was not loaded:\n") ||
		!strings.Contains(res.stderr, "\n  .cadre/agents/broken.md:1:1: error: missing description") ||
		!strings.Contains(res.stderr, "\n  .cadre/agents/broken.md:3:17: error: timeoutSeconds") {
		t.Errorf("exit %d, stderr %q", res.code, res.stderr)
	}
}

func TestAgentsValidate(t *testing.T) {
	dir, home := agentsProject(t, map[string]string{
		".claude/agents/reviewer.md":  reviewerAgent,
		".cadre/agents/broken.md":     brokenFile,
		".cadre/agents/plain.md":      plainAgent,
		"other/nofm.md":               "Just text.\n",
		"other/ok.md":                 plainAgent,
		"other/ignored.json":          "{}",
		"clean/only.md":               plainAgent,
		".cadre/agents/sub/README.md": "# About these agents\n",
	})

	t.Run("text", func(t *testing.T) {
		res := runCadre(t, dir, home, "agents", "validate")
		if res.code != 1 {
			t.Errorf("exit %d, want 1 (an error)", res.code)
		}
		want := []string{
			".cadre/agents/broken.md:1:1: error: missing description: add description: followed by a sentence on what the agent does and when to use it",
			".cadre/agents/broken.md:3:17: error: timeoutSeconds: \"soon\" is not valid: a whole number of seconds from 1 to 86400, such as 300",
			".cadre/agents/sub/README.md: info: no frontmatter: not an agent definition; skipped",
			".claude/agents/reviewer.md:4:8: warning: tools: NotebookEdit is not a tool cadre knows (cadre's tools: read_file, list_files, search_files, write_file, edit_file, run_command, web_fetch, web_search, todo_write, todo_read, skill; Task and Agent map to spawn_agent and the tools that follow the agents it starts, delegation to every delegation tool); the agent loads without it",
		}
		if diff := cmp.Diff(want, strings.Split(strings.TrimSpace(res.stdout), "\n")); diff != "" {
			t.Errorf("stdout (-want +got):\n%s", diff)
		}
		if !strings.Contains(res.stderr, "6 agents loaded; 2 errors, 1 warning, 1 note") {
			t.Errorf("stderr %q", res.stderr)
		}
	})

	t.Run("json", func(t *testing.T) {
		res := runCadre(t, dir, home, "agents", "validate", "--json")
		if res.code != 1 {
			t.Errorf("exit %d, want 1", res.code)
		}
		var out struct {
			Agents      []string         `json:"agents"`
			Diagnostics []map[string]any `json:"diagnostics"`
		}
		if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
			t.Fatalf("%v\n%s", err, res.stdout)
		}
		if diff := cmp.Diff([]string{"code-analyst", "general-purpose", "plain", "research-assistant", "reviewer", "summarizer"}, out.Agents); diff != "" {
			t.Errorf("agents (-want +got):\n%s", diff)
		}
		if len(out.Diagnostics) != 4 {
			t.Fatalf("diagnostics %v", out.Diagnostics)
		}
		d := out.Diagnostics[1]
		want := map[string]any{"file": filepath.Join(dir, ".cadre", "agents", "broken.md"), "line": float64(3), "column": float64(17),
			"severity": "error", "message": `timeoutSeconds: "soon" is not valid: a whole number of seconds from 1 to 86400, such as 300`}
		if diff := cmp.Diff(want, d); diff != "" {
			t.Errorf("diagnostic (-want +got):\n%s", diff)
		}
	})

	t.Run("paths", func(t *testing.T) {
		res := runCadre(t, dir, home, "agents", "validate", "other", filepath.Join(dir, "clean", "only.md"))
		if res.code != 1 {
			t.Errorf("exit %d, want 1", res.code)
		}
		// Each path is a scope of its own, later ones winning.
		if diff := cmp.Diff([]string{"clean/only.md:2:1: info: agent plain overrides the one in " + filepath.Join(dir, "other", "ok.md") + " (dir scope)",
			"other/nofm.md: error: no frontmatter: an agent file starts with a line ---, then fields such as name: and description:, then a closing --- line, then the prompt"},
			strings.Split(strings.TrimSpace(res.stdout), "\n")); diff != "" {
			t.Errorf("stdout (-want +got):\n%s", diff)
		}
	})

	t.Run("clean", func(t *testing.T) {
		res := runCadre(t, dir, home, "agents", "validate", "--json", "clean")
		if res.code != 0 {
			t.Errorf("exit %d, want 0: %s", res.code, res.stdout)
		}
		if strings.TrimSpace(res.stdout) != "{\n  \"agents\": [\n    \"plain\"\n  ],\n  \"diagnostics\": []\n}" {
			t.Errorf("stdout %s", res.stdout)
		}
	})

	t.Run("missing_path", func(t *testing.T) {
		res := runCadre(t, dir, home, "agents", "validate", "nowhere")
		if res.code != 1 || !strings.Contains(res.stdout, "nowhere: error: agents folder does not exist") {
			t.Errorf("exit %d stdout %q", res.code, res.stdout)
		}
	})

	t.Run("config_agents_dirs_and_strict", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(dir, ".cadre", "config.yaml"), []byte("strict: true\nagentsDirs: [clean]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(filepath.Join(dir, ".cadre", "config.yaml"))
		res := runCadre(t, dir, home, "agents", "validate")
		if !strings.Contains(res.stdout, "reviewer.md:4:8: error: tools: NotebookEdit") || !strings.Contains(res.stdout, "clean/only.md:2:1: info: agent plain overrides") {
			t.Errorf("stdout:\n%s", res.stdout)
		}
		// Named paths are checked alone (with --agents-dir folders), not
		// with the config's folders; strict still applies.
		res = runCadre(t, dir, home, "agents", "validate", "--json", ".claude/agents", "--agents-dir", "other")
		var out struct {
			Agents      []string              `json:"agents"`
			Diagnostics []agentdef.Diagnostic `json:"diagnostics"`
		}
		if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
			t.Fatalf("%v\n%s", err, res.stdout)
		}
		var files []string
		for _, d := range out.Diagnostics {
			rel, _ := filepath.Rel(dir, d.File)
			files = append(files, filepath.ToSlash(rel)+" "+string(d.Severity))
		}
		if diff := cmp.Diff([]string{".claude/agents/reviewer.md error", "other/nofm.md error"}, files); diff != "" || res.code != 1 {
			t.Errorf("exit %d; diagnostics (-want +got):\n%s", res.code, diff)
		}
		if diff := cmp.Diff([]string{"plain"}, out.Agents); diff != "" {
			t.Errorf("agents (-want +got):\n%s", diff)
		}
	})
}

func TestAgentsBadConfig(t *testing.T) {
	dir, home := agentsProject(t, map[string]string{".cadre/config.yaml": "strikt: true\n"})
	res := runCadre(t, dir, home, "agents", "list")
	if res.code != 1 || !strings.Contains(res.stderr, "config.yaml:1:1") {
		t.Errorf("exit %d stderr %q", res.code, res.stderr)
	}
}

func TestToolsCell(t *testing.T) {
	sub := agentdef.DelegationTools()
	for _, tc := range []struct {
		name              string
		tools, disallowed []string
		want              string
	}{
		{"inherit", nil, nil, "(parent's)"},
		{"none", []string{}, nil, "(none)"},
		{"some_subagent_tools", []string{"read_file", "spawn_agent"}, nil, "read_file, spawn_agent"},
		{"all_delegation_tools", append([]string{"read_file"}, sub...), nil, "read_file, delegation"},
		{"inherit_except", nil, []string{"write_file", "run_command"}, "(parent's) except write_file, run_command"},
		{"list_less_disallowed", []string{"read_file", "run_command"}, []string{"run_command"}, "read_file"},
		{"all_disallowed", []string{"run_command"}, []string{"run_command"}, "(none)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := toolsCell(tc.tools, tc.disallowed); got != tc.want {
				t.Errorf("toolsCell(%v, %v) = %q, want %q", tc.tools, tc.disallowed, got, tc.want)
			}
		})
	}
}
