package loop

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/prompt"
	"github.com/cadre-ai/cadre/tagproto"
)

// EmptyReport is delivered for a child whose report has no text (an empty
// <response></response> block, or a blank message).
const EmptyReport = "(no output)"

type phase int

const (
	phaseNew      phase = iota
	phaseModel          // a CallModel is in flight
	phaseTools          // tool results, children, answers are awaited for the calls of one reply
	phaseChildren       // a <spawn_agents> block is running
	phaseWaiting        // the turn ended; waiting for children or messages
	phaseDone
)

// slot is one tool call of the current assistant message and its result.
type slot struct {
	call   cadre.ToolCall
	filled bool
	result ToolResult
}

// child is what a parent knows of one of its children.
type child struct {
	spec     ChildSpec
	status   cadre.Status
	acked    bool // Spawned was received
	reported bool
	ended    bool
	// waiter is the tool call waiting for the child's report, question or
	// readiness (spawn_agent, call_agent, agent_call, wait_agent,
	// agent_onboard, agent_onboard_reply), if any.
	waiter string
	// blockTask is the index of the <spawn_agents> task it runs, or -1.
	blockTask int
	// handle is the onboarding handle the child serves, if any.
	handle string
	// question is the child's pending question; lastQ and lastA the last
	// one answered, kept to send the answer again after a replay.
	question     string
	lastQ, lastA string
	// round is the number of times the child was woken (see Wake); text
	// its latest report.
	round int
	text  string
	// wakeNext is the message that wakes the child once it has ended: it
	// was sent after its report, while it was finishing.
	wakeNext string
	// wake is the message that woke it (or will, see wakeNext) in its
	// latest round.
	wake string
}

// State is one agent's state machine. The zero value is not usable: create
// it with New, then Step it with Start.
type State struct {
	cfg      Config
	task     string
	phase    phase
	messages []cadre.Message
	turns    int
	usage    cadre.Usage
	final    bool // the no-tools final call was asked for
	nudged   bool
	lastText string
	refused  bool // a text-protocol spawn the agent may not make was refused once

	reported      bool
	report        Deliver // the one report once reported, kept to deliver again after a replay
	schemaRetried bool

	asked    int    // ask_caller questions asked
	askCall  string // the ask_caller call waiting for an answer
	question string

	slots []slot
	// slotOf maps call IDs to indexes in slots when a reply has more than
	// slotsIndexed calls; fewer are found by a scan.
	slotOf map[string]int
	open   int
	queue  []cadre.Message // inbox messages for the next model call
	// interrupting is set while an Interrupt awaits its ModelResult.
	interrupting bool
	// toParent counts the calls of the current reply that sent a message
	// to the parent (the report or a follow-up).
	toParent int

	children map[cadre.AgentID]*child
	order    []cadre.AgentID
	counters map[string]int
	spawns   int
	// endedKids counts the children that have ended.
	endedKids int

	handles  map[string]*handle
	hOrder   []string
	creating map[string]cadre.Definition // agent_create calls awaiting AgentCreated, by call ID

	blk *block

	todos []cadre.Todo // the list todo_write last wrote
	// refusal, when set, is why the subagent call being dispatched was
	// refused; dispatch turns it into a ToolRefused event.
	refusal string
	// round counts the times the agent was woken after it had finished.
	round int
	// turnBase is the turns made before the latest follow-up: the turn
	// limit counts from it.
	turnBase int

	finished *Finish

	// specs and offered (the subagent tools among them) are the tools
	// offered to the model, computed once and again when the catalogue
	// changes; toolsKnown is set once they are.
	specs      []cadre.ToolSpec
	offered    toolSet
	toolsKnown bool
}

// New returns a State ready for its Start input.
func New() *State {
	// The maps are made when first written: most agents never start a
	// child, a handle or an agent definition.
	return &State{}
}

// ID is the agent's id once started.
func (s *State) ID() cadre.AgentID { return s.cfg.ID }

