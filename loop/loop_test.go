package loop

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/prompt"
)

// harness drives one State and remembers every action.
type harness struct {
	t    *testing.T
	s    *State
	acts []Action
}

func childConfig(report cadre.ReportMode) Config {
	return Config{
		ID: "root/worker.1", Parent: cadre.RootID, Depth: 1, MaxDepth: 3, Definition: "worker",
		System: "You are a worker.", Report: report, MaxTurns: 5,
		Tools: []cadre.ToolSpec{{Name: "read_file", Parameters: json.RawMessage(`{"type":"object"}`)}},
	}
}

func rootConfig() Config {
	return Config{
		ID: cadre.RootID, MaxDepth: 3, Definition: "root", System: "You are the root.", MaxTurns: 5, Delegate: true,
		Tools:   []cadre.ToolSpec{{Name: "read_file", Parameters: json.RawMessage(`{"type":"object"}`)}},
		Catalog: []CatalogEntry{{Name: "researcher"}, {Name: "secret", Internal: true}, {Name: "careful", OnboardingRequired: true}},
	}
}

func start(t *testing.T, cfg Config, task string) *harness {
	t.Helper()
	h := &harness{t: t, s: New()}
	acts := h.step(Start{Config: cfg, Task: task, Messages: []cadre.Message{{Role: cadre.RoleUser, Content: task}}})
	if _, ok := only[CallModel](acts); !ok {
		t.Fatalf("Start: want one CallModel, got %#v", acts)
	}
	return h
}

func (h *harness) step(in Input) []Action {
	h.t.Helper()
	acts := h.s.Step(in)
	h.acts = append(h.acts, acts...)
	return acts
}

// reply feeds a model reply with text and tool calls.
func (h *harness) reply(text string, calls ...cadre.ToolCall) []Action {
	h.t.Helper()
	return h.step(ModelResult{Response: &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: text, ToolCalls: calls}}})
}

func call(id, name, args string) cadre.ToolCall {
	return cadre.ToolCall{ID: id, Name: name, Arguments: args}
}

