package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/cadre-ai/cadre"
)

// An Executor runs tool calls: it finds the tool, checks the arguments,
// judges the call when the tool is a Gate (the rules of the agent's
// definition), asks for approval when the tool mutates or a rule asks, runs
// it and turns any failure into an error result. It is safe for concurrent use; set its fields
// before the first call.
type Executor struct {
	// Tools are looked up by Run. RunTool does not use them.
	Tools *Registry
	// Approver decides about calls of mutating tools. Nil denies them all,
	// as ApproveAsk does with no one to ask.
	Approver *Approver
	// Logger receives a record of each call at debug level and of each
	// crash at error level. Nil means no logging.
	Logger *slog.Logger
}

// Run runs call with the tool of that name in e.Tools. An unknown name is
// an error result listing the tools there are.
func (e *Executor) Run(ctx context.Context, agent cadre.AgentID, call cadre.ToolCall) (content string, isError bool) {
	var t cadre.Tool
	if e.Tools != nil {
		t, _ = e.Tools.Get(call.Name)
	}
	if t == nil {
		var names []string
		if e.Tools != nil {
			names = e.Tools.Names()
		}
		if len(names) == 0 {
			return fmt.Sprintf("Error: unknown tool %q: no tools are available here; answer without tools.", call.Name), true
		}
		return fmt.Sprintf("Error: unknown tool %q. The tools are: %s. Call one of those by its exact name.", call.Name, strings.Join(names, ", ")), true
	}
	return e.RunTool(ctx, agent, t, call)
}

// RunAmong runs call with the tool of that name among tools, the tools an
// agent was given. An unknown name is an error result listing them.
func (e *Executor) RunAmong(ctx context.Context, agent cadre.AgentID, tools []cadre.Tool, call cadre.ToolCall) (content string, isError bool) {
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		if t == nil {
			continue
		}
		n := t.Spec().Name
		if n == call.Name {
			return e.RunTool(ctx, agent, t, call)
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return fmt.Sprintf("Error: unknown tool %q: you have no tools; answer without them.", call.Name), true
	}
	slices.Sort(names)
	return fmt.Sprintf("Error: unknown tool %q. Your tools are: %s. Call one of those by its exact name.", call.Name, strings.Join(names, ", ")), true
}

// RunTool runs call with t, which the caller has already chosen (it has the
// signature of the local engine's ToolRunner). A nil t means the agent has
// no tool of that name; RunAmong can list the ones it has. Empty or null
// arguments count as {}. It returns the result text and whether it reports
// a failure; it never panics.
func (e *Executor) RunTool(ctx context.Context, agent cadre.AgentID, t cadre.Tool, call cadre.ToolCall) (content string, isError bool) {
	name := call.Name
	defer func() {
		if r := recover(); r != nil {
			e.log(ctx, slog.LevelError, "tool crashed", "agent", agent, "tool", name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			content = fmt.Sprintf("Error: tool %s crashed: %v. This is a fault in the tool, not in your call; do not retry it the same way.", name, r)
			isError = true
		}
	}()
	if t == nil {
		return fmt.Sprintf("Error: unknown tool %q: it is not one of your tools. Call only the tools you were given, by their exact names.", name), true
	}
	args := json.RawMessage(strings.TrimSpace(call.Arguments))
	if len(args) == 0 || string(args) == "null" {
		// What several servers send for a call without arguments.
		args = json.RawMessage("{}")
	}
	v, err := decodeJSON(args)
	if err != nil {
		return fmt.Sprintf("Error: the arguments of %s are not valid JSON (%v). Call %s again with a JSON object as its arguments.", name, err, name), true
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Sprintf("Error: the arguments of %s must be a JSON object, got %s. Call %s again with a JSON object as its arguments.", name, jsonType(v), name), true
	}
	if err := Validate(t.Spec().Parameters, args); err != nil {
		if errors.Is(err, ErrInvalidSchema) {
			return fmt.Sprintf("Error: tool %s cannot be called: its parameter schema is broken (%v). This is a fault in the tool; do without it.", name, err), true
		}
		return fmt.Sprintf("Error: invalid arguments for %s: %v. Call %s again with arguments that match its parameters.", name, err, name), true
	}
	gate, gated := t.(Gate)
	rule := ""
	if gated {
		verdict, why := gate.Judge(ctx, args)
		switch verdict {
		case cadre.PermissionAllow:
		case cadre.PermissionAsk:
			rule = why
		default:
			e.log(ctx, slog.LevelDebug, "tool call refused by the agent's rules", "agent", agent, "tool", name)
			return fmt.Sprintf("Error: %s was not run: %s", name, why), true
		}
	}
	if cadre.Mutates(t) || rule != "" {
		ok, denial, err := e.Approve(ctx, ApprovalRequest{Agent: agent, Tool: name, Summary: Summarize(t, args), Rule: rule, Args: string(args)})
		if err != nil {
			e.log(ctx, slog.LevelWarn, "approval failed", "agent", agent, "tool", name, "error", err)
			return fmt.Sprintf("Error: %s was not run: no approval could be obtained (%v).", name, err), true
		}
		if !ok {
			e.log(ctx, slog.LevelDebug, "tool call denied", "agent", agent, "tool", name)
			return "Error: " + denial, true
		}
	}
	var out string
	if gated {
		out, err = gate.CallJudged(ctx, args, rule != "")
	} else {
		out, err = t.Call(ctx, args)
	}
	if err != nil {
		e.log(ctx, slog.LevelDebug, "tool call failed", "agent", agent, "tool", name, "error", err)
		return "Error: " + err.Error(), true
	}
	e.log(ctx, slog.LevelDebug, "tool call done", "agent", agent, "tool", name, "bytes", len(out))
	return out, false
}

// Approve puts a request to e.Approver (nil denies, as ApproveAsk does with
// no one to ask). The local engine uses it for rules that ask before an
// agent is started.
func (e *Executor) Approve(ctx context.Context, req ApprovalRequest) (ok bool, denial string, err error) {
	ap := e.Approver
	if ap == nil {
		ap = &Approver{Mode: ApproveAsk}
	}
	return ap.Approve(ctx, req)
}

// A Gate is a tool whose calls are judged before they run: by the rules of
// the agent's definition (package rule wraps tools so). RunTool asks Judge
// first: PermissionDeny refuses the call with the reason given;
// PermissionAsk puts it to the Approver whatever the tool, the reason
// naming the rule that asks; PermissionAllow lets it go on (to the Approver
// still when the tool mutates). Then it calls CallJudged, not Call.
type Gate interface {
	cadre.Tool
	Judge(ctx context.Context, args json.RawMessage) (cadre.Permission, string)
	// CallJudged runs a call Judge allowed, or one it asked about and the
	// Approver allowed (approved). It judges the call again first and
	// refuses it if the answer is now stricter, so what changed in between
	// (a link swapped for another) is caught.
	CallJudged(ctx context.Context, args json.RawMessage, approved bool) (string, error)
}

func (e *Executor) log(ctx context.Context, level slog.Level, msg string, args ...any) {
	if e.Logger != nil {
		e.Logger.Log(ctx, level, msg, args...)
	}
}
