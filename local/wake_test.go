package local

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/model/scripted"
)

// followUpScript answers the first model call as first says, and every
// later one by echoing the last user message: "answer to: …".
func followUpScript(first func(ctx context.Context) (*cadre.Response, error)) *scripted.Model {
	var n atomic.Int32
	return scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if n.Add(1) == 1 {
			return first(ctx)
		}
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if m := req.Messages[i]; m.Role == cadre.RoleUser {
				return text("answer to: " + m.Content), nil
			}
		}
		return text("no question"), nil
	})
}

// continueRun continues run id with e and waits for it.
func continueRun(t *testing.T, e *Engine, id, msg string) (*cadre.Result, error, *events) {
	t.Helper()
	if err := e.Continue(context.Background(), id, msg); err != nil {
		t.Fatalf("Continue: %v", err)
	}
	ev := watch(t, e, id, nil)
	res, err := waitRun(t, e, id)
	ev.wait(t)
	return res, err, ev
}

// kinds lists the kinds of the inputs of an agent's journal.
func kinds(t *testing.T, s cadre.Store, run string, agent cadre.AgentID) []string {
	t.Helper()
	entries, err := s.Journal(context.Background(), run, agent)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, en := range journalInputs(t, s, entries) {
		out = append(out, en.Kind)
	}
	return out
}

// TestContinueAfterEnd follows up a run that completed, one that failed
// and one cancelled by the user: each time the root gets the message with
// its whole conversation, the run completes with the new answer, the
// follow-up is in the root's journal, and the events say it was continued.
func TestContinueAfterEnd(t *testing.T) {
	cases := []struct {
		name  string
		first func(ctx context.Context) (*cadre.Response, error)
		end   cadre.Status
	}{
		{"completed", func(context.Context) (*cadre.Response, error) { return text("first answer"), nil }, cadre.StatusDone},
		{"failed", func(context.Context) (*cadre.Response, error) { return nil, errors.New("the provider is down") }, cadre.StatusFailed},
		{"cancelled", func(ctx context.Context) (*cadre.Response, error) {
			<-ctx.Done() // until Ctrl+C
			return nil, ctx.Err()
		}, cadre.StatusCancelled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkNoLeaks(t)
			s := memstore.New()
			m := followUpScript(tc.first)
			var live steps
			e := New(testConfig(Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Store: s, stepped: live.record}))
			id := start(t, e, "the task")
			if tc.end == cadre.StatusCancelled {
				// Cancel once the root is calling its model.
				for ev, err := range e.Events(context.Background(), id) {
					if err != nil {
						t.Fatal(err)
					}
					if ev.Type == cadre.EventAgentStarted {
						break
					}
				}
				if err := e.Cancel(context.Background(), id, cadre.CancelOptions{Reason: "interrupted by Ctrl+C"}); err != nil {
					t.Fatal(err)
				}
			}
			res, _ := waitRun(t, e, id)
			if res.Status != tc.end {
				t.Fatalf("first end = %s (%s), want %s", res.Status, res.Error, tc.end)
			}
			res, err, ev := continueRun(t, e, id, "and now the follow-up")
			if err != nil || res.Status != cadre.StatusDone || res.Answer != "answer to: and now the follow-up" {
				t.Fatalf("after the follow-up: %v %+v", err, res)
			}
			if c := ev.of(cadre.EventRunContinued); len(c) != 1 || data[cadre.RunContinued](c[0]).Previous != tc.end {
				t.Errorf("run_continued events: %+v", c)
			}
			if w := ev.of(cadre.EventAgentWoken); len(w) != 1 || w[0].Agent != cadre.RootID {
				t.Errorf("agent_woken events: %+v", w)
			}
			reqs := m.RequestsOf(cadre.RootID)
			last := reqs[len(reqs)-1]
			if last.Messages[0].Content != "the task" {
				t.Errorf("the follow-up lost the conversation: %+v", last.Messages)
			}
			ks := kinds(t, s, id, cadre.RootID)
			if ks[len(ks)-2] != (loop.Wake{}).Kind() {
				t.Errorf("the root's journal = %v; want the wake before the last model result", ks)
			}
			rec, _ := s.GetRun(context.Background(), id)
			if rec.Status != cadre.StatusDone || rec.Answer != res.Answer {
				t.Errorf("run record = %+v", rec)
			}
			// A second follow-up still has the first one in its history.
			res, err, _ = continueRun(t, e, id, "once more")
			if err != nil || res.Answer != "answer to: once more" {
				t.Fatalf("second follow-up: %v %+v", err, res)
			}
			reqs = m.RequestsOf(cadre.RootID)
			var all []string
			for _, msg := range reqs[len(reqs)-1].Messages {
				all = append(all, msg.Content)
			}
			if joined := strings.Join(all, "|"); !strings.Contains(joined, "and now the follow-up") || !strings.Contains(joined, "answer to: and now the follow-up") {
				t.Errorf("second follow-up's conversation: %q", joined)
			}
			checkReplay(t, s, id, &live)
		})
	}
}

