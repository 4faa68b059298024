package temporaltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/enginetest"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/model/scripted"
	"github.com/cadre-ai/cadre/temporal"
)

// runLocal runs the task on the local engine built from the same setup,
// for the outcome the Temporal engine must have too.
func runLocal(t *testing.T, s setup, task string) (*cadre.Result, []cadre.Event) {
	t.Helper()
	e := local.New(local.Config{Models: local.OneModel{Name: "scripted", Model: s.Model}, Definitions: s.Definitions, Limits: s.Limits,
		Protocol: s.Protocol, Tools: s.Tools, RootDefinition: s.RootDefinition, Store: memstore.New()})
	return runToEnd(t, e, task)
}

// outcome is what two engines running one script must agree on: the
// answer, and each agent's end.
func outcome(res *cadre.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "status %s, answer %q, error %q\n", res.Status, res.Answer, res.Error)
	agents := slices.Clone(res.Agents)
	slices.SortFunc(agents, func(x, y cadre.AgentInfo) int { return strings.Compare(string(x.ID), string(y.ID)) })
	for _, a := range agents {
		fmt.Fprintf(&b, "%s (%s): %s, result %q, error %q\n", a.ID, a.Definition, a.Status, a.Result, a.Error)
	}
	return b.String()
}

// sameOutcome runs s on both engines and checks that they end alike. It
// returns the Temporal engine's run, its events and configuration.
func sameOutcome(t *testing.T, s setup, task string) (*cadre.Result, []cadre.Event, temporal.Config) {
	t.Helper()
	want, _ := runLocal(t, s, task)
	e, cfg := newEngine(t, s)
	got, evs := runToEnd(t, e, task)
	if g, w := outcome(got), outcome(want); g != w {
		t.Errorf("the Temporal engine's run:\n%s\ndiffers from the local engine's:\n%s", g, w)
	}
	return got, evs, cfg
}

// lastTool is the content of the request's last tool result, or "".
func lastTool(req *cadre.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == cadre.RoleTool {
			return m.Content
		}
	}
	return ""
}

// toolResults are the contents of the request's tool results, in order.
func toolResults(req *cadre.Request) []string {
	var out []string
	for _, m := range req.Messages {
		if m.Role == cadre.RoleTool {
			out = append(out, m.Content)
		}
	}
	return out
}

// ofType returns the events of type typ.
func ofType(evs []cadre.Event, typ cadre.EventType) []cadre.Event {
	var out []cadre.Event
	for _, ev := range evs {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// The root onboards a reviewer, which asks one question; once it is
// ready, the root calls the handle twice, and each call's child starts
// with the question and its answer.
func TestScenarioOnboarding(t *testing.T) {
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		all, last := allText(req), lastTool(req)
		switch scripted.DefinitionName(req.Agent) {
		case "root":
			switch {
			case req.Turn == 1:
				return calls(tc("o", loop.ToolOnboard, map[string]string{"agent": "reviewer", "context": "Review PR 7"})), nil
			case strings.Contains(last, `"question":"Which language?"`):
				return calls(tc("r", loop.ToolOnboardReply, map[string]string{"handle": "onboard-1", "answer": "Go"})), nil
			case strings.Contains(last, `"ready":true`):
				return calls(tc("c1", loop.ToolCallAgent, map[string]string{"handle": "onboard-1", "input": "review a.go"})), nil
			case last == "a.go reviewed in Go":
				return calls(tc("c2", loop.ToolCallAgent, map[string]string{"handle": "onboard-1", "input": "review b.go"})), nil
			case last == "b.go reviewed in Go" && strings.Contains(all, "a.go reviewed in Go"):
				return text("a.go and b.go reviewed"), nil
			}
			return text("lost at: " + last), nil
		case "reviewer":
			if strings.Contains(all, "Onboarding:\nQ: Which language?\nA: Go") {
				if req.Turn > 1 {
					return text("sent"), nil
				}
				file := "b.go"
				if strings.Contains(all, "review a.go") {
					file = "a.go"
				}
				return calls(tc("s", loop.ToolSendAgentMessage, map[string]string{"text": file + " reviewed in Go"})), nil
			}
			if req.Turn == 1 {
				return calls(tc("q", loop.ToolAskCaller, map[string]string{"question": "Which language?"})), nil
			}
			return text("I am ready."), nil
		}
		return nil, fmt.Errorf("no reply for %s", req.Agent)
	})
	res, evs, cfg := sameOutcome(t, setup{Model: m, Definitions: defs("reviewer")}, "review PR 7")
	if res.Answer != "a.go and b.go reviewed" || len(res.Agents) != 4 {
		t.Errorf("answer %q, %d agents", res.Answer, len(res.Agents))
	}
	a := ofType(evs, cadre.EventOnboardAnswer)
	if len(a) != 1 {
		t.Fatalf("%d onboarding_answer events, want 1", len(a))
	}
	if d, ok := a[0].Data.(cadre.OnboardAnswer); !ok || d.Handle != "onboard-1" || d.Question != "Which language?" || d.Answer != "Go" {
		t.Errorf("onboarding_answer %+v", a[0].Data)
	}
	reportsOnce(t, res, evs)
	replayAll(t, cfg.Client, "onboarding", res)
}