// Config returns the agent's configuration once started.
func (s *State) Config() Config { return s.cfg }

// Task is what the agent was asked to do.
func (s *State) Task() string { return s.task }

// Messages returns the agent's conversation so far. The slice must not be
// modified.
func (s *State) Messages() []cadre.Message { return s.messages }

// Turns is the number of model calls made.
func (s *State) Turns() int { return s.turns }

// Usage is the sum of the agent's model calls.
func (s *State) Usage() cadre.Usage { return s.usage }

// Started reports whether the agent got its Start input.
func (s *State) Started() bool { return s.phase != phaseNew }

// Done reports whether the agent has finished.
func (s *State) Done() bool { return s.phase == phaseDone }

// Waiting reports whether the agent's turn ended and it waits for children
// or messages.
func (s *State) Waiting() bool { return s.phase == phaseWaiting }

// Reported reports whether the agent has delivered its report.
func (s *State) Reported() bool { return s.reported }

// Report returns the agent's report to its parent once it was made, so an
// engine can deliver it again after a replay (the parent ignores repeats).
func (s *State) Report() (Deliver, bool) {
	if !s.reported {
		return Deliver{}, false
	}
	return s.report, true
}

// Pending returns what the engine must redo after a replay: children that
// were asked for but never acknowledged, the model call in flight, the tool
// calls without results (marked Resumed), the question without an answer,
// the agent creation without an outcome. Children that did start are the
// engine's to resume.
func (s *State) Pending() []Action {
	if s.phase == phaseDone || s.phase == phaseNew {
		return nil
	}
	var acts []Action
	var spawn Spawn
	for _, id := range s.order {
		if c := s.children[id]; !c.acked && !c.ended {
			spawn.Children = append(spawn.Children, c.spec)
		}
	}
	if len(spawn.Children) > 0 {
		acts = append(acts, spawn)
	}
	switch s.phase {
	case phaseModel:
		acts = append(acts, s.modelCall())
	case phaseTools:
		var calls []cadre.ToolCall
		for _, sl := range s.slots {
			if !sl.filled && !IsSubagentTool(sl.call.Name) && s.hasTool(sl.call.Name) {
				calls = append(calls, sl.call)
			}
		}
		if len(calls) > 0 {
			acts = append(acts, CallTools{Calls: calls, Resumed: true})
		}
		if s.askCall != "" {
			acts = append(acts, Ask{Question: s.question, Onboarding: s.cfg.onboarding()})
		}
		for _, sl := range s.slots {
			if def, ok := s.creating[sl.call.ID]; ok && !sl.filled {
				acts = append(acts, CreateAgent{Ref: sl.call.ID, Definition: def})
			}
		}
	}
	return acts
}

// LiveChildren returns the children that have not ended, in spawn order.
func (s *State) LiveChildren() []cadre.AgentID {
	var ids []cadre.AgentID
	for _, id := range s.order {
		if !s.children[id].ended {
			ids = append(ids, id)
		}
	}
	return ids
}

// Finished returns how the agent ended, once it has.
func (s *State) Finished() (Finish, bool) {
	if s.finished == nil {
		return Finish{}, false
	}
	return *s.finished, true
}

// Step feeds one input and returns what the engine must do next.
func (s *State) Step(in Input) []Action {
	if s.phase == phaseDone {
		if w, ok := in.(Wake); ok {
			return s.wake(w)
		}
		return nil
	}
	if _, ok := in.(Start); !ok && s.phase == phaseNew {
		return nil
	}
	acts := s.step(in)
	for _, a := range acts {
		if f, ok := a.(Finish); ok {
			s.finished = new(Finish) // only now: f itself stays on the stack
			*s.finished = f
		}
	}
	return acts
}

