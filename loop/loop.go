package loop

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/prompt"
	"github.com/cadre-ai/cadre/textproto"
)

type phase int

const (
	phaseNew      phase = iota
	phaseModel          // a CallModel is in flight
	phaseTools          // tool results or synchronous children are awaited
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
	id         cadre.AgentID
	definition string
	name       string
	task       string
	status     cadre.Status
	reported   bool
	ended      bool
	// syncCall is the spawn_agent call waiting for the report, if any.
	syncCall string
	// blockTask is the index of the <spawn_agents> task it runs, or -1.
	blockTask int
}

// block is a <spawn_agents> block being executed.
type block struct {
	mode    textproto.SpawnMode
	tasks   []textproto.SpawnTask
	results []prompt.Result
	done    []bool
	retried []bool
	next    int // sequential: index of the next task to start
	last    string
}

// State is one agent's state machine. The zero value is not usable: create
// it with New, then Step it with Start.
type State struct {
	cfg      Config
	task     string
	phase    phase
	messages []cadre.Message
	turns    int
	final    bool // the no-tools final call was asked for
	nudged   bool
	reported bool
	lastText string
	refused  bool // a text-protocol spawn past the depth limit was refused once

	slots []slot
	open  int
	queue []cadre.Message // inbox messages for the next model call
	// interrupting is set while an Interrupt awaits its ModelResult.
	interrupting bool

	children map[cadre.AgentID]*child
	order    []cadre.AgentID
	refs     map[string]int // spawn ref -> slot index (background acks)
	counters map[string]int
	spawns   int

	blk *block
}

// New returns a State ready for its Start input.
func New() *State {
	return &State{
		children: map[cadre.AgentID]*child{},
		refs:     map[string]int{},
		counters: map[string]int{},
	}
}

// ID is the agent's id once started.
func (s *State) ID() cadre.AgentID { return s.cfg.ID }

// Config returns the agent's configuration once started.
func (s *State) Config() Config { return s.cfg }

// Messages returns the agent's conversation so far. The slice must not be
// modified.
func (s *State) Messages() []cadre.Message { return s.messages }

// Turns is the number of model calls made.
func (s *State) Turns() int { return s.turns }

// Done reports whether the agent has finished.
func (s *State) Done() bool { return s.phase == phaseDone }

// Waiting reports whether the agent's turn ended and it waits for children
// or messages.
func (s *State) Waiting() bool { return s.phase == phaseWaiting }

// Reported reports whether the agent has delivered its report.
func (s *State) Reported() bool { return s.reported }

// Pending returns what the engine must redo after a replay: the model call
// in flight, or the tool calls without results. Spawned children and
// messages are the engine's to resume; they are not repeated here.
func (s *State) Pending() []Action {
	switch s.phase {
	case phaseModel:
		return []Action{s.modelCall()}
	case phaseTools:
		var calls []cadre.ToolCall
		for _, sl := range s.slots {
			if !sl.filled && !IsSubagentTool(sl.call.Name) && s.hasTool(sl.call.Name) {
				calls = append(calls, sl.call)
			}
		}
		if len(calls) > 0 {
			return []Action{CallTools{Calls: calls}}
		}
	}
	return nil
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

// Step feeds one input and returns what the engine must do next.
func (s *State) Step(in Input) []Action {
	if s.phase == phaseDone {
		return nil
	}
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
	case InboxMessage:
		return s.inbox(in)
	case Timeout:
		return s.fail(fmt.Sprintf("timed out: no activity for %ds", in.Seconds))
	case Cancel:
		return s.cancel(in)
	}
	return nil
}

func (s *State) start(in Start) []Action {
	if s.phase != phaseNew {
		return nil
	}
	s.cfg = in.Config
	s.task = in.Task
	s.messages = append([]cadre.Message(nil), in.Messages...)
	return []Action{s.modelCall()}
}

// modelCall counts a turn and builds the request from the conversation.
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

func (s *State) toolSpecs() []cadre.ToolSpec {
	specs := append([]cadre.ToolSpec(nil), s.cfg.Tools...)
	return append(specs, SubagentToolSpecs(s.cfg.Delegate)...)
}

