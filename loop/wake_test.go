package loop

import (
	"strings"
	"testing"

	"github.com/cadre-ai/cadre"
)

// refusedEvents are the ToolRefused events among acts.
func refusedEvents(acts []Action) []cadre.ToolRefused {
	var out []cadre.ToolRefused
	for _, e := range find[Emit](acts) {
		if r, ok := e.Event.(cadre.ToolRefused); ok {
			out = append(out, r)
		}
	}
	return out
}

// TestToolRefusedEvents checks that each kind of refused call is an event
// naming the tool and the reason, besides the error the model is sent.
func TestToolRefusedEvents(t *testing.T) {
	cases := []struct {
		name   string
		cfg    func() Config
		call   cadre.ToolCall
		reason string
	}{
		{"unknown tool", rootConfig, call("c1", "launch_rockets", `{}`), ReasonUnknownTool},
		{"tool outside the allowlist", func() Config {
			c := rootConfig()
			c.Withheld = []string{"run_command"}
			return c
		}, call("c1", "run_command", `{"command":"ls"}`), ReasonNotAllowed},
		{"delegation tool not granted", func() Config {
			c := rootConfig()
			c.Delegation = []string{ToolSpawnAgent}
			return c
		}, call("c1", ToolStartBackground, `{"prompt":"x"}`), ReasonNotAllowed},
		{"subagent tools not in the tool list", func() Config {
			c := childConfig(cadre.ReportTool)
			c.Delegate = false
			return c
		}, call("c1", ToolSpawnAgent, `{"agent":"researcher","task":"x"}`), ReasonNotAllowed},
		{"spawn of an unknown agent", rootConfig, call("c1", ToolSpawnAgent, `{"agent":"nobody","task":"x"}`), ReasonUnknownAgent},
		{"background spawn of an unknown agent", rootConfig, call("c1", ToolStartBackground, `{"agent":"nobody","prompt":"x"}`), ReasonUnknownAgent},
		{"arguments not JSON", rootConfig, call("c1", ToolSpawnAgent, `{"agent":`), ReasonBadArguments},
		{"arguments not matching", rootConfig, call("c1", ToolSpawnAgent, `{"agent":7,"task":"x"}`), ReasonBadArguments},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, tc.cfg(), "task")
			acts := h.reply("", tc.call)
			got := refusedEvents(acts)
			if len(got) != 1 {
				t.Fatalf("want one tool_refused event, got %d in %#v", len(got), acts)
			}
			if got[0].Tool != tc.call.Name || got[0].CallID != tc.call.ID || !strings.HasPrefix(got[0].Reason, tc.reason) {
				t.Errorf("event = %+v; want tool %s, call %s, reason starting %q", got[0], tc.call.Name, tc.call.ID, tc.reason)
			}
			// The model still gets an error result and is asked again.
			cm, ok := only[CallModel](acts)
			if !ok {
				t.Fatalf("want the model asked again, got %#v", acts)
			}
			last := cm.Request.Messages[len(cm.Request.Messages)-1]
			if last.Role != cadre.RoleTool || !last.IsError {
				t.Errorf("the call's result = %+v; want an error", last)
			}
		})
	}
}

// TestAllowedCallsAreNotRefused checks that calls that go ahead make no
// tool_refused event.
func TestAllowedCallsAreNotRefused(t *testing.T) {
	h := start(t, rootConfig(), "task")
	acts := h.reply("", call("c1", "read_file", `{"path":"a"}`), call("c2", ToolSpawnAgent, `{"agent":"researcher","task":"x"}`))
	if got := refusedEvents(acts); len(got) != 0 {
		t.Errorf("tool_refused for allowed calls: %+v", got)
	}
}

// TestTurnLimitEvent checks that reaching max turns is an event, followed
// by the final call without tools.
func TestTurnLimitEvent(t *testing.T) {
	cfg := rootConfig()
	cfg.MaxTurns = 2
	h := start(t, cfg, "task")
	for i := range 2 {
		acts := h.reply("", call("r"+string(rune('1'+i)), "read_file", `{}`))
		if len(find[CallTools](acts)) != 1 {
			t.Fatalf("turn %d: want a tool call, got %#v", i+1, acts)
		}
		acts = h.step(ToolResults{Results: []ToolResult{{CallID: "r" + string(rune('1'+i)), Content: "ok"}}})
		var limits []cadre.TurnLimit
		for _, e := range find[Emit](acts) {
			if l, ok := e.Event.(cadre.TurnLimit); ok {
				limits = append(limits, l)
			}
		}
		cm, _ := only[CallModel](acts)
		if i == 0 && (len(limits) != 0 || cm.Final) {
			t.Fatalf("turn 1: no limit yet, got %#v", acts)
		}
		if i == 1 && (len(limits) != 1 || limits[0].MaxTurns != 2 || !cm.Final || cm.Request.Tools != nil) {
			t.Fatalf("turn 2: want a turn_limit event and a final call without tools, got %#v", acts)
		}
	}
}

