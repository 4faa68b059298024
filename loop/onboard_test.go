package loop

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/prompt"
)

func onboardRoot() Config {
	cfg := rootConfig()
	cfg.Catalog = []CatalogEntry{{Name: "reviewer", MaxQuestions: 2}, {Name: "careful", OnboardingRequired: true}, {Name: "plain", NoOnboarding: true}, {Name: "asker", AskCaller: true}}
	return cfg
}

// lastTool returns the last tool result of the conversation.
func (h *harness) lastTool() cadre.Message {
	h.t.Helper()
	m := h.s.Messages()
	for i := len(m) - 1; i >= 0; i-- {
		if m[i].Role == cadre.RoleTool {
			return m[i]
		}
	}
	h.t.Fatal("no tool result in the conversation")
	return cadre.Message{}
}

func decodeObj(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not a JSON object: %q: %v", s, err)
	}
	return m
}

// The parent side of an onboarding: two questions, then ready; the Q&A
// reaches the first message of each call made with the handle.
func TestOnboardingTwoQuestionsThenReady(t *testing.T) {
	h := start(t, onboardRoot(), "review PR 123")
	acts := h.reply("", call("o1", ToolOnboard, `{"agent":"reviewer","context":"Review PR #123 for security"}`))
	sp, ok := only[Spawn](acts)
	if !ok || len(sp.Children) != 1 || !sp.Children[0].Onboarding || sp.Children[0].Context != "Review PR #123 for security" {
		t.Fatalf("want one onboarding spawn, got %#v", acts)
	}
	kid := sp.Children[0].ID
	if acts := h.step(Spawned{Ref: "o1", Child: kid}); len(acts) != 0 {
		t.Fatalf("the onboard call waits for a question or readiness, got %#v", acts)
	}
	acts = h.step(ChildQuestion{Child: kid, Question: "Which languages?"})
	if ev := find[Emit](acts); len(ev) != 1 || ev[0].Type() != cadre.EventOnboardQuestion {
		t.Fatalf("want an onboarding_question event, got %#v", acts)
	}
	got := decodeObj(t, h.lastTool().Content)
	if got["handle"] != "onboard-1" || got["agent"] != "reviewer" || got["question"] != "Which languages?" {
		t.Fatalf("agent_onboard result %v", got)
	}

	acts = h.reply("", call("r1", ToolOnboardReply, `{"handle":"onboard-1","answer":"Python and JS"}`))
	rep, ok := only[Reply](acts)
	if !ok || rep.To != kid || rep.Text != "Python and JS" {
		t.Fatalf("want the answer sent to the child, got %#v", acts)
	}
	h.step(ChildQuestion{Child: kid, Question: "Check dependencies too?"})
	if got := decodeObj(t, h.lastTool().Content); got["question"] != "Check dependencies too?" {
		t.Fatalf("reply result %v", got)
	}
	h.reply("", call("r2", ToolOnboardReply, `{"handle":"onboard-1","answer":"Yes, requirements.txt"}`))
	h.step(ChildReport{Child: kid, Text: "I am ready."})
	got = decodeObj(t, h.lastTool().Content)
	if got["ready"] != true || got["handle"] != "onboard-1" {
		t.Fatalf("ready result %v", got)
	}
	if got["note"] != "question limit reached" {
		t.Errorf("two answers reach the reviewer's limit of 2: note %v", got["note"])
	}
	h.step(ChildEnded{Child: kid, Status: cadre.StatusDone})

	// The handle is used twice; each call is a fresh child with the Q&A.
	for n, ref := range []string{"c1", "c2"} {
		acts = h.reply("", call(ref, ToolCallAgent, `{"handle":"onboard-1","input":"Review the diff"}`))
		sp, ok = only[Spawn](acts)
		if !ok || len(sp.Children) != 1 {
			t.Fatalf("call %d: want one spawn, got %#v", n, acts)
		}
		want := "Onboarding:\nQ: Which languages?\nA: Python and JS\n\nQ: Check dependencies too?\nA: Yes, requirements.txt\n\n" +
			"Context:\nReview PR #123 for security\n\nTask:\nReview the diff"
		if sp.Children[0].First != want || sp.Children[0].Definition != "reviewer" || sp.Children[0].Onboarding {
			t.Fatalf("call %d: spec %#v\nfirst message %q", n, sp.Children[0], sp.Children[0].First)
		}
		id := sp.Children[0].ID
		h.step(Spawned{Ref: ref, Child: id})
		h.step(ChildReport{Child: id, Text: "LGTM " + ref})
		if got := h.lastTool(); got.Content != "LGTM "+ref || got.ToolCallID != ref {
			t.Fatalf("call %d result %#v", n, got)
		}
		h.step(ChildEnded{Child: id, Status: cadre.StatusDone})
	}
	if list := h.s.listChildren(); !strings.Contains(list, "handle onboard-1 (reviewer): ready, 2 questions answered, used 2 times") {
		t.Errorf("list_agents:\n%s", list)
	}
}

