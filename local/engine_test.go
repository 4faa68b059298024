package local

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/model/scripted"
	"github.com/cadre-ai/cadre/prompt"
)

// A root spawns two agents in one reply; they run concurrently, one forgets
// to report and is nudged; each report reaches the root once.
func TestSyncSpawnsConcurrentWithNudge(t *testing.T) {
	synctest.Test(t, testSyncSpawnsConcurrentWithNudge)
}

func testSyncSpawnsConcurrentWithNudge(t *testing.T) {
	// The first calls of alpha and beta meet: each waits until the other
	// is in flight too. Were they made one after the other, the first would
	// wait until every goroutine of the test's bubble was blocked, when its
	// fake clock jumps ten seconds ahead, and go on alone.
	met := newMeeting(2)
	var apart atomic.Bool
	meet := func() {
		if !met.arrive(10 * time.Second) {
			apart.Store(true)
		}
	}
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch defName(req.Agent) {
		case "root":
			if req.Turn == 1 {
				return calls(
					tc("a", loop.ToolSpawnAgent, map[string]string{"agent": "alpha", "task": "task A", "context": "ctx A"}),
					tc("b", loop.ToolSpawnAgent, map[string]string{"agent": "beta", "task": "task B"}),
				), nil
			}
			return text("combined"), nil
		case "alpha":
			if req.Turn == 1 {
				meet()
				return calls(tc("s", loop.ToolSendAgentMessage, map[string]string{"text": "alpha result"})), nil
			}
			return text("alpha done"), nil
		case "beta":
			if req.Turn == 1 {
				meet()
				return text("beta forgot"), nil
			}
			return text("beta after nudge"), nil
		}
		return nil, errors.New("unexpected agent " + string(req.Agent))
	})
	res, err, ev := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: defs("alpha", "beta")}, "do both")
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "combined" {
		t.Fatalf("answer %q", res.Answer)
	}
	if apart.Load() {
		t.Error("the two children never ran at the same time")
	}
	alpha := m.RequestsOf("root/alpha.1")
	if got := alpha[0].Messages[0].Content; got != "Context:\nctx A\n\nTask:\ntask A" {
		t.Errorf("alpha's first message %q", got)
	}
	if got := m.RequestsOf("root/beta.1")[0].Messages[0].Content; got != "task B" {
		t.Errorf("beta's first message %q", got)
	}
	if got := lastContent(&m.RequestsOf("root/beta.1")[1]); got != prompt.NudgeTool {
		t.Errorf("beta's second call should be the nudge, got %q", got)
	}
	root := m.RequestsOf(cadre.RootID)
	final := root[len(root)-1]
	var results []string
	for _, msg := range final.Messages {
		if msg.Role == cadre.RoleTool {
			results = append(results, msg.ToolCallID+"="+msg.Content)
		}
		if strings.Contains(msg.Content, "system_message") {
			t.Errorf("a synchronous report reached the inbox too: %q", msg.Content)
		}
	}
	if strings.Join(results, ",") != "a=alpha result,b=beta after nudge" {
		t.Errorf("root's tool results %v", results)
	}
	if n := len(ev.of(cadre.EventAgentReported)); n != 2 {
		t.Errorf("%d agent_reported events, want 2", n)
	}
	if n := len(ev.of(cadre.EventAgentNudged)); n != 1 {
		t.Errorf("%d agent_nudged events, want 1", n)
	}
	for _, e := range ev.of(cadre.EventAgentSpawned) {
		if e.Parent != cadre.RootID || e.Depth != 1 || data[cadre.AgentSpawned](e).Mode != "sync" {
			t.Errorf("agent_spawned %+v", e)
		}
	}
}

// A background child's report that arrives after the root answered wakes
// the root again, and the run ends after it.
func TestBackgroundReportWakesRoot(t *testing.T) {
	checkNoLeaks(t)
	release := make(chan struct{})
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent == cadre.RootID {
			switch req.Turn {
			case 1:
				return calls(tc("bg", loop.ToolStartBackground, map[string]string{"prompt": "slow work", "name": "slowpoke"})), nil
			case 2:
				close(release)
				return text("first answer"), nil
			}
			return text("answer with " + lastContent(req)), nil
		}
		<-release
		if req.Turn == 1 {
			return calls(tc("s", loop.ToolSendAgentMessage, map[string]string{"text": "late report"})), nil
		}
		return text("bye"), nil
	})
	res, err, _ := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: defs("general-purpose")}, "go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Answer, `<system_message origin="root/general-purpose.1">late report</system_message>`) {
		t.Fatalf("answer %q", res.Answer)
	}
	root := m.RequestsOf(cadre.RootID)
	if got := root[1].Messages[len(root[1].Messages)-1].Content; got != "Background agent started (slowpoke): root/general-purpose.1." {
		t.Errorf("start result %q", got)
	}
}

