package local

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/tool"
)

// Config configures an Engine. Models is required; the rest have working
// zero values.
type Config struct {
	// Models chooses and opens the model of each agent.
	Models ModelSource
	// RootModel is the root agent's model name, passed to Models.Open.
	RootModel string
	// Definitions are the subagents agents may spawn.
	Definitions []*cadre.Definition
	// Tools are the ordinary tools of the root agent; children get a subset.
	Tools []cadre.Tool
	// Runner runs tool calls. Nil runs the tool directly after checking the
	// arguments are a JSON object. A Runner that is also an Approver (as
	// tool.Executor is) puts the rules that ask before an agent starts to
	// the approval policy; with another, such starts are refused.
	Runner ToolRunner
	// Workspace is the directory the file tools work in (their relative
	// paths start there): the rules of agent definitions judge paths
	// relative to it. Empty means the current directory.
	Workspace string
	// Store journals inputs and keeps records and events. Nil keeps nothing
	// (and the run cannot be resumed).
	Store  cadre.Store
	Limits cadre.Limits
	// Protocol is how agents delegate. ProtocolTools or ProtocolText apply
	// to every agent of the run; ProtocolAuto (or empty) lets a
	// definition's protocol decide, then the agent's model: the text
	// protocol when Models says the model does not call tools (see
	// ToolCaller), tool calls otherwise.
	Protocol cadre.Protocol
	// Report is the report mode of children whose definition sets none.
	Report cadre.ReportMode
	// TurnAfterReport gives every child one more model call after a reply
	// that only sends messages to its parent, its report among them, as
	// cadre.Definition.TurnAfterReport does for the agents of one
	// definition. By default such a child ends there: its report says all
	// it will.
	TurnAfterReport bool
	// Say shows only the <say> blocks of the root's replies.
	Say bool
	// Soul and Identity are the personality files given to every agent;
	// Guidance (AGENTS.md) is part of the root's prompt.
	Soul, Identity, Guidance string
	// RootDefinition, when set, is the root's definition (its prompt, tool
	// list and askCaller) instead of the generic root prompt.
	RootDefinition *cadre.Definition
	// AskUser answers the root agent's ask_caller questions (a root with
	// askCaller). Nil means there is no one to ask: the question fails
	// with a message telling the agent to go on with what it knows. While
	// AskUser asks, Engine.Answer may answer instead; AwaitAnswer leaves
	// every question to it.
	AskUser func(ctx context.Context, agent cadre.AgentID, question string) (string, error)
	// CreateAgent approves and saves a definition an agent writes with
	// agent_create, returning where it was written. Nil refuses every
	// creation with a message saying the run does not allow it.
	CreateAgent func(ctx context.Context, agent cadre.AgentID, def *cadre.Definition) (file string, err error)
	// Settings is kept in the run's record as it is (the caller's own
	// description of the run's configuration, used to resume it).
	Settings json.RawMessage
	// LeaseTTL is how long the lease on a run lasts unless this process
	// renews it (every third of it); zero means DefaultLeaseTTL. Another
	// process may take the run over that long after this one stops, and
	// sooner when it can tell that this process has exited.
	LeaseTTL time.Duration
	// Warnings are told once each time the run starts or resumes, as
	// warning events of the root agent (such as that commands run
	// unconfined).
	Warnings []string
	// EventBuffer is how many of a run's latest events the engine keeps for
	// its watchers (Engine.Events); a watcher further behind is told what
	// it missed. Zero means DefaultEventBuffer.
	EventBuffer int
	// Prices are the models' prices, by model name: model_response and
	// agent and run end events, the tree and the result then say what the
	// calls cost. Nil knows no prices, and every cost is zero.
	Prices cadre.Prices
	// Observer, when set, watches every agent and event (see Observer).
	// Nil costs nothing.
	Observer Observer
	Logger   *slog.Logger

	// stepped, when set, is called from an agent's goroutine with every
	// input the agent steps and the actions the step returned; the tests
	// compare them with a replay of the journal.
	stepped func(agent cadre.AgentID, in loop.Input, acts []loop.Action)
}

// DefaultEventBuffer is the EventBuffer of a Config that sets none.
const DefaultEventBuffer = 1024

// ModelSource chooses and opens models.
type ModelSource interface {
	// Choose returns the model name for an agent of def (nil for a generic
	// text-protocol child) whose parent uses parent, and a warning for the
	// user when it had to fall back.
	Choose(def *cadre.Definition, parent string) (name, warning string)
	// Open returns the model of that name. It is called once per agent and
	// may return a shared instance.
	Open(name string) (cadre.Model, error)
}

// ToolCaller is a ModelSource that knows which models cannot call tools.
type ToolCaller interface {
	// ToolCalling reports whether the named model calls tools.
	ToolCalling(name string) bool
}

// OneModel is a ModelSource that gives every agent the same model.
type OneModel struct {
	Name  string
	Model cadre.Model
}

// Choose implements ModelSource.
func (o OneModel) Choose(*cadre.Definition, string) (string, string) { return o.Name, "" }

// Open implements ModelSource.
func (o OneModel) Open(string) (cadre.Model, error) { return o.Model, nil }

// ToolRunner runs one tool call of an agent and returns the result text and
// whether it is an error. It never panics; failures are results.
type ToolRunner interface {
	RunTool(ctx context.Context, agent cadre.AgentID, t cadre.Tool, call cadre.ToolCall) (string, bool)
}

// An Approver puts a request to the approval policy and reports whether it
// may go on; when not, denial says why, for the model. tool.Executor is one.
type Approver interface {
	Approve(ctx context.Context, req tool.ApprovalRequest) (ok bool, denial string, err error)
}

// directRunner runs tools with a minimal argument check.
type directRunner struct{}

func (directRunner) RunTool(ctx context.Context, _ cadre.AgentID, t cadre.Tool, call cadre.ToolCall) (out string, isErr bool) {
	defer func() {
		if r := recover(); r != nil {
			out, isErr = fmt.Sprintf("Error: tool %s crashed: %v", call.Name, r), true
		}
	}()
	args := strings.TrimSpace(call.Arguments)
	if args == "" || args == "null" {
		args = "{}"
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(args), &obj); err != nil {
		return fmt.Sprintf("Error: the arguments of %s are not a valid JSON object (%v). Call it again with a JSON object.", call.Name, err), true
	}
	res, err := t.Call(ctx, json.RawMessage(args))
	if err != nil {
		return "Error: " + err.Error(), true
	}
	return res, false
}