func TestOnboardingGolden(t *testing.T) {
	got := prompt.OnboardedTask([]prompt.QA{{Question: " What format? ", Answer: "JSON "}}, "Do it", "")
	if got != "Onboarding:\nQ: What format?\nA: JSON\n\nDo it" {
		t.Fatalf("%q", got)
	}
}

func TestOnboardingRefusals(t *testing.T) {
	h := start(t, onboardRoot(), "t")
	h.reply("",
		call("a", ToolSpawnAgent, `{"agent":"careful","task":"x"}`),
		call("b", ToolCallAgent, `{"agent":"careful","input":"x"}`),
		call("c", ToolOnboard, `{"agent":"plain","context":"x"}`),
		call("d", ToolOnboardReply, `{"handle":"onboard-9","answer":"x"}`),
		call("e", ToolCallAgent, `{"input":"x"}`),
		call("f", ToolCallAgent, `{"input":"x","agent":"careful","handle":"onboard-1"}`),
		call("g", ToolFork, `{"handle":"onboard-1","count":2}`),
	)
	want := map[string]string{
		"a": "requires onboarding", "b": "requires onboarding", "c": "does not take part in onboarding",
		"d": `no onboarding handle "onboard-9"`, "e": "exactly one of", "f": "exactly one of", "g": "no onboarding handle",
	}
	for _, m := range h.s.Messages() {
		if m.Role != cadre.RoleTool {
			continue
		}
		if frag := want[m.ToolCallID]; !m.IsError || !strings.Contains(m.Content, frag) {
			t.Errorf("call %s: %q, want an error containing %q", m.ToolCallID, m.Content, frag)
		}
		delete(want, m.ToolCallID)
	}
	if len(want) != 0 {
		t.Errorf("no result for %v", want)
	}
}

// A handle whose agent asked a question cannot be called or forked yet.
func TestOnboardingNotReady(t *testing.T) {
	h := start(t, onboardRoot(), "t")
	sp, _ := only[Spawn](h.reply("", call("o", ToolOnboard, `{"agent":"reviewer","context":"c"}`)))
	kid := sp.Children[0].ID
	h.step(Spawned{Ref: "o", Child: kid})
	h.step(ChildQuestion{Child: kid, Question: "Q1?"})
	h.reply("", call("c", ToolCallAgent, `{"handle":"onboard-1","input":"go"}`), call("f", ToolFork, `{"handle":"onboard-1","count":3}`))
	for _, m := range h.s.Messages()[len(h.s.Messages())-2:] {
		if !m.IsError || !strings.Contains(m.Content, "not ready") {
			t.Errorf("%s: %q", m.ToolCallID, m.Content)
		}
	}
}

// The onboarding agent stops without saying it is ready (it failed): the
// handle becomes ready with what it has, and says so.
func TestOnboardingNeverReady(t *testing.T) {
	h := start(t, onboardRoot(), "t")
	sp, _ := only[Spawn](h.reply("", call("o", ToolOnboard, `{"agent":"reviewer","context":"c"}`)))
	kid := sp.Children[0].ID
	h.step(Spawned{Ref: "o", Child: kid})
	h.step(ChildQuestion{Child: kid, Question: "Q1?"})
	h.reply("", call("r", ToolOnboardReply, `{"handle":"onboard-1","answer":"A1"}`))
	h.step(ChildReport{Child: kid, Text: "the onboarding agent reached its turn limit", Incomplete: true})
	got := decodeObj(t, h.lastTool().Content)
	if got["ready"] != true || !strings.Contains(got["note"].(string), "turn limit without saying it was ready") {
		t.Fatalf("result %v", got)
	}

	h2 := start(t, onboardRoot(), "t")
	sp, _ = only[Spawn](h2.reply("", call("o", ToolOnboard, `{"agent":"reviewer","context":"c"}`)))
	kid = sp.Children[0].ID
	h2.step(Spawned{Ref: "o", Child: kid})
	h2.step(ChildEnded{Child: kid, Status: cadre.StatusFailed, Error: "model call failed: boom"})
	got = decodeObj(t, h2.lastTool().Content)
	if got["ready"] != true || !strings.Contains(got["note"].(string), "stopped early") {
		t.Fatalf("result %v", got)
	}
}