func find[T Action](acts []Action) []T {
	var out []T
	for _, a := range acts {
		if v, ok := a.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

func only[T Action](acts []Action) (T, bool) {
	f := find[T](acts)
	if len(f) != 1 {
		var zero T
		return zero, false
	}
	return f[0], true
}

func (h *harness) reports() []Deliver {
	var out []Deliver
	for _, d := range find[Deliver](h.acts) {
		if d.Report {
			out = append(out, d)
		}
	}
	return out
}

func (h *harness) lastMessage() cadre.Message {
	m := h.s.Messages()
	return m[len(m)-1]
}

func mustFinish(t *testing.T, acts []Action) Finish {
	t.Helper()
	f, ok := only[Finish](acts)
	if !ok {
		t.Fatalf("want a Finish action, got %#v", acts)
	}
	return f
}

// Seed 001's six cases: send_agent_message tracking and the one nudge.
func TestReportTool(t *testing.T) {
	t.Run("send without agentId is the report", func(t *testing.T) {
		h := start(t, childConfig(cadre.ReportTool), "task")
		h.reply("", call("c1", ToolSendAgentMessage, `{"text":"the findings"}`))
		h.reply("Done.")
		rep := h.reports()
		if len(rep) != 1 || rep[0].Text != "the findings" || rep[0].To != cadre.RootID {
			t.Fatalf("reports = %#v, want one with the findings to root", rep)
		}
		if h.s.nudged {
			t.Error("nudged although the report was sent")
		}
		if !h.s.Done() {
			t.Error("not done after the final reply")
		}
	})
	t.Run("send with the parent's agentId is the report", func(t *testing.T) {
		h := start(t, childConfig(cadre.ReportTool), "task")
		h.reply("", call("c1", ToolSendAgentMessage, `{"text":"to parent","agentId":"root"}`))
		h.reply("ok")
		if rep := h.reports(); len(rep) != 1 || rep[0].Text != "to parent" {
			t.Fatalf("reports = %#v", rep)
		}
	})
	t.Run("send to another agent is not the report", func(t *testing.T) {
		h := start(t, childConfig(cadre.ReportTool), "task")
		acts := h.reply("", call("c1", ToolSendAgentMessage, `{"text":"hi sibling","agentId":"root/other.1"}`))
		d, ok := only[Deliver](acts)
		if !ok || d.Report || d.To != "root/other.1" {
			t.Fatalf("deliver = %#v, want an ordinary message to root/other.1", acts)
		}
		acts = h.reply("finished")
		if _, ok := only[CallModel](acts); !ok || h.lastMessage().Content != prompt.NudgeTool {
			t.Fatalf("want a nudge after a turn without report; last message %q", h.lastMessage().Content)
		}
	})
	t.Run("ending without send is nudged once with the exact text", func(t *testing.T) {
		h := start(t, childConfig(cadre.ReportTool), "task")
		acts := h.reply("I think I am done")
		if got := find[Emit](acts); len(got) != 1 || got[0].Type() != cadre.EventAgentNudged {
			t.Fatalf("want one agent_nudged event, got %#v", acts)
		}
		want := "You haven't sent your results to your parent agent yet. Use the send_agent_message tool to deliver your results. No agentId is needed — it defaults to your parent."
		if got := h.lastMessage(); got.Role != cadre.RoleUser || got.Content != want {
			t.Fatalf("nudge = %#v, want user message %q", got, want)
		}
	})
	t.Run("no send after the nudge is accepted with the last text", func(t *testing.T) {
		h := start(t, childConfig(cadre.ReportTool), "task")
		h.reply("first answer")
		acts := h.reply("still not sending")
		f := mustFinish(t, acts)
		if f.Failed {
			t.Error("declining the nudge must not fail the agent")
		}
		if rep := h.reports(); len(rep) != 1 || rep[0].Text != "still not sending" || rep[0].Failed {
			t.Fatalf("reports = %#v, want the last text once", rep)
		}
		if n := len(find[Emit](h.acts)); n != 1 {
			t.Errorf("nudged %d times, want once", n)
		}
	})
	t.Run("the root is not tracked or nudged", func(t *testing.T) {
		h := start(t, rootConfig(), "task")
		acts := h.reply("the answer")
		f := mustFinish(t, acts)
		if f.Result != "the answer" || len(h.reports()) != 0 || h.s.nudged {
			t.Fatalf("root: finish %#v, reports %#v, nudged %v", f, h.reports(), h.s.nudged)
		}
	})
}

// Seed 000's cases in tag mode.
func TestReportTag(t *testing.T) {
	t.Run("tag in the first reply is extracted", func(t *testing.T) {
		h := start(t, childConfig(cadre.ReportTag), "task")
		f := mustFinish(t, h.reply("preamble <Response attr=\"x\">\n  the result \n</response> trailing"))
		if rep := h.reports(); len(rep) != 1 || rep[0].Text != "the result" {
			t.Fatalf("reports = %#v", rep)
		}
		if f.Failed {
			t.Error("failed")
		}
	})
	t.Run("missing tag is nudged with the exact text", func(t *testing.T) {
		h := start(t, childConfig(cadre.ReportTag), "task")
		h.reply("no tag here")
		if got := h.lastMessage().Content; got != "You must wrap your final answer in <response>...</response> tags. Emit your response now." {
			t.Fatalf("nudge = %q", got)
		}
		mustFinish(t, h.reply("<response>late but here</response>"))
		if rep := h.reports(); len(rep) != 1 || rep[0].Text != "late but here" {
			t.Fatalf("reports = %#v", rep)
		}
	})
	t.Run("missing after the nudge is an error response", func(t *testing.T) {
		h := start(t, childConfig(cadre.ReportTag), "task")
		h.reply("no tag")
		f := mustFinish(t, h.reply("still no tag"))
		if !f.Failed {
			t.Error("want the agent marked failed")
		}
		if rep := h.reports(); len(rep) != 1 || rep[0].Text != "Error: subagent did not produce a response." || !rep[0].Failed {
			t.Fatalf("reports = %#v", rep)
		}
	})
	t.Run("the root ignores tags", func(t *testing.T) {
		h := start(t, rootConfig(), "task")
		f := mustFinish(t, h.reply("<response>x</response>"))
		if len(h.reports()) != 0 || f.Failed {
			t.Fatalf("root reported or failed: %#v", h.acts)
		}
	})
}

func TestReportExactlyOnce(t *testing.T) {
	t.Run("two sends give one report and a follow-up", func(t *testing.T) {
		h := start(t, childConfig(cadre.ReportTool), "task")
		h.reply("", call("c1", ToolSendAgentMessage, `{"text":"one"}`), call("c2", ToolSendAgentMessage, `{"text":"two"}`))
		h.reply("bye")
		if rep := h.reports(); len(rep) != 1 || rep[0].Text != "one" {
			t.Fatalf("reports = %#v", rep)
		}
		var follow []Deliver
		for _, d := range find[Deliver](h.acts) {
			if d.FollowUp {
				follow = append(follow, d)
			}
		}
		if len(follow) != 1 || follow[0].Text != "two" {
			t.Fatalf("follow-ups = %#v", follow)
		}
	})
	t.Run("tag mode: send then tag delivers the send only", func(t *testing.T) {
		h := start(t, childConfig(cadre.ReportTag), "task")
		h.reply("", call("c1", ToolSendAgentMessage, `{"text":"sent"}`))
		mustFinish(t, h.reply("<response>tagged</response>"))
		if rep := h.reports(); len(rep) != 1 || rep[0].Text != "sent" {
			t.Fatalf("reports = %#v", rep)
		}
	})
	t.Run("tool mode: tag without send is used after the nudge, once", func(t *testing.T) {
		h := start(t, childConfig(cadre.ReportTool), "task")
		h.reply("<response>tagged</response>")
		mustFinish(t, h.reply("<response>tagged again</response>"))
		if rep := h.reports(); len(rep) != 1 || rep[0].Text != "tagged again" {
			t.Fatalf("reports = %#v", rep)
		}
	})
	t.Run("a parent accepts one report per child", func(t *testing.T) {
		h := start(t, rootConfig(), "task")
		acts := h.reply("", call("s1", ToolStartBackground, `{"prompt":"look around","agent":"researcher"}`))
		sp, ok := only[Spawn](acts)
		if !ok || len(sp.Children) != 1 || !sp.Children[0].Background {
			t.Fatalf("want one background spawn, got %#v", acts)
		}
		id := sp.Children[0].ID
		if id != "root/researcher.1" {
			t.Fatalf("child id %q", id)
		}
		h.step(Spawned{Ref: "s1", Child: id})
		if got := h.lastMessage().Content; got != "Background agent started (researcher): root/researcher.1." {
			t.Fatalf("tool result %q", got)
		}
		acts = h.reply("waiting for it")
		if _, ok := only[Wait](acts); !ok {
			t.Fatalf("want Wait while a background child runs, got %#v", acts)
		}
		acts = h.step(ChildReport{Child: id, Text: "found it"})
		if _, ok := only[CallModel](acts); !ok {
			t.Fatalf("a report must wake the waiting parent, got %#v", acts)
		}
		if got := h.lastMessage().Content; got != `<system_message origin="root/researcher.1">found it</system_message>` {
			t.Fatalf("inbox message %q", got)
		}
		if acts := h.step(ChildReport{Child: id, Text: "found it"}); len(acts) != 0 {
			t.Fatalf("a repeated report must be ignored, got %#v", acts)
		}
		h.step(ChildEnded{Child: id, Status: cadre.StatusDone})
		mustFinish(t, h.reply("final answer"))
		n := 0
		for _, m := range h.s.Messages() {
			if strings.Contains(m.Content, "found it") {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("the report reached the conversation %d times, want 1", n)
		}
	})
	t.Run("a synchronous report is the tool result and not an inbox message", func(t *testing.T) {
		h := start(t, rootConfig(), "task")
		acts := h.reply("", call("s1", ToolSpawnAgent, `{"agent":"researcher","task":"dig","context":"repo is Go"}`))
		sp, _ := only[Spawn](acts)
		if len(sp.Children) != 1 || sp.Children[0].Context != "repo is Go" || sp.Children[0].Background {
			t.Fatalf("spawn = %#v", sp)
		}
		id := sp.Children[0].ID
		h.step(Spawned{Ref: "s1", Child: id})
		acts = h.step(ChildReport{Child: id, Text: "dug"})
		if _, ok := only[CallModel](acts); !ok {
			t.Fatalf("want the model called with the result, got %#v", acts)
		}
		last := h.lastMessage()
		if last.Role != cadre.RoleTool || last.ToolCallID != "s1" || last.Content != "dug" {
			t.Fatalf("tool result = %#v", last)
		}
		h.step(ChildReport{Child: id, Text: "dug"})
		h.step(ChildEnded{Child: id, Status: cadre.StatusDone})
		mustFinish(t, h.reply("done"))
		for _, m := range h.s.Messages() {
			if strings.Contains(m.Content, "system_message") {
				t.Fatalf("synchronous report also reached the inbox: %q", m.Content)
			}
		}
	})
}

func TestToolCallErrors(t *testing.T) {
	h := start(t, rootConfig(), "task")
	acts := h.reply("",
		call("a", "no_such_tool", `{}`),
		call("b", ToolSpawnAgent, `{"agent": "researcher", "task": `),
		call("c", ToolSpawnAgent, `{"agent":"secret","task":"x"}`),
		call("d", ToolSpawnAgent, `{"agent":"ghost","task":"x"}`),
		call("e", ToolSpawnAgent, `{"agent":"careful","task":"x"}`),
		call("f", ToolSpawnAgent, `{"task":"x"}`),
		call("g", ToolCancelAgent, `{"agentId":"root/other.1"}`),
		call("h", ToolSendAgentMessage, `{"text":"hello"}`),
	)
	if _, ok := only[CallModel](acts); !ok {
		t.Fatalf("every call is answered at once: want CallModel, got %#v", acts)
	}
	msgs := h.s.Messages()
	results := map[string]cadre.Message{}
	for _, m := range msgs {
		if m.Role == cadre.RoleTool {
			results[m.ToolCallID] = m
		}
	}
	want := map[string]string{
		"a": `unknown tool "no_such_tool"`,
		"b": "not a valid JSON object",
		"c": "internal agent",
		"d": `no subagent named "ghost"`,
		"e": "requires onboarding",
		"f": `missing required argument "agent"`,
		"g": "not one of your subagents",
		"h": "no parent agent",
	}
	for id, frag := range want {
		r, ok := results[id]
		if !ok || !r.IsError || !strings.Contains(r.Content, frag) {
			t.Errorf("call %s: result %#v, want an error containing %q", id, r, frag)
		}
	}
	if !strings.Contains(results["d"].Content, "Available agents: careful, researcher.") {
		t.Errorf("unknown agent error should list the spawnable agents: %q", results["d"].Content)
	}
	// Results keep the order of the calls.
	var order []string
	for _, m := range msgs {
		if m.Role == cadre.RoleTool {
			order = append(order, m.ToolCallID)
		}
	}
	if diff := cmp.Diff([]string{"a", "b", "c", "d", "e", "f", "g", "h"}, order); diff != "" {
		t.Errorf("result order (-want +got):\n%s", diff)
	}
}

func TestOrdinaryToolsRoundTrip(t *testing.T) {
	h := start(t, rootConfig(), "task")
	acts := h.reply("reading", call("r1", "read_file", `{"path":"a"}`), call("r2", "read_file", `{"path":"b"}`))
	ct, ok := only[CallTools](acts)
	if !ok || len(ct.Calls) != 2 {
		t.Fatalf("want both calls in one CallTools, got %#v", acts)
	}
	if acts := h.step(ToolResults{Results: []ToolResult{{CallID: "r2", Content: "B"}}}); len(acts) != 0 {
		t.Fatalf("one result of two must not call the model, got %#v", acts)
	}
	acts = h.step(ToolResults{Results: []ToolResult{{CallID: "r1", Content: "A"}}})
	cm, ok := only[CallModel](acts)
	if !ok {
		t.Fatalf("want CallModel, got %#v", acts)
	}
	n := len(cm.Request.Messages)
	if cm.Request.Messages[n-2].Content != "A" || cm.Request.Messages[n-1].Content != "B" {
		t.Fatalf("results must follow call order: %#v", cm.Request.Messages[n-2:])
	}
	if cm.Request.Turn != 2 {
		t.Errorf("turn = %d, want 2", cm.Request.Turn)
	}
	if f := mustFinish(t, h.reply("all read")); f.Result != "all read" {
		t.Errorf("result %q", f.Result)
	}
}

func TestMaxTurnsFinalCall(t *testing.T) {
	cfg := rootConfig()
	cfg.MaxTurns = 2
	h := start(t, cfg, "task")
	h.reply("", call("r1", "read_file", `{}`))
	acts := h.step(ToolResults{Results: []ToolResult{{CallID: "r1", Content: "x"}}})
	if cm, _ := only[CallModel](acts); cm.Final || len(cm.Request.Tools) == 0 {
		t.Fatalf("turn 2 is an ordinary call: %#v", cm)
	}
	h.reply("", call("r2", "read_file", `{}`))
	acts = h.step(ToolResults{Results: []ToolResult{{CallID: "r2", Content: "y"}}})
	cm, ok := only[CallModel](acts)
	if !ok || !cm.Final || len(cm.Request.Tools) != 0 {
		t.Fatalf("after max turns want one final call without tools, got %#v", acts)
	}
	if last := cm.Request.Messages[len(cm.Request.Messages)-1]; last.Content != prompt.FinalAnswerRequest {
		t.Fatalf("final call must ask for the answer: %#v", last)
	}
	// Tool calls in the final reply are dropped; its text is the answer.
	f := mustFinish(t, h.reply("the answer", call("r3", "read_file", `{}`)))
	if f.Result != "the answer" || h.s.Turns() != 3 {
		t.Fatalf("finish %#v after %d turns", f, h.s.Turns())
	}
}

func TestEmptyReplyFails(t *testing.T) {
	h := start(t, rootConfig(), "task")
	f := mustFinish(t, h.reply("  \n "))
	if !f.Failed || !strings.Contains(f.Result, "empty reply") {
		t.Fatalf("finish %#v", f)
	}
}

func TestDepthLimitRefusesSpawn(t *testing.T) {
	cfg := childConfig(cadre.ReportTool)
	cfg.Depth, cfg.MaxDepth, cfg.Delegate = 3, 3, false
	cfg.Catalog = []CatalogEntry{{Name: "researcher"}}
	h := start(t, cfg, "task")
	cm := find[CallModel](h.acts)[0]
	for _, spec := range cm.Request.Tools {
		if spec.Name == ToolSpawnAgent || spec.Name == ToolStartBackground {
			t.Fatalf("at the depth limit %s must not be offered", spec.Name)
		}
	}
	acts := h.reply("", call("s", ToolSpawnAgent, `{"agent":"researcher","task":"x"}`))
	ev := find[Emit](acts)
	if len(ev) != 1 || ev[0].Event != (cadre.DepthLimit{Tool: ToolSpawnAgent, AttemptedDepth: 4, MaxDepth: 3}) {
		t.Fatalf("want a depth_limit event, got %#v", acts)
	}
	res := h.s.Messages()[len(h.s.Messages())-1]
	if !res.IsError || !strings.Contains(res.Content, "depth limit reached") {
		t.Fatalf("result %#v", res)
	}
}

func TestSteeringInterruptsModelCall(t *testing.T) {
	h := start(t, rootConfig(), "task")
	acts := h.step(InboxMessage{From: "root/x.1", Text: "stop and look at b", Steering: true})
	if _, ok := only[Interrupt](acts); !ok {
		t.Fatalf("want Interrupt, got %#v", acts)
	}
	acts = h.step(ModelResult{Interrupted: true})
	cm, ok := only[CallModel](acts)
	if !ok || cm.Request.Turn != 1 {
		t.Fatalf("want the call made again as turn 1, got %#v", acts)
	}
	if last := cm.Request.Messages[len(cm.Request.Messages)-1]; !strings.Contains(last.Content, "stop and look at b") {
		t.Fatalf("steering message missing: %#v", last)
	}
}

func TestCancelReportsOnce(t *testing.T) {
	h := start(t, childConfig(cadre.ReportTool), "task")
	f := mustFinish(t, h.step(Cancel{Reason: "user"}))
	if !f.Cancelled {
		t.Fatal("not cancelled")
	}
	rep := h.reports()
	if len(rep) != 1 || !rep[0].Cancelled || !strings.HasPrefix(rep[0].Text, "Error: cancelled") {
		t.Fatalf("reports %#v", rep)
	}
	if acts := h.step(ModelResult{Response: &cadre.Response{Message: cadre.Message{Content: "late"}}}); len(acts) != 0 {
		t.Fatalf("inputs after the end must be ignored, got %#v", acts)
	}
}

func TestTimeoutFails(t *testing.T) {
	h := start(t, childConfig(cadre.ReportTool), "task")
	f := mustFinish(t, h.step(Timeout{Limit: 30 * time.Second}))
	if !f.Failed || f.Result != "timed out: no activity for 30s" {
		t.Fatalf("finish %#v", f)
	}
	if rep := h.reports(); len(rep) != 1 || rep[0].Text != "Error: timed out: no activity for 30s" {
		t.Fatalf("reports %#v", rep)
	}
	h = start(t, childConfig(cadre.ReportTool), "task")
	if f := mustFinish(t, h.step(Timeout{Limit: 1500 * time.Millisecond})); f.Result != "timed out: no activity for 1.5s" {
		t.Fatalf("finish %#v", f)
	}
}

// A child that ends its turn while one of its own children is alive, with
// a message that came in during its model call, reads the message rather
// than waiting: nothing else would wake it for that message, and once the
// last child has ended it would wait for ever.
func TestQueuedMessageNotLeftWaiting(t *testing.T) {
	for _, report := range []cadre.ReportMode{cadre.ReportTool, cadre.ReportTag} {
		t.Run(string(report), func(t *testing.T) {
			cfg := childConfig(report)
			cfg.Delegate = true
			cfg.Catalog = []CatalogEntry{{Name: "researcher"}}
			h := start(t, cfg, "task")
			acts := h.reply("", call("s1", ToolStartBackground, `{"agent":"researcher","prompt":"dig"}`))
			sp, ok := only[Spawn](acts)
			if !ok {
				t.Fatalf("want a Spawn, got %#v", acts)
			}
			kid := sp.Children[0].ID
			h.step(Spawned{Ref: "s1", Child: kid}) // the call's result: the model is asked again
			if acts := h.step(InboxMessage{From: kid, Text: "an early note"}); len(acts) != 0 {
				t.Fatalf("a message during the model call: %#v", acts)
			}
			acts = h.reply("thinking")
			cm, ok := only[CallModel](acts)
			if !ok {
				t.Fatalf("the turn ended with a message queued: want a CallModel, got %#v", acts)
			}
			if last := cm.Request.Messages[len(cm.Request.Messages)-1]; !strings.Contains(last.Content, "an early note") {
				t.Fatalf("the model call does not carry the queued message: %q", last.Content)
			}
		})
	}
}

// TestCallIDs checks that the calls of a reply keep the IDs the model gave
// them, and that a call without one, or with one an earlier call of the
// reply has, gets one of its own; for replies of a few calls (found by a
// scan) and of many (found through a map).
func TestCallIDs(t *testing.T) {
	tests := []struct {
		name     string
		ids, out []string
	}{
		{"kept", []string{"a", "b"}, []string{"a", "b"}},
		{"missing", []string{"a", ""}, []string{"a", "call_1_2"}},
		{"repeated", []string{"a", "a", "b"}, []string{"a", "call_1_2", "b"}},
		{"taken", []string{"call_1_2", ""}, []string{"call_1_2", "call_1_2_2"}},
		{"many", []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c1", "", "c11"},
			[]string{"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "call_1_9", "call_1_10", "c11"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, rootConfig(), "task")
			calls := make([]cadre.ToolCall, len(tt.ids))
			for i, id := range tt.ids {
				calls[i] = call(id, "read_file", `{}`)
			}
			ct, ok := only[CallTools](h.reply("", calls...))
			if !ok {
				t.Fatalf("want one CallTools, got %#v", h.acts)
			}
			var got, inConversation []string
			for _, c := range ct.Calls {
				got = append(got, c.ID)
			}
			msgs := h.s.Messages()
			for _, c := range msgs[len(msgs)-1].ToolCalls {
				inConversation = append(inConversation, c.ID)
			}
			if diff := cmp.Diff(tt.out, got); diff != "" {
				t.Errorf("IDs of the calls to run (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.out, inConversation); diff != "" {
				t.Errorf("IDs of the calls in the conversation (-want +got):\n%s", diff)
			}
			results := make([]ToolResult, len(tt.out))
			for i, id := range tt.out {
				results[i] = ToolResult{CallID: id, Content: "ok " + id}
			}
			if _, ok := only[CallModel](h.step(ToolResults{Results: results})); !ok {
				t.Fatalf("the results of every call should lead to the next model call, got %#v", h.acts)
			}
		})
	}
}

// TestOfferedTools pins the tools a model is offered, in order: the
// ordinary ones, then the subagent tools the agent's configuration allows.
func TestOfferedTools(t *testing.T) {
	asking := []CatalogEntry{{Name: "researcher"}, {Name: "asker", AskCaller: true}}
	child := func(mod func(*Config)) Config {
		cfg := childConfig(cadre.ReportTool)
		mod(&cfg)
		return cfg
	}
	root := func(mod func(*Config)) Config {
		cfg := rootConfig()
		mod(&cfg)
		return cfg
	}
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"root", rootConfig(), []string{"read_file", ToolSpawnAgent, ToolStartBackground, ToolSendAgentMessage, ToolListAgents,
			ToolCancelAgent, ToolWaitAgent, ToolOnboard, ToolOnboardReply, ToolCallAgent, ToolFork, ToolCreateAgent, ToolAgentCall}},
		{"root with an asking agent", root(func(c *Config) { c.Catalog = asking; c.AskCaller = true }), []string{"read_file",
			ToolSpawnAgent, ToolStartBackground, ToolSendAgentMessage, ToolListAgents, ToolCancelAgent, ToolWaitAgent, ToolAnswerAgent,
			ToolOnboard, ToolOnboardReply, ToolCallAgent, ToolFork, ToolCreateAgent, ToolAgentCall, ToolAskCaller}},
		{"spawn_agent granted", root(func(c *Config) { c.Catalog = asking; c.Delegation = []string{ToolSpawnAgent} }),
			[]string{"read_file", ToolSpawnAgent, ToolSendAgentMessage, ToolWaitAgent, ToolAnswerAgent}},
		{"nothing granted", root(func(c *Config) { c.Delegation = []string{} }), []string{"read_file", ToolSendAgentMessage}},
		{"root that does not delegate", root(func(c *Config) { c.Delegate = false }), []string{"read_file"}},
		{"child", childConfig(cadre.ReportTool), []string{"read_file", ToolSendAgentMessage}},
		{"child without tools", child(func(c *Config) { c.Tools = nil }), []string{ToolSendAgentMessage}},
		{"child that asks", child(func(c *Config) { c.AskCaller = true }), []string{"read_file", ToolSendAgentMessage, ToolAskCaller}},
		{"delegating child without tools", child(func(c *Config) { c.Tools, c.Delegate = nil, true }), []string{ToolSpawnAgent,
			ToolStartBackground, ToolSendAgentMessage, ToolListAgents, ToolCancelAgent, ToolWaitAgent, ToolOnboard, ToolOnboardReply,
			ToolCallAgent, ToolFork, ToolCreateAgent, ToolAgentCall}},
		{"delegating child without tools, spawn_agent granted", child(func(c *Config) {
			c.Tools, c.Delegate, c.Delegation = nil, true, []string{ToolSpawnAgent}
		}), []string{ToolSpawnAgent, ToolSendAgentMessage}},
		{"onboarding", child(func(c *Config) { c.Mode = ModeOnboarding }), []string{ToolAskCaller}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			cm, ok := only[CallModel](s.Step(Start{Config: tt.cfg, Task: "task", Messages: []cadre.Message{{Role: cadre.RoleUser, Content: "task"}}}))
			if !ok {
				t.Fatal("Start: want one CallModel")
			}
			var got []string
			for _, spec := range cm.Request.Tools {
				got = append(got, spec.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("offered tools (-want +got):\n%s", diff)
			}
		})
	}
}

// Only an agent's parent may interrupt its turn: a message to another
// agent (a sibling, the parent) asking to steer is delivered as a plain
// message, and the sender is told so. A sibling's steering message broke
// into the turn of an agent with other tools.
func TestSteeringOnlyToOwnChildren(t *testing.T) {
	h := start(t, childConfig(cadre.ReportTool), "task")
	acts := h.reply("", call("m", ToolSendAgentMessage, `{"agentId":"root/other.2","text":"drop everything","steering":true}`))
	d, ok := only[Deliver](acts)
	if !ok || d.To != "root/other.2" || d.Steering {
		t.Fatalf("want a plain Deliver to the sibling, got %#v", acts)
	}
	if res := h.lastTool(); !strings.Contains(res.Content, "delivered as a plain message: only an agent's parent may interrupt its turn") {
		t.Errorf("result %q", res.Content)
	}

	// A parent steering its child still interrupts it.
	h = start(t, rootConfig(), "task")
	h.reply("", call("s", ToolStartBackground, `{"prompt":"look","agent":"researcher"}`))
	var child cadre.AgentID
	for id := range h.s.children {
		child = id
	}
	if child == "" {
		t.Fatal("no child started")
	}
	h.step(Spawned{Ref: "s", Child: child})
	acts = h.reply("", call("m", ToolSendAgentMessage, `{"agentId":"`+string(child)+`","text":"look elsewhere","steering":true}`))
	if d, ok := only[Deliver](acts); !ok || !d.Steering {
		t.Fatalf("want a steering Deliver to the child, got %d actions", len(acts))
	}
}

// A task respelt (case, spaces of any kind, invisible characters,
// punctuation at its ends) counts as the same task for the cycle detector.
func TestTaskKey(t *testing.T) {
	want := TaskKey("Do X")
	for _, s := range []string{"do x", "Do  X", "Do X.", "Do\tX", " do x ", "Do\u00a0X", "Do X\u200b", "«Do X»", "DO\u2003X!", "\"Do X\""} {
		if got := TaskKey(s); got != want {
			t.Errorf("TaskKey(%q) = %q, want %q", s, got, want)
		}
	}
	for _, s := range []string{"Do Y", "Do X twice", "Don't X"} {
		if TaskKey(s) == want {
			t.Errorf("TaskKey(%q) is the key of Do X", s)
		}
	}
	for _, pair := range [][2]string{{"Write hello world in C#", "Write hello world in C"}, {"Explain 50%", "Explain 50"}} {
		if TaskKey(pair[0]) == TaskKey(pair[1]) {
			t.Errorf("%q and %q have one key", pair[0], pair[1])
		}
	}
}

// FuzzTaskKey: the shortcut for a task that is its own key gives the key
// the long way gives, for any task.
func FuzzTaskKey(f *testing.F) {
	for _, s := range []string{"", "do x", "Do X", "do  x", " do x", "do x.", "do x!", "'do x'", "a", ".", "unit 5000", "in c#", "50%", "do\tx", "do x\u200b", "«do x»", "do x…"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := TaskKey(s), taskKey(s); got != want {
			t.Fatalf("TaskKey(%q) = %q, the long way gives %q", s, got, want)
		}
	})
}
