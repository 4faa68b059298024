package loop

import (
	"testing"

	"github.com/cadre-ai/cadre"
)

// endConfig is a worker that ends as soon as a reply only reports.
func endConfig() Config {
	cfg := childConfig(cadre.ReportTool)
	cfg.EndOnReport = true
	return cfg
}

func TestEndOnReport(t *testing.T) {
	t.Run("a reply that only reports ends the child without another call", func(t *testing.T) {
		h := start(t, endConfig(), "task")
		acts := h.reply("", call("c1", ToolSendAgentMessage, `{"text":"the findings"}`))
		if n := len(find[CallModel](acts)); n != 0 {
			t.Fatalf("the child asked for %d more model calls, want none: %#v", n, acts)
		}
		f := mustFinish(t, acts)
		if f.Failed || f.Cancelled || f.Result != "the findings" {
			t.Fatalf("finish = %#v, want a success with the report as its result", f)
		}
		if rep := h.reports(); len(rep) != 1 || rep[0].Text != "the findings" || rep[0].To != cadre.RootID {
			t.Fatalf("reports = %#v, want the findings once, to root", rep)
		}
		if last := h.lastMessage(); last.Role != cadre.RoleTool || last.ToolCallID != "c1" {
			t.Fatalf("last message = %#v, want the send's result", last)
		}
		if !h.s.Done() || h.s.Turns() != 1 {
			t.Fatalf("done %v after %d turns, want done after 1", h.s.Done(), h.s.Turns())
		}
		if acts := h.reply("late"); acts != nil {
			t.Fatalf("a finished child stepped a model result: %#v", acts)
		}
	})
	t.Run("the report and a follow-up in one reply end it, each delivered once", func(t *testing.T) {
		h := start(t, endConfig(), "task")
		acts := h.reply("sending", call("c1", ToolSendAgentMessage, `{"text":"one"}`), call("c2", ToolSendAgentMessage, `{"text":"two","agentId":"root"}`))
		mustFinish(t, acts)
		ds := find[Deliver](acts)
		if len(ds) != 2 || !ds[0].Report || ds[0].Text != "one" || !ds[1].FollowUp || ds[1].Text != "two" {
			t.Fatalf("deliveries = %#v, want the report then a follow-up", ds)
		}
	})
	t.Run("a report after the nudge ends it", func(t *testing.T) {
		h := start(t, endConfig(), "task")
		h.reply("I am done")
		mustFinish(t, h.reply("", call("c1", ToolSendAgentMessage, `{"text":"late report"}`)))
		if rep := h.reports(); len(rep) != 1 || rep[0].Text != "late report" {
			t.Fatalf("reports = %#v", rep)
		}
	})
	keepsGoing := func(t *testing.T, h *harness, acts []Action) {
		t.Helper()
		if _, ok := only[Finish](acts); ok {
			t.Fatalf("the child ended: %#v", acts)
		}
		if h.s.Done() {
			t.Fatal("the child is done")
		}
	}
	t.Run("another tool in the reply keeps it going", func(t *testing.T) {
		h := start(t, endConfig(), "task")
		acts := h.reply("", call("c1", ToolSendAgentMessage, `{"text":"r"}`), call("c2", "read_file", `{"path":"x"}`))
		keepsGoing(t, h, acts)
		acts = h.step(ToolResults{Results: []ToolResult{{CallID: "c2", Content: "data"}}})
		if _, ok := only[CallModel](acts); !ok {
			t.Fatalf("want the next model call, got %#v", acts)
		}
	})
	t.Run("a message to another agent is not a report", func(t *testing.T) {
		h := start(t, endConfig(), "task")
		acts := h.reply("", call("c1", ToolSendAgentMessage, `{"text":"hi","agentId":"root/other.1"}`))
		keepsGoing(t, h, acts)
		if _, ok := only[CallModel](acts); !ok {
			t.Fatalf("want the next model call, got %#v", acts)
		}
	})
	t.Run("a report that fails the output schema is retried", func(t *testing.T) {
		cfg := endConfig()
		cfg.OutputSchema = []byte(`{"type":"object","required":["score"]}`)
		h := start(t, cfg, "task")
		keepsGoing(t, h, h.reply("", call("c1", ToolSendAgentMessage, `{"text":"not json"}`)))
		mustFinish(t, h.reply("", call("c2", ToolSendAgentMessage, `{"text":"{\"score\":1}"}`)))
		if rep := h.reports(); len(rep) != 1 || rep[0].Text != `{"score":1}` {
			t.Fatalf("reports = %#v", rep)
		}
	})
	t.Run("a message that came in during the call is read first", func(t *testing.T) {
		h := start(t, endConfig(), "task")
		h.step(InboxMessage{From: "root", Text: "also check y"})
		acts := h.reply("", call("c1", ToolSendAgentMessage, `{"text":"r"}`))
		keepsGoing(t, h, acts)
		if _, ok := only[CallModel](acts); !ok {
			t.Fatalf("want the next model call, got %#v", acts)
		}
	})
	t.Run("a child with live children waits for them", func(t *testing.T) {
		cfg := endConfig()
		cfg.Delegate = true
		cfg.Catalog = []CatalogEntry{{Name: "researcher"}}
		h := start(t, cfg, "task")
		acts := h.reply("", call("b1", ToolStartBackground, `{"prompt":"dig","agent":"researcher"}`))
		sp, ok := only[Spawn](acts)
		if !ok {
			t.Fatalf("want a Spawn, got %#v", acts)
		}
		h.step(Spawned{Ref: sp.Children[0].Ref, Child: sp.Children[0].ID})
		keepsGoing(t, h, h.reply("", call("c1", ToolSendAgentMessage, `{"text":"r"}`)))
	})
	t.Run("tag mode and the root are not affected", func(t *testing.T) {
		cfg := endConfig()
		cfg.Report = cadre.ReportTag
		h := start(t, cfg, "task")
		keepsGoing(t, h, h.reply("", call("c1", ToolSendAgentMessage, `{"text":"r"}`)))
		root := rootConfig()
		root.EndOnReport = true
		h = start(t, root, "task")
		keepsGoing(t, h, h.reply("", call("c1", ToolSendAgentMessage, `{"text":"r","agentId":"root/x.1"}`)))
	})
	t.Run("without the setting the child gets one more call", func(t *testing.T) {
		h := start(t, childConfig(cadre.ReportTool), "task")
		acts := h.reply("", call("c1", ToolSendAgentMessage, `{"text":"r"}`))
		keepsGoing(t, h, acts)
		if _, ok := only[CallModel](acts); !ok {
			t.Fatalf("want the next model call, got %#v", acts)
		}
	})
}