// TestFinalCallWithToolsSaysSo checks that a model that answers the final,
// tool-less call with tool calls fails with a reason that says so, not
// "empty reply".
func TestFinalCallWithToolsSaysSo(t *testing.T) {
	cfg := rootConfig()
	cfg.MaxTurns = 1
	h := start(t, cfg, "task")
	h.reply("", call("r1", "read_file", `{}`))
	h.step(ToolResults{Results: []ToolResult{{CallID: "r1", Content: "ok"}}})
	acts := h.reply("", call("r2", "read_file", `{}`))
	fin, ok := only[Finish](acts)
	if !ok || !fin.Failed {
		t.Fatalf("want a failure, got %#v", acts)
	}
	if strings.Contains(fin.Result, "empty") || !strings.Contains(fin.Result, "turn limit (1 model calls)") || !strings.Contains(fin.Result, "read_file") {
		t.Errorf("reason = %q; want it to name the turn limit and the tool called", fin.Result)
	}
}

// TestWakeAfterFinish checks a follow-up to a finished root: it keeps its
// conversation, closes the calls left open, and its turn limit counts
// again.
func TestWakeAfterFinish(t *testing.T) {
	cfg := rootConfig()
	cfg.MaxTurns = 2
	h := start(t, cfg, "task")
	h.reply("", call("r1", "read_file", `{}`))
	h.step(Cancel{Reason: "interrupted"}) // the read is still open
	if !h.s.Done() {
		t.Fatal("not done after Cancel")
	}
	if acts := h.step(InboxMessage{Text: "ignored"}); len(acts) != 0 {
		t.Fatalf("a finished agent stepped an ordinary input: %#v", acts)
	}
	acts := h.step(Wake{Text: "now do more"})
	cm, ok := only[CallModel](acts)
	if !ok || h.s.Done() {
		t.Fatalf("want a model call after Wake, got %#v", acts)
	}
	msgs := cm.Request.Messages
	if n := len(msgs); n < 4 || msgs[n-1].Content != "now do more" || msgs[n-2].Role != cadre.RoleTool || msgs[n-2].ToolCallID != "r1" || !msgs[n-2].IsError {
		t.Fatalf("messages after wake = %+v", msgs)
	}
	if _, ok := h.s.Finished(); ok {
		t.Error("Finished still reports the old end")
	}
	// Two more turns before the limit, counted from the wake.
	h.reply("", call("r2", "read_file", `{}`))
	acts = h.step(ToolResults{Results: []ToolResult{{CallID: "r2", Content: "ok"}}})
	if cm, _ := only[CallModel](acts); cm.Final {
		t.Fatal("the turn limit counted the turns before the wake")
	}
	acts = h.reply("second answer")
	if fin, ok := only[Finish](acts); !ok || fin.Result != "second answer" {
		t.Fatalf("want the new answer, got %#v", acts)
	}
}

