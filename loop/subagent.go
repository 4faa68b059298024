package loop

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/prompt"
)

// subagentArgs holds the arguments of every subagent tool.
type subagentArgs struct {
	Agent        string   `json:"agent"`
	Task         string   `json:"task"`
	Context      string   `json:"context"`
	Prompt       string   `json:"prompt"`
	Name         string   `json:"name"`
	Text         string   `json:"text"`
	AgentID      string   `json:"agentId"`
	Steering     bool     `json:"steering"`
	Question     string   `json:"question"`
	Answer       string   `json:"answer"`
	Handle       string   `json:"handle"`
	Input        string   `json:"input"`
	Count        int      `json:"count"`
	Description  string   `json:"description"`
	Instructions string   `json:"instructions"`
	Tools        []string `json:"tools"`
	Model        string   `json:"model"`
}

// subagentCall handles one call of a subagent tool. Results known at once
// fill the slot; spawns are added to spawn; other calls leave the slot open
// until their input arrives.
func (s *State) subagentCall(i int, c cadre.ToolCall, spawn *Spawn) []Action {
	var args subagentArgs
	raw := strings.TrimSpace(c.Arguments)
	if raw == "" || raw == "null" {
		raw = "{}"
	}
	if !quickArgs(argShapes[c.Name], raw, &args) && !s.readArgs(i, c, raw, &args) {
		return nil
	}
	return s.subagentDo(i, c, &args, spawn)
}

// readArgs reads the arguments of a subagent call in full, checking them
// against the tool's parameters. When they do not match, it fills the
// call's slot with what is wrong and returns false.
func (s *State) readArgs(i int, c cadre.ToolCall, raw string, args *subagentArgs) bool {
	if !json.Valid([]byte(raw)) || raw[0] != '{' {
		s.fill(i, fmt.Sprintf("Error: the arguments of %s are not a valid JSON object (%s). Call it again with a JSON object.", c.Name, clipArgs(raw)), true)
		s.refusal = ReasonBadArguments + ": not a JSON object"
		return false
	}
	if err := subagentSchemas[c.Name].Check(json.RawMessage(raw)); err != nil {
		s.refusal = fmt.Sprintf("%s: %v", ReasonBadArguments, err)
		msg := fmt.Sprintf("Error: the arguments of %s do not match its parameters: %v. Call it again with arguments that do.", c.Name, err)
		if startsAgent(c.Name) {
			msg += " Available agents: " + s.available() + "."
		}
		s.fill(i, msg, true)
		return false
	}
	var full subagentArgs // apart from args, which would escape with it
	if err := json.Unmarshal([]byte(raw), &full); err != nil {
		s.refusal = fmt.Sprintf("%s: %v", ReasonBadArguments, err)
		s.fill(i, fmt.Sprintf("Error: the arguments of %s do not match its parameters (%v). Call it again with arguments that do.", c.Name, err), true)
		return false
	}
	*args = full
	return true
}

