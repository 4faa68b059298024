package cadre

import (
	"encoding/json"
	"reflect"
)

// The payloads of the events, one struct per EventType. Their JSON field
// names are the schema that --json, the stores and exports share;
// docs/events.md is generated from these declarations and their comments
// (go test -run TestEventsDoc -update).

// RunStarted is the payload of EventRunStarted: a run began.
type RunStarted struct {
	// Task is the task the root agent was given.
	Task string `json:"task"`
	// Model is the root agent's model.
	Model string `json:"model"`
}

// RunResumed is the payload of EventRunResumed: a run that had stopped
// carries on.
type RunResumed struct {
	// Task is the run's task.
	Task string `json:"task"`
	// Agents is how many agents were rebuilt from their journals.
	Agents int `json:"agents"`
}

// RunCompleted is the payload of EventRunCompleted: the root agent
// finished and the run is done.
type RunCompleted struct {
	// Answer is the root agent's final text.
	Answer string `json:"answer"`
	// Usage is the tokens the whole tree used.
	Usage Usage `json:"usage"`
	// Agents is how many agents the run had, the root included.
	Agents int `json:"agents"`
	// BudgetExhausted is set when the token budget stopped agents.
	BudgetExhausted bool `json:"budget_exhausted,omitempty"`
	// Completed lists the agents that finished their work, when the budget
	// ran out.
	Completed []AgentID `json:"completed,omitempty"`
	// Incomplete lists the agents the budget stopped early, when it ran
	// out.
	Incomplete []AgentID `json:"incomplete,omitempty"`
	// Findings are the findings children reported, in order.
	Findings []Finding `json:"findings,omitempty"`
	// Cost is what the whole tree's model calls cost at the configured
	// prices (see Price), when the run has prices.
	Cost float64 `json:"cost,omitempty"`
}

// RunFailed is the payload of EventRunFailed: the run ended without
// completing.
type RunFailed struct {
	// Status is failed or cancelled.
	Status Status `json:"status"`
	// Error says why.
	Error string `json:"error"`
	// Usage is the tokens the whole tree used, when it used any.
	Usage Usage `json:"usage,omitzero"`
	// Cost is what the tree's model calls cost at the configured prices,
	// when the run has prices.
	Cost float64 `json:"cost,omitempty"`
}

// AgentStarted is the payload of EventAgentStarted: an agent's goroutine
// began its work.
type AgentStarted struct {
	// Definition is the agent's definition ("root" for the generic root,
	// "sub" for a general subagent).
	Definition string `json:"definition"`
	// Model is the agent's model.
	Model string `json:"model"`
	// Resumed is set when the agent carries on after a resume.
	Resumed bool `json:"resumed,omitempty"`
}

// AgentSpawned is the payload of EventAgentSpawned: a parent started a
// child. The event's agent is the child and its parent the spawner.
type AgentSpawned struct {
	// Child is the new agent's ID (the event's agent).
	Child AgentID `json:"child"`
	// Definition is the child's definition.
	Definition string `json:"definition"`
	// Mode is how it was asked for: sync, background, onboarding, or on
	// the text protocol parallel or sequential.
	Mode string `json:"mode"`
	// Task is the child's task.
	Task string `json:"task"`
	// Model is the child's model.
	Model string `json:"model"`
	// Index is the child's 1-based place among the tasks of one
	// <spawn_agents> block.
	Index int `json:"index,omitempty"`
	// Total is the number of tasks of that block.
	Total int `json:"total,omitempty"`
	// Name is the name the parent gave a background child.
	Name string `json:"name,omitempty"`
	// CallID is the parent's tool call that asked for the child, or
	// "spawn.N" for the N-th task of a <spawn_agents> block.
	CallID string `json:"call_id,omitempty"`
}

// AgentQueued is the payload of EventAgentQueued: a new agent waits for a
// concurrency slot.
type AgentQueued struct {
	// MaxConcurrent is the run's concurrency limit, all of whose slots are
	// busy.
	MaxConcurrent int `json:"max_concurrent"`
}