func TestFork(t *testing.T) {
	h := start(t, onboardRoot(), "t")
	sp, _ := only[Spawn](h.reply("", call("o", ToolOnboard, `{"agent":"reviewer","context":"ten files"}`)))
	kid := sp.Children[0].ID
	h.step(Spawned{Ref: "o", Child: kid})
	h.step(ChildQuestion{Child: kid, Question: "Style?"})
	h.reply("", call("r", ToolOnboardReply, `{"handle":"onboard-1","answer":"Go style"}`))
	h.step(ChildReport{Child: kid, Text: "ready"})
	h.step(ChildEnded{Child: kid, Status: cadre.StatusDone})
	h.reply("", call("bad", ToolFork, `{"handle":"onboard-1","count":0}`), call("f", ToolFork, `{"handle":"onboard-1","count":3}`))
	if m := h.s.Messages()[len(h.s.Messages())-2]; !m.IsError || !strings.Contains(m.Content, "between 1 and") {
		t.Errorf("count 0: %q", m.Content)
	}
	got := decodeObj(t, h.lastTool().Content)
	handles, _ := got["handles"].([]any)
	if len(handles) != 3 || got["answers"] != float64(1) {
		t.Fatalf("fork result %v", got)
	}
	var calls []cadre.ToolCall
	for i, x := range handles {
		calls = append(calls, call("c"+string(rune('1'+i)), ToolCallAgent, `{"handle":"`+x.(string)+`","input":"file `+string(rune('a'+i))+`"}`))
	}
	sp, ok := only[Spawn](h.reply("", calls...))
	if !ok || len(sp.Children) != 3 {
		t.Fatalf("want three calls at once, got %#v", sp)
	}
	for i, c := range sp.Children {
		want := "Onboarding:\nQ: Style?\nA: Go style\n\nContext:\nten files\n\nTask:\nfile " + string(rune('a'+i))
		if c.First != want {
			t.Errorf("fork %d first message %q", i, c.First)
		}
	}
}

// The child side: ask_caller suspends the agent; the answer resumes it; at
// the question limit the agent is told to stop asking; ending the turn
// without a question is ready.
func TestOnboardingChildSide(t *testing.T) {
	cfg := childConfig(cadre.ReportTool)
	cfg.Mode, cfg.MaxQuestions = ModeOnboarding, 1
	h := start(t, cfg, "onboarding")
	cm := find[CallModel](h.acts)[0]
	if len(cm.Request.Tools) != 1 || cm.Request.Tools[0].Name != ToolAskCaller {
		t.Fatalf("an onboarding agent sees only ask_caller, got %v", cm.Request.Tools)
	}
	acts := h.reply("", call("q1", ToolAskCaller, `{"question":"What format?"}`))
	ask, ok := only[Ask](acts)
	if !ok || ask.Question != "What format?" || !ask.Onboarding {
		t.Fatalf("want Ask, got %#v", acts)
	}
	acts = h.step(Answer{Text: "JSON"})
	if _, ok := only[CallModel](acts); !ok || !strings.HasPrefix(h.lastTool().Content, "JSON\n\n(That was your last question") {
		t.Fatalf("answer: %#v / %q", acts, h.lastTool().Content)
	}
	h.reply("", call("q2", ToolAskCaller, `{"question":"Another?"}`))
	if m := h.lastTool(); !m.IsError || !strings.Contains(m.Content, "the most allowed") {
		t.Fatalf("second question past the limit: %q", m.Content)
	}
	f := mustFinish(t, h.reply("Ready."))
	if f.Failed || len(h.reports()) != 1 || h.reports()[0].Text != "Ready." {
		t.Fatalf("finish %#v reports %#v", f, h.reports())
	}
	if h.s.nudged {
		t.Error("an onboarding agent is never nudged")
	}
}

