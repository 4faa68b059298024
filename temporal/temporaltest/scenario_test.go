package temporaltest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/enginetest"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/model/scripted"
	"github.com/cadre-ai/cadre/temporal"
)

func defs(names ...string) []*cadre.Definition {
	var out []*cadre.Definition
	for _, n := range names {
		out = append(out, &cadre.Definition{Name: n, Description: "The " + n + " agent.", Prompt: "You are " + n + ".", Visibility: cadre.VisibilityUserFacing})
	}
	return out
}

func text(s string) *cadre.Response {
	return &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: s}, Usage: cadre.Usage{InputTokens: 10, OutputTokens: 5}}
}

func tc(id, tool string, args map[string]string) cadre.ToolCall {
	b, _ := json.Marshal(args)
	return cadre.ToolCall{ID: id, Name: tool, Arguments: string(b)}
}

func calls(cs ...cadre.ToolCall) *cadre.Response {
	return &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, ToolCalls: cs}, Usage: cadre.Usage{InputTokens: 10, OutputTokens: 5}}
}

// allText is every message of a request, joined.
func allText(req *cadre.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		b.WriteString(m.Content)
		b.WriteString("\n")
	}
	return b.String()
}

// runToEnd starts a run and waits for it, with the suite's failsafe, and
// returns its result and its stored events.
func runToEnd(t *testing.T, e cadre.Engine, task string) (*cadre.Result, []cadre.Event) {
	t.Helper()
	id, err := e.Start(t.Context(), task, cadre.StartOptions{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return finish(t, e, id)
}

// reportsOnce checks that each child's report reached its parent once.
func reportsOnce(t *testing.T, res *cadre.Result, evs []cadre.Event) {
	t.Helper()
	n := map[cadre.AgentID]int{}
	for _, ev := range evs {
		if r, ok := ev.Data.(cadre.AgentReported); ok {
			n[r.Child]++
		}
	}
	for _, a := range res.Agents {
		if a.ID != cadre.RootID && n[a.ID] != 1 {
			t.Errorf("the report of %s reached its parent %d times, want once", a.ID, n[a.ID])
		}
	}
}

// history returns the history of the latest run of a workflow.
func history(t *testing.T, c client.Client, wid string) *historypb.History {
	t.Helper()
	it := c.GetWorkflowHistory(t.Context(), wid, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", wid, err)
		}
		h.Events = append(h.Events, ev)
	}
	return h
}

// recordEnv, when set, makes the scenario tests write the histories of
// their workflows as the replay test's fixtures:
//
//	CADRE_RECORD_HISTORIES=1 go test -run TestScenario ./...
const recordEnv = "CADRE_RECORD_HISTORIES"

// replayAll replays the histories of the run's workflows against the
// workflow code, and records them as fixtures when asked to.
func replayAll(t *testing.T, c client.Client, name string, res *cadre.Result) {
	t.Helper()
	r, err := temporal.NewReplayer()
	if err != nil {
		t.Fatal(err)
	}
	wids := []string{temporal.RunWorkflowID(res.RunID)}
	for _, a := range res.Agents {
		wids = append(wids, temporal.AgentWorkflowID(res.RunID, a.ID))
	}
	for i, wid := range wids {
		h := history(t, c, wid)
		if err := r.ReplayWorkflowHistory(nil, h); err != nil {
			t.Errorf("replay of %s: %v", wid, err)
		}
		if os.Getenv(recordEnv) != "" {
			b, err := protojson.MarshalOptions{Indent: " "}.Marshal(h)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join("testdata", "histories", fmt.Sprintf("%s-%d.json", name, i))
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Background agents report to an idle root, which wakes for each report
// and answers with both.
func TestScenarioBackground(t *testing.T) {
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch scripted.DefinitionName(req.Agent) {
		case "root":
			all := allText(req)
			switch {
			case req.Turn == 1:
				return calls(tc("a", loop.ToolStartBackground, map[string]string{"agent": "worker", "prompt": "find the apples"}),
					tc("b", loop.ToolStartBackground, map[string]string{"agent": "worker", "prompt": "find the pears"})), nil
			case strings.Contains(all, "found apples") && strings.Contains(all, "found pears"):
				return text("both found"), nil
			}
			return text("waiting for the other"), nil
		case "worker":
			if req.Turn == 1 {
				what := "pears"
				if strings.Contains(allText(req), "apples") {
					what = "apples"
				}
				return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "found " + what})), nil
			}
			return text("reported"), nil
		}
		return nil, fmt.Errorf("no reply for %s", req.Agent)
	})
	e, cfg := newEngine(t, setup{Model: m, Definitions: defs("worker")})
	res, evs := runToEnd(t, e, "find the fruit")
	if res.Answer != "both found" || len(res.Agents) != 3 {
		t.Errorf("answer %q, %d agents", res.Answer, len(res.Agents))
	}
	reportsOnce(t, res, evs)
	replayAll(t, cfg.Client, "background", res)
}

