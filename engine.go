package cadre

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"
)

// An Engine runs agents: it starts runs, carries on stored ones, and lets
// callers cancel, inspect and watch them, by run ID. The package
// documentation states what every implementation guarantees.
//
// The local engine (package local) runs every agent in the calling
// process; other engines may run them elsewhere. Callers that use only
// this interface work with any of them.
type Engine interface {
	// Start begins a run of the root agent on task and returns the run's
	// ID once the run is recorded and its root agent exists. ctx bounds
	// the start only: the run goes on after Start returns, until it ends,
	// is cancelled, or its time limit passes.
	Start(ctx context.Context, task string, opts StartOptions) (string, error)

	// Resume carries on a stored run that did not end (its process
	// stopped). ctx bounds the resume only, as for Start.
	Resume(ctx context.Context, run string) error

	// Wait blocks until the run has ended and returns how it ended, or
	// until ctx ends. When the run did not complete (it failed or was
	// cancelled), the Result comes with a *RunError.
	Wait(ctx context.Context, run string) (*Result, error)

	// Cancel stops the run, or with opts.Agent that agent and its
	// subtree. It returns once the agents are told; Wait and the events
	// say when they have ended.
	Cancel(ctx context.Context, run string, opts CancelOptions) error

	// Tree returns a snapshot of the run's agents.
	Tree(ctx context.Context, run string) (*Tree, error)

	// Events returns the run's events in order, live, ending after the
	// run's last event (run_completed or run_failed). A watcher that falls
	// behind is sent an EventSkipped in place of the events it missed
	// (see the package documentation). The sequence yields an error, and
	// ends, when ctx ends or the run is unknown.
	Events(ctx context.Context, run string) iter.Seq2[Event, error]
}

// An Answerer is an Engine that takes answers to the questions agents ask
// the user (a root agent's ask_caller), from any caller: a terminal, a
// server's client.
type Answerer interface {
	// Answer answers the question the agent has pending. It fails with
	// ErrNoQuestion when the agent has none.
	Answer(ctx context.Context, run string, agent AgentID, text string) error
}

// A Continuer is an Engine that carries on a run that has ended (done,
// failed or cancelled) with a follow-up: a new message from the user to
// the run's root agent, which goes on with its whole conversation and its
// children. The run is going on again until the root finishes once more;
// Wait and Events then work as for a new run.
type Continuer interface {
	// Continue adds message to the ended run's root agent and carries the
	// run on. It fails with an error wrapping ErrNotRunning when the run
	// has not ended. ctx bounds the continuing only, as for Start.
	Continue(ctx context.Context, run, message string) error
}

// StartOptions are the choices of one Start. The zero value starts a run
// with an ID of the engine's choosing.
type StartOptions struct {
	// ID is the new run's ID. Empty lets the engine choose one. An ID a
	// store already holds is an error.
	ID string
}

// CancelOptions say what Cancel stops and how. The zero value cancels the
// whole run gracefully.
type CancelOptions struct {
	// Agent is the agent to cancel with its subtree; empty means the whole
	// run (the root and everything under it).
	Agent AgentID
	// Reason is told to the agents and kept as the run's or the agents'
	// error. Empty means "cancelled by the user" (or "aborted").
	Reason string
	// Abort stops the whole run at once: model and tool calls in flight
	// are aborted rather than awaited. It applies to a whole run only.
	Abort bool
}

// Errors of an Engine that callers branch on.
var (
	// ErrNotRunning is returned for a run that exists but is not going on
	// in the engine: it has ended, or another process runs it.
	ErrNotRunning = errors.New("cadre: the run is not going on in this engine")
	// ErrNoQuestion is returned by Answer when the agent has no question
	// waiting for an answer.
	ErrNoQuestion = errors.New("cadre: the agent has no question waiting for an answer")
)

// A Result is how a run ended.
type Result struct {
	RunID  string `json:"run"`
	Status Status `json:"status"`
	// Answer is the root's final text.
	Answer   string    `json:"answer"`
	Error    string    `json:"error,omitempty"`
	Usage    Usage     `json:"usage"`
	Findings []Finding `json:"findings,omitempty"`
	// BudgetExhausted is set when the token budget stopped agents; Completed
	// and Incomplete then list which agents finished their work.
	BudgetExhausted bool        `json:"budget_exhausted,omitempty"`
	Completed       []AgentID   `json:"completed,omitempty"`
	Incomplete      []AgentID   `json:"incomplete,omitempty"`
	Agents          []AgentInfo `json:"agents"`
	// Cost is what the tree's model calls cost at the configured prices;
	// zero when no agent's model has a price.
	Cost float64 `json:"cost,omitempty"`
}

// AgentInfo is a snapshot of one agent.
type AgentInfo struct {
	ID         AgentID   `json:"id"`
	Parent     AgentID   `json:"parent,omitempty"`
	Depth      int       `json:"depth"`
	Definition string    `json:"definition"`
	Model      string    `json:"model,omitempty"`
	Mode       string    `json:"mode,omitempty"`
	Task       string    `json:"task"`
	Status     Status    `json:"status"`
	Turns      int       `json:"turns"`
	Usage      Usage     `json:"usage"`
	Started    time.Time `json:"started"`
	Ended      time.Time `json:"ended,omitzero"`
	Result     string    `json:"result,omitempty"`
	Error      string    `json:"error,omitempty"`
	// Stopped marks an agent the token budget stopped before it finished.
	Stopped bool `json:"stopped,omitempty"`
	// Cost is what the agent's own model calls cost at the configured
	// prices; zero when its model has no price.
	Cost float64 `json:"cost,omitempty"`
}

// A Tree is a snapshot of a run's agents.
type Tree struct {
	Run string `json:"run"`
	// Usage is the tokens the whole tree has used.
	Usage Usage `json:"usage"`
	// Cost is what the tree's model calls have cost at the configured
	// prices.
	Cost float64 `json:"cost,omitempty"`
	// Agents are in creation order: every agent after its parent.
	Agents []AgentInfo `json:"agents"`
}

// A RunError says why a run did not complete.
type RunError struct {
	Run    string
	Status Status
	Reason string
}

func (e *RunError) Error() string {
	return fmt.Sprintf("run %s %s: %s", e.Run, e.Status, e.Reason)
}