// Cancelling a middle agent stops exactly its subtree.
func TestCancelMiddleAgentStopsSubtree(t *testing.T) {
	checkNoLeaks(t)
	var runRef atomic.Pointer[testRun]
	started := make(chan struct{}, 10)
	registered := make(chan struct{})
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch defName(req.Agent) {
		case "root":
			switch req.Turn {
			case 1:
				return calls(
					tc("m", loop.ToolStartBackground, map[string]string{"prompt": "middle work", "agent": "middle"}),
					tc("o", loop.ToolStartBackground, map[string]string{"prompt": "other work", "agent": "other"}),
				), nil
			}
			return text("root saw " + lastContent(req)), nil
		case "middle":
			if req.Turn == 1 {
				return calls(tc("l", loop.ToolSpawnAgent, map[string]string{"agent": "leaf", "task": "leaf work"})), nil
			}
			return text("middle should not get here"), nil
		case "leaf":
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		case "other":
			if req.Turn > 1 {
				return text("other done"), nil
			}
			<-started
			<-registered
			// The leaf is running: cancel the middle agent.
			if err := runRef.Load().CancelAgent("root/middle.1", "test"); err != nil {
				return nil, err
			}
			return calls(tc("s", loop.ToolSendAgentMessage, map[string]string{"text": "other finished"})), nil
		}
		return text("done"), nil
	})
	cfg := Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: defs("middle", "leaf", "other")}
	r, err := begin(New(testConfig(cfg)), "go")
	if err != nil {
		t.Fatal(err)
	}
	ev := watch(t, r.e, r.id, nil)
	runRef.Store(&r)
	close(registered)
	res, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	ev.wait(t)
	status := map[cadre.AgentID]cadre.Status{}
	for _, a := range res.Agents {
		status[a.ID] = a.Status
	}
	want := map[cadre.AgentID]cadre.Status{
		"root": cadre.StatusDone, "root/middle.1": cadre.StatusCancelled, "root/middle.1/leaf.1": cadre.StatusCancelled, "root/other.1": cadre.StatusDone,
	}
	for id, st := range want {
		if status[id] != st {
			t.Errorf("%s: %s, want %s", id, status[id], st)
		}
	}
	cancelled := ev.of(cadre.EventAgentCancelled)
	if len(cancelled) != 2 || cancelled[0].Agent != "root/middle.1/leaf.1" {
		t.Errorf("cancel events (deepest first): %+v", cancelled)
	}
}

// A child whose model hangs fails at its inactivity limit; its parent gets
// an error result and carries on. The test's clock is synctest's.
func TestInactivityTimeout(t *testing.T) {
	synctest.Test(t, testInactivityTimeout)
}

func testInactivityTimeout(t *testing.T) {
	began := time.Now()
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent == cadre.RootID {
			if req.Turn == 1 {
				return calls(tc("h", loop.ToolSpawnAgent, map[string]string{"agent": "hang", "task": "wait forever"})), nil
			}
			return text("parent got: " + lastContent(req)), nil
		}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	d := defs("hang")
	d[0].Timeout = time.Second
	res, err, ev := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: d}, "go")
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "parent got: Error: timed out: no activity for 1s" {
		t.Fatalf("answer %q", res.Answer)
	}
	if f := ev.of(cadre.EventAgentFailed); len(f) != 1 || data[cadre.AgentFailed](f[0]).Error != "timed out: no activity for 1s" {
		t.Fatalf("agent_failed events %+v", f)
	}
	if took := time.Since(began); took != time.Second {
		t.Errorf("the child failed after %s of the bubble's clock, want its limit of 1s", took)
	}
}