// On the text protocol the root starts three generic subagents with a
// <spawn_agents> block and gets their three results.
func TestScenarioTextProtocol(t *testing.T) {
	var mu sync.Mutex
	var second string
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if len(req.Tools) > 0 {
			return nil, fmt.Errorf("%s was offered tools on the text protocol", req.Agent)
		}
		if req.Agent == cadre.RootID {
			if req.Turn == 1 {
				return text("Three parts.\n<spawn_agents mode=\"parallel\">\n  <agent task=\"part one\" />\n  <agent task=\"part two\" />\n  <agent task=\"part three\" />\n</spawn_agents>"), nil
			}
			mu.Lock()
			second = allText(req)
			mu.Unlock()
			return text("all parts done"), nil
		}
		all := allText(req)
		for _, p := range []string{"one", "two", "three"} {
			if strings.Contains(all, "part "+p) {
				return text("<response>" + p + " is done</response>"), nil
			}
		}
		return nil, fmt.Errorf("no part for %s", req.Agent)
	})
	e, cfg := newEngine(t, setup{Model: m, Protocol: cadre.ProtocolText})
	res, evs := runToEnd(t, e, "do the three parts")
	if res.Answer != "all parts done" || len(res.Agents) != 4 {
		t.Errorf("answer %q, %d agents", res.Answer, len(res.Agents))
	}
	for _, p := range []string{"one is done", "two is done", "three is done"} {
		if !strings.Contains(second, p) {
			t.Errorf("the root's second call lacks %q:\n%s", p, second)
		}
	}
	reportsOnce(t, res, evs)
	replayAll(t, cfg.Client, "textproto", res)
}

// The agent limit holds for the run: with room for one child, the second
// of two asked for in one reply is refused in words the model reads.
func TestScenarioAgentLimit(t *testing.T) {
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch scripted.DefinitionName(req.Agent) {
		case "root":
			if req.Turn == 1 {
				return calls(tc("a", loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": "first"}),
					tc("b", loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": "second"})), nil
			}
			if strings.Contains(allText(req), "agent limit reached") {
				return text("one refused"), nil
			}
			return text("no refusal"), nil
		case "worker":
			if req.Turn == 1 {
				return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "done"})), nil
			}
			return text("ok"), nil
		}
		return nil, fmt.Errorf("no reply for %s", req.Agent)
	})
	e, _ := newEngine(t, setup{Model: m, Definitions: defs("worker"), Limits: cadre.Limits{MaxAgents: 2}})
	res, evs := runToEnd(t, e, "two workers")
	if res.Answer != "one refused" || len(res.Agents) != 2 {
		t.Errorf("answer %q, %d agents", res.Answer, len(res.Agents))
	}
	n := 0
	for _, ev := range evs {
		if ev.Type == cadre.EventAgentLimit {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d agent_limit events, want 1", n)
	}
}

// An agent whose history passes the limit continues as new with its state:
// the root delegates eight times in turn, and its last call sees every
// report.
func TestScenarioContinueAsNew(t *testing.T) {
	const steps = 8
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch scripted.DefinitionName(req.Agent) {
		case "root":
			if req.Turn <= steps {
				return calls(tc(fmt.Sprint("s", req.Turn), loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": fmt.Sprint("step ", req.Turn)})), nil
			}
			all := allText(req)
			for i := 1; i <= steps; i++ {
				if !strings.Contains(all, fmt.Sprintf("did step %d", i)) {
					return text(fmt.Sprintf("lost step %d", i)), nil
				}
			}
			return text("all steps seen"), nil
		case "worker":
			if req.Turn == 1 {
				return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "did " + req.Messages[len(req.Messages)-1].Content})), nil
			}
			return text("ok"), nil
		}
		return nil, fmt.Errorf("no reply for %s", req.Agent)
	})
	e, cfg := newEngine(t, setup{Model: m, Definitions: defs("worker"), HistoryLimit: 40})
	res, evs := runToEnd(t, e, "step by step")
	if res.Answer != "all steps seen" || len(res.Agents) != steps+1 {
		t.Errorf("answer %q, %d agents", res.Answer, len(res.Agents))
	}
	reportsOnce(t, res, evs)
	if !continued(t, cfg.Client, temporal.AgentWorkflowID(res.RunID, cadre.RootID)) {
		t.Errorf("the root's workflow never continued as new (history limit 40)")
	}
	replayAll(t, cfg.Client, "continue", res)
}