// A child asks its parent a question; the parent answers it with
// answer_agent, waits for it, and gets its report.
func TestScenarioAskCaller(t *testing.T) {
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		all, last := allText(req), lastTool(req)
		switch scripted.DefinitionName(req.Agent) {
		case "root":
			var asked struct {
				AgentID  string `json:"agentId"`
				Question string `json:"question"`
			}
			_ = json.Unmarshal([]byte(last), &asked)
			switch {
			case req.Turn == 1:
				return calls(tc("s", loop.ToolSpawnAgent, map[string]string{"agent": "asker", "task": "count the apples"})), nil
			case strings.Contains(all, "3 red apples"):
				return text("the child counted 3 red apples"), nil
			case asked.Question == "Red or green?":
				return calls(tc("a", loop.ToolAnswerAgent, map[string]string{"agentId": asked.AgentID, "answer": "red"})), nil
			case strings.Contains(last, "Your answer was delivered"):
				return calls(tc("w", loop.ToolWaitAgent, map[string]string{"agentId": "root/asker.1"})), nil
			}
			return text("lost at: " + last), nil
		case "asker":
			switch req.Turn {
			case 1:
				return calls(tc("q", loop.ToolAskCaller, map[string]string{"question": "Red or green?"})), nil
			case 2:
				return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "3 " + last + " apples"})), nil
			}
			return text("reported"), nil
		}
		return nil, fmt.Errorf("no reply for %s", req.Agent)
	})
	d := defs("asker")
	d[0].AskCaller = true
	res, evs, cfg := sameOutcome(t, setup{Model: m, Definitions: d}, "how many apples?")
	if res.Answer != "the child counted 3 red apples" || len(res.Agents) != 2 {
		t.Errorf("answer %q, %d agents", res.Answer, len(res.Agents))
	}
	q, a := ofType(evs, cadre.EventQuestion), ofType(evs, cadre.EventAnswer)
	if len(a) != 1 {
		t.Fatalf("%d agent_answer events, want 1", len(a))
	}
	if d, ok := a[0].Data.(cadre.Answer); !ok || d.Child != "root/asker.1" || d.Question != "Red or green?" || d.Answer != "red" {
		t.Errorf("agent_answer %+v", a[0].Data)
	}
	// The child tells of its question, and its parent of receiving it.
	if len(q) != 2 {
		t.Errorf("%d agent_question events, want 2", len(q))
	}
	reportsOnce(t, res, evs)
	replayAll(t, cfg.Client, "askcaller", res)
}

