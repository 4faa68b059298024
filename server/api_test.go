package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model/scripted"
)

// TestSteerRun drives a run through the API: it starts, its tree grows,
// a middle agent is stopped with exactly its subtree, the root's question
// and its approval are answered, and the run completes with the answer.
func TestSteerRun(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	id := f.start(RunRequest{Task: "Write the report.", Approve: "ask"})

	mid1, mid2 := cadre.AgentID("root/mid.1"), cadre.AgentID("root/mid.2")
	leaves1 := []cadre.AgentID{"root/mid.1/leaf.1", "root/mid.1/leaf.2"}
	leaves2 := []cadre.AgentID{"root/mid.2/leaf.1", "root/mid.2/leaf.2"}
	f.waitFor(id, "seven agents", func(v *runView) bool { return len(v.Tree.Agents) == 7 })

	// The root's question waits; answering another agent is refused.
	f.waitFor(id, "the question", func(v *runView) bool { return status(v, "root") != "" })
	var e struct{ Error string }
	if st := f.do("POST", "/api/runs/"+id+"/answer", map[string]string{"agent": string(mid2), "answer": "x"}, &e); st != http.StatusConflict {
		t.Errorf("answering an agent with no question: %d %q, want 409", st, e.Error)
	}

	// Stop the first mid: it and its leaves are cancelled, the rest go on.
	if st := f.do("POST", "/api/runs/"+id+"/cancel", map[string]string{"agent": string(mid1)}, nil); st != http.StatusOK {
		t.Fatalf("cancel %s: %d", mid1, st)
	}
	v := f.waitFor(id, "the first mid's subtree cancelled", func(v *runView) bool {
		return status(v, mid1) == cadre.StatusCancelled && status(v, leaves1[0]) == cadre.StatusCancelled && status(v, leaves1[1]) == cadre.StatusCancelled
	})
	for _, a := range append([]cadre.AgentID{"root", mid2}, leaves2...) {
		if st := status(v, a); st.Terminal() {
			t.Errorf("%s is %s after cancelling %s, want it still going", a, st, mid1)
		}
	}
	// Cancelling it again is a conflict, an unknown agent a 404.
	if st := f.do("POST", "/api/runs/"+id+"/cancel", map[string]string{"agent": string(mid1)}, nil); st != http.StatusConflict {
		t.Errorf("cancelling an ended agent: %d, want 409", st)
	}
	if st := f.do("POST", "/api/runs/"+id+"/cancel", map[string]string{"agent": "root/nobody.9"}, nil); st != http.StatusNotFound {
		t.Errorf("cancelling an unknown agent: %d, want 404", st)
	}

	// An approval's answer never lands on the question: with no approval
	// waiting, it is a 409 and the question still waits.
	if st := f.do("POST", "/api/runs/"+id+"/answer", map[string]string{"id": "approval-1", "agent": "root", "answer": "yes"}, &e); st != http.StatusConflict {
		t.Errorf("an approval's answer while only a question waits: %d %q, want 409", st, e.Error)
	}
	// Answer the question; then the touch waits for approval.
	if st := f.do("POST", "/api/runs/"+id+"/answer", map[string]string{"agent": "root", "answer": "blue"}, nil); st != http.StatusOK {
		t.Fatalf("answer the question: %d", st)
	}
	v = f.waitFor(id, "the approval", func(v *runView) bool { return len(v.Pending) == 1 })
	if p := v.Pending[0]; p.Agent != "root" || p.Tool != "touch" || !strings.Contains(p.Summary, "report.txt") {
		t.Errorf("pending approval %+v, want root's touch of report.txt", p)
	}
	ap := v.Pending[0].ID
	if st := f.do("POST", "/api/runs/"+id+"/answer", map[string]string{"id": ap, "answer": "perhaps"}, &e); st != http.StatusBadRequest || !strings.Contains(e.Error, "yes or no") {
		t.Errorf("answering an approval with perhaps: %d %q, want 400 asking for yes or no", st, e.Error)
	}
	// An answer without the approval's id is for a question, which root
	// has not asked: it does not approve the call.
	if st := f.do("POST", "/api/runs/"+id+"/answer", map[string]string{"agent": "root", "answer": "yes"}, &e); st != http.StatusConflict || !strings.Contains(e.Error, "its id") {
		t.Errorf("answering yes without the approval's id: %d %q, want 409 asking for the id", st, e.Error)
	}
	if st := f.do("POST", "/api/runs/"+id+"/answer", map[string]string{"id": ap, "agent": "root/mid.2", "answer": "yes"}, &e); st != http.StatusBadRequest || !strings.Contains(e.Error, "of agent root") {
		t.Errorf("answering the approval as another agent's: %d %q, want 400", st, e.Error)
	}
	if st := f.do("POST", "/api/runs/"+id+"/answer", map[string]string{"id": ap, "agent": "root", "answer": "yes"}, nil); st != http.StatusOK {
		t.Fatalf("approve: %d", st)
	}
	if st := f.do("POST", "/api/runs/"+id+"/answer", map[string]string{"id": ap, "answer": "yes"}, &e); st != http.StatusConflict || !strings.Contains(e.Error, "not waiting") {
		t.Errorf("answering the approval again: %d %q, want 409", st, e.Error)
	}
	f.open()
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	res, err := f.eng.Wait(ctx, id)
	if err != nil {
		t.Fatalf("the run did not complete: %v", err)
	}
	if res.Answer != "Final answer: the report is blue." {
		t.Errorf("answer %q", res.Answer)
	}
	if n := f.touch.count(); n != 1 {
		t.Errorf("touch ran %d times, want once (approved)", n)
	}

	// The finished run is listed and shown from the store.
	var list runList
	f.do("GET", "/api/runs", nil, &list)
	if len(list.Runs) != 1 || list.Runs[0].ID != id || list.Runs[0].Status != cadre.StatusDone {
		t.Errorf("runs %+v, want the one done run", list.Runs)
	}
	var view runView
	if st := f.do("GET", "/api/runs/"+id, nil, &view); st != http.StatusOK || view.Run == nil || view.Run.Answer != res.Answer || len(view.Tree.Agents) != 7 {
		t.Errorf("GET the ended run: %d %+v", st, view)
	}
	// One agent's transcript, its id passed with its slashes.
	var tr transcript
	if st := f.do("GET", "/api/runs/"+id+"/agents/"+string(leaves2[0]), nil, &tr); st != http.StatusOK {
		t.Fatalf("GET the leaf: %d", st)
	}
	if tr.Agent.ID != leaves2[0] || len(tr.Messages) == 0 || !strings.Contains(tr.Messages[0].Content, "unit 1 of root/mid.2") {
		t.Errorf("transcript of %s: %+v", leaves2[0], tr)
	}
	// The second leaf's start names the first's configuration, which its
	// transcript has whole.
	var tr2 transcript
	if st := f.do("GET", "/api/runs/"+id+"/agents/"+string(leaves2[1]), nil, &tr2); st != http.StatusOK {
		t.Fatalf("GET the second leaf: %d", st)
	}
	if tr2.System == "" || tr2.System != tr.System || len(tr2.Messages) == 0 || !strings.Contains(tr2.Messages[0].Content, "unit 2 of root/mid.2") {
		t.Errorf("transcript of %s: system %.60q (the first leaf's: %.60q), %d messages", leaves2[1], tr2.System, tr.System, len(tr2.Messages))
	}
	if e, err := f.store.Journal(context.Background(), id, leaves2[1]); err != nil || len(e) == 0 || !strings.Contains(string(e[0].Data), `"config_from":"`+string(leaves2[0])+`"`) {
		t.Errorf("the start of %s does not name the configuration of %s: %v", leaves2[1], leaves2[0], err)
	}
	// Writes to the ended run are conflicts.
	if st := f.do("POST", "/api/runs/"+id+"/cancel", nil, nil); st != http.StatusConflict {
		t.Errorf("cancel an ended run: %d, want 409", st)
	}
}

