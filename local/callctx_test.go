package local

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/model/scripted"
)

// ctxTool records, for each call, whether the context it ran under was
// already cancelled.
type ctxTool struct {
	mu        sync.Mutex
	cancelled []bool
}

func (c *ctxTool) Spec() cadre.ToolSpec {
	return cadre.ToolSpec{Name: "probe", Description: "probe", Parameters: []byte(`{"type":"object"}`)}
}

func (c *ctxTool) Call(ctx context.Context, _ json.RawMessage) (string, error) {
	c.mu.Lock()
	c.cancelled = append(c.cancelled, ctx.Err() != nil)
	c.mu.Unlock()
	return "probed", nil
}

// A child woken after it finished runs its tool calls under a live
// context: the one its first round's calls had was cancelled when it
// finished, and is not the one its later calls get.
func TestWokenChildToolCallsRunLive(t *testing.T) {
	checkNoLeaks(t)
	child := "root/researcher.1"
	probe := &ctxTool{}
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent == cadre.RootID {
			return wakeTwiceRoot(req, child), nil
		}
		switch req.Turn {
		case 1, 3, 5:
			// Each round: a tool call first, then the report.
			return calls(tc("p", "probe", map[string]string{})), nil
		case 2, 4, 6:
			return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "report " + string(rune('A'+req.Turn/2))})), nil
		}
		return text("done"), nil
	})
	d := defs("researcher")
	e := New(testConfig(Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Store: memstore.New(), Definitions: d,
		Tools: []cadre.Tool{probe}}))
	id := start(t, e, "task")
	res, err := waitRun(t, e, id)
	if err != nil || res.Answer != "final" {
		t.Fatalf("run: %v %+v", err, res)
	}
	probe.mu.Lock()
	defer probe.mu.Unlock()
	if len(probe.cancelled) < 2 {
		t.Fatalf("the tool was called %d times, want a call in each of at least two rounds", len(probe.cancelled))
	}
	for i, c := range probe.cancelled {
		if c {
			t.Errorf("tool call %d of the child ran under a cancelled context", i+1)
		}
	}
}

// hangTool blocks each call until its context is cancelled, after saying
// it has started.
type hangTool struct {
	started chan struct{}
	ended   chan error
}

func (h *hangTool) Spec() cadre.ToolSpec {
	return cadre.ToolSpec{Name: "hang", Description: "hang", Parameters: []byte(`{"type":"object"}`)}
}

func (h *hangTool) Call(ctx context.Context, _ json.RawMessage) (string, error) {
	h.started <- struct{}{}
	<-ctx.Done()
	h.ended <- ctx.Err()
	return "", ctx.Err()
}

// An agent cancelled while one of its tool calls is in flight cancels the
// call's context: the call returns, and the agent and its run end.
func TestCancelledAgentCancelsItsToolCall(t *testing.T) {
	checkNoLeaks(t)
	hang := &hangTool{started: make(chan struct{}, 1), ended: make(chan error, 1)}
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch defName(req.Agent) {
		case "root":
			if req.Turn == 1 {
				return calls(tc("w", loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": "hang"})), nil
			}
			return text("root done"), nil
		case "worker":
			return calls(tc("h", "hang", map[string]string{})), nil
		}
		return text("done"), nil
	})
	cfg := Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: defs("worker"), Tools: []cadre.Tool{hang}}
	r, err := begin(New(testConfig(cfg)), "go")
	if err != nil {
		t.Fatal(err)
	}
	<-hang.started
	if err := r.CancelAgent("root/worker.1", "test"); err != nil {
		t.Fatal(err)
	}
	res, err := waitRun(t, r.e, r.id)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-hang.ended; err == nil {
		t.Error("the tool call's context was not cancelled")
	}
	for _, a := range res.Agents {
		if a.ID == "root/worker.1" && a.Status != cadre.StatusCancelled {
			t.Errorf("the worker ended %s, want cancelled", a.Status)
		}
	}
}