func (s *State) step(in Input) []Action {
	switch in := in.(type) {
	case Start:
		return s.start(in)
	case ModelResult:
		return s.modelResult(in)
	case ToolResults:
		return s.toolResults(in)
	case Spawned:
		return s.spawned(in)
	case ChildReport:
		return s.childReport(in)
	case ChildEnded:
		return s.childEnded(in)
	case ChildQuestion:
		return s.childQuestion(in)
	case Answer:
		return s.answer(in)
	case AgentCreated:
		return s.agentCreated(in)
	case InboxMessage:
		return s.inbox(in)
	case Timeout:
		return s.fail("timed out: no activity for " + seconds(in.Limit))
	case Cancel:
		return s.cancel(in)
	case Wake:
		// The agent has not finished: the message is an ordinary one.
		return s.receive(s.wakeMessage(in), false)
	}
	return nil
}

func (s *State) start(in Start) []Action {
	if s.phase != phaseNew {
		return nil
	}
	s.cfg = in.Config
	if in.ConfigFrom != "" {
		// A reader of the journal that did not look up the configuration:
		// without it the agent would run with none. It fails, telling its
		// parent.
		return s.fail(fmt.Sprintf("the agent's configuration was not read: its start names that of %s, which the program reading this run's journal did not look up; "+
			"read the run with cadre (cadre resume, cadre runs show), which does", in.ConfigFrom))
	}
	// The catalogue is only ever appended to (see agentCreated): clipped,
	// it is copied then, never written over.
	s.cfg.Catalog = slices.Clip(in.Config.Catalog)
	if len(s.cfg.Catalog) == 0 {
		s.cfg.Catalog = nil
	}
	s.task = in.Task
	if n := len(in.Messages); n > 0 {
		// Room for the model's first reply and the result of one call.
		s.messages = make([]cadre.Message, n, n+2)
		copy(s.messages, in.Messages)
	}
	return []Action{s.modelCall()}
}

// modelCall builds the request from the conversation. The turn is counted
// when its result arrives.
func (s *State) modelCall() CallModel {
	s.phase = phaseModel
	req := cadre.Request{
		Agent:       s.cfg.ID,
		Turn:        s.turns + 1,
		System:      s.cfg.System,
		Messages:    s.messages[:len(s.messages):len(s.messages)],
		MaxTokens:   s.cfg.MaxTokens,
		Temperature: s.cfg.Temperature,
	}
	if !s.final && !s.cfg.textProtocol() {
		req.Tools = s.toolSpecs()
	}
	return CallModel{Request: req, Final: s.final}
}

// toolSpecs are the tools offered to the model: the ordinary ones (none
// while onboarding), then the subagent tools. The slice is shared, by the
// agent's model calls and, without ordinary tools, by other agents (see
// sharedSpecs): it must not be modified.
func (s *State) toolSpecs() []cadre.ToolSpec {
	if !s.toolsKnown {
		ts := s.cfg.subagentTools()
		var specs []cadre.ToolSpec
		if shared, ok := sharedSpecs[ts]; ok && (len(s.cfg.Tools) == 0 || s.cfg.onboarding()) {
			specs = shared
		} else {
			if !s.cfg.onboarding() {
				specs = make([]cadre.ToolSpec, 0, len(s.cfg.Tools)+ts.len())
				specs = append(specs, s.cfg.Tools...)
			}
			specs = ts.appendSpecs(specs)
		}
		s.specs, s.offered, s.toolsKnown = slices.Clip(specs), ts, true
	}
	return s.specs
}

// catalogChanged drops the tools computed from the catalogue.
func (s *State) catalogChanged() { s.specs, s.offered, s.toolsKnown = nil, 0, false }