// With a concurrency limit of 2, ten spawns queue and all complete. Each
// worker's call takes a second of synctest's clock, so calls the limit
// let through would be in flight together.
func TestQueuedSpawnsComplete(t *testing.T) {
	synctest.Test(t, testQueuedSpawnsComplete)
}

func testQueuedSpawnsComplete(t *testing.T) {
	var inFlight, peak atomic.Int32
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if req.Agent == cadre.RootID {
			if req.Turn == 1 {
				var cs []cadre.ToolCall
				for i := range 10 {
					cs = append(cs, tc(string(rune('a'+i)), loop.ToolStartBackground, map[string]string{"prompt": "job " + string(rune('a'+i)), "agent": "worker"}))
				}
				return calls(cs...), nil
			}
			return text("ok"), nil
		}
		time.Sleep(time.Second)
		if req.Turn > 1 {
			return text("sent"), nil
		}
		return calls(tc("s", loop.ToolSendAgentMessage, map[string]string{"text": "done " + string(req.Agent)})), nil
	})
	res, err, ev := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: defs("worker"), Limits: cadre.Limits{MaxConcurrent: 2}}, "go")
	if err != nil {
		t.Fatal(err)
	}
	if p := peak.Load(); p != 2 {
		t.Errorf("at most %d model calls at once, want the limit, 2", p)
	}
	done := 0
	for _, a := range res.Agents {
		if a.Status == cadre.StatusDone {
			done++
		}
	}
	if done != 11 {
		t.Errorf("%d agents done, want 11", done)
	}
	if len(ev.of(cadre.EventAgentQueued)) == 0 {
		t.Error("no queued events although spawns exceeded the limit")
	}
	if n := len(ev.of(cadre.EventAgentReported)); n != 10 {
		t.Errorf("%d reports, want 10", n)
	}
}

func TestAgentLimitAndCycle(t *testing.T) {
	checkNoLeaks(t)
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent == cadre.RootID {
			if req.Turn == 1 {
				// The same task, respelt: the detector counts them as one.
				var cs []cadre.ToolCall
				for i, task := range []string{"Same Task ", "same  task", "Same Task.", "Same Task", "Same Task​"} {
					cs = append(cs, tc(string(rune('a'+i)), loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": task}))
				}
				return calls(cs...), nil
			}
			return text("ok"), nil
		}
		return calls(tc("s", loop.ToolSendAgentMessage, map[string]string{"text": "did it"})), nil
	})
	t.Run("cycle", func(t *testing.T) {
		res, err, ev := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: defs("worker")}, "go")
		if err != nil {
			t.Fatal(err)
		}
		if n := len(ev.of(cadre.EventCycleDetected)); n != 2 {
			t.Errorf("%d cycle_detected events, want 2 (the 4th and 5th spawn)", n)
		}
		if len(res.Agents) != 4 {
			t.Errorf("%d agents, want root + 3", len(res.Agents))
		}
	})
	t.Run("max agents", func(t *testing.T) {
		res, err, ev := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: defs("worker"), Limits: cadre.Limits{MaxAgents: 2}}, "go")
		if err != nil {
			t.Fatal(err)
		}
		if n := len(ev.of(cadre.EventAgentLimit)); n != 4 {
			t.Errorf("%d agent_limit events, want 4", n)
		}
		if len(res.Agents) != 2 {
			t.Errorf("%d agents, want 2", len(res.Agents))
		}
	})
}

func TestBudgetExhaustion(t *testing.T) {
	checkNoLeaks(t)
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent == cadre.RootID && req.Turn == 1 {
			return &cadre.Response{Message: cadre.Message{Content: "starting", ToolCalls: []cadre.ToolCall{tc("a", loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": "t"})}}, Usage: cadre.Usage{InputTokens: 50, OutputTokens: 40}}, nil
		}
		return &cadre.Response{Message: cadre.Message{Content: "partial work"}, Usage: cadre.Usage{InputTokens: 50, OutputTokens: 50}}, nil
	})
	res, err, ev := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: defs("worker"), Limits: cadre.Limits{BudgetTokens: 100}}, "go")
	if err != nil {
		t.Fatal(err)
	}
	if !res.BudgetExhausted {
		t.Fatal("budget not reported as exhausted")
	}
	if len(ev.of(cadre.EventBudgetWarning)) != 1 || len(ev.of(cadre.EventBudgetExhausted)) != 1 {
		t.Errorf("want one warning and one exhausted event: %d, %d", len(ev.of(cadre.EventBudgetWarning)), len(ev.of(cadre.EventBudgetExhausted)))
	}
	if len(res.Incomplete) == 0 {
		t.Errorf("no incomplete agents listed: %+v", res)
	}
}

