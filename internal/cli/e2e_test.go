package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The binary runs one agent against an OpenAI-compatible server: the model
// reads a file with a tool, then answers.
func TestE2ERunWithToolCall(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "notes.txt"), "the secret word is marmalade\n")
	srv := newOpenAIServer(t, func(req *chatRequest) chatReply {
		if len(req.Messages) == 2 {
			return chatReply{Text: "Let me read it.", Calls: []toolCall{{Name: "read_file", Args: `{"path":"notes.txt"}`}}}
		}
		last := req.Messages[len(req.Messages)-1]
		if last.Role != "tool" || !strings.Contains(contentText(last.Content), "marmalade") {
			return chatReply{Text: "tool result missing"}
		}
		return chatReply{Text: "The word is marmalade."}
	})
	res := runBinary(t, dir, []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=test-key"},
		"run", "--json", "--store", "none", "--model", "openai:test-model", "What is the secret word in notes.txt?")
	if res.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", res.code, res.stderr)
	}
	evs := res.events(t)
	var types []string
	for _, ev := range evs {
		types = append(types, ev["type"].(string))
		for _, k := range []string{"type", "time", "run"} {
			if _, ok := ev[k]; !ok {
				t.Errorf("event %v lacks %q", ev, k)
			}
		}
	}
	for _, want := range []string{"run_started", "agent_started", "model_response", "tool_called", "tool_result", "agent_completed", "run_completed"} {
		if !slices.Contains(types, want) {
			t.Errorf("no %s event in %v", want, types)
		}
	}
	last := evs[len(evs)-1]
	if last["type"] != "run_completed" || last["answer"] != "The word is marmalade." {
		t.Errorf("last event %v", last)
	}
	for _, ev := range evs {
		if ev["type"] == "model_response" {
			u, _ := ev["usage"].(map[string]any)
			if u["input_tokens"] != float64(100) || u["output_tokens"] != float64(20) {
				t.Errorf("model_response usage %v", ev["usage"])
			}
		}
	}
	reqs := srv.all()
	if len(reqs) != 2 || !reqs[0].Stream || !slices.Contains(reqs[0].toolNames(), "read_file") {
		t.Fatalf("requests: %d, first %+v", len(reqs), reqs[0].toolNames())
	}

	// Without --json the answer alone is on stdout.
	plain := runBinary(t, dir, []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"},
		"run", "--store", "none", "-m", "openai:test-model", "What is the secret word in notes.txt?")
	if plain.code != 0 || strings.TrimSpace(plain.stdout) != "The word is marmalade." {
		t.Fatalf("plain run: exit %d, stdout %q, stderr %s", plain.code, plain.stdout, plain.stderr)
	}
}

func TestE2EFailureExitCode(t *testing.T) {
	dir := t.TempDir()
	srv := newOpenAIServer(t, func(req *chatRequest) chatReply { return chatReply{} })
	res := runBinary(t, dir, []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"},
		"run", "--store", "none", "-m", "openai:test-model", "say something")
	if res.code == 0 {
		t.Fatal("an empty reply must fail the run")
	}
	lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "cadre: ") || !strings.Contains(last, "empty reply") {
		t.Fatalf("last stderr line %q", last)
	}
	noModel := runBinary(t, dir, nil, "run", "--store", "none", "hello")
	if noModel.code == 0 || !strings.Contains(noModel.stderr, "--model") {
		t.Fatalf("without a model: exit %d, stderr %q", noModel.code, noModel.stderr)
	}
}

