package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/memstore"
)

// TestDescribeEvent pins what each event says in the three places the CLI
// shows events.
func TestDescribeEvent(t *testing.T) {
	child := cadre.AgentID("root/researcher.1")
	long := strings.Repeat("word ", 60)
	for _, tc := range []struct {
		name  string
		agent cadre.AgentID
		data  cadre.Payload
		want  eventText
	}{
		{"run started", "", cadre.RunStarted{Task: "Count\nthe files", Model: "m"}, eventText{Log: "run started: Count the files"}},
		{"run completed", "", cadre.RunCompleted{Answer: "42"}, eventText{Log: "run completed: 42"}},
		{"run failed", "", cadre.RunFailed{Status: cadre.StatusCancelled, Error: "interrupted"}, eventText{Log: "run cancelled: interrupted"}},
		{"agent started", cadre.RootID, cadre.AgentStarted{Definition: "default", Model: "openai:gpt-4o-mini"}, eventText{Log: "started default openai:gpt-4o-mini"}},
		{"spawned", child, cadre.AgentSpawned{Definition: "researcher", Mode: "sync", Task: "Find it"},
			eventText{Progress: "root ⇢ root/researcher.1 (researcher, sync): Find it", Log: "spawned (researcher, sync): Find it"}},
		{"queued", child, cadre.AgentQueued{MaxConcurrent: 4}, eventText{Progress: "root/researcher.1 queued (all 4 slots busy)", Log: "queued: all 4 slots are busy"}},
		{"model response", cadre.RootID, cadre.ModelResponse{ToolCalls: 2, Text: "Let me look."}, eventText{Log: "replied with 2 tool calls: Let me look."}},
		{"tool called", cadre.RootID, cadre.ToolCalled{Tool: "read_file", Arguments: `{"path":"a"}`},
			eventText{Progress: `root → read_file {"path":"a"}`, Log: `→ read_file {"path":"a"}`}},
		{"tool result", cadre.RootID, cadre.ToolResult{Tool: "read_file", Content: "text"}, eventText{Log: "← read_file: text"}},
		{"tool error", cadre.RootID, cadre.ToolResult{Tool: "read_file", IsError: true, Content: "no such file"},
			eventText{Progress: "root ✗ read_file: no such file", Log: "← read_file error: no such file"}},
		{"reported", cadre.RootID, cadre.AgentReported{Child: child, Text: "done"}, eventText{Progress: "root ⇠ report from root/researcher.1", Log: "report from root/researcher.1"}},
		{"nudged", child, cadre.AgentNudged{Text: "Report."}, eventText{Progress: "root/researcher.1 was reminded to report", Log: `agent_nudged {"text":"Report."}`}},
		{"child completed", child, cadre.AgentCompleted{Result: "found"}, eventText{Progress: "root/researcher.1 done", Log: "done: found"}},
		{"root completed", cadre.RootID, cadre.AgentCompleted{Result: "found"}, eventText{Log: "done: found"}},
		{"failed", child, cadre.AgentFailed{Error: "boom"}, eventText{Progress: "root/researcher.1 failed: boom", Log: "failed: boom", Note: "root/researcher.1 failed: boom"}},
		{"cancelled", child, cadre.AgentCancelled{Reason: "not needed"}, eventText{Progress: "root/researcher.1 cancelled: not needed", Log: "cancelled: not needed"}},
		{"finding", child, cadre.FindingReported{Title: "subagent:researcher", Content: "c"}, eventText{Progress: "root/researcher.1 finding subagent:researcher", Log: "finding: subagent:researcher"}},
		{"say", cadre.RootID, cadre.Say{Text: "Working on it."}, eventText{Progress: "root: Working on it.", Log: "says: Working on it.", Note: "Working on it."}},
		{"budget warning", cadre.RootID, cadre.BudgetWarning{Used: 800, Budget: 1000, Percent: 80},
			eventText{Progress: `root budget_warning {"budget":1000,"percent":80,"used":800}`, Log: `budget_warning {"budget":1000,"percent":80,"used":800}`}},
		{"budget exhausted", cadre.RootID, cadre.BudgetExhausted{Used: 1_000_000, Budget: 1_000_000},
			eventText{Progress: `root budget_exhausted {"budget":1000000,"used":1000000}`, Log: `budget_exhausted {"budget":1000000,"used":1000000}`,
				Note: "root budget_exhausted: map[budget:1000000 used:1000000]"}},
		{"depth limit", child, cadre.DepthLimit{AttemptedDepth: 4, MaxDepth: 3, Tasks: 2},
			eventText{Progress: `root/researcher.1 depth_limit {"attempted_depth":4,"max_depth":3,"tasks":2}`, Log: `depth_limit {"attempted_depth":4,"max_depth":3,"tasks":2}`,
				Note: "root/researcher.1 depth_limit: map[attempted_depth:4 max_depth:3 tasks:2]"}},
		{"warning", cadre.RootID, cadre.Warning{Message: "no such model", Child: child},
			eventText{Progress: `root warning {"child":"root/researcher.1","message":"no such model"}`, Log: `warning {"child":"root/researcher.1","message":"no such model"}`,
				Note: "root warning: no such model"}},
		{"long text is clipped", child, cadre.AgentFailed{Error: long},
			eventText{Progress: "root/researcher.1 failed: " + strings.TrimSpace(long)[:200] + "…", Log: "failed: " + strings.TrimSpace(long)[:149] + "…",
				Note: "root/researcher.1 failed: " + strings.TrimSpace(long)[:200] + "…"}},
		{"skipped", "", cadre.Skipped{Count: 3, AfterSeq: 4, ToSeq: 6},
			eventText{Progress: "cadre: 3 events not shown here: the display fell behind the run", Log: `events_skipped {"after_seq":4,"count":3,"to_seq":6}`}},
		{"unknown", cadre.RootID, cadre.RawPayload{Type: "later"}, eventText{Log: "later"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := cadre.NewEvent(tc.data)
			ev.Agent, ev.Parent, ev.Run = tc.agent, tc.agent.Parent(), "r"
			if d := cmp.Diff(tc.want, describeEvent(ev)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestLogLine(t *testing.T) {
	at := time.Date(2025, 3, 20, 9, 0, 5, 0, time.Local)
	ev := cadre.Event{Type: cadre.EventAgentCompleted, Time: at, Agent: cadre.RootID, Data: cadre.AgentCompleted{}}
	if got, want := logLine(ev), "09:00:05  root                          done"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	ev = cadre.Event{Type: cadre.EventRunStarted, Data: cadre.RunStarted{Task: "t"}}
	if got, want := logLine(ev), "--:--:--  -                             run started: t"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestClipText(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"  spread \n over\tlines ", 40, "spread over lines"},
		{"exactly ten", 11, "exactly ten"},
		{"one too long", 11, "one too lo…"},
		{"ünïcødé ünïcødé", 8, "ünïcødé…"},
	} {
		if got := clipText(tc.in, tc.n); got != tc.want {
			t.Errorf("clipText(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// eventsOnly is an engine whose only part that works is Events.
type eventsOnly struct {
	cadre.Engine
	evs []cadre.Event
}

func (e eventsOnly) Events(context.Context, string) iter.Seq2[cadre.Event, error] {
	return func(yield func(cadre.Event, error) bool) {
		for _, ev := range e.evs {
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// When the display fell behind, the events the store kept are shown in
// place of the marker; without a store the marker itself is.
func TestShowEventsFillsGaps(t *testing.T) {
	ctx := t.Context()
	mem := memstore.New()
	if err := mem.CreateRun(ctx, &cadre.RunRecord{ID: "r", Task: "t", Status: cadre.StatusRunning, Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var all []cadre.Event
	for i := range 6 {
		all = append(all, cadre.Event{Type: cadre.EventSay, Run: "r", Agent: cadre.RootID, Time: time.Now(), Data: cadre.Say{Text: string(rune('a' + i))}})
	}
	if err := mem.AppendEvents(ctx, all); err != nil {
		t.Fatal(err)
	}
	skip := cadre.NewEvent(cadre.Skipped{Count: 4, AfterSeq: 1, ToSeq: 4})
	skip.Run = "r"
	onlyDeltas := cadre.NewEvent(cadre.Skipped{Count: 2, AfterSeq: 5})
	stream := []cadre.Event{all[0], skip, all[4], onlyDeltas, all[5]}

	show := func(store cadre.Store) []string {
		var got []string
		<-showEvents(eventsOnly{evs: stream}, store, "r", func(ev cadre.Event) {
			switch d := ev.Data.(type) {
			case cadre.Say:
				got = append(got, d.Text)
			case cadre.Skipped:
				got = append(got, "skipped")
			}
		})
		return got
	}
	if d := cmp.Diff([]string{"a", "b", "c", "d", "e", "f"}, show(mem)); d != "" {
		t.Errorf("with a store (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"a", "skipped", "e", "f"}, show(nil)); d != "" {
		t.Errorf("without a store (-want +got):\n%s", d)
	}
}

// An event is the same bytes wherever cadre writes it: a line of run
// --json, the store (read back by runs show --follow --json), and runs
// export, where it is indented like the rest of the document.
func TestOneEventEncoding(t *testing.T) {
	dir, model := scriptedProject(t, fruitScript)
	home := t.TempDir()
	run := runCadre(t, dir, home, "run", "--json", "--approve", "none", "-m", model, "Count the fruit")
	if run.code != 0 {
		t.Fatalf("cadre run exited %d: %s", run.code, run.stderr)
	}
	lines := strings.Split(strings.TrimSpace(run.stdout), "\n")
	if len(lines) < 10 {
		t.Fatalf("cadre run --json wrote %d lines:\n%s", len(lines), run.stdout)
	}
	follow := runCadre(t, dir, home, "runs", "show", "--follow", "--json", "last")
	if follow.code != 0 {
		t.Fatalf("cadre runs show --follow --json exited %d: %s", follow.code, follow.stderr)
	}
	if d := cmp.Diff(lines, strings.Split(strings.TrimSpace(follow.stdout), "\n")); d != "" {
		t.Errorf("run --json and the stored events differ (-run +stored):\n%s", d)
	}
	export := runCadre(t, dir, home, "runs", "export", "last")
	if export.code != 0 {
		t.Fatalf("cadre runs export exited %d: %s", export.code, export.stderr)
	}
	var x struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal([]byte(export.stdout), &x); err != nil {
		t.Fatal(err)
	}
	var exported []string
	for _, ev := range x.Events {
		var b bytes.Buffer
		if err := json.Compact(&b, ev); err != nil {
			t.Fatal(err)
		}
		exported = append(exported, b.String())
	}
	if d := cmp.Diff(lines, exported); d != "" {
		t.Errorf("run --json and runs export differ (-run +export):\n%s", d)
	}
	for _, l := range lines {
		var ev cadre.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Seq == 0 || ev.Data == nil {
			t.Errorf("line %s: seq %d, payload %T, %v", l, ev.Seq, ev.Data, err)
		}
	}
}

// What a model writes reaches the terminal without control characters:
// an escape sequence in a task list, a say block or the streamed answer
// cannot move the cursor, retitle the window or write the clipboard.
func TestRendererDropsControlCharacters(t *testing.T) {
	var out bytes.Buffer
	r := newRenderer(&out, true)
	evil := "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\rfine"
	r.handle(cadre.Event{Type: cadre.EventTodos, Agent: "root/a.1", Data: cadre.Todos{Items: []cadre.Todo{{Content: evil, Status: "in_progress"}}}})
	r.handle(cadre.Event{Type: cadre.EventSay, Agent: "root/a.1", Data: cadre.Say{Text: evil}})
	r.handle(cadre.Event{Type: cadre.EventModelDelta, Agent: cadre.RootID, Data: cadre.ModelDelta{Text: "line one\n" + evil}})
	got := out.String()
	if strings.ContainsAny(got, "\x1b\x07\r") {
		t.Errorf("control characters reached the terminal: %q", got)
	}
	if strings.Count(got, "fine") != 3 || !strings.Contains(got, "line one\n") {
		t.Errorf("the text itself was lost: %q", got)
	}
}
