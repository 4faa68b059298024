package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// An agent file written for Claude Code that lists WebSearch and TodoWrite
// runs with them: web_search asks the SearXNG instance of the config, the
// task list is an event, and runs show prints it.
func TestE2EWebSearchAndTodos(t *testing.T) {
	var queries []string
	var mu sync.Mutex
	searx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.Query().Get("q"))
		mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"query": r.URL.Query().Get("q"), "results": []map[string]any{
			{"url": "https://go.dev/doc/devel/release", "title": "Release History", "content": "go1.26 was released in February 2026."},
		}})
	}))
	defer searx.Close()

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".cadre", "config.yaml"), "webSearch:\n  provider: searxng\n  url: "+searx.URL+"\n")
	writeFile(t, filepath.Join(dir, ".claude", "agents", "researcher.md"),
		"---\nname: researcher\ndescription: Looks things up on the web.\ntools: WebSearch, TodoWrite, Read\n---\nYou research.\n")
	var (
		offered []string
		results []string
		calls   int
	)
	srv := newOpenAIServer(t, func(req *chatRequest) chatReply {
		mu.Lock()
		defer mu.Unlock()
		offered = req.toolNames()
		calls++
		switch calls {
		case 1:
			return chatReply{Calls: []toolCall{
				{Name: "todo_write", Args: `{"todos":[{"content":"Find the release","status":"in_progress","activeForm":"Finding the release"},{"content":"Answer","status":"pending"}]}`},
				{Name: "web_search", Args: `{"query":"go 1.26 release date"}`},
			}}
		case 2:
			results = append(results, req.last())
			return chatReply{Calls: []toolCall{{Name: "todo_write", Args: `{"todos":[{"content":"Find the release","status":"completed"},{"content":"Answer","status":"completed"}]}`}}}
		}
		return chatReply{Text: "Go 1.26 came out in February 2026."}
	})
	env := []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"}
	res := runBinary(t, dir, env, "run", "--trust-project", "--json", "--agent", "researcher", "-m", "openai:test-model", "When did Go 1.26 come out?")
	if res.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", res.code, res.stderr)
	}
	for _, want := range []string{"web_search", "todo_write", "todo_read", "read_file"} {
		if !slices.Contains(offered, want) {
			t.Errorf("the agent was not offered %s: %v", want, offered)
		}
	}
	if slices.Contains(offered, "run_command") {
		t.Errorf("the agent was offered run_command, which its file does not list: %v", offered)
	}
	if !slices.Equal(queries, []string{"go 1.26 release date"}) {
		t.Errorf("queries at the search service: %q", queries)
	}
	if len(results) != 1 || !strings.Contains(results[0], "1. Release History\n   https://go.dev/doc/devel/release") {
		t.Errorf("the model was given %q for its search", results)
	}
	var runID string
	var todos []map[string]any
	for _, ev := range res.events(t) {
		runID, _ = ev["run"].(string)
		if ev["type"] == "agent_todos" {
			todos = append(todos, ev)
		}
		if ev["type"] == "tool_result" && strings.Contains(ev["content"].(string), "Release History") {
			if !strings.Contains(ev["content"].(string), "https://go.dev/doc/devel/release") {
				t.Errorf("the search result: %v", ev["content"])
			}
		}
	}
	if len(todos) != 2 || len(todos[1]["items"].([]any)) != 2 {
		t.Fatalf("agent_todos events: %v", todos)
	}
	show := runBinary(t, dir, nil, "runs", "show", runID)
	if !strings.Contains(show.stdout, "Tasks of root (2 of 2 done)\n  [x] Find the release\n  [x] Answer\n") {
		t.Errorf("runs show lacks the task list:\n%s", show.stdout)
	}
}

