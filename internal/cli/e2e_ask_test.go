package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// toolResults returns the tool results of a request, in order.
func (r *chatRequest) toolResults() []string {
	var out []string
	for _, m := range r.Messages {
		if m.Role == "tool" {
			out = append(out, contentText(m.Content))
		}
	}
	return out
}

func (r *chatRequest) assistantTurns() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// A child asks its parent one question during its work: the parent's
// spawn_agent call returns the question, the parent answers with
// answer_agent and waits for the report with wait_agent.
func TestE2EChildAsksParent(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "builder.md"),
		"---\nname: builder\ndescription: Builds things; asks when unsure.\naskCaller: true\ntools: []\n---\nYou are the builder.\n")
	var (
		mu       sync.Mutex
		problems []string
	)
	problem := func(s string) { mu.Lock(); problems = append(problems, s); mu.Unlock() }
	srv := newOpenAIServer(t, func(req *chatRequest) chatReply {
		if strings.HasPrefix(req.system(), "You are the builder.") {
			if !contains(req.toolNames(), "ask_caller") {
				problem("the builder is not offered ask_caller: " + strings.Join(req.toolNames(), ","))
			}
			switch req.assistantTurns() {
			case 0:
				return chatReply{Calls: []toolCall{{Name: "ask_caller", Args: `{"question":"Which branch should I build?"}`}}}
			case 1:
				if got := req.last(); got != "main" {
					problem("the builder's answer: " + got)
				}
				return chatReply{Calls: []toolCall{{Name: "send_agent_message", Args: `{"text":"built main"}`}}}
			}
			return chatReply{Text: "done"}
		}
		switch req.assistantTurns() {
		case 0:
			return chatReply{Calls: []toolCall{{Name: "spawn_agent", Args: `{"agent":"builder","task":"build the project"}`}}}
		case 1:
			var q struct {
				AgentID  string `json:"agentId"`
				Question string `json:"question"`
			}
			if err := json.Unmarshal([]byte(req.last()), &q); err != nil || q.Question != "Which branch should I build?" || q.AgentID != "root/builder.1" {
				problem("the spawn result is not the question: " + req.last())
			}
			return chatReply{Calls: []toolCall{
				{Name: "answer_agent", Args: `{"agentId":"root/builder.1","answer":"main"}`},
				{Name: "wait_agent", Args: `{"agentId":"root/builder.1"}`},
			}}
		case 2:
			res := req.toolResults()
			if got := res[len(res)-1]; got != "built main" {
				problem("wait_agent result: " + got)
			}
			return chatReply{Text: "The builder built main."}
		}
		return chatReply{Text: "unexpected turn"}
	})
	res := runBinary(t, dir, []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"},
		"run", "--json", "--store", "none", "-m", "openai:test-model", "Build it")
	if res.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", res.code, res.stderr)
	}
	for _, p := range problems {
		t.Error(p)
	}
	evs := res.events(t)
	count := map[string]int{}
	for _, ev := range evs {
		count[ev["type"].(string)]++
	}
	if count["agent_question"] < 1 || count["agent_answer"] != 1 || count["agent_reported"] != 1 {
		t.Errorf("events %v", count)
	}
	if last := evs[len(evs)-1]; last["answer"] != "The builder built main." {
		t.Errorf("answer %v", last["answer"])
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// The root onboards an agent (one question), calls it with the handle,
// creates an agent of its own and calls that; --approve decides whether the
// new agent may be written.
func TestE2EOnboardAndCreate(t *testing.T) {
	for _, approve := range []string{"all", "none"} {
		t.Run(approve, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, ".cadre", "agents", "reviewer.md"),
				"---\nname: reviewer\ndescription: Reviews code.\nonboarding: required\ntools: []\n---\nYou are the reviewer.\n")
			var (
				mu       sync.Mutex
				problems []string
			)
			problem := func(s string) { mu.Lock(); problems = append(problems, s); mu.Unlock() }
			srv := newOpenAIServer(t, func(req *chatRequest) chatReply {
				sys := req.system()
				switch {
				case strings.HasPrefix(sys, "You are the reviewer.") && strings.HasPrefix(req.firstUser(), "Onboarding: your caller"):
					if names := req.toolNames(); len(names) != 1 || names[0] != "ask_caller" {
						problem("onboarding tools: " + strings.Join(names, ","))
					}
					if req.assistantTurns() == 0 {
						return chatReply{Calls: []toolCall{{Name: "ask_caller", Args: `{"question":"Which language?"}`}}}
					}
					return chatReply{Text: "Ready."}
				case strings.HasPrefix(sys, "You are the reviewer."):
					want := "Onboarding:\nQ: Which language?\nA: Go\n\nContext:\nPR 7\n\nTask:\nreview main.go"
					if req.firstUser() != want {
						problem("the onboarded call's first message: " + req.firstUser())
					}
					if req.assistantTurns() == 0 {
						return chatReply{Calls: []toolCall{{Name: "send_agent_message", Args: `{"text":"main.go looks fine"}`}}}
					}
					return chatReply{Text: "ok"}
				case strings.HasPrefix(sys, "Write one haiku."):
					if req.assistantTurns() == 0 {
						return chatReply{Calls: []toolCall{{Name: "send_agent_message", Args: `{"text":"an old silent pond"}`}}}
					}
					return chatReply{Text: "ok"}
				}
				last := req.last()
				switch req.assistantTurns() {
				case 0:
					return chatReply{Calls: []toolCall{{Name: "agent_onboard", Args: `{"agent":"reviewer","context":"PR 7"}`}}}
				case 1:
					if !strings.Contains(last, `"question":"Which language?"`) {
						problem("agent_onboard result: " + last)
					}
					return chatReply{Calls: []toolCall{{Name: "agent_onboard_reply", Args: `{"handle":"onboard-1","answer":"Go"}`}}}
				case 2:
					if !strings.Contains(last, `"ready":true`) {
						problem("agent_onboard_reply result: " + last)
					}
					return chatReply{Calls: []toolCall{{Name: "call_agent", Args: `{"handle":"onboard-1","input":"review main.go"}`}}}
				case 3:
					if last != "main.go looks fine" {
						problem("call_agent result: " + last)
					}
					return chatReply{Calls: []toolCall{{Name: "agent_create", Args: `{"name":"haiku","description":"Writes haiku.","instructions":"Write one haiku.","tools":[]}`}}}
				case 4:
					if !strings.Contains(last, "Created agent haiku") {
						return chatReply{Text: "not created: " + last}
					}
					return chatReply{Calls: []toolCall{{Name: "agent_call", Args: `{"agent":"haiku","input":"a pond"}`}}}
				}
				return chatReply{Text: "haiku: " + last}
			})
			res := runBinary(t, dir, []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"},
				"run", "--json", "--store", "none", "--approve", approve, "-m", "openai:test-model", "Review and write")
			if res.code != 0 {
				t.Fatalf("exit %d\nstderr: %s", res.code, res.stderr)
			}
			for _, p := range problems {
				t.Error(p)
			}
			evs := res.events(t)
			answer, _ := evs[len(evs)-1]["answer"].(string)
			file := filepath.Join(dir, ".cadre", "agents", "generated", "haiku.md")
			data, err := os.ReadFile(file)
			if approve == "all" {
				if answer != "haiku: an old silent pond" {
					t.Errorf("answer %q", answer)
				}
				if err != nil || !strings.Contains(string(data), "name: haiku") || !strings.HasSuffix(string(data), "---\nWrite one haiku.\n") {
					t.Errorf("generated file: %v\n%s", err, data)
				}
				// The generated agent loads in later runs.
				list := runBinary(t, dir, nil, "agents", "show", "haiku")
				if list.code != 0 || !strings.Contains(list.stdout, "Writes haiku.") {
					t.Errorf("cadre agents show haiku: %d %s %s", list.code, list.stdout, list.stderr)
				}
			} else {
				if !strings.HasPrefix(answer, "not created: Error: agent haiku was not created:") || !strings.Contains(answer, "--approve=all") {
					t.Errorf("answer %q", answer)
				}
				if err == nil {
					t.Error("a denied agent was written")
				}
			}
			n := 0
			for _, ev := range evs {
				if ev["type"] == "onboarding_question" || ev["type"] == "onboarding_answer" {
					n++
				}
			}
			if n < 2 {
				t.Errorf("%d onboarding events", n)
			}
		})
	}
}