// askCaller during work: a synchronous child's question returns to the
// parent's spawn call; the parent answers and waits for the report.
func TestAskCallerSynchronous(t *testing.T) {
	h := start(t, onboardRoot(), "t")
	if !h.s.offers(ToolAnswerAgent) {
		t.Fatal("answer_agent must be offered when an agent in the catalogue asks questions")
	}
	sp, _ := only[Spawn](h.reply("", call("s", ToolSpawnAgent, `{"agent":"asker","task":"build it"}`)))
	kid := sp.Children[0].ID
	h.step(Spawned{Ref: "s", Child: kid})
	acts := h.step(ChildQuestion{Child: kid, Question: "Which branch?"})
	if ev := find[Emit](acts); len(ev) != 1 || ev[0].Type() != cadre.EventQuestion {
		t.Fatalf("want an agent_question event, got %#v", acts)
	}
	got := decodeObj(t, h.lastTool().Content)
	if got["question"] != "Which branch?" || got["agentId"] != string(kid) {
		t.Fatalf("spawn result %v", got)
	}
	acts = h.reply("", call("a", ToolAnswerAgent, `{"agentId":"`+string(kid)+`","answer":"main"}`), call("w", ToolWaitAgent, `{"agentId":"`+string(kid)+`"}`))
	if rep, ok := only[Reply](acts); !ok || rep.To != kid || rep.Text != "main" {
		t.Fatalf("want the answer sent, got %#v", acts)
	}
	acts = h.step(ChildReport{Child: kid, Text: "built on main"})
	if _, ok := only[CallModel](acts); !ok || h.lastTool().Content != "built on main" || h.lastTool().ToolCallID != "w" {
		t.Fatalf("wait_agent result %#v", h.lastTool())
	}
	for _, m := range h.s.Messages() {
		if strings.Contains(m.Content, "system_message") {
			t.Fatalf("the report also reached the inbox: %q", m.Content)
		}
	}
	h.reply("", call("x", ToolAnswerAgent, `{"agentId":"`+string(kid)+`","answer":"again"}`))
	if m := h.lastTool(); !m.IsError || !strings.Contains(m.Content, "no question") {
		t.Errorf("answering twice: %q", m.Content)
	}
}

// A background child's question reaches the parent's inbox and wakes it.
func TestAskCallerBackground(t *testing.T) {
	h := start(t, onboardRoot(), "t")
	sp, _ := only[Spawn](h.reply("", call("b", ToolStartBackground, `{"prompt":"build","agent":"asker"}`)))
	kid := sp.Children[0].ID
	h.step(Spawned{Ref: "b", Child: kid})
	if _, ok := only[Wait](h.reply("waiting")); !ok {
		t.Fatal("want Wait")
	}
	acts := h.step(ChildQuestion{Child: kid, Question: "Which branch?"})
	if _, ok := only[CallModel](acts); !ok {
		t.Fatalf("a question must wake the waiting parent, got %#v", acts)
	}
	if last := h.lastMessage().Content; !strings.Contains(last, "asks: Which branch?") || !strings.Contains(last, "answer_agent") {
		t.Fatalf("inbox message %q", last)
	}
	// The same question again (a resumed child asks it again) is ignored.
	if acts := h.step(ChildQuestion{Child: kid, Question: "Which branch?"}); len(acts) != 0 {
		t.Fatalf("repeat question: %#v", acts)
	}
}

// The answer is sent again when a child asks the question it was already
// answered (the answer may have been lost when the run stopped).
func TestAnswerSentAgainAfterReplay(t *testing.T) {
	h := start(t, onboardRoot(), "t")
	sp, _ := only[Spawn](h.reply("", call("b", ToolStartBackground, `{"prompt":"build","agent":"asker"}`)))
	kid := sp.Children[0].ID
	h.step(Spawned{Ref: "b", Child: kid})
	h.reply("waiting")
	h.step(ChildQuestion{Child: kid, Question: "Q?"})
	h.reply("", call("a", ToolAnswerAgent, `{"agentId":"`+string(kid)+`","answer":"A!"}`))
	acts := h.step(ChildQuestion{Child: kid, Question: "Q?"})
	if rep, ok := only[Reply](acts); !ok || rep.Text != "A!" {
		t.Fatalf("want the answer again, got %#v", acts)
	}
}

func TestAskCallerRootWithoutAnswer(t *testing.T) {
	cfg := rootConfig()
	cfg.AskCaller = true
	h := start(t, cfg, "t")
	h.reply("", call("q", ToolAskCaller, `{"question":"Which file?"}`))
	acts := h.step(Answer{Err: "there is no one to ask: the run has no terminal for questions."})
	if _, ok := only[CallModel](acts); !ok {
		t.Fatalf("want the model called, got %#v", acts)
	}
	if m := h.lastTool(); !m.IsError || !strings.Contains(m.Content, "no terminal") || !strings.Contains(m.Content, "Go on with what you know") {
		t.Fatalf("%q", m.Content)
	}
}