// subagentDo carries out a subagent call whose arguments were read.
func (s *State) subagentDo(i int, c cadre.ToolCall, args *subagentArgs, spawn *Spawn) []Action {
	switch c.Name {
	case ToolSpawnAgent:
		if blank(args.Agent) || blank(args.Task) {
			s.fill(i, "Error: spawn_agent needs both `agent` (a subagent name) and `task`. Available agents: "+s.available()+".", true)
			return nil
		}
		return s.syncSpawn(i, ChildSpec{Ref: c.ID, Definition: args.Agent, Task: args.Task, Context: args.Context, Model: strings.TrimSpace(args.Model)}, spawn)
	case ToolAgentCall:
		if blank(args.Agent) || blank(args.Input) {
			s.fill(i, "Error: agent_call needs both `agent` (an agent name) and `input` (its task). Available agents: "+s.available()+".", true)
			return nil
		}
		return s.syncSpawn(i, ChildSpec{Ref: c.ID, Definition: args.Agent, Task: args.Input}, spawn)
	case ToolStartBackground:
		def := strings.TrimSpace(args.Agent)
		if def == "" {
			def = DefaultBackgroundAgent
		}
		if blank(args.Prompt) {
			s.fill(i, "Error: start_background_agent needs `prompt`: the task for the background agent.", true)
			return nil
		}
		if msg := s.checkDefinition(def, false); msg != "" {
			s.fill(i, msg, true)
			return nil
		}
		ch := s.addChild(ChildSpec{Ref: c.ID, Definition: def, Name: strings.TrimSpace(args.Name), Model: strings.TrimSpace(args.Model),
			Task: args.Prompt, Background: true, Mode: "background"}, "")
		spawn.Children = append(spawn.Children, ch.spec)
	case ToolSendAgentMessage:
		return s.send(i, args.Text, cadre.AgentID(strings.TrimSpace(args.AgentID)), args.Steering)
	case ToolListAgents:
		s.fill(i, s.listChildren(), false)
	case ToolCancelAgent:
		ch, msg := s.ownChild(args.AgentID, "cancel")
		if ch == nil {
			s.fill(i, msg, true)
			return nil
		}
		if ch.ended {
			s.fill(i, fmt.Sprintf("Agent %s has already ended (%s).", ch.spec.ID, ch.status), false)
			return nil
		}
		s.fill(i, fmt.Sprintf("Cancellation of %s and everything it started was requested.", ch.spec.ID), false)
		return []Action{CancelChild{Child: ch.spec.ID}}
	case ToolWaitAgent:
		return s.wait(i, c.ID, args.AgentID)
	case ToolAnswerAgent:
		return s.answerChild(i, args.AgentID, args.Answer)
	case ToolAskCaller:
		return s.ask(i, c.ID, args.Question)
	case ToolOnboard:
		return s.onboard(i, c.ID, args.Agent, args.Context, spawn)
	case ToolOnboardReply:
		return s.onboardReply(i, c.ID, args.Handle, args.Answer)
	case ToolCallAgent:
		return s.callAgent(i, c.ID, *args, spawn)
	case ToolFork:
		return s.fork(i, args.Handle, args.Count)
	case ToolCreateAgent:
		return s.createAgent(i, c.ID, *args)
	}
	return nil
}

func blank(s string) bool { return strings.TrimSpace(s) == "" }

// clipArgs quotes the start of arguments a model wrote, for an error.
func clipArgs(raw string) string {
	if r := []rune(raw); len(r) > 80 {
		raw = string(r[:80]) + "…"
	}
	return fmt.Sprintf("got %q", raw)
}

// syncSpawn starts a child whose report will be the result of the call
// spec.Ref.
func (s *State) syncSpawn(i int, spec ChildSpec, spawn *Spawn) []Action {
	spec.Definition = strings.TrimSpace(spec.Definition)
	if msg := s.checkDefinition(spec.Definition, true); msg != "" {
		s.fill(i, msg, true)
		return nil
	}
	if e, _ := s.cfg.entry(spec.Definition); e.Background && spec.First == "" {
		// Its definition says it always runs in the background.
		spec.Background, spec.Mode = true, "background"
		ch := s.addChild(spec, "")
		spawn.Children = append(spawn.Children, ch.spec)
		return nil
	}
	spec.Mode = "sync"
	ch := s.addChild(spec, spec.Ref)
	spawn.Children = append(spawn.Children, ch.spec)
	return nil
}

