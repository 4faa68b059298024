package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cadre-ai/cadre"
)

// eventText is what an event says to a person, in the three places the
// CLI shows events: a progress line of cadre run without the live tree
// (Progress), the part of a cadre runs show --follow line after the time
// and the agent (Log), and a note under the live tree (Note). An empty
// text leaves the event out of that place. Streamed text (model_delta) is
// not a line anywhere: the views that show it print it as it comes.
type eventText struct {
	Progress string
	Log      string
	Note     string
}

// describeEvent is the one place that puts events into words.
func describeEvent(ev cadre.Event) eventText {
	who := string(ev.Agent)
	var t eventText
	switch d := ev.Data.(type) {
	case cadre.RunStarted:
		t.Log = "run started: " + clipText(d.Task, 100)
	case cadre.RunCompleted:
		t.Log = "run completed: " + clipText(d.Answer, 100)
	case cadre.RunFailed:
		t.Log = fmt.Sprintf("run %s: %s", d.Status, clipText(d.Error, 150))
	case cadre.AgentStarted:
		t.Log = "started " + strings.TrimSpace(d.Definition+" "+d.Model)
	case cadre.AgentSpawned:
		t.Progress = fmt.Sprintf("%s ⇢ %s (%s, %s): %s", ev.Parent, ev.Agent, d.Definition, d.Mode, clipText(d.Task, 101))
		t.Log = fmt.Sprintf("spawned (%s): %s", strings.Trim(d.Definition+", "+d.Mode, ", "), clipText(d.Task, 100))
	case cadre.AgentQueued:
		t.Progress = fmt.Sprintf("%s queued (all %d slots busy)", who, d.MaxConcurrent)
		t.Log = fmt.Sprintf("queued: all %d slots are busy", d.MaxConcurrent)
	case cadre.ModelResponse:
		t.Log = "replied"
		if d.ToolCalls > 0 {
			t.Log += " with " + countText(d.ToolCalls, "tool call")
		}
		if s := clipText(d.Text, 100); s != "" {
			t.Log += ": " + s
		}
	case cadre.ToolCalled:
		t.Progress = fmt.Sprintf("%s → %s %s", who, d.Tool, clipText(d.Arguments, 101))
		t.Log = "→ " + d.Tool + " " + clipText(d.Arguments, 100)
	case cadre.ToolResult:
		t.Log = "← " + d.Tool
		if d.IsError {
			t.Progress = fmt.Sprintf("%s ✗ %s: %s", who, d.Tool, clipText(d.Content, 161))
			t.Log += " error"
		}
		t.Log += ": " + clipText(d.Content, 100)
	case cadre.AgentReported:
		t.Progress = fmt.Sprintf("%s ⇠ report from %s", who, d.Child)
		t.Log = "report from " + string(d.Child)
	case cadre.AgentNudged:
		t.Progress = who + " was reminded to report"
		t.Log = eventFields(ev)
	case cadre.AgentCompleted:
		if ev.Agent != cadre.RootID {
			t.Progress = who + " done"
		}
		t.Log = "done: " + clipText(d.Result, 100)
	case cadre.AgentFailed:
		t.Progress = fmt.Sprintf("%s failed: %s", who, clipText(d.Error, 201))
		t.Log = "failed: " + clipText(d.Error, 150)
		t.Note = t.Progress
	case cadre.AgentCancelled:
		t.Progress = fmt.Sprintf("%s cancelled: %s", who, d.Reason)
		t.Log = "cancelled: " + clipText(d.Reason, 150)
	case cadre.FindingReported:
		t.Progress = fmt.Sprintf("%s finding %s", who, d.Title)
		t.Log = "finding: " + d.Title
	case cadre.Todos:
		t.Progress = fmt.Sprintf("%s tasks %s", who, todoCount(d.Items))
		if now := todoNow(d.Items); now != "" {
			t.Progress += ": " + clipText(now, 100)
		}
		t.Log = "tasks " + todoCount(d.Items)
	case cadre.Say:
		t.Progress = fmt.Sprintf("%s: %s", who, d.Text)
		t.Log = "says: " + clipText(d.Text, 150)
		t.Note = clipText(d.Text, 201)
	case cadre.BudgetWarning:
		t.Progress = fmt.Sprintf("%s %s %s", who, ev.Type, payloadJSON(ev.Data))
		t.Log = eventFields(ev)
	case cadre.DepthLimit, cadre.AgentLimit, cadre.CycleDetected, cadre.BudgetExhausted, cadre.Warning:
		t.Progress = fmt.Sprintf("%s %s %s", who, ev.Type, payloadJSON(ev.Data))
		t.Log = eventFields(ev)
		msg := ""
		if w, ok := d.(cadre.Warning); ok {
			msg = w.Message
		}
		if msg == "" {
			msg = fmt.Sprint(payloadMap(ev.Data))
		}
		t.Note = fmt.Sprintf("%s %s: %s", who, ev.Type, clipText(msg, 201))
	case cadre.ToolRefused:
		t.Progress = fmt.Sprintf("%s ✗ %s refused: %s", who, d.Tool, clipText(d.Reason, 161))
		t.Log = fmt.Sprintf("refused %s: %s", d.Tool, clipText(d.Reason, 150))
		t.Note = t.Progress
	case cadre.TurnLimit:
		t.Progress = fmt.Sprintf("%s reached its turn limit (%d model calls) and is asked for its final answer", who, d.MaxTurns)
		t.Log = fmt.Sprintf("turn limit: %d model calls; asked for the final answer", d.MaxTurns)
		t.Note = t.Progress
	case cadre.RunContinued:
		t.Progress = "follow-up: " + clipText(d.Message, 150)
		t.Log = fmt.Sprintf("run continued (it had %s): %s", d.Previous, clipText(d.Message, 100))
	case cadre.AgentWoken:
		from := "the user"
		if d.From != "" {
			from = string(d.From)
		}
		if d.From != "" { // the user's follow-up is said by run_continued
			t.Progress = fmt.Sprintf("%s woken by %s: %s", who, from, clipText(d.Message, 120))
		}
		t.Log = fmt.Sprintf("woken by %s: %s", from, clipText(d.Message, 100))
	case cadre.Skipped:
		t.Progress = fmt.Sprintf("cadre: %s not shown here: the display fell behind the run", countText(d.Count, "event"))
		t.Log = eventFields(ev)
	default:
		t.Log = eventFields(ev)
	}
	return t
}