// The root spawns two agents in one reply; they run concurrently; beta
// forgets to report and is nudged; the server checks what each agent got.
// The first calls of alpha and beta meet at the server: each is answered
// only once the other has come in too. Were they made one after the other,
// the first would give up waiting (after half a minute: a bound for when
// the test fails, never reached when it passes).
func TestE2EDelegation(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "alpha.md"), "---\nname: alpha\ndescription: Finds alpha facts.\n---\nYou are alpha.\n")
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "beta.md"), "---\nname: beta\ndescription: Finds beta facts.\ntools: Read\n---\nYou are beta.\n")
	var (
		both     = make(chan struct{})
		arrived  atomic.Int32
		mu       sync.Mutex
		problems []string
	)
	problem := func(s string) { mu.Lock(); problems = append(problems, s); mu.Unlock() }
	srv := newOpenAIServer(t, func(req *chatRequest) chatReply {
		sys := req.system()
		switch {
		case strings.HasPrefix(sys, "You are alpha."), strings.HasPrefix(sys, "You are beta."):
			if len(req.Messages) == 2 {
				if arrived.Add(1) == 2 {
					close(both)
				}
				select {
				case <-both:
				case <-time.After(30 * time.Second):
					problem("alpha and beta never ran at the same time")
				}
			}
			alpha := strings.HasPrefix(sys, "You are alpha.")
			if alpha && req.firstUser() != "Context:\nThe user cares about A.\n\nTask:\nfind A" {
				problem("alpha's first message: " + req.firstUser())
			}
			if !alpha {
				if req.firstUser() != "find B" {
					problem("beta's first message: " + req.firstUser())
				}
				if names := req.toolNames(); slices.Contains(names, "write_file") || !slices.Contains(names, "read_file") {
					problem("beta's tools: " + strings.Join(names, ","))
				}
			}
			switch {
			case alpha && len(req.Messages) == 2:
				return chatReply{Calls: []toolCall{{Name: "send_agent_message", Args: `{"text":"A is 1"}`}}}
			case alpha:
				return chatReply{Text: "alpha done"}
			case len(req.Messages) == 2:
				return chatReply{Text: "B is 2 (forgot to send)"}
			default:
				if !strings.Contains(req.last(), "send_agent_message") {
					problem("beta's second call is not the nudge: " + req.last())
				}
				return chatReply{Text: "B is 2"}
			}
		default:
			if !strings.Contains(sys, "[available-subagents") || !strings.Contains(sys, "## alpha") {
				problem("root's system prompt lacks the discovery block")
			}
			if len(req.Messages) == 2 {
				return chatReply{Calls: []toolCall{
					{Name: "spawn_agent", Args: `{"agent":"alpha","task":"find A","context":"The user cares about A."}`},
					{Name: "spawn_agent", Args: `{"agent":"beta","task":"find B"}`},
				}}
			}
			var results []string
			for _, m := range req.Messages {
				if m.Role == "tool" {
					results = append(results, contentText(m.Content))
				}
				if strings.Contains(contentText(m.Content), "system_message") {
					problem("a report reached the root twice")
				}
			}
			return chatReply{Text: "Answer: " + strings.Join(results, " + ")}
		}
	})
	res := runBinary(t, dir, []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"},
		"run", "--json", "--store", "none", "--approve", "none", "-m", "openai:test-model", "Find A and B")
	if res.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", res.code, res.stderr)
	}
	for _, p := range problems {
		t.Error(p)
	}
	evs := res.events(t)
	last := evs[len(evs)-1]
	if last["answer"] != "Answer: A is 1 + B is 2" {
		t.Errorf("answer %v", last["answer"])
	}
	count := map[string]int{}
	for _, ev := range evs {
		count[ev["type"].(string)]++
		if ev["type"] == "agent_spawned" && (ev["parent"] != "root" || ev["depth"] != float64(1)) {
			b, _ := json.Marshal(ev)
			t.Errorf("agent_spawned without parent/depth: %s", b)
		}
	}
	if count["agent_spawned"] != 2 || count["agent_reported"] != 2 || count["agent_nudged"] != 1 {
		t.Errorf("event counts %v", count)
	}
}

// The default run store is created in .cadre with a .gitignore beside it.
func TestE2EDefaultStoreIgnoredByGit(t *testing.T) {
	dir := t.TempDir()
	srv := newOpenAIServer(t, func(req *chatRequest) chatReply { return chatReply{Text: "hi"} })
	res := runBinary(t, dir, []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"}, "run", "-m", "openai:test-model", "say hi")
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	ignore, err := os.ReadFile(filepath.Join(dir, ".cadre", ".gitignore"))
	if err != nil || !strings.Contains(string(ignore), "cadre.db\n") {
		t.Fatalf(".gitignore: %q %v", ignore, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".cadre", "cadre.db")); err != nil {
		t.Fatal(err)
	}
	list := runBinary(t, dir, nil, "runs", "list")
	if list.code != 0 || !strings.Contains(list.stdout, "say hi") {
		t.Fatalf("runs list: %d %s %s", list.code, list.stdout, list.stderr)
	}
}