func TestCreateAgent(t *testing.T) {
	h := start(t, onboardRoot(), "t")
	acts := h.reply("", call("c", ToolCreateAgent, `{"name":"haiku-writer","description":"Writes haiku.","instructions":"Write a haiku.","tools":["read_file"]}`))
	ca, ok := only[CreateAgent](acts)
	if !ok || ca.Definition.Name != "haiku-writer" || ca.Definition.Prompt != "Write a haiku.\n" || len(ca.Definition.Tools) != 1 {
		t.Fatalf("want CreateAgent, got %#v", acts)
	}
	if p := h.s.Pending(); len(find[CreateAgent](p)) != 1 {
		t.Fatalf("a creation without outcome is pending after a replay: %#v", p)
	}
	acts = h.step(AgentCreated{Ref: "c", Definition: &ca.Definition, File: ".cadre/agents/generated/haiku-writer.md"})
	if ev := find[Emit](acts); len(ev) != 1 || ev[0].Type() != cadre.EventAgentCreated {
		t.Fatalf("want agent_created, got %#v", acts)
	}
	if m := h.lastTool(); m.IsError || !strings.Contains(m.Content, "written to .cadre/agents/generated/haiku-writer.md") {
		t.Fatalf("%q", m.Content)
	}
	sp, ok := only[Spawn](h.reply("", call("k", ToolAgentCall, `{"agent":"haiku-writer","input":"about rain"}`)))
	if !ok || sp.Children[0].Definition != "haiku-writer" || sp.Children[0].Task != "about rain" {
		t.Fatalf("agent_call spawn %#v", sp)
	}

	h2 := start(t, onboardRoot(), "t")
	h2.reply("",
		call("a", ToolCreateAgent, `{"name":"bad name!","description":"d","instructions":"i"}`),
		call("b", ToolCreateAgent, `{"name":"Reviewer","description":"d","instructions":"i"}`),
		call("c", ToolCreateAgent, `{"name":"x","description":"d","instructions":"i","tools":["rm_rf"]}`),
		call("d", ToolCreateAgent, `{"name":"y","description":"d","instructions":"  "}`),
		call("e", ToolCreateAgent, `{"name":"z","description":"d","instructions":"i"}`),
	)
	h2.step(AgentCreated{Ref: "e", Err: "the user did not approve it"})
	want := map[string]string{"a": "not a valid agent name", "b": "already exists", "c": `unknown tool "rm_rf"`, "d": "needs `instructions`", "e": "was not created: the user did not approve it"}
	for _, m := range h2.s.Messages() {
		if m.Role == cadre.RoleTool {
			if frag := want[m.ToolCallID]; !m.IsError || !strings.Contains(m.Content, frag) {
				t.Errorf("%s: %q, want %q", m.ToolCallID, m.Content, frag)
			}
		}
	}
}

func TestOutputSchema(t *testing.T) {
	cfg := childConfig(cadre.ReportTool)
	cfg.OutputSchema = json.RawMessage(`{"type":"object","properties":{"score":{"type":"integer"}},"required":["score"]}`)
	t.Run("mismatch goes back once", func(t *testing.T) {
		h := start(t, cfg, "task")
		h.reply("", call("s1", ToolSendAgentMessage, `{"text":"great work"}`))
		if m := h.lastTool(); !m.IsError || !strings.Contains(m.Content, "does not match the output schema") {
			t.Fatalf("first send: %q", m.Content)
		}
		if len(h.reports()) != 0 {
			t.Fatal("an invalid report must not be delivered the first time")
		}
		h.reply("", call("s2", ToolSendAgentMessage, `{"text":"{\"score\": \"high\"}"}`))
		if rep := h.reports(); len(rep) != 1 || rep[0].Text != `{"score": "high"}` {
			t.Fatalf("second mismatch is delivered as it is: %#v", rep)
		}
	})
	t.Run("fenced JSON that matches", func(t *testing.T) {
		h := start(t, cfg, "task")
		h.reply("", call("s1", ToolSendAgentMessage, "{\"text\":\"```json\\n{\\\"score\\\": 7}\\n```\"}"))
		if rep := h.reports(); len(rep) != 1 || rep[0].Text != `{"score": 7}` {
			t.Fatalf("reports %#v", rep)
		}
	})
	t.Run("tag mode", func(t *testing.T) {
		c := cfg
		c.Report = cadre.ReportTag
		h := start(t, c, "task")
		h.reply("<response>not json</response>")
		if last := h.lastMessage(); last.Role != cadre.RoleUser || !strings.Contains(last.Content, "output schema") {
			t.Fatalf("want the mismatch sent back, last %q", last.Content)
		}
		mustFinish(t, h.reply(`<response>{"score":3}</response>`))
		if rep := h.reports(); len(rep) != 1 || rep[0].Text != `{"score":3}` {
			t.Fatalf("reports %#v", rep)
		}
	})
}