// --agent runs a definition as the root: its prompt and tools.
func TestE2ERootAgent(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "lead.md"), "---\nname: lead\ndescription: Leads.\ntools: Read\n---\nYou are the lead.\n")
	var sys string
	var tools []string
	srv := newOpenAIServer(t, func(req *chatRequest) chatReply {
		sys, tools = req.system(), req.toolNames()
		return chatReply{Text: "led"}
	})
	res := runBinary(t, dir, []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"},
		"run", "--store", "none", "--agent", "lead", "-m", "openai:test-model", "Lead")
	if res.code != 0 || strings.TrimSpace(res.stdout) != "led" {
		t.Fatalf("exit %d stdout %q stderr %s", res.code, res.stdout, res.stderr)
	}
	if !strings.HasPrefix(sys, "You are the lead.") || contains(tools, "write_file") || !contains(tools, "read_file") {
		t.Errorf("system %q tools %v", sys, tools)
	}
	bad := runBinary(t, dir, []string{"OPENAI_BASE_URL=" + srv.URL + "/v1"}, "run", "--store", "none", "--agent", "nobody", "-m", "openai:test-model", "x")
	if bad.code == 0 || !strings.Contains(bad.stderr, "--agent nobody") || !strings.Contains(bad.stderr, "lead") {
		t.Errorf("unknown root agent: %d %s", bad.code, bad.stderr)
	}
}