// TestContinueRefusesARunGoingOn checks that a run that has not ended is
// not continued.
func TestContinueRefusesARunGoingOn(t *testing.T) {
	checkNoLeaks(t)
	release := make(chan struct{})
	m := followUpScript(func(ctx context.Context) (*cadre.Response, error) {
		<-release
		return text("done"), nil
	})
	e := New(testConfig(Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Store: memstore.New()}))
	id := start(t, e, "task")
	err := e.Continue(context.Background(), id, "more")
	close(release)
	if !errors.Is(err, cadre.ErrNotRunning) || !strings.Contains(err.Error(), "has not ended") {
		t.Errorf("Continue of a running run: %v", err)
	}
	waitRun(t, e, id)
	if err := New(Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake"}).Continue(context.Background(), id, "x"); !errors.Is(err, ErrNoStore) {
		t.Errorf("Continue without a store: %v", err)
	}
}

// TestResumeDuringFollowUp kills the process while a follow-up is being
// answered (the store dies after the follow-up is journaled) and resumes
// the run: the root answers the follow-up, which is journaled once.
func TestResumeDuringFollowUp(t *testing.T) {
	checkNoLeaks(t)
	mem := memstore.New()
	crash := &crashStore{Store: mem, limit: 1 << 30}
	m := followUpScript(func(context.Context) (*cadre.Response, error) { return text("first answer"), nil })
	cfg := Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Store: crash}
	e := New(testConfig(cfg))
	id := start(t, e, "the task")
	if res, err := waitRun(t, e, id); err != nil || res.Answer != "first answer" {
		t.Fatalf("first run: %v %+v", err, res)
	}
	crash.mu.Lock()
	crash.limit = crash.written + 1 // the follow-up is journaled, then the process dies
	crash.mu.Unlock()
	if err := e.Continue(context.Background(), id, "the follow-up"); err != nil {
		t.Fatal(err)
	}
	waitRun(t, e, id)
	if !crash.dead() {
		t.Fatal("the store did not die")
	}
	rec, _ := mem.GetRun(context.Background(), id)
	if rec.Status != cadre.StatusRunning {
		t.Fatalf("after the crash the record says %s; want running", rec.Status)
	}
	cfg.Store = mem
	e2 := New(testConfig(cfg))
	if err := e2.Resume(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	res, err := waitRun(t, e2, id)
	if err != nil || res.Answer != "answer to: the follow-up" {
		t.Fatalf("resumed follow-up: %v %+v", err, res)
	}
	n := 0
	for _, k := range kinds(t, mem, id, cadre.RootID) {
		if k == (loop.Wake{}).Kind() {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the follow-up is journaled %d times", n)
	}
}

// TestWakeFinishedChildTwice has the root wake a background child that
// has reported, twice: each time the child goes on with its history, and
// each of its three reports reaches the root exactly once.
func TestWakeFinishedChildTwice(t *testing.T) {
	checkNoLeaks(t)
	s := memstore.New()
	child := "root/researcher.1"
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent == cadre.RootID {
			return wakeTwiceRoot(req, child), nil
		}
		switch req.Turn {
		case 1, 3, 5:
			// It sees its whole history: two messages per earlier round.
			return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "report " + string(rune('A'+req.Turn/2)) + " after " + string(rune('0'+len(req.Messages)))})), nil
		}
		return text("done"), nil
	})
	var live steps
	// The child takes a turn after each report (its script counts turns),
	// so that it is woken while it has more to say.
	e := New(testConfig(Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Store: s, Definitions: defs("researcher"), stepped: live.record, TurnAfterReport: true}))
	id := start(t, e, "task")
	ev := watch(t, e, id, nil)
	res, err := waitRun(t, e, id)
	ev.wait(t)
	if err != nil || res.Answer != "final" {
		t.Fatalf("run: %v %+v", err, res)
	}
	checkEachReportOnce(t, m, "report A", "report B", "report C")
	if n := len(ev.of(cadre.EventAgentReported)); n != 3 {
		t.Errorf("%d agent_reported events, want 3", n)
	}
	woken := ev.of(cadre.EventAgentWoken)
	if len(woken) != 2 || woken[0].Agent != cadre.AgentID(child) || data[cadre.AgentWoken](woken[0]).From != cadre.RootID {
		t.Errorf("agent_woken events: %+v", woken)
	}
	// The child's later calls carried its history.
	kreqs := m.RequestsOf(cadre.AgentID(child))
	// (Its sixth call, the turn after its last report, may not be made: the
	// root can end first.)
	if len(kreqs) < 5 || len(kreqs) > 6 || len(kreqs[4].Messages) <= len(kreqs[2].Messages) || len(kreqs[2].Messages) <= len(kreqs[0].Messages) {
		t.Errorf("the child's requests did not grow with its history: %d requests", len(kreqs))
	}
	for _, a := range res.Agents {
		// Its last report is its result; it may be cancelled when the
		// root ends during the turn it takes after that report.
		if a.ID == cadre.AgentID(child) && (a.Status != cadre.StatusDone && a.Status != cadre.StatusCancelled || !strings.HasPrefix(a.Result, "report C")) {
			t.Errorf("the child's record: %+v", a)
		}
	}
	checkReplayEnds(t, s, id)
	checkReplay(t, s, id, &live)
}