// AgentCompleted is the payload of EventAgentCompleted: an agent finished
// its work.
type AgentCompleted struct {
	// Result is the agent's final text.
	Result string `json:"result"`
	// BudgetExhausted is set when the token budget stopped the agent before
	// it finished.
	BudgetExhausted bool `json:"budget_exhausted,omitempty"`
	// Cost is what the agent's own model calls cost at the configured
	// prices, when its model has one.
	Cost float64 `json:"cost,omitempty"`
}

// AgentFailed is the payload of EventAgentFailed: an agent ended in
// failure.
type AgentFailed struct {
	// Error says why.
	Error string `json:"error"`
	// Cost is what the agent's own model calls cost at the configured
	// prices, when its model has one.
	Cost float64 `json:"cost,omitempty"`
}

// AgentCancelled is the payload of EventAgentCancelled: an agent was
// cancelled.
type AgentCancelled struct {
	// Reason says by whom or why.
	Reason string `json:"reason"`
	// Cost is what the agent's own model calls cost at the configured
	// prices, when its model has one.
	Cost float64 `json:"cost,omitempty"`
}

// AgentReported is the payload of EventAgentReported: a parent received a
// child's report, once per child.
type AgentReported struct {
	// Child is the agent that reported.
	Child AgentID `json:"child"`
	// Failed is set when the report is a failure.
	Failed bool `json:"failed"`
	// Text is the report.
	Text string `json:"text"`
	// Incomplete is set when the child was stopped before it finished.
	Incomplete bool `json:"incomplete,omitempty"`
}

// AgentNudged is the payload of EventAgentNudged: a child that ended its
// turn without reporting was reminded to.
type AgentNudged struct {
	// Text is the reminder.
	Text string `json:"text"`
}

// ModelDelta is the payload of EventModelDelta: a piece of a reply as the
// model streams it, or word that the reply broke off and starts again
// (Restart). Stores do not keep these; the whole reply, as it completed, is
// in the model_response that follows.
type ModelDelta struct {
	// Text is the piece of text.
	Text string `json:"text"`
	// Restart says that the text streamed so far for this reply is void:
	// the reply broke off and the model is asked again. The deltas that
	// follow are the new reply from its beginning. Text is empty.
	Restart bool `json:"restart,omitempty"`
}

// ModelResponse is the payload of EventModelResponse: a model call ended
// with a reply.
type ModelResponse struct {
	// Turn is the 1-based number of the agent's model call.
	Turn int `json:"turn"`
	// Usage is the call's tokens.
	Usage Usage `json:"usage"`
	// Text is the reply's text.
	Text string `json:"text"`
	// ToolCalls is how many tool calls the reply asks for.
	ToolCalls int `json:"tool_calls"`
	// StopReason is the provider's reason for ending the reply, as it gave
	// it.
	StopReason string `json:"stop_reason,omitempty"`
	// Model is the model that answered, as the server named it, when it
	// said: it may differ from the model asked for (a dated version, or
	// another model behind a router).
	Model string `json:"model,omitempty"`
	// Final is set on the last call an agent may make, offered no tools.
	Final bool `json:"final,omitempty"`
	// Cost is what the call cost at the configured prices, when its model
	// has one.
	Cost float64 `json:"cost,omitempty"`
}

// ToolCalled is the payload of EventToolCalled: a tool call starts.
type ToolCalled struct {
	// CallID is the model's ID of the call.
	CallID string `json:"call_id"`
	// Tool is the tool's name.
	Tool string `json:"tool"`
	// Arguments is the arguments as the model wrote them.
	Arguments string `json:"arguments"`
}

// ToolResult is the payload of EventToolResult: a tool call ended.
type ToolResult struct {
	// CallID is the model's ID of the call.
	CallID string `json:"call_id"`
	// Tool is the tool's name.
	Tool string `json:"tool"`
	// IsError is set when the result reports a failure.
	IsError bool `json:"is_error"`
	// Content is the result, cut to 2,000 bytes (the agent gets it whole).
	Content string `json:"content"`
}