// The run's time limit and its caller's context stop it; the test's clock
// is synctest's.
func TestRunTimeoutAndCancel(t *testing.T) {
	hang := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent == cadre.RootID && req.Turn == 1 {
			return calls(tc("a", loop.ToolStartBackground, map[string]string{"prompt": "forever", "agent": "worker"})), nil
		}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	t.Run("run timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			began := time.Now()
			res, err, ev := runTask(t, Config{Models: OneModel{Name: "fake", Model: hang}, RootModel: "fake", Definitions: defs("worker"), Limits: cadre.Limits{Timeout: 200 * time.Millisecond}}, "go")
			var re *cadre.RunError
			if !errors.As(err, &re) || res.Status != cadre.StatusCancelled || !strings.Contains(res.Error, "time limit") {
				t.Fatalf("err %v, result %+v", err, res)
			}
			if n := len(ev.of(cadre.EventAgentCancelled)); n != 2 {
				t.Errorf("%d agent_cancelled events, want 2", n)
			}
			if len(ev.of(cadre.EventRunFailed)) != 1 {
				t.Error("no run_failed event")
			}
			if took := time.Since(began); took != 200*time.Millisecond {
				t.Errorf("the run stopped after %s of the bubble's clock, want its limit of 200ms", took)
			}
		})
	})
	t.Run("abort", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r, err := begin(New(Config{Models: OneModel{Name: "fake", Model: hang}, RootModel: "fake", Definitions: defs("worker")}), "go")
			if err != nil {
				t.Fatal(err)
			}
			// Once every agent waits on its hanging model, the caller gives up.
			synctest.Wait()
			if err := r.e.Cancel(context.Background(), r.id, cadre.CancelOptions{Abort: true}); err != nil {
				t.Fatal(err)
			}
			res, err := r.Wait()
			if err == nil || res.Status != cadre.StatusCancelled {
				t.Fatalf("err %v status %s", err, res.Status)
			}
			if len(res.Agents) != 2 {
				t.Errorf("%d agents, want the root and its worker", len(res.Agents))
			}
		})
	})
}

func TestChildToolsNeverWiderThanParent(t *testing.T) {
	checkNoLeaks(t)
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch defName(req.Agent) {
		case "root":
			if req.Turn == 1 {
				return calls(tc("a", loop.ToolSpawnAgent, map[string]string{"agent": "writer", "task": "write"})), nil
			}
			return text("root done"), nil
		case "writer":
			if req.Turn == 1 {
				return calls(tc("w", "write_file", map[string]string{"path": "x"}), tc("r", "read_file", map[string]string{"path": "x"})), nil
			}
			return calls(tc("s", loop.ToolSendAgentMessage, map[string]string{"text": lastContent(req)})), nil
		}
		return text("?"), nil
	})
	d := defs("writer")
	d[0].Tools = []string{"read_file", "write_file", "send_agent_message"}
	read := fakeTool{name: "read_file"}
	res, err, _ := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: d, Tools: []cadre.Tool{read}}, "go")
	if err != nil {
		t.Fatal(err)
	}
	writer := m.RequestsOf("root/writer.1")
	var names []string
	for _, s := range writer[0].Tools {
		names = append(names, s.Name)
	}
	if strings.Contains(strings.Join(names, ","), "write_file") {
		t.Errorf("child offered write_file although the parent lacks it: %v", names)
	}
	var results []cadre.Message
	for _, msg := range writer[1].Messages {
		if msg.Role == cadre.RoleTool {
			results = append(results, msg)
		}
	}
	if len(results) != 2 || !results[0].IsError || !strings.Contains(results[0].Content, "unknown tool \"write_file\"") || results[1].Content != "read x" {
		t.Errorf("results %+v", results)
	}
	_ = res
}

type fakeTool struct{ name string }

func (f fakeTool) Spec() cadre.ToolSpec {
	return cadre.ToolSpec{Name: f.name, Description: "fake", Parameters: []byte(`{"type":"object"}`)}
}

func (f fakeTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return "read x", nil
}