func (s *State) refuseDepth(i int, tool string) []Action {
	if s.cfg.Depth < s.cfg.MaxDepth {
		s.fill(i, fmt.Sprintf("Error: %s is not available to you: your definition's tool list does not include the subagent tools. Do the work yourself with your own tools.", tool), true)
		return []Action{refused(s.slots[i].call, ReasonNotAllowed+": the definition's tool list has no subagent tools")}
	}
	s.fill(i, fmt.Sprintf("Error: depth limit reached: this agent is at depth %d and the run allows at most %d levels below the root, so it cannot start subagents. Do the work yourself with your own tools.", s.cfg.Depth, s.cfg.MaxDepth), true)
	return []Action{Emit{Event: cadre.DepthLimit{Tool: tool, AttemptedDepth: s.cfg.Depth + 1, MaxDepth: s.cfg.MaxDepth}}}
}

// checkDefinition returns an error text for a definition the agent may not
// use, or "".
func (s *State) checkDefinition(name string, sync bool) string {
	e, ok := s.cfg.entry(name)
	switch {
	case !ok:
		s.refusal = fmt.Sprintf("%s: there is no agent named %q", ReasonUnknownAgent, name)
		return fmt.Sprintf("Error: there is no subagent named %q. Available agents: %s.", name, s.available())
	case e.Internal:
		return fmt.Sprintf("Error: %q is an internal agent and cannot be spawned by a model. Available agents: %s.", name, s.available())
	case sync && e.OnboardingRequired:
		return fmt.Sprintf("Error: %q requires onboarding before it is called: start with agent_onboard(agent=%q, context=…), answer its questions with agent_onboard_reply, then call_agent(handle=…, input=…).", name, name)
	}
	return ""
}

// available lists the agents a model may start, for an error text.
func (s *State) available() string { return nameList(s.cfg.spawnable(true)) }