// MessageSent is the payload of EventMessageSent: an agent sent a message
// to another.
type MessageSent struct {
	// To is the agent the message is for.
	To AgentID `json:"to"`
	// Text is the message.
	Text string `json:"text"`
}

// FindingReported is the payload of EventFinding: a child's report was
// kept as a finding (definitions with emitStructuredFindings). The event's
// agent is the child.
type FindingReported struct {
	// Title is "subagent:" and the child's definition.
	Title string `json:"title"`
	// Content is the report, cut to 1,800 characters.
	Content string `json:"content"`
}

// BudgetWarning is the payload of EventBudgetWarning: the tree has used
// 80% of its token budget.
type BudgetWarning struct {
	// Used is the tokens used so far.
	Used int64 `json:"used"`
	// Budget is the run's token budget.
	Budget int64 `json:"budget"`
	// Percent is the tokens used as a whole percentage of the budget.
	Percent int64 `json:"percent"`
}

// BudgetExhausted is the payload of EventBudgetExhausted: the token budget
// is spent and no new model calls are made.
type BudgetExhausted struct {
	// Used is the tokens used.
	Used int64 `json:"used"`
	// Budget is the run's token budget.
	Budget int64 `json:"budget"`
}

// DepthLimit is the payload of EventDepthLimit: an agent at the depth
// limit asked for subagents and was refused.
type DepthLimit struct {
	// Tool is the subagent tool it called, when it called one.
	Tool string `json:"tool,omitempty"`
	// AttemptedDepth is the depth the children would have had.
	AttemptedDepth int `json:"attempted_depth"`
	// MaxDepth is the deepest level allowed.
	MaxDepth int `json:"max_depth"`
	// Tasks is the number of tasks of a refused <spawn_agents> block.
	Tasks int `json:"tasks,omitempty"`
}

// AgentLimit is the payload of EventAgentLimit: a spawn was refused because
// the run has created as many agents as it may.
type AgentLimit struct {
	// MaxAgents is the run's agent limit.
	MaxAgents int `json:"max_agents"`
	// Task is the refused child's task.
	Task string `json:"task"`
}

// CycleDetected is the payload of EventCycleDetected: a spawn was refused
// because its task was delegated too many times in the run.
type CycleDetected struct {
	// Task is the repeated task.
	Task string `json:"task"`
	// Count is the number of times it was asked for, this time included.
	Count int `json:"count"`
}

// SynthesisStarted is the payload of EventSynthesisStarted: the results of
// a <spawn_agents> block went back to the agent to combine.
type SynthesisStarted struct {
	// Tasks is the number of the block's tasks.
	Tasks int `json:"tasks"`
}

// Todos is the payload of EventTodos: an agent's task list, whole, each
// time the agent writes it with todo_write.
type Todos struct {
	// Items are the tasks in the agent's order.
	Items []Todo `json:"items"`
}

// A Todo is one task of an agent's list.
type Todo struct {
	// Content says what the task is.
	Content string `json:"content"`
	// Status is pending, in_progress, completed or cancelled.
	Status string `json:"status"`
	// ActiveForm is how the task reads while it is being done ("Running
	// the tests"), when the agent gives it.
	ActiveForm string `json:"active_form,omitempty"`
	// Priority is high, medium or low, when the agent gives it.
	Priority string `json:"priority,omitempty"`
}

// Say is the payload of EventSay: text an agent shows the user, a <say>
// block or the text before a <spawn_agents> block.
type Say struct {
	// Text is what the agent says.
	Text string `json:"text"`
	// PreSpawn is set for the text before a <spawn_agents> block.
	PreSpawn bool `json:"pre_spawn,omitempty"`
}

// OnboardQuestion is the payload of EventOnboardQuestion: an onboarding
// agent asked a question. It is emitted by the asking agent, and again by
// its parent, naming the handle and the child.
type OnboardQuestion struct {
	// Handle is the onboarding handle (onboard-N), in the parent's event.
	Handle string `json:"handle,omitempty"`
	// Child is the asking agent, in the parent's event.
	Child AgentID `json:"child,omitempty"`
	// Question is the question.
	Question string `json:"question"`
}