// TestBadInput checks that what a client gets wrong is a 4xx with a JSON
// error, never a 500.
func TestBadInput(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	id := f.start(RunRequest{Task: "Write the report."})
	f.waitFor(id, "the root", func(v *runView) bool { return len(v.Tree.Agents) > 0 })
	for _, c := range []struct {
		name, method, path string
		body               any
		want               int
		says               string
	}{
		{"no task", "POST", "/api/runs", map[string]string{"task": "  "}, 400, "task is empty"},
		{"not JSON", "POST", "/api/runs", rawBody("task: x"), 400, "not the JSON object"},
		{"no body", "POST", "/api/runs", nil, 400, "empty"},
		{"unknown field", "POST", "/api/runs", map[string]any{"task": "x", "colour": "red"}, 400, "colour"},
		{"bad approve", "POST", "/api/runs", map[string]any{"task": "x", "approve": "maybe"}, 400, "ask, all or none"},
		{"negative limit", "POST", "/api/runs", map[string]any{"task": "x", "limits": map[string]any{"max_depth": -1}}, 400, "max_depth"},
		{"limit not a number", "POST", "/api/runs", map[string]any{"task": "x", "limits": map[string]any{"max_agents": "many"}}, 400, "max_agents"},
		{"bad timeout", "POST", "/api/runs", map[string]any{"task": "x", "limits": map[string]any{"timeout": "soon"}}, 400, "duration"},
		{"unknown model", "POST", "/api/runs", map[string]any{"task": "x", "model": "nope:nothing"}, 400, "unknown model"},
		{"unknown run", "GET", "/api/runs/20000101-000000-abcdef", nil, 404, "no run"},
		{"unknown run events", "GET", "/api/runs/nope/events", nil, 404, "no run"},
		{"unknown agent", "GET", "/api/runs/" + id + "/agents/root/ghost.1", nil, 404, "no agent"},
		{"answer without agent", "POST", "/api/runs/" + id + "/answer", map[string]string{"answer": "x"}, 400, "what the answer is for"},
		{"answer unknown approval", "POST", "/api/runs/" + id + "/answer", map[string]string{"id": "approval-999", "answer": "yes"}, 409, "not waiting"},
		{"approval of unknown run", "POST", "/api/runs/nope/answer", map[string]string{"id": "approval-1", "answer": "yes"}, 404, "no run"},
		{"answer unknown run", "POST", "/api/runs/nope/answer", map[string]string{"agent": "root", "answer": "x"}, 404, "no run"},
		{"cancel unknown run", "POST", "/api/runs/nope/cancel", nil, 404, "no run"},
		{"bad Last-Event-ID", "GET", "/api/runs/" + id + "/events?after=x", nil, 400, "after"},
		{"no such route", "GET", "/api/nothing", nil, 404, "openapi"},
		{"wrong method", "DELETE", "/api/runs/" + id, nil, 405, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var e struct{ Error string }
			st := f.do(c.method, c.path, c.body, &e)
			if st != c.want && !(c.want == 405 && st == 404) {
				t.Errorf("%d (%s), want %d", st, e.Error, c.want)
			}
			if !strings.Contains(e.Error, c.says) {
				t.Errorf("error %q does not say %q", e.Error, c.says)
			}
		})
	}
}