func (s *State) hasTool(name string) bool {
	if s.cfg.onboarding() {
		return false
	}
	for _, t := range s.cfg.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func (s *State) offers(name string) bool {
	s.toolSpecs()
	return s.offered.has(name)
}

func (s *State) toolNames() []string {
	var names []string
	for _, t := range s.toolSpecs() {
		names = append(names, t.Name)
	}
	return names
}

func (s *State) modelResult(in ModelResult) []Action {
	if s.phase != phaseModel {
		return nil
	}
	if in.Interrupted {
		s.interrupting = false
		s.flushQueue()
		return []Action{s.modelCall()}
	}
	s.interrupting = false
	s.turns++
	if in.BudgetExhausted {
		return s.stopForBudget()
	}
	if in.Err != "" {
		return s.fail("model call failed: " + in.Err)
	}
	if in.Response == nil {
		return s.fail("model call failed: no response")
	}
	s.usage = s.usage.Add(in.Response.Usage)
	msg := in.Response.Message
	msg.Role = cadre.RoleAssistant
	if s.final {
		if strings.TrimSpace(msg.Content) == "" && len(msg.ToolCalls) > 0 {
			return s.fail(finalToolsError(s.cfg.maxTurns(), msg.ToolCalls))
		}
		msg.ToolCalls = nil
	}
	text := strings.TrimSpace(msg.Content)
	if text == "" && len(msg.ToolCalls) == 0 {
		if s.nudged && s.cfg.isChild() {
			// The nudge was declined with silence: accepted (seed 001).
			return s.endTurn()
		}
		return s.fail("the model returned an empty reply (no text and no tool calls)")
	}
	s.messages = append(s.messages, msg)
	var acts []Action
	if text != "" {
		s.lastText = msg.Content
		if s.cfg.Say {
			for _, said := range tagproto.TagExtractAll(msg.Content, "say") {
				acts = append(acts, Emit{Event: cadre.Say{Text: said}})
			}
		}
	}
	if len(msg.ToolCalls) == 0 {
		return join(acts, s.endTurn())
	}
	return join(acts, s.dispatch(msg.ToolCalls))
}

// dispatch handles the tool calls of one assistant message.
func (s *State) dispatch(calls []cadre.ToolCall) []Action {
	s.slots = make([]slot, len(calls))
	s.slotOf = nil
	if len(calls) > slotsIndexed {
		s.slotOf = make(map[string]int, len(calls))
	}
	s.open = len(calls)
	s.toParent = 0
	s.phase = phaseTools
	var (
		acts     []Action
		ordinary []cadre.ToolCall
		spawn    Spawn
	)
	if n := spawnCalls(calls); n > 1 {
		spawn.Children = make([]ChildSpec, 0, n)
		s.initChildren(n)
	}
	for i, c := range calls {
		if c.ID == "" || s.slotByCall(c.ID) >= 0 {
			// Every call needs an ID of its own to be answered.
			c.ID = fmt.Sprintf("call_%d_%d", s.turns, i+1)
			for n := 2; ; n++ {
				if s.slotByCall(c.ID) < 0 {
					break
				}
				c.ID = fmt.Sprintf("call_%d_%d_%d", s.turns, i+1, n)
			}
			calls := slices.Clone(s.messages[len(s.messages)-1].ToolCalls)
			calls[i].ID = c.ID
			s.messages[len(s.messages)-1].ToolCalls = calls
		}
		s.slots[i].call = c
		if s.slotOf != nil {
			s.slotOf[c.ID] = i
		}
		switch {
		case IsSubagentTool(c.Name) && s.offers(c.Name):
			s.refusal = ""
			acts = join(acts, s.subagentCall(i, c, &spawn))
			if s.refusal != "" {
				acts = append(acts, refused(c, s.refusal))
				s.refusal = ""
			}
		case IsSubagentTool(c.Name) && delegationTools[c.Name] && !s.cfg.Delegate && !s.cfg.onboarding():
			acts = append(acts, s.refuseDepth(i, c.Name)...)
		case delegationTools[c.Name] && !s.cfg.onboarding() && !s.cfg.Granted(c.Name):
			s.fill(i, fmt.Sprintf("Error: %s is not one of your tools: your definition grants only these delegation tools: %s. Use one of those, or do the work yourself.",
				c.Name, strings.Join(s.cfg.granted(), ", ")), true)
			acts = append(acts, refused(c, ReasonNotAllowed+": the definition does not grant this delegation tool"))
		case IsTodoTool(c.Name) && s.hasTool(c.Name):
			acts = append(acts, s.todoCall(i, c)...)
		case s.hasTool(c.Name):
			ordinary = append(ordinary, c)
		default:
			s.fill(i, fmt.Sprintf("Error: unknown tool %q. Available tools: %s.", c.Name, strings.Join(s.toolNames(), ", ")), true)
			acts = append(acts, s.refusedUnknown(c))
		}
	}
	if len(ordinary) > 0 {
		acts = append(acts, CallTools{Calls: ordinary})
	}
	if len(spawn.Children) > 0 {
		acts = append(acts, spawn)
	}
	if s.open == 0 && s.saidAll(len(calls)) {
		return append(acts, s.endOnReport())
	}
	if s.open == 0 {
		acts = append(acts, s.afterTools()...)
	}
	return acts
}

// spawnCalls counts the calls that may each start one child.
func spawnCalls(calls []cadre.ToolCall) int {
	n := 0
	for _, c := range calls {
		if startsAgent(c.Name) {
			n++
		}
	}
	return n
}

// saidAll reports whether a child with EndOnReport is done after a reply
// of n calls: every one of them sent a message to its parent, its report
// has been delivered, and nothing is left for it to read or wait for.
func (s *State) saidAll(n int) bool {
	return s.cfg.EndOnReport && s.cfg.isChild() && !s.cfg.onboarding() && !s.cfg.textProtocol() &&
		s.cfg.Report != cadre.ReportTag && s.reported && n > 0 && s.toParent == n &&
		len(s.queue) == 0 && s.live() == 0
}

// endOnReport finishes a child that has said all it will (see saidAll):
// the calls' results close its conversation and it ends with its report.
func (s *State) endOnReport() Action {
	s.appendResults()
	s.phase = phaseDone
	return Finish{Result: s.report.Text}
}

// join returns a followed by b, reusing a or b when the other is empty.
func join(a, b []Action) []Action {
	if len(a) == 0 {
		return b
	}
	return append(a, b...)
}

func (s *State) fill(i int, content string, isError bool) {
	if i < 0 || i >= len(s.slots) || s.slots[i].filled {
		return
	}
	s.slots[i].filled = true
	s.slots[i].result = ToolResult{CallID: s.slots[i].call.ID, Content: content, IsError: isError}
	s.open--
}

// message is the tool message of a filled slot.
func (sl *slot) message() cadre.Message {
	return cadre.Message{
		Role: cadre.RoleTool, ToolCallID: sl.call.ID, ToolName: sl.call.Name,
		Content: sl.result.Content, IsError: sl.result.IsError, Media: sl.result.Media,
	}
}

// slotsIndexed is the most calls of one reply whose slots are found by a
// scan rather than through a map.
const slotsIndexed = 8

// slotByCall returns the index of the slot of call id of the current
// reply, or -1.
func (s *State) slotByCall(id string) int {
	if id == "" {
		return -1
	}
	if s.slotOf != nil {
		if i, ok := s.slotOf[id]; ok {
			return i
		}
		return -1
	}
	for i := range s.slots {
		if s.slots[i].call.ID == id {
			return i
		}
	}
	return -1
}

// fillCall fills the slot of a call of the current reply, if it is still
// open, and goes on once every slot is filled.
func (s *State) fillCall(id, content string, isError bool) []Action {
	if s.phase != phaseTools {
		return nil
	}
	i := s.slotByCall(id)
	if i < 0 || s.slots[i].filled {
		return nil
	}
	s.fill(i, content, isError)
	if s.open == 0 {
		return s.afterTools()
	}
	return nil
}

func (s *State) toolResults(in ToolResults) []Action {
	if s.phase != phaseTools {
		return nil
	}
	for _, r := range in.Results {
		if i := s.slotByCall(r.CallID); i >= 0 && !IsSubagentTool(s.slots[i].call.Name) && !s.slots[i].filled {
			s.fill(i, r.Content, r.IsError)
			s.slots[i].result.Media = r.Media
		}
	}
	if s.open == 0 {
		return s.afterTools()
	}
	return nil
}

// afterTools appends the results in call order, then any inbox messages,
// and asks the model again.
func (s *State) afterTools() []Action {
	s.appendResults()
	s.flushQueue()
	if s.turns-s.turnBase >= s.cfg.maxTurns() && !s.final {
		s.final = true
		s.messages = append(s.messages, cadre.Message{Role: cadre.RoleUser, Content: prompt.FinalAnswerRequest})
		return []Action{Emit{Event: cadre.TurnLimit{MaxTurns: s.cfg.maxTurns()}}, s.modelCall()}
	}
	return []Action{s.modelCall()}
}

// appendResults adds the results of the current reply's calls to the
// conversation, in call order.
func (s *State) appendResults() {
	s.messages = slices.Grow(s.messages, len(s.slots))
	for _, sl := range s.slots {
		s.messages = append(s.messages, sl.message())
	}
	s.slots, s.slotOf = nil, nil
}

func (s *State) flushQueue() {
	s.messages = append(s.messages, s.queue...)
	s.queue = nil
}

// endTurn runs when a reply has no tool calls: report, nudge, wait or finish.
func (s *State) endTurn() []Action {
	s.phase = phaseWaiting
	if s.cfg.textProtocol() && !s.cfg.onboarding() {
		if acts, ok := s.startBlock(); ok {
			return acts
		}
	}
	var acts []Action
	if s.cfg.isChild() && !s.reported {
		switch {
		case s.cfg.onboarding():
			// Ending the turn without a question means ready.
			acts = s.deliverReport(acts, strings.TrimSpace(s.lastText), cadre.StatusDone, s.final)
		case s.cfg.textProtocol():
			a, retry := s.checkedReport(s.resultText(), prompt.NudgeTag)
			if retry {
				return a
			}
			acts = append(acts, a...)
		case s.cfg.Report == cadre.ReportTag:
			if content, ok := tagproto.TagExtract(s.lastText, "response"); ok && s.lastIsReply() {
				a, retry := s.checkedReport(content, prompt.NudgeTag)
				if retry {
					return a
				}
				acts = append(acts, a...)
			} else if s.live() > 0 {
				// It waits for its children, after reading the messages
				// that came in during the call (below).
				if len(s.queue) == 0 {
					return append(acts, Wait{})
				}
			} else if !s.nudged {
				return s.nudge(prompt.NudgeTag)
			} else {
				acts = s.deliverReport(acts, prompt.NoResponseError, cadre.StatusFailed, false)
				if len(s.queue) == 0 {
					s.phase = phaseDone
					return append(acts, Finish{Result: prompt.NoResponseError, Failed: true})
				}
			}
		default:
			if s.live() > 0 {
				// It waits for its children, after reading the messages
				// that came in during the call (below).
				if len(s.queue) == 0 {
					return append(acts, Wait{})
				}
				break
			}
			if !s.nudged {
				return s.nudge(prompt.NudgeTool)
			}
			a, retry := s.checkedReport(s.resultText(), prompt.NudgeTool)
			if retry {
				return a
			}
			acts = append(acts, a...)
		}
	}
	if len(s.queue) > 0 {
		s.flushQueue()
		return append(acts, s.modelCall())
	}
	if s.live() > 0 {
		return append(acts, Wait{})
	}
	s.phase = phaseDone
	return append(acts, Finish{Result: s.resultText()})
}

// lastIsReply reports whether the last message is the model's reply, so a
// tag found in lastText belongs to the turn that just ended.
func (s *State) lastIsReply() bool {
	return len(s.messages) > 0 && s.messages[len(s.messages)-1].Role == cadre.RoleAssistant
}

// resultText is the agent's final text: the content of a <response> block
// when there is one, the last text otherwise.
func (s *State) resultText() string {
	if content, ok := tagproto.TagExtract(s.lastText, "response"); ok {
		return content
	}
	return strings.TrimSpace(s.lastText)
}

func (s *State) nudge(text string) []Action {
	s.nudged = true
	s.messages = append(s.messages, cadre.Message{Role: cadre.RoleUser, Content: text})
	return []Action{Emit{Event: cadre.AgentNudged{Text: text}}, s.modelCall()}
}

// checkedReport delivers text as the report once it matches the output
// schema. The first mismatch is sent back to the agent (retry is true and
// the actions ask the model again); a second one is delivered as it is,
// with a warning.
func (s *State) checkedReport(text, how string) (acts []Action, retry bool) {
	text, err := s.checkSchema(text)
	if err != nil {
		if !s.schemaRetried {
			s.schemaRetried = true
			s.messages = append(s.messages, cadre.Message{Role: cadre.RoleUser, Content: schemaRetryText(err, how)})
			return []Action{warning("the report does not match the output schema; asked once more: " + err.Error()), s.modelCall()}, true
		}
		acts = append(acts, schemaDelivered(err))
	}
	return s.deliverReport(acts, text, cadre.StatusDone, false), false
}

// deliverReport makes the agent's one report to its parent: it appends
// the Deliver to acts, unless the report was made already.
func (s *State) deliverReport(acts []Action, text string, status cadre.Status, incomplete bool) []Action {
	if s.reported || !s.cfg.isChild() {
		return acts
	}
	s.reported = true
	if strings.TrimSpace(text) == "" && !s.cfg.onboarding() {
		// The parent hears back even from a child with nothing to say.
		text = EmptyReport
	}
	s.report = Deliver{To: s.cfg.Parent, Text: text, Report: true, Failed: status != cadre.StatusDone,
		Cancelled: status == cadre.StatusCancelled, Incomplete: incomplete, Round: s.round}
	return append(acts, s.report)
}

// live is the number of children that have not ended.
func (s *State) live() int { return len(s.children) - s.endedKids }

func (s *State) fail(reason string) []Action {
	s.phase = phaseDone
	acts := s.deliverReport(make([]Action, 0, 2), "Error: "+reason, cadre.StatusFailed, false)
	return append(acts, Finish{Result: reason, Failed: true})
}

func (s *State) cancel(in Cancel) []Action {
	s.phase = phaseDone
	reason := "cancelled"
	if in.Reason != "" {
		reason += ": " + in.Reason
	}
	acts := s.deliverReport(make([]Action, 0, 2), "Error: "+reason, cadre.StatusCancelled, false)
	return append(acts, Finish{Result: reason, Cancelled: true})
}

func (s *State) stopForBudget() []Action {
	s.phase = phaseDone
	text := s.resultText()
	if text == "" {
		text = s.budgetText()
	}
	acts := s.deliverReport(make([]Action, 0, 2), text, cadre.StatusDone, true)
	return append(acts, Finish{Result: text, BudgetExhausted: true})
}

func (s *State) inbox(in InboxMessage) []Action {
	var text string
	switch {
	case in.From == "":
		text = prompt.SystemMessage("cadre", in.Text)
	case in.FollowUp:
		text = prompt.FollowUpMessage(string(in.From), in.Text)
	default:
		text = prompt.SystemMessage(string(in.From), in.Text)
	}
	return s.receive(cadre.Message{Role: cadre.RoleUser, Content: text}, in.Steering)
}

// receive queues a message for the next model call, waking a waiting agent.
func (s *State) receive(m cadre.Message, steering bool) []Action {
	s.queue = append(s.queue, m)
	switch s.phase {
	case phaseWaiting:
		s.flushQueue()
		return []Action{s.modelCall()}
	case phaseModel:
		if steering && !s.interrupting {
			s.interrupting = true
			return []Action{Interrupt{}}
		}
	}
	return nil
}