// OnboardAnswer is the payload of EventOnboardAnswer: a parent answered an
// onboarding agent's question.
type OnboardAnswer struct {
	// Handle is the onboarding handle.
	Handle string `json:"handle"`
	// Child is the onboarding agent.
	Child AgentID `json:"child"`
	// Question is the question.
	Question string `json:"question"`
	// Answer is the parent's answer.
	Answer string `json:"answer"`
}

// Question is the payload of EventQuestion: an agent asked its caller a
// question (ask_caller). It is emitted by the asking agent, and, for a
// child, again by its parent, naming the child.
type Question struct {
	// Child is the asking agent, in the parent's event.
	Child AgentID `json:"child,omitempty"`
	// Question is the question.
	Question string `json:"question"`
}

// Answer is the payload of EventAnswer: an agent's question was answered,
// by its parent (the parent's event names the child) or by the user (the
// asking agent's event says from whom).
type Answer struct {
	// Child is the agent whose question the parent answered.
	Child AgentID `json:"child,omitempty"`
	// Question is the question.
	Question string `json:"question"`
	// Answer is the answer.
	Answer string `json:"answer"`
	// From is "user" when the user answered.
	From string `json:"from,omitempty"`
}

// AgentCreated is the payload of EventAgentCreated: an agent wrote a new
// agent definition (agent_create) and it was approved and saved.
type AgentCreated struct {
	// Name is the new definition's name.
	Name string `json:"name"`
	// File is where it was saved.
	File string `json:"file"`
}

// Warning is the payload of EventWarning: something the user should know
// that did not stop the agent (a model that could not be used, a report
// that does not match its schema).
type Warning struct {
	// Message says what happened.
	Message string `json:"message"`
	// Child is the child the warning is about, when there is one.
	Child AgentID `json:"child,omitempty"`
}

// ToolRefused is the payload of EventToolRefused: a tool call an agent
// made was refused before it ran, and the agent was told why.
type ToolRefused struct {
	// CallID is the model's ID of the call.
	CallID string `json:"call_id,omitempty"`
	// Tool is the tool the agent called.
	Tool string `json:"tool"`
	// Reason is why it was refused: "unknown tool", "not in the agent's
	// tool list", "unknown agent" or "bad arguments", then what was wrong.
	Reason string `json:"reason"`
}

// TurnLimit is the payload of EventTurnLimit: an agent made as many model
// calls as it may and is asked for its final answer, in one more call
// offered no tools.
type TurnLimit struct {
	// MaxTurns is the agent's turn limit.
	MaxTurns int `json:"max_turns"`
}

// RunContinued is the payload of EventRunContinued: a run that had ended
// goes on with a new message from the user to its root agent.
type RunContinued struct {
	// Message is the user's new message.
	Message string `json:"message"`
	// Previous is how the run had ended: done, failed or cancelled.
	Previous Status `json:"previous"`
}

// AgentWoken is the payload of EventAgentWoken: an agent that had
// finished was given new work, with all it knew (a follow-up from the
// user to the root, or a message from its parent to a child that had
// reported). Its next report reaches its caller once.
type AgentWoken struct {
	// From is the agent whose message woke it, empty for the user.
	From AgentID `json:"from,omitempty"`
	// Message is the new message.
	Message string `json:"message"`
}

// Skipped is the payload of EventSkipped: a watcher of an event stream
// fell behind and this event stands for the events it missed. The store
// has the stored ones among them: those whose seq is above after_seq and
// at most to_seq, which Store.Events(run, AfterSeq) returns first. It is
// never stored itself.
type Skipped struct {
	// Count is how many events the watcher missed, streamed text included.
	Count int `json:"count"`
	// AfterSeq is the seq of the last stored event before the missed ones
	// (0 when there is none).
	AfterSeq int64 `json:"after_seq"`
	// ToSeq is the seq of the last stored event missed, 0 when none of the
	// missed events was stored (no store, or only streamed text).
	ToSeq int64 `json:"to_seq"`
}