func (s *State) hasTool(name string) bool {
	for _, t := range s.cfg.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
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
	msg := in.Response.Message
	msg.Role = cadre.RoleAssistant
	if s.final {
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
			for _, said := range textproto.TagExtractAll(msg.Content, "say") {
				acts = append(acts, Emit{Type: cadre.EventSay, Data: map[string]any{"text": said}})
			}
		}
	}
	if len(msg.ToolCalls) == 0 {
		return append(acts, s.endTurn()...)
	}
	return append(acts, s.dispatch(msg.ToolCalls)...)
}

// dispatch handles the tool calls of one assistant message.
func (s *State) dispatch(calls []cadre.ToolCall) []Action {
	s.slots = make([]slot, len(calls))
	s.open = len(calls)
	s.phase = phaseTools
	var (
		acts     []Action
		ordinary []cadre.ToolCall
		spawn    Spawn
	)
	for i, c := range calls {
		s.slots[i].call = c
		switch {
		case IsSubagentTool(c.Name):
			acts = append(acts, s.subagentCall(i, c, &spawn)...)
		case s.hasTool(c.Name):
			ordinary = append(ordinary, c)
		default:
			s.fill(i, fmt.Sprintf("Error: unknown tool %q. Available tools: %s.", c.Name, strings.Join(s.toolNames(), ", ")), true)
		}
	}
	if len(ordinary) > 0 {
		acts = append(acts, CallTools{Calls: ordinary})
	}
	if len(spawn.Children) > 0 {
		acts = append(acts, spawn)
	}
	if s.open == 0 {
		acts = append(acts, s.afterTools()...)
	}
	return acts
}

func (s *State) fill(i int, content string, isError bool) {
	if s.slots[i].filled {
		return
	}
	s.slots[i].filled = true
	s.slots[i].result = ToolResult{CallID: s.slots[i].call.ID, Content: content, IsError: isError}
	s.open--
}

func (s *State) slotByCall(id string) int {
	for i, sl := range s.slots {
		if sl.call.ID == id {
			return i
		}
	}
	return -1
}