// A root's question, with no one to answer it (AnswerQuestions false), is
// answered at once with an error telling the agent to go on.
func TestScenarioRootAskCaller(t *testing.T) {
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Turn == 1 {
			return calls(tc("q", loop.ToolAskCaller, map[string]string{"question": "Which year?"})), nil
		}
		return text("went on: " + lastTool(req)), nil
	})
	root := defs("asker")[0]
	root.AskCaller = true
	res, evs, cfg := sameOutcome(t, setup{Model: m, RootDefinition: root}, "ask me")
	want := "went on: Error: no answer: there is no one to ask: the run has no terminal for questions. Go on with what you know and say in your report what you assumed."
	if res.Answer != want {
		t.Errorf("answer %q\nwant %q", res.Answer, want)
	}
	if q := ofType(evs, cadre.EventQuestion); len(q) != 1 {
		t.Errorf("%d agent_question events, want 1", len(q))
	}
	reportsOnce(t, res, evs)
	replayAll(t, cfg.Client, "rootask", res)
}

// block is a tool that returns only when its call is cancelled.
type block struct{}

func (block) Spec() cadre.ToolSpec {
	return cadre.ToolSpec{Name: "block", Description: "Waits.", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (block) Call(ctx context.Context, args json.RawMessage) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
}

// Two children with an inactivity limit of 2s fail at it, as on the local
// engine: one whose model call never answers (the call gives up by
// itself), one whose tool never returns (a timer of the workflow fires).
// Their parent gets the errors and goes on.
func TestScenarioInactivity(t *testing.T) {
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch scripted.DefinitionName(req.Agent) {
		case "root":
			if req.Turn == 1 {
				return calls(tc("h", loop.ToolSpawnAgent, map[string]string{"agent": "hang", "task": "wait for the model"}),
					tc("s", loop.ToolSpawnAgent, map[string]string{"agent": "stuck", "task": "wait for the tool"})), nil
			}
			return text("parent got: " + strings.Join(toolResults(req), " | ")), nil
		case "hang":
			<-ctx.Done()
			return nil, ctx.Err()
		case "stuck":
			if req.Turn == 1 {
				return calls(tc("b", "block", nil)), nil
			}
			return text("the tool returned"), nil
		}
		return nil, fmt.Errorf("no reply for %s", req.Agent)
	})
	d := defs("hang", "stuck")
	for _, x := range d {
		x.Timeout = 2 * time.Second
	}
	res, evs, cfg := sameOutcome(t, setup{Model: m, Definitions: d, Tools: []cadre.Tool{block{}}}, "wait")
	const timedOut = "timed out: no activity for 2s"
	if want := "parent got: Error: " + timedOut + " | Error: " + timedOut; res.Answer != want {
		t.Errorf("answer %q\nwant %q", res.Answer, want)
	}
	failed := ofType(evs, cadre.EventAgentFailed)
	if len(failed) != 2 {
		t.Fatalf("%d agent_failed events, want 2", len(failed))
	}
	for _, ev := range failed {
		if d, ok := ev.Data.(cadre.AgentFailed); !ok || d.Error != timedOut {
			t.Errorf("agent_failed of %s: %+v", ev.Agent, ev.Data)
		}
	}
	fired := func(agent cadre.AgentID) int {
		n := 0
		for _, ev := range history(t, cfg.Client, temporal.AgentWorkflowID(res.RunID, agent)).GetEvents() {
			if ev.GetEventType() == enumspb.EVENT_TYPE_TIMER_FIRED {
				n++
			}
		}
		return n
	}
	// The tool's limit is the workflow's timer; the model call keeps its
	// own.
	if n := fired("root/stuck.1"); n != 1 {
		t.Errorf("%d timers fired in the history of the child whose tool hung, want 1", n)
	}
	if n := fired("root/hang.1"); n != 0 {
		t.Errorf("%d timers fired in the history of the child whose model hung, want 0", n)
	}
	reportsOnce(t, res, evs)
	replayAll(t, cfg.Client, "inactivity", res)
}