func (RunStarted) EventType() EventType       { return EventRunStarted }
func (RunResumed) EventType() EventType       { return EventRunResumed }
func (RunCompleted) EventType() EventType     { return EventRunCompleted }
func (RunFailed) EventType() EventType        { return EventRunFailed }
func (AgentStarted) EventType() EventType     { return EventAgentStarted }
func (AgentSpawned) EventType() EventType     { return EventAgentSpawned }
func (AgentQueued) EventType() EventType      { return EventAgentQueued }
func (AgentCompleted) EventType() EventType   { return EventAgentCompleted }
func (AgentFailed) EventType() EventType      { return EventAgentFailed }
func (AgentCancelled) EventType() EventType   { return EventAgentCancelled }
func (AgentReported) EventType() EventType    { return EventAgentReported }
func (AgentNudged) EventType() EventType      { return EventAgentNudged }
func (ModelDelta) EventType() EventType       { return EventModelDelta }
func (ModelResponse) EventType() EventType    { return EventModelResponse }
func (ToolCalled) EventType() EventType       { return EventToolCalled }
func (ToolResult) EventType() EventType       { return EventToolResult }
func (MessageSent) EventType() EventType      { return EventMessageSent }
func (FindingReported) EventType() EventType  { return EventFinding }
func (BudgetWarning) EventType() EventType    { return EventBudgetWarning }
func (BudgetExhausted) EventType() EventType  { return EventBudgetExhausted }
func (DepthLimit) EventType() EventType       { return EventDepthLimit }
func (AgentLimit) EventType() EventType       { return EventAgentLimit }
func (CycleDetected) EventType() EventType    { return EventCycleDetected }
func (SynthesisStarted) EventType() EventType { return EventSynthesisStarted }
func (Say) EventType() EventType              { return EventSay }
func (OnboardQuestion) EventType() EventType  { return EventOnboardQuestion }
func (OnboardAnswer) EventType() EventType    { return EventOnboardAnswer }
func (Question) EventType() EventType         { return EventQuestion }
func (Answer) EventType() EventType           { return EventAnswer }
func (AgentCreated) EventType() EventType     { return EventAgentCreated }
func (Warning) EventType() EventType          { return EventWarning }
func (Todos) EventType() EventType            { return EventTodos }
func (Skipped) EventType() EventType          { return EventSkipped }
func (ToolRefused) EventType() EventType      { return EventToolRefused }
func (TurnLimit) EventType() EventType        { return EventTurnLimit }
func (RunContinued) EventType() EventType     { return EventRunContinued }
func (AgentWoken) EventType() EventType       { return EventAgentWoken }

func (RunStarted) payload()       {}
func (RunResumed) payload()       {}
func (RunCompleted) payload()     {}
func (RunFailed) payload()        {}
func (AgentStarted) payload()     {}
func (AgentSpawned) payload()     {}
func (AgentQueued) payload()      {}
func (AgentCompleted) payload()   {}
func (AgentFailed) payload()      {}
func (AgentCancelled) payload()   {}
func (AgentReported) payload()    {}
func (AgentNudged) payload()      {}
func (ModelDelta) payload()       {}
func (ModelResponse) payload()    {}
func (ToolCalled) payload()       {}
func (ToolResult) payload()       {}
func (MessageSent) payload()      {}
func (FindingReported) payload()  {}
func (BudgetWarning) payload()    {}
func (BudgetExhausted) payload()  {}
func (DepthLimit) payload()       {}
func (AgentLimit) payload()       {}
func (CycleDetected) payload()    {}
func (SynthesisStarted) payload() {}
func (Say) payload()              {}
func (OnboardQuestion) payload()  {}
func (OnboardAnswer) payload()    {}
func (Question) payload()         {}
func (Answer) payload()           {}
func (AgentCreated) payload()     {}
func (Warning) payload()          {}
func (Todos) payload()            {}
func (Skipped) payload()          {}
func (ToolRefused) payload()      {}
func (TurnLimit) payload()        {}
func (RunContinued) payload()     {}
func (AgentWoken) payload()       {}