func (s *State) toolResults(in ToolResults) []Action {
	if s.phase != phaseTools {
		return nil
	}
	for _, r := range in.Results {
		if i := s.slotByCall(r.CallID); i >= 0 {
			s.fill(i, r.Content, r.IsError)
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
	for _, sl := range s.slots {
		s.messages = append(s.messages, cadre.Message{
			Role: cadre.RoleTool, ToolCallID: sl.call.ID, ToolName: sl.call.Name,
			Content: sl.result.Content, IsError: sl.result.IsError,
		})
	}
	s.slots = nil
	s.flushQueue()
	if s.turns >= s.cfg.maxTurns() && !s.final {
		s.final = true
		s.messages = append(s.messages, cadre.Message{Role: cadre.RoleUser, Content: prompt.FinalAnswerRequest})
	}
	return []Action{s.modelCall()}
}

func (s *State) flushQueue() {
	s.messages = append(s.messages, s.queue...)
	s.queue = nil
}

// endTurn runs when a reply has no tool calls: report, nudge, wait or finish.
func (s *State) endTurn() []Action {
	s.phase = phaseWaiting
	if s.cfg.textProtocol() {
		if acts, ok := s.startBlock(); ok {
			return acts
		}
	}
	var acts []Action
	if s.cfg.isChild() && !s.reported {
		switch {
		case s.cfg.textProtocol():
			acts = append(acts, s.report(s.resultText(), cadre.StatusDone)...)
		case s.cfg.Report == cadre.ReportTag:
			if content, ok := textproto.TagExtract(s.lastText, "response"); ok && s.lastIsReply() {
				acts = append(acts, s.report(content, cadre.StatusDone)...)
			} else if s.live() > 0 {
				return append(acts, Wait{})
			} else if !s.nudged {
				return s.nudge(prompt.NudgeTag)
			} else {
				acts = append(acts, s.report(prompt.NoResponseError, cadre.StatusFailed)...)
				if len(s.queue) == 0 {
					s.phase = phaseDone
					return append(acts, Finish{Result: prompt.NoResponseError, Failed: true})
				}
			}
		default:
			if s.live() > 0 {
				return append(acts, Wait{})
			}
			if !s.nudged {
				return s.nudge(prompt.NudgeTool)
			}
			acts = append(acts, s.report(s.resultText(), cadre.StatusDone)...)
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
	if content, ok := textproto.TagExtract(s.lastText, "response"); ok {
		return content
	}
	return strings.TrimSpace(s.lastText)
}

func (s *State) nudge(text string) []Action {
	s.nudged = true
	s.messages = append(s.messages, cadre.Message{Role: cadre.RoleUser, Content: text})
	return []Action{Emit{Type: cadre.EventAgentNudged, Data: map[string]any{"text": text}}, s.modelCall()}
}

// report delivers the agent's one report to its parent.
func (s *State) report(text string, status cadre.Status) []Action {
	if s.reported || !s.cfg.isChild() {
		return nil
	}
	s.reported = true
	return []Action{Deliver{To: s.cfg.Parent, Text: text, Report: true, Failed: status != cadre.StatusDone, Cancelled: status == cadre.StatusCancelled}}
}

func (s *State) live() int {
	n := 0
	for _, c := range s.children {
		if !c.ended {
			n++
		}
	}
	return n
}

func (s *State) fail(reason string) []Action {
	s.phase = phaseDone
	acts := s.report("Error: "+reason, cadre.StatusFailed)
	return append(acts, Finish{Result: reason, Failed: true})
}

func (s *State) cancel(in Cancel) []Action {
	s.phase = phaseDone
	reason := "cancelled"
	if in.Reason != "" {
		reason += ": " + in.Reason
	}
	acts := s.report("Error: "+reason, cadre.StatusCancelled)
	return append(acts, Finish{Result: reason, Cancelled: true})
}

func (s *State) stopForBudget() []Action {
	s.phase = phaseDone
	text := s.resultText()
	if text == "" {
		text = "(stopped before producing a result: the run's token budget is spent)"
	}
	acts := s.report(text, cadre.StatusDone)
	return append(acts, Finish{Result: text, BudgetExhausted: true})
}

func (s *State) inbox(in InboxMessage) []Action {
	text := in.Text
	switch {
	case in.From == "":
		text = prompt.SystemMessage("cadre", text)
	case in.FollowUp:
		text = prompt.FollowUpMessage(string(in.From), text)
	default:
		text = prompt.SystemMessage(string(in.From), text)
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

func (s *State) childReport(in ChildReport) []Action {
	c, ok := s.children[in.Child]
	if !ok || c.reported {
		return nil // unknown, or a repeat: a report is accepted once
	}
	c.reported = true
	status := cadre.StatusDone
	if in.Failed {
		status = cadre.StatusFailed
		if in.Cancelled {
			status = cadre.StatusCancelled
		}
	}
	acts := []Action{Emit{Type: cadre.EventAgentReported, Data: map[string]any{
		"child": string(in.Child), "failed": in.Failed, "text": in.Text,
	}}}
	if c.blockTask >= 0 && s.blk != nil {
		return append(acts, s.blockReport(c, in.Text, status)...)
	}
	if c.syncCall != "" && s.phase == phaseTools {
		if i := s.slotByCall(c.syncCall); i >= 0 {
			s.fill(i, in.Text, in.Failed)
			if s.open == 0 {
				acts = append(acts, s.afterTools()...)
			}
			return acts
		}
	}
	text := in.Text
	if in.Failed && !strings.HasPrefix(text, "Error:") {
		text = "Error: " + text
	}
	return append(acts, s.receive(cadre.Message{Role: cadre.RoleUser, Content: prompt.SystemMessage(string(in.Child), text)}, false)...)
}

func (s *State) childEnded(in ChildEnded) []Action {
	c, ok := s.children[in.Child]
	if !ok || c.ended {
		return nil
	}
	c.ended = true
	c.status = in.Status
	if s.phase == phaseWaiting && s.live() == 0 && len(s.queue) == 0 {
		return s.endTurn()
	}
	return nil
}

// subagentCall handles one call of a subagent tool. Results that are known
// at once fill the slot; spawns add to spawn.
func (s *State) subagentCall(i int, c cadre.ToolCall, spawn *Spawn) []Action {
	var args struct {
		Agent    string `json:"agent"`
		Task     string `json:"task"`
		Context  string `json:"context"`
		Prompt   string `json:"prompt"`
		Name     string `json:"name"`
		Text     string `json:"text"`
		AgentID  string `json:"agentId"`
		Steering bool   `json:"steering"`
	}
	raw := strings.TrimSpace(c.Arguments)
	if raw == "" {
		raw = "{}"
	}
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		s.fill(i, fmt.Sprintf("Error: the arguments of %s are not a valid JSON object (%v). Call it again with a JSON object.", c.Name, err), true)
		return nil
	}
	if delegationTools[c.Name] && !s.cfg.Delegate {
		return s.refuseDepth(i, c.Name)
	}
	switch c.Name {
	case ToolSpawnAgent:
		if strings.TrimSpace(args.Agent) == "" || strings.TrimSpace(args.Task) == "" {
			s.fill(i, "Error: spawn_agent needs both `agent` (a subagent name) and `task`. Available agents: "+s.available()+".", true)
			return nil
		}
		if msg := s.checkDefinition(args.Agent, true); msg != "" {
			s.fill(i, msg, true)
			return nil
		}
		id := s.childID(args.Agent)
		s.addChild(id, args.Agent, "", args.Task, c.ID, -1)
		spawn.Children = append(spawn.Children, ChildSpec{Ref: c.ID, ID: id, Definition: args.Agent, Task: args.Task, Context: args.Context, Mode: "sync"})
	case ToolStartBackground:
		def := strings.TrimSpace(args.Agent)
		if def == "" {
			def = DefaultBackgroundAgent
		}
		if strings.TrimSpace(args.Prompt) == "" {
			s.fill(i, "Error: start_background_agent needs `prompt`: the task for the background agent.", true)
			return nil
		}
		if msg := s.checkDefinition(def, false); msg != "" {
			s.fill(i, msg, true)
			return nil
		}
		id := s.childID(def)
		s.addChild(id, def, args.Name, args.Prompt, "", -1)
		s.refs[c.ID] = i
		spawn.Children = append(spawn.Children, ChildSpec{Ref: c.ID, ID: id, Definition: def, Name: args.Name, Task: args.Prompt, Background: true, Mode: "background"})
	case ToolSendAgentMessage:
		return s.send(i, args.Text, cadre.AgentID(args.AgentID), args.Steering)
	case ToolListAgents:
		s.fill(i, s.listChildren(), false)
	case ToolCancelAgent:
		id := cadre.AgentID(args.AgentID)
		ch, ok := s.children[id]
		if !ok {
			s.fill(i, fmt.Sprintf("Error: %q is not one of your subagents; you can only cancel agents you started. Use list_agents to see them.", args.AgentID), true)
			return nil
		}
		if ch.ended {
			s.fill(i, fmt.Sprintf("Agent %s has already ended (%s).", id, ch.status), false)
			return nil
		}
		s.fill(i, fmt.Sprintf("Cancellation of %s and everything it started was requested.", id), false)
		return []Action{CancelChild{Child: id}}
	}
	return nil
}

func (s *State) refuseDepth(i int, tool string) []Action {
	s.fill(i, fmt.Sprintf("Error: depth limit reached: this agent is at depth %d and the run allows at most %d levels below the root, so it cannot start subagents. Do the work yourself with your own tools.", s.cfg.Depth, s.cfg.MaxDepth), true)
	return []Action{Emit{Type: cadre.EventDepthLimit, Data: map[string]any{
		"tool": tool, "attempted_depth": s.cfg.Depth + 1, "max_depth": s.cfg.MaxDepth,
	}}}
}

// checkDefinition returns an error text for a definition the agent may not
// use, or "".
func (s *State) checkDefinition(name string, sync bool) string {
	e, ok := s.cfg.entry(name)
	switch {
	case !ok:
		return fmt.Sprintf("Error: there is no subagent named %q. Available agents: %s.", name, s.available())
	case e.Internal:
		return fmt.Sprintf("Error: %q is an internal agent and cannot be spawned by a model. Available agents: %s.", name, s.available())
	case sync && e.OnboardingRequired:
		return fmt.Sprintf("Error: %q requires onboarding before it is called: start with agent_onboard(agent=%q, context=…), answer its questions with agent_onboard_reply, then call_agent with the handle.", name, name)
	}
	return ""
}

func (s *State) available() string {
	names := s.cfg.spawnable()
	if len(names) == 0 {
		return "(none)"
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func (s *State) childID(definition string) cadre.AgentID {
	s.counters[definition]++
	return s.cfg.ID.Child(definition, s.counters[definition])
}

func (s *State) addChild(id cadre.AgentID, definition, name, task, syncCall string, blockTask int) {
	s.children[id] = &child{id: id, definition: definition, name: name, task: task, status: cadre.StatusRunning, syncCall: syncCall, blockTask: blockTask}
	s.order = append(s.order, id)
	s.spawns++
}

func (s *State) spawned(in Spawned) []Action {
	c, ok := s.children[in.Child]
	if !ok {
		return nil
	}
	if in.Err != "" {
		c.ended, c.reported, c.status = true, true, cadre.StatusFailed
		if c.blockTask >= 0 && s.blk != nil {
			return s.blockReport(c, "Error: "+in.Err, cadre.StatusFailed)
		}
		if i := s.slotByCall(in.Ref); i >= 0 && s.phase == phaseTools {
			s.fill(i, "Error: "+in.Err, true)
			if s.open == 0 {
				return s.afterTools()
			}
		}
		return nil
	}
	if i, ok := s.refs[in.Ref]; ok && s.phase == phaseTools && i < len(s.slots) && s.slots[i].call.ID == in.Ref {
		delete(s.refs, in.Ref)
		name := c.name
		if name == "" {
			name = c.definition
		}
		s.fill(i, fmt.Sprintf("Background agent started (%s): %s.", name, c.id), false)
		if s.open == 0 {
			return s.afterTools()
		}
	}
	return nil
}

func (s *State) send(i int, text string, to cadre.AgentID, steering bool) []Action {
	if strings.TrimSpace(text) == "" {
		s.fill(i, "Error: send_agent_message needs `text`.", true)
		return nil
	}
	if to == "" {
		if !s.cfg.isChild() {
			s.fill(i, "Error: you have no parent agent; give `agentId` to say who receives the message.", true)
			return nil
		}
		to = s.cfg.Parent
	}
	if to == s.cfg.ID {
		s.fill(i, "Error: you cannot send a message to yourself.", true)
		return nil
	}
	event := Emit{Type: cadre.EventMessageSent, Data: map[string]any{"to": string(to), "text": text}}
	if to == s.cfg.Parent && s.cfg.isChild() {
		if !s.reported {
			s.reported = true
			s.fill(i, "Your results were delivered to your parent agent.", false)
			return []Action{event, Deliver{To: to, Text: text, Report: true}}
		}
		s.fill(i, "Delivered to your parent as a follow-up message (your report was already delivered once).", false)
		return []Action{event, Deliver{To: to, Text: text, FollowUp: true, Steering: steering}}
	}
	s.fill(i, fmt.Sprintf("Message sent to %s.", to), false)
	return []Action{event, Deliver{To: to, Text: text, Steering: steering}}
}

func (s *State) listChildren() string {
	if len(s.order) == 0 {
		return "You have not started any subagents."
	}
	var b strings.Builder
	for _, id := range s.order {
		c := s.children[id]
		task := c.task
		if r := []rune(task); len(r) > 100 {
			task = string(r[:100]) + "…"
		}
		status := c.status
		if !c.ended && c.reported {
			status = "reported"
		}
		fmt.Fprintf(&b, "- %s (%s): %s — %s\n", id, c.definition, status, strings.ReplaceAll(task, "\n", " "))
	}
	return strings.TrimRight(b.String(), "\n")
}
