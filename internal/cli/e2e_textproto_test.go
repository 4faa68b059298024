package cli

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// textModel is an OpenAI-compatible "model" that never calls a tool: the
// root delegates with a <spawn_agents> block and answers from the
// synthesis; each subagent answers its task in text. It records what
// looks wrong.
type textModel struct {
	mu       sync.Mutex
	problems []string
	children map[string]int // task -> calls
}

const (
	textRequest = "Plan a weekend in Lisbon"
	textAnswer  = "Weekend plan: flights found; hotel booked."
)

func (m *textModel) problem(s string) {
	m.mu.Lock()
	m.problems = append(m.problems, s)
	m.mu.Unlock()
}

// report returns the problems and the subagent calls per task so far.
func (m *textModel) report() ([]string, map[string]int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.problems), maps.Clone(m.children)
}

func (m *textModel) answer(req *chatRequest) chatReply {
	if req.Tools != nil {
		m.problem("a request carried tools: " + strings.Join(req.toolNames(), ","))
	}
	sys := req.system()
	if task, ok := strings.CutPrefix(sys, "<task>\n"); ok {
		task, _, _ = strings.Cut(task, "\n</task>")
		m.mu.Lock()
		m.children[task]++
		m.mu.Unlock()
		if req.firstUser() != task {
			m.problem("subagent " + task + " got first message " + req.firstUser())
		}
		if !strings.Contains(sys, "<sub_agent_instructions>") || !strings.Contains(sys, "<agent_capabilities>") {
			m.problem("subagent " + task + " has the system prompt " + sys)
		}
		switch task {
		case "find flights":
			return chatReply{Text: "flights found"}
		case "book a hotel":
			return chatReply{Text: "Let me think.\n<response>hotel booked</response>"}
		}
		m.problem("unexpected task " + task)
		return chatReply{Text: "?"}
	}
	if !strings.Contains(sys, "<agent_capabilities>") || strings.Contains(sys, "[available-subagents") {
		m.problem("the root's system prompt does not teach <spawn_agents>:\n" + sys)
	}
	if len(req.Messages) == 2 {
		return chatReply{Text: `I'll split this in two.
<spawn_agents mode="parallel">
  <agent task="find flights" />
  <agent task="book a hotel" />
</spawn_agents>`}
	}
	last := req.last()
	for _, want := range []string{
		"<sub_agent_results>\n<result task=\"find flights\" status=\"completed\">\nflights found\n</result>\n" +
			"<result task=\"book a hotel\" status=\"completed\">\nhotel booked\n</result>\n</sub_agent_results>",
		"<original_request>\n" + textRequest + "\n</original_request>",
	} {
		if !strings.Contains(last, want) {
			m.problem("the root's synthesis message lacks " + want + ":\n" + last)
		}
	}
	return chatReply{Text: textAnswer}
}

// checkTextRun checks one --json run on the text protocol.
func checkTextRun(t *testing.T, srv *openaiServer, m *textModel, res cliResult) {
	t.Helper()
	if res.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", res.code, res.stderr)
	}
	problems, children := m.report()
	for _, p := range problems {
		t.Error(p)
	}
	if children["find flights"] != 1 || children["book a hotel"] != 1 {
		t.Errorf("subagent calls per task %v, want one each", children)
	}
	if n := len(srv.all()); n != 4 {
		t.Errorf("%d model requests, want 4 (root twice, two subagents)", n)
	}
	evs := res.events(t)
	count := map[string]int{}
	var spawned []string
	for _, ev := range evs {
		typ := ev["type"].(string)
		count[typ]++
		switch typ {
		case "agent_spawned":
			spawned = append(spawned, ev["agent"].(string))
			if ev["parent"] != "root" || ev["depth"] != float64(1) || ev["mode"] != "parallel" || ev["total"] != float64(2) ||
				ev["index"] != float64(len(spawned)) {
				b, _ := json.Marshal(ev)
				t.Errorf("agent_spawned %s", b)
			}
		case "say":
			if ev["agent"] != "root" || ev["text"] != "I'll split this in two." || ev["pre_spawn"] != true {
				b, _ := json.Marshal(ev)
				t.Errorf("say event %s", b)
			}
		case "synthesis_started":
			if ev["agent"] != "root" || ev["tasks"] != float64(2) {
				b, _ := json.Marshal(ev)
				t.Errorf("synthesis_started %s", b)
			}
		}
	}
	if !slices.Equal(spawned, []string{"root/sub.1", "root/sub.2"}) {
		t.Errorf("spawned %v", spawned)
	}
	for typ, n := range map[string]int{"agent_spawned": 2, "agent_reported": 2, "say": 1, "synthesis_started": 1, "agent_completed": 3, "run_completed": 1} {
		if count[typ] != n {
			t.Errorf("%d %s events, want %d (all: %v)", count[typ], typ, n, count)
		}
	}
	if count["depth_limit"] != 0 || count["agent_failed"] != 0 || count["tool_called"] != 0 {
		t.Errorf("event counts %v", count)
	}
	if last := evs[len(evs)-1]; last["type"] != "run_completed" || last["answer"] != textAnswer {
		t.Errorf("last event %v", last)
	}
}