// EventTypes returns every event type, in the order docs/events.md lists
// them.
func EventTypes() []EventType {
	return []EventType{
		EventRunStarted, EventRunResumed, EventRunContinued, EventRunCompleted, EventRunFailed,
		EventAgentStarted, EventAgentWoken, EventAgentSpawned, EventAgentQueued, EventAgentCompleted, EventAgentFailed, EventAgentCancelled,
		EventAgentReported, EventAgentNudged,
		EventModelDelta, EventModelResponse, EventToolCalled, EventToolResult,
		EventMessageSent, EventFinding, EventSay, EventQuestion, EventAnswer, EventOnboardQuestion, EventOnboardAnswer,
		EventAgentCreated, EventSynthesisStarted, EventTodos,
		EventToolRefused, EventTurnLimit,
		EventBudgetWarning, EventBudgetExhausted, EventDepthLimit, EventAgentLimit, EventCycleDetected, EventWarning,
		EventSkipped,
	}
}

// zeroPayload returns the payload struct of t with no fields set, or nil
// when t is not a type this package knows.
func zeroPayload(t EventType) Payload {
	switch t {
	case EventRunStarted:
		return RunStarted{}
	case EventRunResumed:
		return RunResumed{}
	case EventRunCompleted:
		return RunCompleted{}
	case EventRunFailed:
		return RunFailed{}
	case EventAgentStarted:
		return AgentStarted{}
	case EventAgentSpawned:
		return AgentSpawned{}
	case EventAgentQueued:
		return AgentQueued{}
	case EventAgentCompleted:
		return AgentCompleted{}
	case EventAgentFailed:
		return AgentFailed{}
	case EventAgentCancelled:
		return AgentCancelled{}
	case EventAgentReported:
		return AgentReported{}
	case EventAgentNudged:
		return AgentNudged{}
	case EventModelDelta:
		return ModelDelta{}
	case EventModelResponse:
		return ModelResponse{}
	case EventToolCalled:
		return ToolCalled{}
	case EventToolResult:
		return ToolResult{}
	case EventMessageSent:
		return MessageSent{}
	case EventFinding:
		return FindingReported{}
	case EventBudgetWarning:
		return BudgetWarning{}
	case EventBudgetExhausted:
		return BudgetExhausted{}
	case EventDepthLimit:
		return DepthLimit{}
	case EventAgentLimit:
		return AgentLimit{}
	case EventCycleDetected:
		return CycleDetected{}
	case EventSynthesisStarted:
		return SynthesisStarted{}
	case EventSay:
		return Say{}
	case EventTodos:
		return Todos{}
	case EventOnboardQuestion:
		return OnboardQuestion{}
	case EventOnboardAnswer:
		return OnboardAnswer{}
	case EventQuestion:
		return Question{}
	case EventAnswer:
		return Answer{}
	case EventAgentCreated:
		return AgentCreated{}
	case EventWarning:
		return Warning{}
	case EventSkipped:
		return Skipped{}
	case EventToolRefused:
		return ToolRefused{}
	case EventTurnLimit:
		return TurnLimit{}
	case EventRunContinued:
		return RunContinued{}
	case EventAgentWoken:
		return AgentWoken{}
	}
	return nil
}

// decodePayload decodes the payload of an event of type t from the event's
// JSON object. It returns nil when t is unknown or the fields do not fit
// its struct (a field of the wrong JSON type).
func decodePayload(t EventType, b []byte) Payload {
	z := zeroPayload(t)
	if z == nil {
		return nil
	}
	p := reflect.New(reflect.TypeOf(z))
	if err := json.Unmarshal(b, p.Interface()); err != nil {
		return nil
	}
	return p.Elem().Interface().(Payload)
}
