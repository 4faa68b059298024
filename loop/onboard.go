package loop

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/prompt"
)

// A handle is an onboarding conversation with a definition: the questions
// its agent asked and the caller's answers. Once ready it can start any
// number of calls (call_agent), each a fresh agent that gets the Q&A in its
// first message, and it can be copied (agent_fork).
type handle struct {
	id      string
	agent   string
	context string
	qa      []prompt.QA
	// question is the pending question; child the onboarding agent while it
	// runs.
	question string
	child    cadre.AgentID
	ready    bool
	note     string
	calls    int
}

func (s *State) newHandle(agent, context string) *handle {
	s.initChildren(0)
	if s.handles == nil {
		s.handles = map[string]*handle{}
	}
	s.counters["#handle"]++
	h := &handle{id: fmt.Sprintf("onboard-%d", s.counters["#handle"]), agent: agent, context: context}
	s.handles[h.id] = h
	s.hOrder = append(s.hOrder, h.id)
	return h
}

// handleResult is the JSON a tool call returns about a handle.
func (h *handle) result() string {
	m := map[string]any{"handle": h.id, "agent": h.agent}
	if h.ready {
		m["ready"] = true
		if h.note != "" {
			m["note"] = h.note
		}
	} else if h.question != "" {
		m["question"] = h.question
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func (s *State) onboard(i int, call, agent, context string, spawn *Spawn) []Action {
	agent = strings.TrimSpace(agent)
	if agent == "" {
		s.fill(i, "Error: agent_onboard needs `agent` (a subagent name). Available agents: "+s.available()+".", true)
		return nil
	}
	if msg := s.checkDefinition(agent, false); msg != "" {
		s.fill(i, msg, true)
		return nil
	}
	if e, _ := s.cfg.entry(agent); e.NoOnboarding {
		s.fill(i, fmt.Sprintf("Error: %q does not take part in onboarding (onboarding: false in its definition); call it with spawn_agent or call_agent(agent=%q, input=…).", agent, agent), true)
		return nil
	}
	h := s.newHandle(agent, context)
	task := "onboarding"
	if !blank(context) {
		task += ": " + strings.TrimSpace(context)
	}
	c := s.addChild(ChildSpec{Ref: call, Definition: agent, Task: task, Context: context, Mode: "onboard", Onboarding: true}, call)
	c.handle = h.id
	h.child = c.spec.ID
	spawn.Children = append(spawn.Children, c.spec)
	return nil
}

func (s *State) handleFor(i int, id string) *handle {
	h, ok := s.handles[strings.TrimSpace(id)]
	if !ok {
		known := "none yet: start one with agent_onboard"
		if len(s.hOrder) > 0 {
			known = strings.Join(s.hOrder, ", ")
		}
		s.fill(i, fmt.Sprintf("Error: there is no onboarding handle %q. Your handles: %s.", id, known), true)
		return nil
	}
	return h
}

func (s *State) onboardReply(i int, call, id, answer string) []Action {
	h := s.handleFor(i, id)
	switch {
	case h == nil:
		return nil
	case h.ready:
		s.fill(i, fmt.Sprintf("Error: handle %s is already ready; run the task with call_agent(handle=%q, input=…).", h.id, h.id), true)
		return nil
	case h.question == "":
		s.fill(i, fmt.Sprintf("Error: handle %s has no question waiting for an answer.", h.id), true)
		return nil
	case blank(answer):
		s.fill(i, "Error: agent_onboard_reply needs `answer`.", true)
		return nil
	}
	c := s.children[h.child]
	q := h.question
	h.qa = append(h.qa, prompt.QA{Question: q, Answer: answer})
	h.question = ""
	c.lastQ, c.lastA, c.question = q, answer, ""
	c.waiter = call
	return []Action{
		Emit{Event: cadre.OnboardAnswer{Handle: h.id, Child: c.spec.ID, Question: q, Answer: answer}},
		Reply{To: c.spec.ID, Text: answer},
	}
}

// onboardQuestion passes an onboarding agent's question to the call
// waiting for it.
func (s *State) onboardQuestion(c *child, q string) []Action {
	h := s.handles[c.handle]
	if h == nil {
		return nil
	}
	h.question = q
	acts := []Action{Emit{Event: cadre.OnboardQuestion{Handle: h.id, Child: c.spec.ID, Question: q}}}
	if c.waiter != "" {
		call := c.waiter
		c.waiter = ""
		return append(acts, s.fillCall(call, h.result(), false)...)
	}
	return acts
}

// onboardEnded makes a handle ready when its onboarding agent ends its
// conversation.
func (s *State) onboardEnded(c *child, text string, failed, incomplete bool) []Action {
	h := s.handles[c.handle]
	if h == nil || h.ready {
		return nil
	}
	h.ready, h.question, h.child = true, "", ""
	switch {
	case failed:
		h.note = fmt.Sprintf("the onboarding agent stopped early (%s); the handle is ready with the %d answers so far", strings.TrimPrefix(text, "Error: "), len(h.qa))
	case incomplete:
		h.note = fmt.Sprintf("the onboarding agent reached its turn limit without saying it was ready; the handle is ready with the %d answers so far", len(h.qa))
	case len(h.qa) >= s.maxQuestionsOf(h.agent):
		h.note = "question limit reached"
	}
	if c.waiter != "" {
		call := c.waiter
		c.waiter = ""
		return s.fillCall(call, h.result(), false)
	}
	return nil
}

// maxQuestionsOf is how many questions an agent of the definition may ask.
func (s *State) maxQuestionsOf(name string) int {
	if e, ok := s.cfg.entry(name); ok && e.MaxQuestions > 0 {
		return e.MaxQuestions
	}
	return cadre.DefaultMaxQuestions
}

func (s *State) callAgent(i int, call string, args subagentArgs, spawn *Spawn) []Action {
	hasAgent, hasHandle := !blank(args.Agent), !blank(args.Handle)
	switch {
	case blank(args.Input):
		s.fill(i, "Error: call_agent needs `input`: the task.", true)
		return nil
	case hasAgent == hasHandle:
		s.fill(i, "Error: call_agent needs exactly one of `handle` (from agent_onboard or agent_fork) or `agent` (a subagent name).", true)
		return nil
	case hasAgent:
		return s.syncSpawn(i, ChildSpec{Ref: call, Definition: args.Agent, Task: args.Input}, spawn)
	}
	h := s.handleFor(i, args.Handle)
	if h == nil {
		return nil
	}
	if !h.ready {
		if h.question != "" {
			s.fill(i, fmt.Sprintf("Error: handle %s is not ready: its agent asked %q; answer with agent_onboard_reply first.", h.id, h.question), true)
		} else {
			s.fill(i, fmt.Sprintf("Error: handle %s is not ready yet.", h.id), true)
		}
		return nil
	}
	h.calls++
	c := s.addChild(ChildSpec{Ref: call, Definition: h.agent, Task: args.Input, Context: h.context,
		First: prompt.OnboardedTask(h.qa, args.Input, h.context), Mode: "sync"}, call)
	spawn.Children = append(spawn.Children, c.spec)
	return nil
}

func (s *State) fork(i int, id string, count int) []Action {
	h := s.handleFor(i, id)
	switch {
	case h == nil:
		return nil
	case !h.ready:
		s.fill(i, fmt.Sprintf("Error: handle %s is not ready; finish its onboarding (agent_onboard_reply) before forking it.", h.id), true)
		return nil
	case count < 1 || count > MaxForks:
		s.fill(i, fmt.Sprintf("Error: count must be between 1 and %d.", MaxForks), true)
		return nil
	}
	ids := make([]string, 0, count)
	for range count {
		f := s.newHandle(h.agent, h.context)
		f.qa = slices.Clone(h.qa)
		f.ready, f.note = true, h.note
		ids = append(ids, f.id)
	}
	b, _ := json.Marshal(map[string]any{"handles": ids, "agent": h.agent, "answers": len(h.qa)})
	s.fill(i, string(b), false)
	return nil
}

// agentName is what agent_create accepts as a name.
var agentName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func (s *State) createAgent(i int, call string, args subagentArgs) []Action {
	name := strings.TrimSpace(args.Name)
	switch {
	case !agentName.MatchString(name):
		s.fill(i, fmt.Sprintf("Error: %q is not a valid agent name: use only letters, digits, - and _.", args.Name), true)
		return nil
	case blank(args.Description):
		s.fill(i, "Error: agent_create needs `description`: what the agent does and when to use it.", true)
		return nil
	case blank(args.Instructions):
		s.fill(i, "Error: agent_create needs `instructions`: the agent's system prompt.", true)
		return nil
	}
	for _, e := range s.cfg.Catalog {
		if strings.EqualFold(e.Name, name) {
			s.fill(i, fmt.Sprintf("Error: an agent named %q already exists; choose another name, or call it with agent_call.", e.Name), true)
			return nil
		}
	}
	for _, d := range s.creating {
		if strings.EqualFold(d.Name, name) {
			s.fill(i, fmt.Sprintf("Error: an agent named %q is already being created in this reply.", name), true)
			return nil
		}
	}
	var tools []string
	if args.Tools != nil {
		known := s.creatableTools()
		tools = []string{}
		for _, t := range args.Tools {
			t = strings.TrimSpace(t)
			if !slices.Contains(known, t) {
				s.fill(i, fmt.Sprintf("Error: unknown tool %q for the new agent. It may use these (a subset of yours): %s.", t, strings.Join(known, ", ")), true)
				return nil
			}
			if !slices.Contains(tools, t) {
				tools = append(tools, t)
			}
		}
	}
	def := cadre.Definition{
		Name: name, Description: strings.TrimSpace(args.Description), Prompt: strings.TrimSpace(args.Instructions) + "\n",
		Tools: tools, Model: strings.TrimSpace(args.Model), Visibility: cadre.VisibilityUserFacing, Scope: "generated",
	}
	if s.creating == nil {
		s.creating = map[string]cadre.Definition{}
	}
	s.creating[call] = def
	return []Action{CreateAgent{Ref: call, Definition: def}}
}

// creatableTools are the tools a created agent may be given: the creator's
// own (see Config.CreatableTools).
func (s *State) creatableTools() []string { return s.cfg.CreatableTools() }

func (s *State) agentCreated(in AgentCreated) []Action {
	def, ok := s.creating[in.Ref]
	if !ok {
		return nil
	}
	delete(s.creating, in.Ref)
	if in.Err != "" {
		return s.fillCall(in.Ref, "Error: agent "+def.Name+" was not created: "+in.Err, true)
	}
	s.cfg.Catalog = append(s.cfg.Catalog, CatalogEntry{Name: def.Name})
	s.catalogChanged()
	where := ""
	if in.File != "" {
		where = " and written to " + in.File
	}
	return append([]Action{Emit{Event: cadre.AgentCreated{Name: def.Name, File: in.File}}},
		s.fillCall(in.Ref, fmt.Sprintf("Created agent %s%s. Run it with agent_call(agent=%q, input=…).", def.Name, where, def.Name), false)...)
}