// cadre run --protocol text sends no tools at all: the root delegates with
// a <spawn_agents> block, the subagents answer in text, and the synthesis
// reaches the root.
func TestE2ETextProtocolForced(t *testing.T) {
	dir := t.TempDir()
	m := &textModel{children: map[string]int{}}
	srv := newOpenAIServer(t, m.answer)
	env := []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"}
	res := runBinary(t, dir, env, "run", "--json", "--store", "none", "--approve", "none", "--protocol", "text", "-m", "openai:test-model", textRequest)
	checkTextRun(t, srv, m, res)

	// Without --json the answer alone is on stdout.
	plain := runBinary(t, dir, env, "run", "--store", "none", "--approve", "none", "--protocol", "text", "-m", "openai:test-model", textRequest)
	if plain.code != 0 || strings.TrimSpace(plain.stdout) != textAnswer {
		t.Fatalf("plain run: exit %d, stdout %q, stderr %s", plain.code, plain.stdout, plain.stderr)
	}
	problems, _ := m.report()
	for _, p := range problems {
		t.Error(p)
	}
}

// A named model with toolCalling: false runs on the text protocol under
// the default protocol (auto).
func TestE2ETextProtocolFromModelConfig(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".cadre", "config.yaml"), "models:\n  local:\n    model: \"openai:test-model\"\n    toolCalling: false\n")
	m := &textModel{children: map[string]int{}}
	srv := newOpenAIServer(t, m.answer)
	res := runBinary(t, dir, []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"},
		"run", "--json", "--store", "none", "--approve", "none", "--model", "local", textRequest)
	checkTextRun(t, srv, m, res)
	for _, r := range srv.all() {
		if r.Model != "test-model" {
			t.Errorf("request for model %q, want test-model", r.Model)
		}
	}
}

// With --say only the <say> blocks of the root's replies reach the user,
// each on its own line and in order; the rest of the reply is not shown.
func TestE2ETextSayShowsOnlySayBlocks(t *testing.T) {
	dir := t.TempDir()
	srv := newOpenAIServer(t, func(req *chatRequest) chatReply {
		return chatReply{Text: "Thinking aloud. <say>Hello there.</say> Private notes. <say>Bye.</say>"}
	})
	env := []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"}
	res := runBinary(t, dir, env, "run", "--json", "--store", "none", "--say", "--protocol", "text", "-m", "openai:test-model", "Greet me")
	if res.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", res.code, res.stderr)
	}
	var said []string
	for _, ev := range res.events(t) {
		if ev["type"] == "say" {
			said = append(said, ev["text"].(string))
		}
	}
	if !slices.Equal(said, []string{"Hello there.", "Bye."}) {
		t.Errorf("say events %q", said)
	}

	plain := runBinary(t, dir, env, "run", "--store", "none", "--say", "--protocol", "text", "-m", "openai:test-model", "Greet me")
	if plain.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", plain.code, plain.stderr)
	}
	shown := plain.stdout + plain.stderr
	if strings.Contains(shown, "Thinking aloud") || strings.Contains(shown, "Private notes") || strings.Contains(shown, "<say>") {
		t.Errorf("text outside <say> was shown:\nstdout: %q\nstderr: %q", plain.stdout, plain.stderr)
	}
	hello, bye := strings.Index(shown, "Hello there.\n"), strings.Index(shown, "Bye.\n")
	if hello < 0 || bye < hello {
		t.Errorf("the <say> blocks were not shown in order, each on its own line:\nstdout: %q\nstderr: %q", plain.stdout, plain.stderr)
	}
}

// Under protocol auto the protocol follows each agent's model: a child whose
// model has toolCalling: false is sent no tools even when its parent calls
// tools, and reports with its final text.
func TestE2ETextProtocolForChildModel(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".cadre", "config.yaml"), "models:\n  small:\n    model: \"openai:small-model\"\n    toolCalling: false\n")
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "helper.md"), "---\nname: helper\ndescription: Helps.\nmodel: small\n---\nYou are helper.\n")
	var (
		mu       sync.Mutex
		problems []string
	)
	problem := func(s string) { mu.Lock(); problems = append(problems, s); mu.Unlock() }
	srv := newOpenAIServer(t, func(req *chatRequest) chatReply {
		if req.Model == "small-model" {
			if req.Tools != nil {
				problem("the small model was sent tools: " + strings.Join(req.toolNames(), ","))
			}
			if strings.Contains(req.system(), "send_agent_message") {
				problem("the small model was told to call send_agent_message")
			}
			return chatReply{Text: "helped"}
		}
		if len(req.Messages) == 2 {
			return chatReply{Calls: []toolCall{{Name: "spawn_agent", Args: `{"agent":"helper","task":"help"}`}}}
		}
		return chatReply{Text: "root got: " + req.last()}
	})
	res := runBinary(t, dir, []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"},
		"run", "--json", "--store", "none", "--approve", "none", "--model", "openai:test-model", "Get help")
	if res.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", res.code, res.stderr)
	}
	mu.Lock()
	for _, p := range problems {
		t.Error(p)
	}
	mu.Unlock()
	evs := res.events(t)
	if last := evs[len(evs)-1]; last["answer"] != "root got: helped" {
		t.Errorf("answer %v", last["answer"])
	}
}
