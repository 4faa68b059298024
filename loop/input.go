package loop

import (
	"time"

	"github.com/cadre-ai/cadre"
)

// An Input is something that happened to an agent. Inputs are journaled
// before they are stepped, so they must be plain data that JSON can encode
// and Decode read back.
type Input interface {
	// Kind names the input in the journal.
	Kind() string
}

// Start begins the agent. It must be the first Input.
type Start struct {
	Config Config `json:"config"`
	// Task is what the agent was asked to do, as given; Messages are the
	// first messages of its conversation (usually one user message built
	// from the task and its context).
	Task     string          `json:"task"`
	Messages []cadre.Message `json:"messages"`
	// ConfigFrom, in a Start read from a journal, names the agent of the
	// same run whose Start holds this one's configuration: the engine
	// writes a child's Start so when a sibling of the same kind (same
	// parent, definition and model, under the same definitions and
	// onboarding, so with the same configuration) was written before it with all of its
	// configuration, which then is this one's but for ID, Parent and
	// Definition. Whoever reads such a Start from a journal gives it that
	// configuration (WithConfigOf) before stepping it; the state refuses
	// one that was not.
	ConfigFrom cadre.AgentID `json:"config_from,omitempty"`
}

// WithConfigOf returns the Start with the configuration its ConfigFrom
// names, given as template: the template's, but for the Start's own ID,
// Parent and Definition.
func (s Start) WithConfigOf(template Config) Start {
	id, parent, def := s.Config.ID, s.Config.Parent, s.Config.Definition
	s.Config = template
	s.Config.ID, s.Config.Parent, s.Config.Definition = id, parent, def
	s.ConfigFrom = ""
	return s
}

// ModelResult is the outcome of the CallModel action.
type ModelResult struct {
	Response *cadre.Response `json:"response,omitempty"`
	// Err is set when the call failed for good (after the engine's retries).
	Err string `json:"err,omitempty"`
	// Interrupted means the call was cancelled for a steering message; the
	// loop asks again with the new messages.
	Interrupted bool `json:"interrupted,omitempty"`
	// BudgetExhausted means the run's token budget refused the call: the
	// agent finishes with what it has.
	BudgetExhausted bool `json:"budget_exhausted,omitempty"`
}

// ToolResult is the outcome of one call of a CallTools action.
type ToolResult struct {
	CallID  string `json:"call_id"`
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
	// Media are the images and sounds of the result, which Content
	// describes (see cadre.MediaTool). They go on the tool message.
	Media []cadre.Media `json:"media,omitempty"`
}

// ToolResults carries the results of some or all calls of a CallTools action.
type ToolResults struct {
	Results []ToolResult `json:"results"`
}

// Spawned answers a ChildSpec of a Spawn action: the child was started (or
// queued), or the engine refused it (a run-wide limit), with Err saying why
// in words the model can act on.
type Spawned struct {
	Ref   string        `json:"ref"`
	Child cadre.AgentID `json:"child"`
	Err   string        `json:"err,omitempty"`
}

// ChildReport is a child's report, or its failure, reaching the parent.
type ChildReport struct {
	Child  cadre.AgentID `json:"child"`
	Text   string        `json:"text"`
	Failed bool          `json:"failed,omitempty"`
	// Cancelled marks the failure of a cancelled child.
	Cancelled bool `json:"cancelled,omitempty"`
	// Incomplete marks a report made before the work was finished.
	Incomplete bool `json:"incomplete,omitempty"`
	// Round is the number of times the child was woken before it made
	// this report (see Wake): a parent takes one report per round.
	Round int `json:"round,omitempty"`
}

// ChildEnded says a child has stopped for good.
type ChildEnded struct {
	Child  cadre.AgentID `json:"child"`
	Status cadre.Status  `json:"status"`
	// Error is why a child that failed or was cancelled stopped.
	Error string `json:"error,omitempty"`
}

// ChildQuestion is a question a child put to this agent with ask_caller.
type ChildQuestion struct {
	Child    cadre.AgentID `json:"child"`
	Question string        `json:"question"`
}

// Answer answers the agent's pending ask_caller question. Err says why no
// answer could be had (for the root: no terminal to ask on).
type Answer struct {
	Text string `json:"text"`
	Err  string `json:"err,omitempty"`
}

// AgentCreated answers a CreateAgent action: the definition was written and
// registered (File says where), or Err says why not.
type AgentCreated struct {
	Ref        string            `json:"ref"`
	Definition *cadre.Definition `json:"definition,omitempty"`
	File       string            `json:"file,omitempty"`
	Err        string            `json:"err,omitempty"`
}

// InboxMessage is a message from another agent (or from the runtime, with
// From empty).
type InboxMessage struct {
	From     cadre.AgentID `json:"from,omitempty"`
	Text     string        `json:"text"`
	Steering bool          `json:"steering,omitempty"`
	// FollowUp marks a child's message sent after its report.
	FollowUp bool `json:"follow_up,omitempty"`
}

// Timeout says the agent saw no activity for its inactivity limit, Limit.
// (Journals of cadre before Limit was a time.Duration have seconds
// instead, which Decode reads.)
type Timeout struct {
	Limit time.Duration `json:"limit"`
}

// Cancel stops the agent.
type Cancel struct {
	Reason string `json:"reason,omitempty"`
}

// Kind implementations.
func (Start) Kind() string         { return "start" }
func (ModelResult) Kind() string   { return "model_result" }
func (ToolResults) Kind() string   { return "tool_results" }
func (Spawned) Kind() string       { return "spawned" }
func (ChildReport) Kind() string   { return "child_report" }
func (ChildEnded) Kind() string    { return "child_ended" }
func (ChildQuestion) Kind() string { return "child_question" }
func (Answer) Kind() string        { return "answer" }
func (AgentCreated) Kind() string  { return "agent_created" }
func (InboxMessage) Kind() string  { return "inbox_message" }
func (Timeout) Kind() string       { return "timeout" }
func (Cancel) Kind() string        { return "cancel" }