// checkReplayEnds replays every agent's journal and checks it ends done.
func checkReplayEnds(t *testing.T, s cadre.Store, run string) {
	t.Helper()
	for id, st := range replayAll(t, s, run) {
		if !st.Done() {
			t.Errorf("the replay of %s does not end", id)
		}
	}
}

// A root stopped by the token budget before it wrote an answer hands on
// what its children reported, and the result says who completed.
func TestBudgetStopHandsOnChildrenReports(t *testing.T) {
	checkNoLeaks(t)
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent == cadre.RootID {
			return calls(tc("s", loop.ToolSpawnAgent, map[string]string{"agent": "researcher", "task": "find it"})), nil
		}
		if req.Turn == 1 {
			return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "the answer is 42"})), nil
		}
		return text("done"), nil
	})
	res, err, _ := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: defs("researcher"),
		Limits: cadre.Limits{BudgetTokens: 30}}, "task")
	if err != nil || !res.BudgetExhausted {
		t.Fatalf("%v %+v", err, res)
	}
	if !strings.Contains(res.Answer, "the answer is 42") || !strings.Contains(res.Answer, "root/researcher.1") || strings.Contains(res.Answer, "stopped before producing") {
		t.Errorf("answer = %q; want the child's report", res.Answer)
	}
	if !slices.Contains(res.Incomplete, cadre.RootID) || slices.Contains(res.Completed, cadre.RootID) {
		t.Errorf("completed %v, incomplete %v: the root stopped early", res.Completed, res.Incomplete)
	}
}