// logLine is an event as cadre runs show --follow prints it: the time,
// the agent, what happened.
func logLine(ev cadre.Event) string {
	who := string(ev.Agent)
	if who == "" {
		who = "-"
	}
	return fmt.Sprintf("%s  %-28s  %s", eventClock(ev.Time), who, strings.TrimRight(describeEvent(ev).Log, " :"))
}

// eventFields is the type of an event with its fields as JSON, for the
// events that have no words of their own.
func eventFields(ev cadre.Event) string {
	s := string(ev.Type)
	if m := payloadMap(ev.Data); len(m) > 0 {
		s += " " + clipText(payloadJSON(ev.Data), 150)
	}
	return s
}

// payloadJSON is a payload's fields as a JSON object with its keys in
// order, or null.
func payloadJSON(p cadre.Payload) string {
	if p == nil {
		return "null"
	}
	b, err := json.Marshal(p)
	if err != nil {
		return "null"
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal(b, &raw) != nil {
		return string(b)
	}
	if b, err = json.Marshal(raw); err != nil {
		return "null"
	}
	return string(b)
}

// payloadMap is a payload's fields as JSON would give them, numbers as
// written.
func payloadMap(p cadre.Payload) map[string]any {
	if p == nil {
		return nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil
	}
	return m
}

// eventClock is the time of day of an event, in the local zone.
func eventClock(t time.Time) string {
	if t.IsZero() {
		return "--:--:--"
	}
	return t.Local().Format("15:04:05")
}

// oneLineText folds a text's whitespace, newlines included, to single
// spaces.
func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }

// clipText folds s to one line and cuts it to n characters, the last of
// them an ellipsis when it was cut.
func clipText(s string, n int) string {
	s = oneLineText(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// todoCount says how far a task list is: "2 of 5 done".
func todoCount(items []cadre.Todo) string {
	done := 0
	for _, t := range items {
		if t.Status == "completed" {
			done++
		}
	}
	return fmt.Sprintf("%d of %d done", done, len(items))
}

// todoNow is what the agent is doing by its list: the first task in
// progress, as it reads while being done when the agent said.
func todoNow(items []cadre.Todo) string {
	for _, t := range items {
		if t.Status == "in_progress" {
			if t.ActiveForm != "" {
				return t.ActiveForm
			}
			return t.Content
		}
	}
	return ""
}

// todoMark shows a task's status.
func todoMark(status string) string {
	switch status {
	case "completed":
		return "[x]"
	case "in_progress":
		return "[>]"
	case "cancelled":
		return "[-]"
	}
	return "[ ]"
}
