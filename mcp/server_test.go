package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cadre-ai/cadre"
)

type runCall struct{ Agent, Task, Context string }

// recorder is a RunFunc that records its calls and answers from them.
type recorder struct {
	mu    sync.Mutex
	calls []runCall
}

func (r *recorder) run(ctx context.Context, agent, task, context string) (string, error) {
	r.mu.Lock()
	r.calls = append(r.calls, runCall{agent, task, context})
	r.mu.Unlock()
	if task == "explode" {
		return "", errors.New("run 20250101-x failed: the model is unreachable")
	}
	return "answer of " + agent + " to " + task, nil
}

func testAgents() []*cadre.Definition {
	return []*cadre.Definition{
		{Name: "reviewer", Description: "Reviews Go code."},
		{Name: "hidden", Description: "Internal helper.", Visibility: cadre.VisibilityInternal},
		{Name: "data.loader", Description: ""},
	}
}

// serveInMemory starts srv on one end of an in-memory pipe and returns a
// client session on the other.
func serveInMemory(t *testing.T, srv *AgentServer) *sdk.ClientSession {
	t.Helper()
	ct, st := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ss, err := srv.srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- ss.Wait() }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		<-done
		cancel()
	})
	return cs
}

func TestAgentServer(t *testing.T) {
	rec := &recorder{}
	srv := NewAgentServer(AgentServerConfig{Agents: testAgents(), Run: rec.run})
	if diff := cmp.Diff([]string{"agent_data_loader", "agent_reviewer", "run_task"}, srv.ToolNames()); diff != "" {
		t.Errorf("tool names (-want +got):\n%s", diff)
	}
	cs := serveInMemory(t, srv)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*sdk.Tool{}
	for _, tl := range res.Tools {
		tools[tl.Name] = tl
	}
	if len(tools) != 3 || tools["agent_hidden"] != nil {
		t.Fatalf("tools %v", tools)
	}
	if d := tools["agent_reviewer"].Description; !strings.HasPrefix(d, "Reviews Go code.") || !strings.Contains(d, "cadre agent reviewer") {
		t.Errorf("reviewer's description %q", d)
	}
	if d := tools["run_task"].Description; !strings.Contains(d, "(reviewer, data.loader)") {
		t.Errorf("run_task's description %q", d)
	}
	schema, _ := json.Marshal(tools["agent_reviewer"].InputSchema)
	if !strings.Contains(string(schema), `"required":["task"]`) || !strings.Contains(string(schema), `"context"`) {
		t.Errorf("schema %s", schema)
	}

	call := func(name string, args any) (string, bool) {
		t.Helper()
		r, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("call %s: %v", name, err)
		}
		return resultText(r, &mediaBudget{perItem: DefaultMaxMediaBytes, total: DefaultMaxResultMediaBytes}), r.IsError
	}
	if got, isErr := call("agent_reviewer", map[string]any{"task": "review main.go", "context": "Go 1.26"}); isErr || got != "answer of reviewer to review main.go" {
		t.Errorf("agent_reviewer: %q, error %v", got, isErr)
	}
	if got, isErr := call("agent_data_loader", map[string]any{"task": "load"}); isErr || got != "answer of data.loader to load" {
		t.Errorf("agent_data_loader: %q, error %v", got, isErr)
	}
	if got, isErr := call("run_task", map[string]any{"task": "plan"}); isErr || got != "answer of  to plan" {
		t.Errorf("run_task: %q, error %v", got, isErr)
	}
	if got, isErr := call("run_task", map[string]any{"task": "explode"}); !isErr || !strings.Contains(got, "the model is unreachable") {
		t.Errorf("a failed run: %q, error %v", got, isErr)
	}
	if got, isErr := call("run_task", map[string]any{"context": "no task"}); !isErr || !strings.Contains(got, "needs a task") {
		t.Errorf("no task: %q, error %v", got, isErr)
	}
	if got, isErr := call("run_task", map[string]any{"task": "x", "priority": 1}); !isErr || !strings.Contains(got, "invalid arguments") {
		t.Errorf("an unknown argument: %q, error %v", got, isErr)
	}
	want := []runCall{{"reviewer", "review main.go", "Go 1.26"}, {"data.loader", "load", ""}, {"", "plan", ""}, {"", "explode", ""}}
	if diff := cmp.Diff(want, rec.calls); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
}

// cadre's own client reaches cadre's server: the agents become tools of
// another cadre.
func TestAgentServerThroughClient(t *testing.T) {
	rec := &recorder{}
	srv := NewAgentServer(AgentServerConfig{Agents: testAgents(), Run: rec.run})
	ct, st := sdk.NewInMemoryTransports()
	ss, err := srv.srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	c := connect(t, Config{Servers: map[string]ServerConfig{"cadre": {Transport: ct}}})
	reviewer := tool(t, c, "mcp__cadre__agent_reviewer")
	if !cadre.Mutates(reviewer) {
		t.Error("an agent tool is not treated as mutating")
	}
	got, err := reviewer.Call(context.Background(), json.RawMessage(`{"task":"look"}`))
	if err != nil || got != "answer of reviewer to look" {
		t.Fatalf("call: %q, %v", got, err)
	}
	_, err = reviewer.Call(context.Background(), json.RawMessage(`{"task":"explode"}`))
	var te *ToolError
	if !errors.As(err, &te) || !strings.Contains(te.Message, "unreachable") {
		t.Fatalf("failed run: %v", err)
	}
}

func TestServeStdio(t *testing.T) {
	rec := &recorder{}
	srv := NewAgentServer(AgentServerConfig{Agents: testAgents(), Run: rec.run})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- srv.ServeStdio(context.Background(), inR, outW)
		outW.Close()
	}()
	c := connect(t, Config{Servers: map[string]ServerConfig{"cadre": {Transport: &sdk.IOTransport{Reader: outR, Writer: inW}}}})
	got, err := tool(t, c, "mcp__cadre__run_task").Call(context.Background(), json.RawMessage(`{"task":"over pipes"}`))
	if err != nil || got != "answer of  to over pipes" {
		t.Fatalf("call: %q, %v", got, err)
	}
	// The client going away ends serving without an error.
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Errorf("ServeStdio: %v", err)
	}
}
