package local

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/model/scripted"
)

// restartingModel streams, for the root's first call, some text, then a
// restart, then the whole reply, as a provider does when a reply broke off
// and was asked for again.
type restartingModel struct {
	mu    sync.Mutex
	calls int
}

func (m *restartingModel) Stream(ctx context.Context, req *cadre.Request) iter.Seq2[*cadre.Chunk, error] {
	return func(yield func(*cadre.Chunk, error) bool) {
		m.mu.Lock()
		m.calls++
		m.mu.Unlock()
		for _, c := range []*cadre.Chunk{
			{Text: "The answer "}, {Text: "is"},
			{Restart: true},
			{Text: "The answer "}, {Text: "is 42."},
			{Response: &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: "The answer is 42."},
				Usage: cadre.Usage{InputTokens: 10, OutputTokens: 5}, StopReason: "stop", Model: "answerer-2026-01-02"}},
		} {
			if !yield(c, nil) {
				return
			}
		}
	}
}

// A reply that broke off and was asked for again reaches watchers as the
// text of both tries with a restart between them, and the agent as the
// complete reply alone; the model that answered is recorded.
func TestRestartedReplyReachesWatchers(t *testing.T) {
	checkNoLeaks(t)
	m := &restartingModel{}
	res, err, ev := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake"}, "what is the answer?")
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "The answer is 42." {
		t.Errorf("answer %q, want the complete reply alone", res.Answer)
	}
	var deltas []string
	for _, e := range ev.of(cadre.EventModelDelta) {
		d := data[cadre.ModelDelta](e)
		if d.Restart {
			if d.Text != "" {
				t.Errorf("a restart delta carries text %q", d.Text)
			}
			deltas = append(deltas, "<restart>")
			continue
		}
		deltas = append(deltas, d.Text)
	}
	want := []string{"The answer ", "is", "<restart>", "The answer ", "is 42."}
	if !slices.Equal(deltas, want) {
		t.Errorf("model_delta events %q, want %q", deltas, want)
	}
	resp := ev.of(cadre.EventModelResponse)
	if len(resp) != 1 {
		t.Fatalf("%d model_response events, want 1", len(resp))
	}
	if d := data[cadre.ModelResponse](resp[0]); d.Text != "The answer is 42." || d.Model != "answerer-2026-01-02" {
		t.Errorf("model_response %+v, want the complete reply and the model that answered", d)
	}
	if m.calls != 1 {
		t.Errorf("the engine called the model %d times, want 1: the retry is the provider's", m.calls)
	}
}

// A child whose model fails for good does not harm its siblings: they run
// to their reports, and the parent receives the failing child's error once,
// as the result of its spawn, next to the siblings' reports.
func TestFailingChildLeavesSiblingsAlone(t *testing.T) {
	checkNoLeaks(t)
	failure := &cadre.ModelError{Provider: "openai", Status: 503,
		Err: errors.New("gave up after 4 attempts: server said: service unavailable"), Hint: "the model server kept failing: try again later"}
	var mu sync.Mutex
	betaCalls := 0
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch defName(req.Agent) {
		case "root":
			if req.Turn == 1 {
				return calls(
					tc("a", loop.ToolSpawnAgent, map[string]string{"agent": "alpha", "task": "task A"}),
					tc("b", loop.ToolSpawnAgent, map[string]string{"agent": "beta", "task": "task B"}),
					tc("c", loop.ToolSpawnAgent, map[string]string{"agent": "gamma", "task": "task C"}),
				), nil
			}
			return text("summary"), nil
		case "alpha", "gamma":
			if req.Turn == 1 {
				return calls(tc("s", loop.ToolSendAgentMessage, map[string]string{"text": defName(req.Agent) + " result"})), nil
			}
			return text("done"), nil
		case "beta":
			mu.Lock()
			betaCalls++
			mu.Unlock()
			return nil, failure
		}
		return nil, errors.New("unexpected agent " + string(req.Agent))
	})
	res, err, ev := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: defs("alpha", "beta", "gamma")}, "do all three")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != cadre.StatusDone || res.Answer != "summary" {
		t.Fatalf("run ended %s with answer %q, want done with the root's summary", res.Status, res.Answer)
	}
	status := map[cadre.AgentID]cadre.Status{}
	for _, a := range res.Agents {
		status[a.ID] = a.Status
	}
	if status["root/alpha.1"] != cadre.StatusDone || status["root/gamma.1"] != cadre.StatusDone || status["root/beta.1"] != cadre.StatusFailed {
		t.Errorf("agents ended %v, want alpha and gamma done, beta failed", status)
	}
	if betaCalls != 1 {
		t.Errorf("beta's model was called %d times, want 1: retrying is the provider's business", betaCalls)
	}
	failed := ev.of(cadre.EventAgentFailed)
	if len(failed) != 1 || failed[0].Agent != "root/beta.1" {
		t.Fatalf("agent_failed events %+v, want one, for beta", failed)
	}
	root := m.RequestsOf(cadre.RootID)
	if len(root) != 2 {
		t.Fatalf("the root made %d model calls, want 2", len(root))
	}
	results := map[string]string{}
	mentions := 0
	for _, msg := range root[1].Messages {
		if strings.Contains(msg.Content, "gave up after 4 attempts") {
			mentions++
		}
		if msg.Role == cadre.RoleTool {
			if _, dup := results[msg.ToolCallID]; dup {
				t.Errorf("two results for the call %s", msg.ToolCallID)
			}
			results[msg.ToolCallID] = msg.Content
		}
	}
	if results["a"] != "alpha result" || results["c"] != "gamma result" {
		t.Errorf("the siblings' results %q and %q, want their reports", results["a"], results["c"])
	}
	if !strings.Contains(results["b"], "gave up after 4 attempts") || !strings.Contains(results["b"], "HTTP 503") {
		t.Errorf("beta's result %q does not carry its model's error", results["b"])
	}
	if mentions != 1 {
		t.Errorf("the root's second call mentions beta's error %d times, want once", mentions)
	}
}