// What a replay leaves for the engine: the report to deliver again, the
// children never acknowledged, the calls in flight.
func TestPendingAfterReplay(t *testing.T) {
	h := start(t, rootConfig(), "t")
	h.reply("", call("s", ToolSpawnAgent, `{"agent":"researcher","task":"dig"}`), call("r", "read_file", `{"path":"x"}`))
	p := h.s.Pending()
	sp := find[Spawn](p)
	ct := find[CallTools](p)
	if len(sp) != 1 || sp[0].Children[0].ID != "root/researcher.1" || len(ct) != 1 || !ct[0].Resumed || ct[0].Calls[0].ID != "r" {
		t.Fatalf("pending %#v", p)
	}
	h.step(Spawned{Ref: "s", Child: "root/researcher.1"})
	h.step(ToolResults{Results: []ToolResult{{CallID: "r", Content: "x"}}})
	if p := h.s.Pending(); len(p) != 0 {
		t.Fatalf("nothing pending while a started child works: %#v", p)
	}
	h.step(ChildReport{Child: "root/researcher.1", Text: "dug"})
	if cm := find[CallModel](h.s.Pending()); len(cm) != 1 || cm[0].Request.Turn != 2 {
		t.Fatalf("the model call in flight is pending: %#v", h.s.Pending())
	}

	c := start(t, childConfig(cadre.ReportTool), "t")
	c.reply("", call("s", ToolSendAgentMessage, `{"text":"result"}`))
	if d, ok := c.s.Report(); !ok || d.Text != "result" || d.To != cadre.RootID {
		t.Fatalf("report %#v %v", d, ok)
	}
}

// An empty <response></response> is still a report: the parent hears back.
func TestEmptyReportIsDelivered(t *testing.T) {
	h := start(t, childConfig(cadre.ReportTag), "task")
	mustFinish(t, h.reply("<response>  </response>"))
	if rep := h.reports(); len(rep) != 1 || rep[0].Text != EmptyReport || rep[0].Failed {
		t.Fatalf("reports %#v", rep)
	}
}

// Calls that share an ID, or have none, each get one of their own and are
// all answered.
func TestDuplicateCallIDs(t *testing.T) {
	h := start(t, rootConfig(), "t")
	acts := h.reply("", call("x", "read_file", `{"path":"a"}`), call("x", "read_file", `{"path":"b"}`), call("", "read_file", `{"path":"c"}`))
	ct, _ := only[CallTools](acts)
	ids := map[string]bool{}
	for _, c := range ct.Calls {
		ids[c.ID] = true
	}
	if len(ct.Calls) != 3 || len(ids) != 3 {
		t.Fatalf("calls %#v", ct.Calls)
	}
	var res []ToolResult
	for _, c := range ct.Calls {
		res = append(res, ToolResult{CallID: c.ID, Content: "ok"})
	}
	if _, ok := only[CallModel](h.step(ToolResults{Results: res})); !ok {
		t.Fatal("every call must be answered")
	}
	last := h.s.Messages()[len(h.s.Messages())-4]
	if last.Role != cadre.RoleAssistant || last.ToolCalls[1].ID == "x" || last.ToolCalls[2].ID == "" {
		t.Fatalf("the assistant message must carry the new IDs: %#v", last.ToolCalls)
	}
}

// Arguments of the wrong kind are reported against the tool's parameters.
func TestSubagentArgumentTypes(t *testing.T) {
	h := start(t, rootConfig(), "t")
	h.reply("", call("a", ToolSpawnAgent, `{"agent": 5, "task": "x"}`), call("b", ToolFork, `{"handle":"h","count":"three"}`))
	for _, m := range h.s.Messages() {
		if m.Role == cadre.RoleTool && (!m.IsError || !strings.Contains(m.Content, "do not match its parameters")) {
			t.Errorf("%s: %q", m.ToolCallID, m.Content)
		}
	}
	if m := h.s.Messages()[len(h.s.Messages())-2]; !strings.Contains(m.Content, "Available agents: careful, researcher.") {
		t.Errorf("spawn_agent's error should list the agents: %q", m.Content)
	}
}