// finish waits for a started run and returns its result and events.
func finish(t *testing.T, e cadre.Engine, id string) (*cadre.Result, []cadre.Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), enginetest.Timeout)
	defer cancel()
	res, err := e.Wait(ctx, id)
	if ctx.Err() != nil {
		t.Fatalf("run %s did not end within %s", id, enginetest.Timeout)
	}
	if err != nil {
		t.Fatalf("run %s: %v", id, err)
	}
	var evs []cadre.Event
	for ev, err := range e.Events(ctx, id) {
		if err != nil {
			t.Fatalf("events: %v", err)
		}
		evs = append(evs, ev)
	}
	return res, evs
}

// A root's question waits for Engine.Answer when the engine takes answers
// (AnswerQuestions on Temporal, AskUser locally), and the agent goes on
// with the answer, on both engines alike.
func TestScenarioRootAnswered(t *testing.T) {
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Turn == 1 {
			return calls(tc("q", loop.ToolAskCaller, map[string]string{"question": "Which year?"})), nil
		}
		return text("the year is " + lastTool(req)), nil
	})
	root := defs("asker")[0]
	root.AskCaller = true
	const task = "which year?"

	// The local engine: the question is pending once AskUser is called.
	asked := make(chan struct{})
	le := local.New(local.Config{Models: local.OneModel{Name: "scripted", Model: m}, RootDefinition: root, Store: memstore.New(),
		AskUser: func(ctx context.Context, agent cadre.AgentID, q string) (string, error) {
			close(asked)
			return local.AwaitAnswer(ctx, agent, q)
		}})
	lid, err := le.Start(t.Context(), task, cadre.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-asked
	if err := le.Answer(t.Context(), lid, cadre.RootID, "1969"); err != nil {
		t.Fatalf("local Answer: %v", err)
	}
	want, _ := finish(t, le, lid)

	// Temporal: the question is pending once its event is stored, since
	// the query that Answer makes sees the workflow as of its last task,
	// the one that wrote the event.
	e, cfg := newEngine(t, setup{Model: m, RootDefinition: root, AnswerQuestions: true})
	id, err := e.Start(t.Context(), task, cadre.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for ev, err := range e.Events(t.Context(), id) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == cadre.EventQuestion {
			break
		}
	}
	if err := e.Answer(t.Context(), id, cadre.RootID, "1969"); err != nil {
		t.Fatalf("Answer: %v", err)
	}
	got, evs := finish(t, e, id)
	if err := e.Answer(t.Context(), id, cadre.RootID, "1970"); !errors.Is(err, cadre.ErrNoQuestion) {
		t.Errorf("Answer after the run: %v, want cadre.ErrNoQuestion", err)
	}
	if g, w := outcome(got), outcome(want); g != w {
		t.Errorf("the Temporal engine's run:\n%s\ndiffers from the local engine's:\n%s", g, w)
	}
	if got.Answer != "the year is 1969" {
		t.Errorf("answer %q", got.Answer)
	}
	if a := ofType(evs, cadre.EventAnswer); len(a) != 1 || a[0].Data != (cadre.Answer{Question: "Which year?", Answer: "1969", From: "user"}) {
		t.Errorf("agent_answer events %+v", a)
	}
	reportsOnce(t, got, evs)
	replayAll(t, cfg.Client, "rootanswered", got)
}

// More children than one call builds start from one reply, each with the
// task it was given.
func TestScenarioManyChildren(t *testing.T) {
	const n = 40
	e, cfg := newEngine(t, setup{Model: fanOut(n, 0), Definitions: defs("worker"), Limits: cadre.Limits{MaxAgents: n + 1}})
	res, evs := runToEnd(t, e, "fan out")
	if res.Answer != "done" || len(res.Agents) != n+1 {
		t.Fatalf("answer %q, %d agents", res.Answer, len(res.Agents))
	}
	for _, a := range res.Agents {
		if a.ID == cadre.RootID {
			continue
		}
		var i int
		if _, err := fmt.Sscanf(string(a.ID), "root/worker.%d", &i); err != nil || a.Task != fmt.Sprint("part ", i-1) || a.Status != cadre.StatusDone {
			t.Errorf("%s: task %q, %s", a.ID, a.Task, a.Status)
		}
	}
	reportsOnce(t, res, evs)
	replayAll(t, cfg.Client, "many", res)
}