// Skills of the project are offered through the skill tool, which Skill in
// an agent file grants; a skill the file names under skills is in its
// prompt from the start; a broken skill is told and the others work.
func TestE2ESkills(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".claude", "skills", "pdf", "SKILL.md"), "---\nname: pdf\ndescription: Fill PDF forms.\nallowed-tools: Bash(python *)\n---\nRun scripts/fill.py with the form.\n")
	writeFile(t, filepath.Join(dir, ".claude", "skills", "pdf", "scripts", "fill.py"), "print('filled')\n")
	writeFile(t, filepath.Join(dir, ".cadre", "skills", "house-style", "SKILL.md"), "---\nname: house-style\ndescription: How we write.\n---\nWrite short sentences.\n")
	writeFile(t, filepath.Join(dir, ".cadre", "skills", "broken", "SKILL.md"), "---\nname: broken\n---\nNo description.\n")
	writeFile(t, filepath.Join(dir, ".claude", "agents", "filler.md"),
		"---\nname: filler\ndescription: Fills forms.\ntools: Skill, Read\nskills: [house-style, missing-one]\n---\nYou fill forms.\n")
	var (
		mu      sync.Mutex
		system  string
		spec    string
		results []string
	)
	srv := newOpenAIServer(t, func(req *chatRequest) chatReply {
		mu.Lock()
		defer mu.Unlock()
		system = req.system()
		for _, tl := range req.Tools {
			if tl.Function.Name == "skill" {
				spec = "offered"
			}
		}
		switch len(results) {
		case 0:
			results = append(results, "")
			return chatReply{Calls: []toolCall{{Name: "skill", Args: `{"name":"pdf"}`}}}
		case 1:
			results = append(results, req.last())
			return chatReply{Calls: []toolCall{{Name: "skill", Args: `{"name":"pdf","file":"scripts/fill.py"}`}}}
		case 2:
			results = append(results, req.last())
		}
		return chatReply{Text: "Filled."}
	})
	env := []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"}
	res := runBinary(t, dir, env, "run", "--store", "none", "--agent", "filler", "-m", "openai:test-model", "Fill the form")
	if res.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", res.code, res.stderr)
	}
	if spec != "offered" {
		t.Error("the skill tool was not offered")
	}
	if !strings.Contains(system, "You fill forms.\n\n<skill name=\"house-style\">\nWrite short sentences.\n</skill>") {
		t.Errorf("the preloaded skill is not in the prompt:\n%s", system)
	}
	if len(results) != 3 || !strings.Contains(results[1], "Run scripts/fill.py with the form.") || !strings.Contains(results[1], "scripts/fill.py") ||
		results[2] != "print('filled')\n" {
		t.Errorf("the skill's results: %q", results)
	}
	for _, want := range []string{
		".cadre/skills/broken/SKILL.md:1:1: error: missing description",
		"skills: missing-one not found",
	} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}
}

// cadre agents list shows the agents of plugins as plugin:agent, from
// --plugin-dir and plugins: in the config alike.
func TestAgentsListPlugins(t *testing.T) {
	dir, home, plugs := t.TempDir(), t.TempDir(), t.TempDir()
	for _, p := range []string{"review-kit", "ops-kit"} {
		writeFile(t, filepath.Join(plugs, p, ".claude-plugin", "plugin.json"), `{"name": "`+p+`"}`)
		writeFile(t, filepath.Join(plugs, p, "agents", "code-reviewer.md"), "---\nname: code-reviewer\ndescription: Reviews for "+p+".\n---\nReview.\n")
	}
	res := runCadre(t, dir, home, "agents", "list", "--plugin-dir", filepath.Join(plugs, "review-kit"))
	if res.code != 0 || !strings.Contains(res.stdout, "review-kit:code-reviewer") || strings.Contains(res.stdout, "ops-kit:") {
		t.Errorf("--plugin-dir: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	writeFile(t, filepath.Join(dir, ".cadre", "config.yaml"), "plugins: ["+plugs+"]\n")
	res = runCadre(t, dir, home, "agents", "list", "--trust-project") // the folder lies outside the project
	if res.code != 0 || !strings.Contains(res.stdout, "review-kit:code-reviewer") || !strings.Contains(res.stdout, "ops-kit:code-reviewer") {
		t.Errorf("plugins: in the config: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}