// The run's workflow, through which every agent asks for its limits,
// continues as new when its history passes the limit, carrying the limits'
// counts and the slots held and asked for: twelve background workers ask
// for two slots at a time, one of them is refused by the agent limit, and
// the run ends with the root's answer although the workflow run that
// started the root has closed.
func TestScenarioRunContinuesAsNew(t *testing.T) {
	const n = 12
	e, cfg := newEngine(t, setup{Model: fanOut(n, 0), Definitions: defs("worker"), HistoryLimit: 60,
		Limits: cadre.Limits{MaxAgents: n, MaxConcurrent: 2}})
	res, evs := runToEnd(t, e, "fan out")
	if res.Answer != "done" || res.Status != cadre.StatusDone || len(res.Agents) != n {
		t.Fatalf("answer %q, status %s, %d agents, want done with %d", res.Answer, res.Status, len(res.Agents), n)
	}
	if got := len(ofType(evs, cadre.EventAgentLimit)); got != 1 {
		t.Errorf("%d agent_limit events, want 1", got)
	}
	reportsOnce(t, res, evs)
	if !continued(t, cfg.Client, temporal.RunWorkflowID(res.RunID)) {
		t.Errorf("the run's workflow never continued as new (history limit 60)")
	}
	replayAll(t, cfg.Client, "runcontinues", res)
}

// The run's time limit holds across the run's workflow continuing as new:
// ten workers wait on a tool that never returns, the run's workflow
// continues as new while they start, and the limit, carried as a
// deadline, cancels the run.
func TestScenarioRunTimeLimitAfterContinue(t *testing.T) {
	m := stuckWorkers(10)
	e, cfg := newEngine(t, setup{Model: m, Definitions: defs("stuck"), Tools: []cadre.Tool{block{}}, HistoryLimit: 40,
		Limits: cadre.Limits{Timeout: 6 * time.Second}})
	id, err := e.Start(t.Context(), "wait for ever", cadre.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), enginetest.Timeout)
	defer cancel()
	res, err := e.Wait(ctx, id)
	if ctx.Err() != nil {
		t.Fatalf("run %s did not end within %s", id, enginetest.Timeout)
	}
	if res == nil || res.Status != cadre.StatusCancelled || err == nil || !strings.Contains(err.Error(), "the run's time limit of 6s passed") {
		t.Fatalf("Wait: %+v, %v; want the run cancelled by its time limit of 6s", res, err)
	}
	if !continued(t, cfg.Client, temporal.RunWorkflowID(res.RunID)) {
		t.Errorf("the run's workflow never continued as new (history limit 40)")
	}
}

// continued reports whether the workflow wid has continued as new: its
// latest run is not its first.
func continued(t *testing.T, c client.Client, wid string) bool {
	t.Helper()
	d, err := c.DescribeWorkflowExecution(t.Context(), wid, "")
	if err != nil {
		t.Fatal(err)
	}
	info := d.GetWorkflowExecutionInfo()
	return info.GetFirstRunId() != info.GetExecution().GetRunId()
}

