package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cadre-ai/cadre"
)

func TestExecutor(t *testing.T) {
	var writes atomic.Int32
	echo := Func(cadre.ToolSpec{Name: "echo", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		func(_ context.Context, a struct{ Text string }) (string, error) { return a.Text, nil })
	write := &fakeTool{spec: cadre.ToolSpec{Name: "write", Parameters: json.RawMessage(`{"type":"object"}`)}, mutates: true,
		call: func(context.Context, json.RawMessage) (string, error) { writes.Add(1); return "written", nil }}
	fails := &fakeTool{spec: cadre.ToolSpec{Name: "fails"}, call: func(context.Context, json.RawMessage) (string, error) {
		return "", errors.New("disk full")
	}}
	boom := &fakeTool{spec: cadre.ToolSpec{Name: "boom"}, call: func(context.Context, json.RawMessage) (string, error) {
		var m map[string]int
		m["x"] = 1 // nil map write
		return "", nil
	}}
	broken := &fakeTool{spec: cadre.ToolSpec{Name: "broken", Parameters: json.RawMessage(`{"type":`)}}
	reg, err := NewRegistry(echo, write, fails, boom, broken)
	if err != nil {
		t.Fatal(err)
	}
	yes := func(context.Context, ApprovalRequest) (bool, error) { return true, nil }
	no := func(context.Context, ApprovalRequest) (bool, error) { return false, nil }

	tests := []struct {
		name     string
		approver *Approver
		call     cadre.ToolCall
		want     string // exact content, or a prefix ending in "…"
		isError  bool
		writes   int32
	}{
		{name: "ok", call: cadre.ToolCall{Name: "echo", Arguments: `{"text":"hi"}`}, want: "hi"},
		{name: "unknown", call: cadre.ToolCall{Name: "ecko"}, isError: true,
			want: `Error: unknown tool "ecko". The tools are: boom, broken, echo, fails, write. Call one of those by its exact name.`},
		{name: "invalid_json", call: cadre.ToolCall{Name: "echo", Arguments: `{"text":`}, isError: true,
			want: `Error: the arguments of echo are not valid JSON (unexpected EOF). Call echo again with a JSON object as its arguments.`},
		{name: "not_object", call: cadre.ToolCall{Name: "echo", Arguments: `["hi"]`}, isError: true,
			want: `Error: the arguments of echo must be a JSON object, got array. Call echo again with a JSON object as its arguments.`},
		{name: "schema", call: cadre.ToolCall{Name: "echo", Arguments: `{"text":3}`}, isError: true,
			want: `Error: invalid arguments for echo: argument "text": expected string, got number. Call echo again with arguments that match its parameters.`},
		{name: "empty_arguments", call: cadre.ToolCall{Name: "echo", Arguments: "  "}, isError: true,
			want: `Error: invalid arguments for echo: missing required argument "text". Call echo again with arguments that match its parameters.`},
		{name: "broken_schema", call: cadre.ToolCall{Name: "broken", Arguments: `{}`}, isError: true, want: "Error: tool broken cannot be called: its parameter schema is broken…"},
		{name: "tool_error", call: cadre.ToolCall{Name: "fails"}, isError: true, want: "Error: disk full"},
		{name: "panic", call: cadre.ToolCall{Name: "boom"}, isError: true, want: "Error: tool boom crashed: assignment to entry in nil map…"},
		{name: "mutator_no_approver", call: cadre.ToolCall{Name: "write"}, isError: true, want: "Error: write was not run: it needs the user's approval…"},
		{name: "mutator_all", approver: &Approver{Mode: ApproveAll}, call: cadre.ToolCall{Name: "write"}, want: "written", writes: 1},
		{name: "mutator_none", approver: &Approver{Mode: ApproveNone, Prompt: yes}, call: cadre.ToolCall{Name: "write"}, isError: true, want: "Error: write was not run: this run does not allow…"},
		{name: "mutator_ask_yes", approver: &Approver{Mode: ApproveAsk, Prompt: yes}, call: cadre.ToolCall{Name: "write"}, want: "written", writes: 1},
		{name: "mutator_ask_no", approver: &Approver{Mode: ApproveAsk, Prompt: no}, call: cadre.ToolCall{Name: "write"}, isError: true, want: "Error: write was not run: the user declined this call…"},
		{name: "mutator_prompt_fails", approver: &Approver{Prompt: func(context.Context, ApprovalRequest) (bool, error) { return false, errors.New("no tty") }},
			call: cadre.ToolCall{Name: "write"}, isError: true, want: "Error: write was not run: no approval could be obtained (approve write: ask the user: no tty)."},
		{name: "reader_skips_approval", approver: &Approver{Mode: ApproveNone}, call: cadre.ToolCall{Name: "echo", Arguments: `{"text":"free"}`}, want: "free"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writes.Store(0)
			var logs bytes.Buffer
			e := &Executor{Tools: reg, Approver: tt.approver, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
			got, isErr := e.Run(context.Background(), "root", tt.call)
			if isErr != tt.isError {
				t.Errorf("isError = %v, want %v (content %q)", isErr, tt.isError, got)
			}
			if prefix, ok := strings.CutSuffix(tt.want, "…"); ok {
				if !strings.HasPrefix(got, prefix) {
					t.Errorf("content = %q, want it to start with %q", got, prefix)
				}
			} else if got != tt.want {
				t.Errorf("content = %q, want %q", got, tt.want)
			}
			if writes.Load() != tt.writes {
				t.Errorf("the mutating tool ran %d times, want %d", writes.Load(), tt.writes)
			}
			if tt.name == "panic" && !strings.Contains(logs.String(), "tool crashed") {
				t.Errorf("the crash was not logged: %s", logs.String())
			}
		})
	}
}

func TestExecutorRunToolNil(t *testing.T) {
	e := &Executor{}
	got, isErr := e.RunTool(context.Background(), "root", nil, cadre.ToolCall{Name: "secret_tool"})
	if !isErr || !strings.Contains(got, `unknown tool "secret_tool"`) {
		t.Errorf("RunTool(nil) = %q, %v", got, isErr)
	}
	got, isErr = e.Run(context.Background(), "root", cadre.ToolCall{Name: "x"})
	if !isErr || !strings.Contains(got, "no tools are available") {
		t.Errorf("Run without tools = %q, %v", got, isErr)
	}
}

func TestExecutorApprovalRequest(t *testing.T) {
	var got ApprovalRequest
	w := Func(cadre.ToolSpec{Name: "write_file"}, func(context.Context, struct{ Path string }) (string, error) { return "ok", nil },
		Mutating[struct{ Path string }](), WithSummary(func(a struct{ Path string }) string { return "write " + a.Path }))
	e := &Executor{Approver: &Approver{Prompt: func(_ context.Context, r ApprovalRequest) (bool, error) { got = r; return true, nil }}}
	if out, isErr := e.RunTool(context.Background(), "root/coder.1", w, cadre.ToolCall{Name: "write_file", Arguments: `{"Path":"a.go"}`}); isErr || out != "ok" {
		t.Fatalf("RunTool = %q, %v", out, isErr)
	}
	want := ApprovalRequest{Agent: "root/coder.1", Tool: "write_file", Summary: "write a.go", Args: `{"Path":"a.go"}`}
	if got != want {
		t.Errorf("approval request %+v, want %+v", got, want)
	}
}

func TestExecutorRunAmong(t *testing.T) {
	e := &Executor{}
	tools := []cadre.Tool{named("read_file"), nil, named("list_files")}
	got, isErr := e.RunAmong(context.Background(), "root", tools, cadre.ToolCall{Name: "list_files", Arguments: "null"})
	if isErr || got != "ok" {
		t.Errorf("RunAmong(list_files) = %q, %v", got, isErr)
	}
	got, isErr = e.RunAmong(context.Background(), "root", tools, cadre.ToolCall{Name: "write_file"})
	want := `Error: unknown tool "write_file". Your tools are: list_files, read_file. Call one of those by its exact name.`
	if !isErr || got != want {
		t.Errorf("RunAmong(write_file) = %q, %v; want %q", got, isErr, want)
	}
	got, isErr = e.RunAmong(context.Background(), "root", nil, cadre.ToolCall{Name: "x"})
	if !isErr || !strings.Contains(got, "you have no tools") {
		t.Errorf("RunAmong without tools = %q, %v", got, isErr)
	}
}

// toolRunner is the local engine's contract for running tools; the
// Executor must keep fitting it.
type toolRunner interface {
	RunTool(ctx context.Context, agent cadre.AgentID, t cadre.Tool, call cadre.ToolCall) (string, bool)
}

var _ toolRunner = (*Executor)(nil)

// TestExecutorConcurrent runs the calls of one reply at once, as the
// engine does, through one Executor; run it with -race.
func TestExecutorConcurrent(t *testing.T) {
	echo := Func(cadre.ToolSpec{Name: "echo", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		func(_ context.Context, a struct{ Text string }) (string, error) { return a.Text, nil })
	var writes atomic.Int32
	write := &fakeTool{spec: cadre.ToolSpec{Name: "write"}, mutates: true,
		call: func(context.Context, json.RawMessage) (string, error) { writes.Add(1); return "written", nil }}
	reg, err := NewRegistry(echo, write)
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	e := &Executor{Tools: reg, Approver: &Approver{Prompt: func(context.Context, ApprovalRequest) (bool, error) {
		return asked.Add(1)%2 == 1, nil // every other call is allowed
	}}}
	calls := []struct {
		call    cadre.ToolCall
		want    string // prefix of the content
		isError bool
	}{
		{call: cadre.ToolCall{Name: "echo", Arguments: `{"text":"hi"}`}, want: "hi"},
		{call: cadre.ToolCall{Name: "echo", Arguments: `{"text":`}, want: "Error: the arguments of echo are not valid JSON", isError: true},
		{call: cadre.ToolCall{Name: "echo", Arguments: `{"text":1}`}, want: "Error: invalid arguments for echo", isError: true},
		{call: cadre.ToolCall{Name: "nope"}, want: `Error: unknown tool "nope"`, isError: true},
		{call: cadre.ToolCall{Name: "write", Arguments: `{}`}},
	}
	const rounds = 20
	var wg sync.WaitGroup
	var allowed, denied atomic.Int32
	for range rounds {
		for _, c := range calls {
			wg.Go(func() {
				got, isErr := e.Run(context.Background(), "root", c.call)
				if c.call.Name == "write" {
					switch {
					case !isErr && got == "written":
						allowed.Add(1)
					case isErr && strings.Contains(got, "declined"):
						denied.Add(1)
					default:
						t.Errorf("write: %q, %v", got, isErr)
					}
					return
				}
				if isErr != c.isError || !strings.HasPrefix(got, c.want) {
					t.Errorf("%s(%s) = %q, %v; want %q…, %v", c.call.Name, c.call.Arguments, got, isErr, c.want, c.isError)
				}
			})
		}
	}
	wg.Wait()
	if asked.Load() != rounds || allowed.Load() != rounds/2 || denied.Load() != rounds/2 || writes.Load() != rounds/2 {
		t.Errorf("asked %d, allowed %d, denied %d, ran %d; want %d, %d, %d, %d",
			asked.Load(), allowed.Load(), denied.Load(), writes.Load(), rounds, rounds/2, rounds/2, rounds/2)
	}
}