// nameList lists names sorted, or says there are none.
func nameList(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// initChildren makes the maps of an agent's children on its first spawn,
// with room for n.
func (s *State) initChildren(n int) {
	if s.children == nil {
		s.counters, s.children = map[string]int{}, make(map[cadre.AgentID]*child, n)
	}
}

// addChild records a child and gives it its ID. waiter is the call waiting
// for its report, if any.
func (s *State) addChild(spec ChildSpec, waiter string) *child {
	idName := spec.Definition
	if idName == "" {
		idName = "sub"
	}
	s.initChildren(0)
	s.counters[idName]++
	spec.ID = s.cfg.ID.Child(idName, s.counters[idName])
	s.spawns++
	c := &child{spec: spec, status: cadre.StatusRunning, waiter: waiter, blockTask: -1}
	s.children[spec.ID] = c
	s.order = append(s.order, spec.ID)
	return c
}

// ownChild finds one of the agent's children by the id the model gave.
func (s *State) ownChild(id, verb string) (*child, string) {
	c, ok := s.children[cadre.AgentID(strings.TrimSpace(id))]
	if !ok {
		return nil, fmt.Sprintf("Error: %q is not one of your subagents; you can only %s agents you started. Use list_agents to see them.", id, verb)
	}
	return c, ""
}

func (s *State) spawned(in Spawned) []Action {
	c, ok := s.children[in.Child]
	if !ok || c.acked {
		return nil
	}
	c.acked = true
	if in.Err != "" {
		if !c.ended {
			s.endedKids++
		}
		c.ended, c.reported, c.status = true, true, cadre.StatusFailed
		if c.handle != "" {
			if h := s.handles[c.handle]; h != nil {
				delete(s.handles, h.id)
				s.hOrder = slices.DeleteFunc(s.hOrder, func(x string) bool { return x == h.id })
			}
		}
		if c.blockTask >= 0 && s.blk != nil {
			return s.blockReport(c, "Error: "+in.Err, cadre.StatusFailed)
		}
		acts := s.fillCall(in.Ref, "Error: "+in.Err, true)
		if s.phase == phaseWaiting && s.live() == 0 && len(s.queue) == 0 {
			return append(acts, s.endTurn()...)
		}
		return acts
	}
	if c.spec.Background {
		name := c.spec.Name
		if name == "" {
			name = c.spec.Definition
		}
		text := fmt.Sprintf("Background agent started (%s): %s.", name, c.spec.ID)
		if i := s.slotByCall(in.Ref); i >= 0 && s.slots[i].call.Name != ToolStartBackground {
			text += " Its definition runs it in the background: its report will arrive later as a message; use wait_agent to wait for it."
		}
		return s.fillCall(in.Ref, text, false)
	}
	return nil
}

func (s *State) childReport(in ChildReport) []Action {
	c, ok := s.children[in.Child]
	if !ok || c.reported || in.Round != c.round {
		return nil // unknown, or a repeat: a report is accepted once a round
	}
	c.reported = true
	c.text = in.Text
	status := cadre.StatusDone
	if in.Failed {
		status = cadre.StatusFailed
		if in.Cancelled {
			status = cadre.StatusCancelled
		}
	}
	acts := []Action{Emit{Event: cadre.AgentReported{Child: in.Child, Failed: in.Failed, Text: in.Text, Incomplete: in.Incomplete}}}
	if c.handle != "" {
		return append(acts, s.onboardEnded(c, in.Text, in.Failed, in.Incomplete)...)
	}
	if c.blockTask >= 0 && s.blk != nil {
		return append(acts, s.blockReport(c, in.Text, status)...)
	}
	text := in.Text
	if in.Failed && !strings.HasPrefix(text, "Error:") {
		text = "Error: " + text
	}
	if c.waiter != "" && s.phase == phaseTools && s.slotByCall(c.waiter) >= 0 {
		call := c.waiter
		c.waiter = ""
		return append(acts, s.fillCall(call, text, in.Failed)...)
	}
	return append(acts, s.receive(cadre.Message{Role: cadre.RoleUser, Content: prompt.SystemMessage(string(in.Child), text)}, false)...)
}

func (s *State) childEnded(in ChildEnded) []Action {
	c, ok := s.children[in.Child]
	if !ok || c.ended {
		return nil
	}
	if c.wakeNext != "" {
		// It ended after its report: the message sent since wakes it.
		text := c.wakeNext
		c.wakeNext = ""
		return []Action{Deliver{To: c.spec.ID, Text: text, Wake: true, Round: c.round}}
	}
	var acts []Action
	if !c.reported {
		// A child always reports before it ends; one that did not (it was
		// lost) must not leave its waiter hanging.
		why := in.Error
		if why == "" {
			why = string(in.Status)
		}
		acts = s.childReport(ChildReport{Child: in.Child, Text: fmt.Sprintf("Error: the subagent ended without a report (%s).", why),
			Failed: in.Status != cadre.StatusDone, Cancelled: in.Status == cadre.StatusCancelled})
	}
	c.ended = true
	s.endedKids++
	c.status = in.Status
	c.question = ""
	if s.phase == phaseWaiting && s.live() == 0 && len(s.queue) == 0 {
		return append(acts, s.endTurn()...)
	}
	return acts
}

func (s *State) send(i int, text string, to cadre.AgentID, steering bool) []Action {
	if blank(text) {
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
	if c, ok := s.children[to]; ok && c.handle == "" && (c.ended || c.reported && c.wakeNext == "") {
		return s.wakeChild(i, c, text)
	}
	// Only an agent's parent may interrupt its turn: any agent may write
	// to another by its id, and a sibling steering a sibling (or a child
	// its parent) would let one injected agent break into the work of
	// agents with other tools.
	plain := ""
	if _, own := s.children[to]; steering && !own {
		steering = false
		plain = " It was delivered as a plain message: only an agent's parent may interrupt its turn."
	}
	event := Emit{Event: cadre.MessageSent{To: to, Text: text}}
	if to == s.cfg.Parent && s.cfg.isChild() {
		if !s.reported {
			checked, err := s.checkSchema(text)
			if err != nil && !s.schemaRetried {
				s.schemaRetried = true
				s.fill(i, "Error: "+schemaRetryText(err, prompt.NudgeTool), true)
				return nil
			}
			// The message, maybe a warning, the report, and the
			// EndOnReport Finish that may follow.
			acts := append(make([]Action, 0, 4), event)
			if err != nil {
				acts = append(acts, schemaDelivered(err))
			}
			s.fill(i, "Your results were delivered to your parent agent.", false)
			s.toParent++
			return s.deliverReport(acts, checked, cadre.StatusDone, false)
		}
		s.fill(i, "Delivered to your parent as a follow-up message (your report was already delivered once)."+plain, false)
		s.toParent++
		return []Action{event, Deliver{To: to, Text: text, FollowUp: true, Steering: steering}}
	}
	s.fill(i, fmt.Sprintf("Message sent to %s.", to)+plain, false)
	return []Action{event, Deliver{To: to, Text: text, Steering: steering}}
}

func (s *State) listChildren() string {
	if len(s.order) == 0 && len(s.hOrder) == 0 {
		return "You have not started any subagents."
	}
	var b strings.Builder
	for _, id := range s.order {
		c := s.children[id]
		task := strings.ReplaceAll(c.spec.Task, "\n", " ")
		if r := []rune(task); len(r) > 100 {
			task = string(r[:100]) + "…"
		}
		status := string(c.status)
		switch {
		case !c.ended && c.question != "":
			status = "waiting for your answer"
		case !c.ended && c.reported:
			status = "reported"
		case !c.acked && !c.ended:
			status = "starting"
		}
		def := c.spec.Definition
		if def == "" {
			def = "sub"
		}
		fmt.Fprintf(&b, "- %s (%s, %s): %s — %s\n", id, def, c.spec.Mode, status, task)
	}
	for _, id := range s.hOrder {
		h := s.handles[id]
		state := "ready"
		if !h.ready {
			state = "onboarding"
		}
		fmt.Fprintf(&b, "- handle %s (%s): %s, %d questions answered, used %d times\n", h.id, h.agent, state, len(h.qa), h.calls)
	}
	return strings.TrimRight(b.String(), "\n")
}

// wait makes call wait for a child's report.
func (s *State) wait(i int, call, id string) []Action {
	c, msg := s.ownChild(id, "wait for")
	switch {
	case c == nil:
		s.fill(i, msg, true)
	case c.reported:
		s.fill(i, fmt.Sprintf("%s has already reported; its report reached you earlier as a <system_message> from it.", c.spec.ID), false)
	case c.ended:
		s.fill(i, fmt.Sprintf("%s has ended (%s) without a report.", c.spec.ID, c.status), true)
	case c.question != "":
		s.fill(i, fmt.Sprintf("Error: %s is waiting for your answer to its question: %s\nAnswer it with answer_agent first.", c.spec.ID, c.question), true)
	case c.handle != "":
		s.fill(i, fmt.Sprintf("Error: %s is an onboarding conversation; answer it with agent_onboard_reply(handle=%q).", c.spec.ID, c.handle), true)
	case c.waiter != "":
		s.fill(i, fmt.Sprintf("Error: you are already waiting for %s in this reply.", c.spec.ID), true)
	default:
		c.waiter = call
	}
	return nil
}

// answerChild answers a child's pending question (asked while it works).
func (s *State) answerChild(i int, id, answer string) []Action {
	c, msg := s.ownChild(id, "answer")
	switch {
	case c == nil:
		s.fill(i, msg, true)
		return nil
	case c.handle != "":
		s.fill(i, fmt.Sprintf("Error: %s is being onboarded; answer it with agent_onboard_reply(handle=%q, answer=…).", c.spec.ID, c.handle), true)
		return nil
	case c.question == "":
		s.fill(i, fmt.Sprintf("Error: %s has no question waiting for an answer.", c.spec.ID), true)
		return nil
	case blank(answer):
		s.fill(i, "Error: answer_agent needs `answer`.", true)
		return nil
	}
	q := c.question
	c.lastQ, c.lastA, c.question = q, answer, ""
	s.fill(i, fmt.Sprintf("Your answer was delivered to %s; it goes on with its work. Use wait_agent(agentId=%q) to wait for its report.", c.spec.ID, c.spec.ID), false)
	return []Action{
		Emit{Event: cadre.Answer{Child: c.spec.ID, Question: q, Answer: answer}},
		Reply{To: c.spec.ID, Text: answer},
	}
}

// ask puts a question to the agent's caller (ask_caller).
func (s *State) ask(i int, call, question string) []Action {
	max := s.cfg.maxQuestions()
	switch {
	case blank(question):
		s.fill(i, "Error: ask_caller needs `question`.", true)
		return nil
	case s.askCall != "":
		s.fill(i, "Error: ask one question at a time; wait for the answer to the one you asked.", true)
		return nil
	case s.asked >= max && s.cfg.onboarding():
		s.fill(i, fmt.Sprintf("Error: you have asked %d questions, the most allowed. Do not ask more: end your turn now without calling ask_caller; you are ready.", max), true)
		return nil
	case s.asked >= max:
		s.fill(i, fmt.Sprintf("Error: you have asked %d questions, the most allowed. Go on with what you know and say in your report what you assumed.", max), true)
		return nil
	}
	s.asked++
	s.askCall, s.question = call, strings.TrimSpace(question)
	return []Action{Ask{Question: s.question, Onboarding: s.cfg.onboarding()}}
}

// answer fills the pending ask_caller call.
func (s *State) answer(in Answer) []Action {
	if s.askCall == "" {
		return nil // no question pending: a repeat after a replay
	}
	call := s.askCall
	s.askCall, s.question = "", ""
	if in.Err != "" {
		return s.fillCall(call, "Error: no answer: "+in.Err+" Go on with what you know and say in your report what you assumed.", true)
	}
	text := in.Text
	if s.asked >= s.cfg.maxQuestions() {
		if s.cfg.onboarding() {
			text += fmt.Sprintf("\n\n(That was your last question: you have asked %d, the most allowed. End your turn now; you will get the task next.)", s.asked)
		} else {
			text += fmt.Sprintf("\n\n(That was your last question: you have asked %d, the most allowed.)", s.asked)
		}
	}
	return s.fillCall(call, text, false)
}

// childQuestion receives a question a child asked with ask_caller.
func (s *State) childQuestion(in ChildQuestion) []Action {
	c, ok := s.children[in.Child]
	if !ok || c.ended || c.question == in.Question {
		return nil
	}
	if c.question == "" && c.lastQ == in.Question && c.lastA != "" {
		// Asked again after a replay: the answer given may not have
		// reached it.
		return []Action{Reply{To: c.spec.ID, Text: c.lastA}}
	}
	c.question = in.Question
	if c.handle != "" {
		return s.onboardQuestion(c, in.Question)
	}
	acts := []Action{Emit{Event: cadre.Question{Child: c.spec.ID, Question: in.Question}}}
	if c.waiter != "" && s.phase == phaseTools && s.slotByCall(c.waiter) >= 0 {
		call := c.waiter
		c.waiter = ""
		b, _ := json.Marshal(map[string]string{
			"agentId":  string(c.spec.ID),
			"question": in.Question,
			"note":     "The subagent is paused until you answer. Answer with answer_agent(agentId, answer), then use wait_agent(agentId) for its report.",
		})
		return append(acts, s.fillCall(call, string(b), false)...)
	}
	text := fmt.Sprintf("Your subagent %s asks: %s\nAnswer with answer_agent(agentId=%q, answer=…); it is paused until you do.", c.spec.ID, in.Question, c.spec.ID)
	return append(acts, s.receive(cadre.Message{Role: cadre.RoleUser, Content: prompt.SystemMessage(string(c.spec.ID), text)}, false)...)
}