// TestWakeChildTwice checks both sides of waking a child that reported:
// the parent's send wakes it, the child's next report carries the new
// round, and the parent accepts each round's report once.
func TestWakeChildTwice(t *testing.T) {
	parent := start(t, rootConfig(), "task")
	parent.reply("", call("s1", ToolStartBackground, `{"agent":"researcher","prompt":"look"}`))
	child := cadre.AgentID("root/researcher.1")
	parent.step(Spawned{Ref: "s1", Child: child})
	parent.reply("waiting")
	kid := start(t, childConfig(cadre.ReportTool), "look")
	for round := 0; round <= 2; round++ {
		// The child reports.
		acts := kid.reply("", call("m"+string(rune('0'+round)), ToolSendAgentMessage, `{"text":"report `+string(rune('0'+round))+`"}`))
		dv, ok := only[Deliver](acts)
		if !ok || !dv.Report || dv.Round != round {
			t.Fatalf("round %d: child's report = %#v", round, acts)
		}
		kid.step(ToolResults{})
		kid.reply("done")
		if !kid.s.Done() {
			t.Fatalf("round %d: child not done", round)
		}
		in := ChildReport{Child: child, Text: dv.Text, Round: dv.Round}
		got := parent.step(in)
		reported := 0
		for _, e := range find[Emit](got) {
			if _, ok := e.Event.(cadre.AgentReported); ok {
				reported++
			}
		}
		if reported != 1 {
			t.Fatalf("round %d: parent accepted the report %d times: %#v", round, reported, got)
		}
		if again := parent.step(in); len(again) != 0 {
			t.Fatalf("round %d: a repeated report was accepted: %#v", round, again)
		}
		parent.step(ChildEnded{Child: child, Status: cadre.StatusDone})
		if round == 2 {
			break
		}
		// A stale report of an earlier round is ignored after the wake.
		acts = parent.step(ModelResult{Response: &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant,
			ToolCalls: []cadre.ToolCall{call("w"+string(rune('0'+round)), ToolSendAgentMessage, `{"agentId":"root/researcher.1","text":"more"}`)}}}})
		wake, ok := only[Deliver](acts)
		if !ok || !wake.Wake || wake.Round != round+1 || wake.To != child {
			t.Fatalf("round %d: want a wake of the child, got %#v", round, acts)
		}
		if stale := parent.step(ChildReport{Child: child, Text: "old", Round: round}); len(stale) != 0 {
			t.Fatalf("a report of an earlier round was accepted: %#v", stale)
		}
		kid.step(Wake{From: cadre.RootID, Text: "more"})
		if kid.s.Done() || kid.s.Round() != round+1 {
			t.Fatalf("child after wake: done %v round %d", kid.s.Done(), kid.s.Round())
		}
	}
}

// TestWakeOf checks that a parent says which wake it sent a child until
// the child answers it: the wake of a child that had ended at once, and
// the one sent while it was finishing once it ends.
func TestWakeOf(t *testing.T) {
	child := cadre.AgentID("root/researcher.1")
	wakeMsg := func(id string) ModelResult {
		return ModelResult{Response: &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant,
			ToolCalls: []cadre.ToolCall{call(id, ToolSendAgentMessage, `{"agentId":"root/researcher.1","text":"look again"}`)}}}}
	}
	parent := start(t, rootConfig(), "task")
	parent.reply("", call("s1", ToolStartBackground, `{"agent":"researcher","prompt":"look"}`))
	parent.step(Spawned{Ref: "s1", Child: child})
	parent.reply("", call("w1", ToolWaitAgent, `{"agentId":"root/researcher.1"}`))
	parent.step(ChildReport{Child: child, Text: "report 0"})
	parent.step(ChildEnded{Child: child, Status: cadre.StatusDone})
	if _, ok := parent.s.WakeOf(child); ok {
		t.Fatal("a child never woken has a wake")
	}
	parent.step(wakeMsg("m1"))
	d, ok := parent.s.WakeOf(child)
	if !ok || !d.Wake || d.To != child || d.Round != 1 || d.Text != "look again" {
		t.Fatalf("after waking an ended child: %+v, %v", d, ok)
	}
	parent.step(ToolResults{})
	parent.step(ChildReport{Child: child, Text: "report 1", Round: 1})
	if _, ok := parent.s.WakeOf(child); ok {
		t.Error("a child that answered its wake still has one")
	}

	// Sent while the child had reported but not yet ended, the wake waits
	// for its end: until then there is none to send again.
	parent = start(t, rootConfig(), "task")
	parent.reply("", call("s1", ToolStartBackground, `{"agent":"researcher","prompt":"look"}`))
	parent.step(Spawned{Ref: "s1", Child: child})
	parent.reply("", call("w1", ToolWaitAgent, `{"agentId":"root/researcher.1"}`))
	parent.step(ChildReport{Child: child, Text: "report 0"})
	parent.step(wakeMsg("m1"))
	if _, ok := parent.s.WakeOf(child); ok {
		t.Error("a wake waiting for the child's end can be sent again")
	}
	acts := parent.step(ChildEnded{Child: child, Status: cadre.StatusDone})
	if w, ok := only[Deliver](acts); !ok || !w.Wake || w.Round != 1 {
		t.Fatalf("the child's end did not send the wake: %#v", acts)
	}
	if d, ok := parent.s.WakeOf(child); !ok || d.Round != 1 || d.Text != "look again" {
		t.Errorf("after the wake went out at the child's end: %+v, %v", d, ok)
	}
}