// A root terminated from outside after the run's workflow has continued
// as new never says how it ended; cancelling the run still ends it.
func TestScenarioRootTerminatedAfterContinue(t *testing.T) {
	m := stuckWorkers(10)
	e, cfg := newEngine(t, setup{Model: m, Definitions: defs("stuck"), Tools: []cadre.Tool{block{}}, HistoryLimit: 40})
	id, err := e.Start(t.Context(), "wait for ever", cadre.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), enginetest.Timeout)
	defer cancel()
	for !continued(t, cfg.Client, temporal.RunWorkflowID(id)) {
		if ctx.Err() != nil {
			t.Fatal("the run's workflow never continued as new (history limit 40)")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cfg.Client.TerminateWorkflow(ctx, temporal.AgentWorkflowID(id, cadre.RootID), "", "terminated by an operator"); err != nil {
		t.Fatal(err)
	}
	if err := e.Cancel(ctx, id, cadre.CancelOptions{Reason: "stop it"}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Wait(ctx, id)
	if ctx.Err() != nil {
		t.Fatalf("run %s did not end within %s after it was cancelled", id, enginetest.Timeout)
	}
	if res == nil || res.Status != cadre.StatusCancelled {
		t.Fatalf("Wait: %+v, %v; want the run cancelled", res, err)
	}
}

// With a history limit the run's workflow passes before its root has
// started, it waits for the root to start, then continues as new: the
// root still runs, and the run ends with its answer.
func TestScenarioRunContinuesBeforeRootStarts(t *testing.T) {
	e, cfg := newEngine(t, setup{Model: fanOut(2, 0), Definitions: defs("worker"), HistoryLimit: 8})
	res, evs := runToEnd(t, e, "fan out")
	if res.Answer != "done" || res.Status != cadre.StatusDone || len(res.Agents) != 3 {
		t.Fatalf("answer %q, status %s, %d agents, want done with 3", res.Answer, res.Status, len(res.Agents))
	}
	reportsOnce(t, res, evs)
	if !continued(t, cfg.Client, temporal.RunWorkflowID(res.RunID)) {
		t.Errorf("the run's workflow never continued as new (history limit 8)")
	}
}

// stuckWorkers is a model whose root has n workers, each waiting on the
// tool block, which returns only when its call is cancelled.
func stuckWorkers(n int) cadre.Model {
	return scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch scripted.DefinitionName(req.Agent) {
		case "root":
			if req.Turn == 1 {
				var cs []cadre.ToolCall
				for i := range n {
					cs = append(cs, tc(fmt.Sprint("s", i), loop.ToolSpawnAgent, map[string]string{"agent": "stuck", "task": fmt.Sprint("wait ", i)}))
				}
				return calls(cs...), nil
			}
			return text("the workers returned"), nil
		case "stuck":
			if req.Turn == 1 {
				return calls(tc("b", "block", nil)), nil
			}
			return text("the tool returned"), nil
		}
		return nil, fmt.Errorf("no reply for %s", req.Agent)
	})
}

// A message to a child that has finished cannot wake it on Temporal (its
// workflow has closed): the parent is told so and stops waiting for it, as
// the local engine tells of a child it cannot wake. The message was
// signalled to the closed workflow and lost, and a wait_agent on the
// child then waited for ever.
func TestScenarioWakeFinishedChild(t *testing.T) {
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch scripted.DefinitionName(req.Agent) {
		case "root":
			all := allText(req)
			switch {
			case req.Turn == 1:
				return calls(tc("a", loop.ToolStartBackground, map[string]string{"agent": "worker", "prompt": "count the apples"})), nil
			case strings.Contains(all, "could not be woken"):
				return text("the worker could not take more"), nil
			case strings.Contains(all, "12 apples"):
				return calls(tc("m", loop.ToolSendAgentMessage, map[string]string{"agentId": "root/worker.1", "text": "now count the pears"}),
					tc("w", loop.ToolWaitAgent, map[string]string{"agentId": "root/worker.1"})), nil
			}
			return text("waiting"), nil
		case "worker":
			if req.Turn == 1 {
				return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "12 apples"})), nil
			}
			return text("reported"), nil
		}
		return nil, fmt.Errorf("no reply for %s", req.Agent)
	})
	e, _ := newEngine(t, setup{Model: m, Definitions: defs("worker")})
	res, _ := runToEnd(t, e, "count the fruit")
	if res.Answer != "the worker could not take more" {
		t.Errorf("answer %q", res.Answer)
	}
}

// The depth limit of a run is the one of the process that started it,
// not the workers': with a run limited to one level below the root and
// workers left at three, the root's child may not start one of its own
// (it was planned within the workers' limit, and started it).
func TestScenarioRunDepthLimit(t *testing.T) {
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch scripted.DefinitionName(req.Agent) {
		case "root":
			if req.Turn == 1 {
				return calls(tc("s", loop.ToolSpawnAgent, map[string]string{"agent": "mid", "task": "split it"})), nil
			}
			return text("root: " + allText(req)), nil
		case "mid":
			if req.Turn == 1 {
				return calls(tc("s", loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": "do a part"})), nil
			}
			if strings.Contains(allText(req), "depth limit") {
				return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "refused by the depth limit"})), nil
			}
			return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "the worker started"})), nil
		case "worker":
			return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "part done"})), nil
		}
		return nil, fmt.Errorf("no reply for %s", req.Agent)
	})
	workers := cadre.Limits{}
	e, _ := newEngine(t, setup{Model: m, Definitions: defs("mid", "worker"), Limits: cadre.Limits{MaxDepth: 1}, WorkerLimits: &workers})
	res, _ := runToEnd(t, e, "split the work")
	if len(res.Agents) != 2 || !strings.Contains(res.Answer, "refused by the depth limit") {
		t.Errorf("%d agents, answer %q; want the root and its child, the grandchild refused", len(res.Agents), res.Answer)
	}
}
