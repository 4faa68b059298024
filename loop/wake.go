package loop

import (
	"fmt"
	"strings"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/prompt"
)

// Wake gives an agent that has finished new work, with everything it
// knew: a follow-up from the user to a root whose run had ended (From
// empty), or a message from its parent to a child that had reported. The
// tool calls it left without results when it stopped are closed as
// interrupted, its turn limit counts again from here, and a child makes a
// new report, delivered to its parent once.
//
// A Wake reaching an agent that has not finished is an ordinary message.
type Wake struct {
	From cadre.AgentID `json:"from,omitempty"`
	Text string        `json:"text"`
}

// Kind implements Input.
func (Wake) Kind() string { return "wake" }

// Reasons of a ToolRefused event: the first words of its reason.
const (
	ReasonUnknownTool  = "unknown tool"
	ReasonNotAllowed   = "not in the agent's tool list"
	ReasonUnknownAgent = "unknown agent"
	ReasonBadArguments = "bad arguments"
)

// Round is the number of times the agent was woken after it had finished.
func (s *State) Round() int { return s.round }

// wake reopens a finished agent with a new message.
func (s *State) wake(w Wake) []Action {
	if strings.TrimSpace(w.Text) == "" {
		return nil
	}
	// Every tool call of the last reply needs its result before the model
	// is called again.
	if len(s.slots) > 0 {
		for i := range s.slots {
			s.fill(i, "Error: this call did not complete: the agent stopped before it did.", true)
		}
		for _, sl := range s.slots {
			s.messages = append(s.messages, sl.message())
		}
	}
	s.slots, s.slotOf, s.open = nil, nil, 0
	s.askCall, s.question = "", ""
	s.blk = nil
	s.interrupting = false
	s.flushQueue()
	s.finished = nil
	s.final, s.nudged, s.schemaRetried = false, false, false
	s.turnBase = s.turns
	s.lastText = ""
	if s.cfg.isChild() {
		s.round++
		s.reported, s.report = false, Deliver{}
	}
	s.messages = append(s.messages, s.wakeMessage(w))
	return []Action{Emit{Event: cadre.AgentWoken{From: w.From, Message: w.Text}}, s.modelCall()}
}

// wakeMessage is the message a Wake adds to the conversation.
func (s *State) wakeMessage(w Wake) cadre.Message {
	if w.From == "" {
		return cadre.Message{Role: cadre.RoleUser, Content: w.Text}
	}
	how := "send_agent_message"
	if s.cfg.Report == cadre.ReportTag || s.cfg.textProtocol() {
		how = "a <response> block"
	}
	text := fmt.Sprintf("%s\n\n(You had already reported on your earlier task. Work on this with what you know, then report the result to %s with %s, once.)",
		w.Text, w.From, how)
	return cadre.Message{Role: cadre.RoleUser, Content: prompt.SystemMessage(string(w.From), text)}
}

// wakeChild sends a message to a child that has finished: the engine
// wakes it, and its next report is this agent's to receive, once.
//
// A child that has reported but not yet ended is woken when it ends.
func (s *State) wakeChild(i int, c *child, text string) []Action {
	c.round++
	c.wake = text
	ended := c.ended
	c.ended, c.reported, c.waiter, c.question = false, false, "", ""
	c.status = cadre.StatusRunning
	s.fill(i, fmt.Sprintf("%s had reported; it is woken with your message and everything it knew. Its new report will reach you as a message; "+
		"use wait_agent(agentId=%q) to wait for it.", c.spec.ID, c.spec.ID), false)
	acts := []Action{Emit{Event: cadre.MessageSent{To: c.spec.ID, Text: text}}}
	if !ended {
		c.wakeNext = text
		return acts
	}
	return append(acts, Deliver{To: c.spec.ID, Text: text, Wake: true, Round: c.round})
}

// WakeOf returns the Deliver that woke the child id in its latest round,
// when the child has neither reported nor ended since and the wake is not
// waiting for the child's end (see wakeChild). An engine that resumes a
// run compares its Round with the child's own Round: a child behind it
// never took the wake up (the process stopped before the child journaled
// it) and must be woken again, rather than be told to its parent as having
// ended, which would lose the wake and the report it asked for.
func (s *State) WakeOf(id cadre.AgentID) (Deliver, bool) {
	c, ok := s.children[id]
	if !ok || c.round == 0 || c.ended || c.reported || c.wakeNext != "" || c.wake == "" {
		return Deliver{}, false
	}
	return Deliver{To: id, Text: c.wake, Wake: true, Round: c.round}, true
}

// refused is the event of a refused tool call.
func refused(c cadre.ToolCall, reason string) Emit {
	return Emit{Event: cadre.ToolRefused{CallID: c.ID, Tool: c.Name, Reason: reason}}
}

// refusedUnknown is the event of a call of a tool the agent does not have:
// one its definition leaves out, or one that does not exist.
func (s *State) refusedUnknown(c cadre.ToolCall) Emit {
	for _, name := range s.cfg.Withheld {
		if name == c.Name {
			return refused(c, ReasonNotAllowed+": the agent's definition does not grant it")
		}
	}
	return refused(c, ReasonUnknownTool)
}

// finalToolsError is why an agent fails whose final call, offered no
// tools, asked for tools again instead of answering.
func finalToolsError(maxTurns int, calls []cadre.ToolCall) string {
	names := make([]string, 0, len(calls))
	for _, c := range calls {
		names = append(names, c.Name)
	}
	return fmt.Sprintf("the agent reached its turn limit (%d model calls) and, asked for its final answer without tools, called tools again (%s) instead of answering; "+
		"give it more turns (--max-turns) or a smaller task", maxTurns, strings.Join(names, ", "))
}

// budgetText is the result of an agent stopped by the token budget before
// it wrote any: what its children reported, when they did.
func (s *State) budgetText() string {
	var b strings.Builder
	for _, id := range s.order {
		c := s.children[id]
		if !c.reported || c.text == "" {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("The run's token budget was spent before this agent wrote its answer. What its subagents reported:\n")
		}
		fmt.Fprintf(&b, "\n## %s\n%s\n", id, strings.TrimSpace(c.text))
	}
	if b.Len() == 0 {
		return "(stopped before producing a result: the run's token budget is spent)"
	}
	return strings.TrimRight(b.String(), "\n")
}
