package loop

import "github.com/cadre-ai/cadre"

// An Action is something the loop asks its engine to do.
type Action interface{ action() }

// CallModel asks for one model call. The engine answers with ModelResult.
type CallModel struct {
	// Request's Messages and Tools may be shared with the agent's state
	// and other requests: they must not be modified.
	Request cadre.Request
	// Final is set on the last call after max turns, made without tools.
	Final bool
}

// CallTools asks for ordinary tool calls, which may run concurrently. The
// engine answers with ToolResults, one result per call, in one or several
// inputs.
type CallTools struct {
	Calls []cadre.ToolCall
	// Resumed marks calls that were in flight when the run stopped and are
	// asked for again after a replay: the engine must not repeat a call
	// that changes something (cadre.Mutates) without asking the model.
	Resumed bool
}

// ChildSpec describes one child to start.
type ChildSpec struct {
	// Ref identifies the request in the answering Spawned input: the tool
	// call ID, or "spawn.N" for text-protocol tasks.
	Ref string        `json:"ref"`
	ID  cadre.AgentID `json:"id"`
	// Definition names the child's definition; empty for a text-protocol
	// child without one (it gets the generic sub-agent prompt).
	Definition string `json:"definition,omitempty"`
	// Name is the display name given by the model, if any.
	Name string `json:"name,omitempty"`
	// Model, when set, is the model the caller asked for, overriding the
	// definition's.
	Model   string `json:"model,omitempty"`
	Task    string `json:"task"`
	Context string `json:"context,omitempty"`
	// Messages are extra user messages placed before the task message
	// (the previous result of a sequential step).
	Messages []cadre.Message `json:"messages,omitempty"`
	// First, when set, is the child's first user message instead of the
	// one built from Task and Context (an onboarded call, or the
	// onboarding conversation itself).
	First      string `json:"first,omitempty"`
	Background bool   `json:"background,omitempty"`
	// Mode is how the child was asked for: "sync", "background",
	// "parallel", "sequential" or "onboard".
	Mode string `json:"mode"`
	// Onboarding starts the child in ModeOnboarding.
	Onboarding bool `json:"onboarding,omitempty"`
	// Index and Total place a text-protocol task within its block.
	Index int `json:"index,omitempty"`
	Total int `json:"total,omitempty"`
}

// Spawn asks for children. The engine answers each spec with Spawned, and
// later each started child with ChildReport and ChildEnded.
type Spawn struct {
	Children []ChildSpec
}

// Deliver sends a message to another agent.
type Deliver struct {
	To   cadre.AgentID
	Text string
	// Report marks the sender's one report to its parent; Failed marks a
	// report that is an error.
	Report    bool
	Failed    bool
	Cancelled bool
	// Incomplete marks a report made before the work was finished (the
	// token budget ran out, or an onboarding agent reached its turn limit).
	Incomplete bool
	Steering   bool
	FollowUp   bool
	// Wake marks a message to a child that has finished: the engine wakes
	// it with the message (a Wake input). Round is the child's round, the
	// one its next report carries, for a report as for a wake.
	Wake  bool
	Round int
}

// Ask puts the agent's question to its caller: its parent (as a
// ChildQuestion input) or, for the root, the user. The engine answers with
// Answer.
type Ask struct {
	Question string
	// Onboarding marks a question asked in ModeOnboarding.
	Onboarding bool
}

// Reply sends the answer to a child's question.
type Reply struct {
	To   cadre.AgentID
	Text string
}

// CreateAgent asks the engine to create a definition at run time: approve
// it, write it where it can be reviewed, and register it for the run. The
// engine answers with AgentCreated.
type CreateAgent struct {
	Ref        string
	Definition cadre.Definition
}

// CancelChild asks to cancel a child and all its descendants.
type CancelChild struct {
	Child cadre.AgentID
}

// Interrupt asks the engine to cancel the model call in flight (a steering
// message arrived); the engine answers with ModelResult{Interrupted: true},
// or with the result if the call had already finished.
type Interrupt struct{}

// Emit asks the engine to publish an event for this agent.
type Emit struct {
	Event cadre.Payload
}

// Type is the type of the event.
func (e Emit) Type() cadre.EventType { return e.Event.EventType() }

// Wait says the agent's turn is over but it is not done: it waits for its
// children, its inbox or an answer.
type Wait struct{}

// Finish ends the agent. Result is its final text.
type Finish struct {
	Result string
	// Failed marks an agent that ends in failure (for example a tag-mode
	// child that never produced a <response>).
	Failed bool
	// Cancelled marks an agent stopped by Cancel.
	Cancelled bool
	// BudgetExhausted marks an agent stopped by the token budget.
	BudgetExhausted bool
}

func (CallModel) action()   {}
func (CallTools) action()   {}
func (Spawn) action()       {}
func (Deliver) action()     {}
func (Ask) action()         {}
func (Reply) action()       {}
func (CreateAgent) action() {}
func (CancelChild) action() {}
func (Interrupt) action()   {}
func (Emit) action()        {}
func (Wait) action()        {}
func (Finish) action()      {}