// A follow-up may wake a child of the run's earlier work: after Continue
// the root sends its finished researcher more work, and the new report
// reaches it once.
func TestContinueWakesAChild(t *testing.T) {
	checkNoLeaks(t)
	s := memstore.New()
	child := "root/researcher.1"
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent == cadre.RootID {
			switch req.Turn {
			case 1:
				return calls(tc("s", loop.ToolSpawnAgent, map[string]string{"agent": "researcher", "task": "find it"})), nil
			case 2:
				return text("first"), nil
			case 3:
				return calls(tc("m", loop.ToolSendAgentMessage, map[string]string{"agentId": child, "text": "look again"})), nil
			case 4:
				return calls(tc("w", loop.ToolWaitAgent, map[string]string{"agentId": child})), nil
			}
			return text("second"), nil
		}
		switch req.Turn {
		case 1:
			return calls(tc("r1", loop.ToolSendAgentMessage, map[string]string{"text": "report A"})), nil
		case 3:
			return calls(tc("r2", loop.ToolSendAgentMessage, map[string]string{"text": "report B"})), nil
		}
		return text("done"), nil
	})
	var live steps
	e := New(testConfig(Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Store: s, Definitions: defs("researcher"), stepped: live.record}))
	id := start(t, e, "task")
	if res, err := waitRun(t, e, id); err != nil || res.Answer != "first" {
		t.Fatalf("first: %v %+v", err, res)
	}
	res, err, ev := continueRun(t, e, id, "ask the researcher again")
	if err != nil || res.Answer != "second" {
		t.Fatalf("follow-up: %v %+v", err, res)
	}
	reqs := m.RequestsOf(cadre.RootID)
	var conv strings.Builder
	for _, msg := range reqs[len(reqs)-1].Messages {
		conv.WriteString(msg.Content + "\n")
	}
	for _, r := range []string{"report A", "report B"} {
		if n := strings.Count(conv.String(), r); n != 1 {
			t.Errorf("%s reached the root %d times:\n%s", r, n, conv.String())
		}
	}
	if w := ev.of(cadre.EventAgentWoken); len(w) != 2 {
		t.Errorf("agent_woken events: %+v", w)
	}
	checkReplayEnds(t, s, id)
	checkReplay(t, s, id, &live)
}

// A child that ends on its report (the default) is woken the same way:
// each wake is one model call, and each report reaches the root once.
func TestWakeChildThatEndsOnReport(t *testing.T) {
	checkNoLeaks(t)
	s := memstore.New()
	child := "root/researcher.1"
	var mu sync.Mutex
	rounds := 0
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent == cadre.RootID {
			return wakeTwiceRoot(req, child), nil
		}
		mu.Lock()
		rounds++
		n := rounds
		mu.Unlock()
		return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "report " + string(rune('A'+n-1))})), nil
	})
	e := New(testConfig(Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Store: s, Definitions: defs("researcher")}))
	id := start(t, e, "task")
	res, err := waitRun(t, e, id)
	if err != nil || res.Answer != "final" {
		t.Fatalf("run: %v %+v", err, res)
	}
	checkEachReportOnce(t, m, "report A", "report B", "report C")
	if n := len(m.RequestsOf(cadre.AgentID(child))); n != 3 {
		t.Errorf("the child made %d model calls, want one per round", n)
	}
	checkReplayEnds(t, s, id)
}

// wakeTwiceRoot is a root that starts child in the background, waits for
// its report, wakes it with a message, and does that twice more.
func wakeTwiceRoot(req *cadre.Request, child string) *cadre.Response {
	switch req.Turn {
	case 1:
		return calls(tc("bg", loop.ToolStartBackground, map[string]string{"agent": "researcher", "prompt": "look"}))
	case 2, 4, 6:
		return calls(tc("w"+string(rune('0'+req.Turn)), loop.ToolWaitAgent, map[string]string{"agentId": child}))
	case 3, 5:
		return calls(tc("m"+string(rune('0'+req.Turn)), loop.ToolSendAgentMessage, map[string]string{"agentId": child, "text": "look again"}))
	}
	return text("final")
}

// checkEachReportOnce checks that each report is in the root's last
// conversation exactly once.
func checkEachReportOnce(t *testing.T, m *scripted.Model, reports ...string) {
	t.Helper()
	reqs := m.RequestsOf(cadre.RootID)
	var conv strings.Builder
	for _, msg := range reqs[len(reqs)-1].Messages {
		conv.WriteString(msg.Content + "\n")
	}
	for _, r := range reports {
		if n := strings.Count(conv.String(), r); n != 1 {
			t.Errorf("%s reached the root %d times; conversation:\n%s", r, n, conv.String())
		}
	}
}