// TestConcurrentAnswers checks that of many answers to one approval one is
// taken and the others are told there is nothing to answer.
func TestConcurrentAnswers(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	id := f.start(RunRequest{Task: "Write the report."})
	// The question is asked after the mids start.
	f.waitFor(id, "seven agents", func(v *runView) bool { return len(v.Tree.Agents) == 7 })
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		statuses = map[int]int{}
	)
	// Wait until the root asks: an answer is taken then.
	for {
		st := f.do("POST", "/api/runs/"+id+"/answer", map[string]string{"agent": "root", "answer": "red"}, nil)
		if st == http.StatusOK {
			statuses[st]++
			break
		}
		if st != http.StatusConflict {
			t.Fatalf("answer: %d", st)
		}
	}
	v := f.waitFor(id, "the approval", func(v *runView) bool { return len(v.Pending) == 1 })
	statuses = map[int]int{}
	for range 10 {
		wg.Go(func() {
			st := f.do("POST", "/api/runs/"+id+"/answer", map[string]string{"id": v.Pending[0].ID, "answer": "yes"}, nil)
			mu.Lock()
			statuses[st]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if statuses[http.StatusOK] != 1 || statuses[http.StatusConflict] != 9 {
		t.Errorf("statuses %v, want one 200 and nine 409", statuses)
	}
	if n := f.touch.count(); n > 1 {
		t.Errorf("touch ran %d times for one approval", n)
	}
}

// twoTouchModel plays a root that touches two files in one turn: the
// run's approver asks about one call, then the other.
func twoTouchModel() cadre.Model {
	return scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if !hasCall(req.Messages, "touch") {
			return calls("touch", `{"path":"a.txt"}`, `{"path":"b.txt"}`), nil
		}
		return text("Both asked."), nil
	})
}

// pendingOne waits for the run's one approval other than not, and returns
// it.
func (f *fixture) pendingOne(run, not string) Pending {
	f.t.Helper()
	v := f.waitFor(run, "an approval other than "+quote(not), func(v *runView) bool { return len(v.Pending) == 1 && v.Pending[0].ID != not })
	return v.Pending[0]
}

// TestAnswerApprovalByID checks that an answer approves exactly the
// approval it names: once the first of two approvals of one agent is
// answered and the second waits, a stale answer to the first is a 409 and
// leaves the second waiting, and so does an answer for a question.
func TestAnswerApprovalByID(t *testing.T) {
	f := newFixture(t, fixtureOptions{model: twoTouchModel()})
	id := f.start(RunRequest{Task: "Touch both files.", Approve: "ask"})
	first := f.pendingOne(id, "")
	// Denied elsewhere (another page, a program): the second call asks.
	if st := f.do("POST", "/api/runs/"+id+"/answer", map[string]string{"id": first.ID, "answer": "no"}, nil); st != http.StatusOK {
		t.Fatalf("deny %s: %d", first.ID, st)
	}
	second := f.pendingOne(id, first.ID)
	if second.Agent != first.Agent || second.Summary == first.Summary {
		t.Fatalf("approvals %+v then %+v, want two calls of one agent", first, second)
	}

	// A stale Allow of the first does not allow the second.
	var e struct{ Error string }
	if st := f.do("POST", "/api/runs/"+id+"/answer", map[string]string{"id": first.ID, "answer": "yes"}, &e); st != http.StatusConflict || !strings.Contains(e.Error, first.ID) {
		t.Errorf("allowing %s again: %d %q, want 409 naming it", first.ID, st, e.Error)
	}
	// Nor does an answer for a question of the agent, which has none.
	if st := f.do("POST", "/api/runs/"+id+"/answer", map[string]string{"agent": string(first.Agent), "answer": "yes"}, &e); st != http.StatusConflict {
		t.Errorf("a question's answer with an approval waiting: %d %q, want 409", st, e.Error)
	}
	if v := f.waitFor(id, "the run", func(*runView) bool { return true }); len(v.Pending) != 1 || v.Pending[0].ID != second.ID {
		t.Errorf("after the stale answers, waiting: %+v, want %s", v.Pending, second.ID)
	}
	if got := f.touch.touched(); len(got) != 0 {
		t.Errorf("touched %v before the second approval was answered", got)
	}

	if st := f.do("POST", "/api/runs/"+id+"/answer", map[string]string{"id": second.ID, "answer": "yes"}, nil); st != http.StatusOK {
		t.Fatalf("allow %s: %d", second.ID, st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	if _, err := f.eng.Wait(ctx, id); err != nil {
		t.Fatalf("the run did not complete: %v", err)
	}
	if got := f.touch.touched(); len(got) != 1 || !strings.Contains(second.Summary, got[0]) {
		t.Errorf("touched %v, want only the second call's file (%s)", got, second.Summary)
	}
}

// An approval carries what its summary does not say (arguments past the
// summary's cut), so that a page can show the whole call before it lets
// a person allow it; and its texts are redacted as the agents' are. A
// call whose tail hid past the cut was approved unseen, and a token in a
// command reached the page in the clear.
func TestPendingDetailRedacted(t *testing.T) {
	path := strings.Repeat("x", 320) + "/ghp_SECRET123/end.txt"
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if !hasCall(req.Messages, "touch") {
			args, _ := json.Marshal(map[string]string{"path": path})
			return calls("touch", string(args)), nil
		}
		return text("Touched."), nil
	})
	f := newFixture(t, fixtureOptions{model: m, redactText: func(s string) string { return strings.ReplaceAll(s, "ghp_SECRET123", "[REDACTED]") }})
	id := f.start(RunRequest{Task: "Touch it.", Approve: "ask"})
	p := f.pendingOne(id, "")
	if strings.Contains(p.Summary, "end.txt") || !strings.Contains(p.Detail, "end.txt") {
		t.Errorf("summary %q, detail %q: want the tail in the detail only", p.Summary, p.Detail)
	}
	if strings.Contains(p.Summary+p.Detail, "ghp_SECRET123") || !strings.Contains(p.Detail, "[REDACTED]") {
		t.Errorf("the token reached the page: %q / %q", p.Summary, p.Detail)
	}
	if st := f.do("POST", "/api/runs/"+id+"/answer", map[string]string{"id": p.ID, "answer": "no"}, nil); st != http.StatusOK {
		t.Fatalf("deny: %d", st)
	}
}
