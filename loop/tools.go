package loop

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"slices"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/schema"
)

// Names of the subagent tools the loop handles itself.
const (
	ToolSpawnAgent       = "spawn_agent"
	ToolStartBackground  = "start_background_agent"
	ToolSendAgentMessage = "send_agent_message"
	ToolListAgents       = "list_agents"
	ToolCancelAgent      = "cancel_agent"
	ToolWaitAgent        = "wait_agent"
	ToolAnswerAgent      = "answer_agent"
	ToolAskCaller        = "ask_caller"
	ToolOnboard          = "agent_onboard"
	ToolOnboardReply     = "agent_onboard_reply"
	ToolCallAgent        = "call_agent"
	ToolFork             = "agent_fork"
	ToolCreateAgent      = "agent_create"
	ToolAgentCall        = "agent_call"
)

// DefaultBackgroundAgent is the definition start_background_agent uses when
// the model names none: a general-purpose child with its parent's tools.
const DefaultBackgroundAgent = "general-purpose"

// MaxForks is the most handles one agent_fork call may create.
const MaxForks = 50

// delegationTools may only be used below the depth limit.
var delegationTools = map[string]bool{
	ToolSpawnAgent: true, ToolStartBackground: true, ToolOnboard: true, ToolOnboardReply: true,
	ToolCallAgent: true, ToolFork: true, ToolCreateAgent: true, ToolAgentCall: true,
	ToolWaitAgent: true, ToolAnswerAgent: true, ToolListAgents: true, ToolCancelAgent: true,
}

// DelegationTools returns the names of the tools through which an agent
// starts and follows other agents, each granted only as a definition lists
// it (see Config.Delegation). The slice is new on every call.
func DelegationTools() []string {
	return []string{
		ToolSpawnAgent, ToolStartBackground, ToolListAgents, ToolCancelAgent, ToolWaitAgent, ToolAnswerAgent,
		ToolOnboard, ToolOnboardReply, ToolCallAgent, ToolFork, ToolCreateAgent, ToolAgentCall,
	}
}

// StartsAgents reports whether a grant of delegation tools (nil: all)
// holds one that starts an agent.
func StartsAgents(delegation []string) bool {
	return delegation == nil || slices.ContainsFunc(delegation, startsAgent)
}

// RunsTasks reports whether a grant of delegation tools (nil: all) holds
// one that gives an agent a task to run: spawn_agent,
// start_background_agent, call_agent or agent_call. A <spawn_agents> block
// runs tasks, so it needs one of them; agent_onboard alone starts only
// onboarding conversations.
func RunsTasks(delegation []string) bool {
	return delegation == nil || slices.ContainsFunc(delegation, runsTask)
}

func runsTask(name string) bool {
	switch name {
	case ToolSpawnAgent, ToolStartBackground, ToolCallAgent, ToolAgentCall:
		return true
	}
	return false
}

// startsAgent reports whether a call of the tool name may start an agent.
func startsAgent(name string) bool {
	switch name {
	case ToolSpawnAgent, ToolStartBackground, ToolCallAgent, ToolAgentCall, ToolOnboard:
		return true
	}
	return false
}

// IsSubagentTool reports whether the loop handles the named tool itself.
func IsSubagentTool(name string) bool {
	return delegationTools[name] || name == ToolSendAgentMessage || name == ToolAskCaller
}

func jsonSchema(s string) json.RawMessage { return json.RawMessage(s) }

var subagentSpecs = map[string]cadre.ToolSpec{
	ToolSpawnAgent: {
		Name: ToolSpawnAgent,
		Description: "Delegate a task to a subagent and wait for its report, which comes back as this tool's result. " +
			"Several spawn_agent calls in one reply run concurrently. Use `context` for facts the subagent needs " +
			"(workspace details, the user's broader goal) so it does not have to rediscover them.",
		Parameters: jsonSchema(`{"type":"object","properties":{` +
			`"agent":{"type":"string","description":"Name of the subagent definition to run."},` +
			`"task":{"type":"string","description":"What the subagent must do, self-contained."},` +
			`"context":{"type":"string","description":"Optional background for this call, placed before the task."},` +
			`"model":{"type":"string","description":"Optional model for this call, overriding the agent's own."}},` +
			`"required":["agent","task"]}`),
	},
	ToolStartBackground: {
		Name: ToolStartBackground,
		Description: "Start a subagent in the background and continue at once. Its report arrives later as a " +
			"<system_message> from its agent id. Returns the new agent's id.",
		Parameters: jsonSchema(`{"type":"object","properties":{` +
			`"prompt":{"type":"string","description":"The task for the background agent."},` +
			`"name":{"type":"string","description":"Optional short name to recognise it by."},` +
			`"agent":{"type":"string","description":"Optional subagent definition; default general-purpose."},` +
			`"model":{"type":"string","description":"Optional model for this agent, overriding the definition's."}},` +
			`"required":["prompt"]}`),
	},
	ToolSendAgentMessage: {
		Name: ToolSendAgentMessage,
		Description: "Send a message to another agent. Without agentId it goes to your parent agent: " +
			"that is how a subagent delivers its results. steering=true interrupts the current turn of one of your subagents. " +
			"Sent to one of your subagents that has already reported, it wakes that subagent with everything it knew and " +
			"gives it a new task; its new report reaches you once, as a message (or through wait_agent). " +
			"The ids of your subagents are in list_agents.",
		Parameters: jsonSchema(`{"type":"object","properties":{` +
			`"text":{"type":"string","description":"The message."},` +
			`"agentId":{"type":"string","description":"Receiver's agent id; defaults to your parent."},` +
			`"steering":{"type":"boolean","description":"Interrupt the receiver's current turn (only one of your subagents)."}},` +
			`"required":["text"]}`),
	},
	ToolListAgents: {
		Name: ToolListAgents,
		Description: "List the subagents you started, with their ids, definitions, statuses and tasks, and your onboarding handles. " +
			"Use an id with send_agent_message to give a subagent that has finished more work.",
		Parameters: jsonSchema(`{"type":"object","properties":{}}`),
	},
	ToolCancelAgent: {
		Name:        ToolCancelAgent,
		Description: "Cancel one of your subagents and everything it started.",
		Parameters: jsonSchema(`{"type":"object","properties":{` +
			`"agentId":{"type":"string","description":"Id of your subagent to cancel."}},` +
			`"required":["agentId"]}`),
	},
	ToolWaitAgent: {
		Name: ToolWaitAgent,
		Description: "Wait for the report of one of your subagents (a background agent, or one that asked you a question) " +
			"and get it as this tool's result.",
		Parameters: jsonSchema(`{"type":"object","properties":{` +
			`"agentId":{"type":"string","description":"Id of your subagent."}},` +
			`"required":["agentId"]}`),
	},
	ToolAnswerAgent: {
		Name: ToolAnswerAgent,
		Description: "Answer the question one of your subagents asked you. It resumes its work; " +
			"use wait_agent to wait for its report.",
		Parameters: jsonSchema(`{"type":"object","properties":{` +
			`"agentId":{"type":"string","description":"Id of the subagent that asked."},` +
			`"answer":{"type":"string","description":"Your answer."}},` +
			`"required":["agentId","answer"]}`),
	},
	ToolAskCaller: {
		Name: ToolAskCaller,
		Description: "Ask the agent (or person) that gave you your task one question and wait for the answer. " +
			"Ask only what you cannot find out yourself and what changes how you do the work.",
		Parameters: jsonSchema(`{"type":"object","properties":{` +
			`"question":{"type":"string","description":"One clear question."}},` +
			`"required":["question"]}`),
	},
	ToolOnboard: {
		Name: ToolOnboard,
		Description: "Start onboarding a subagent before giving it a task: it reads your context and may ask you questions. " +
			`Returns {"handle","agent","question"} when it asks (answer with agent_onboard_reply) or {"handle","agent","ready":true}. ` +
			"Then run the task with call_agent(handle=…, input=…).",
		Parameters: jsonSchema(`{"type":"object","properties":{` +
			`"agent":{"type":"string","description":"Name of the subagent definition."},` +
			`"context":{"type":"string","description":"What the work is about, so the subagent can ask the right questions."}},` +
			`"required":["agent","context"]}`),
	},
	ToolOnboardReply: {
		Name:        ToolOnboardReply,
		Description: "Answer the pending onboarding question of a handle. Returns the next question or ready, as agent_onboard does.",
		Parameters: jsonSchema(`{"type":"object","properties":{` +
			`"handle":{"type":"string","description":"The handle from agent_onboard."},` +
			`"answer":{"type":"string","description":"Your answer to its question."}},` +
			`"required":["handle","answer"]}`),
	},
	ToolCallAgent: {
		Name: ToolCallAgent,
		Description: "Run a subagent on a task and wait for its report. Give `handle` (from agent_onboard or agent_fork, " +
			"so it starts with the onboarding questions and answers; a handle can be used for several calls) or `agent` " +
			"(a plain call, like spawn_agent).",
		Parameters: jsonSchema(`{"type":"object","properties":{` +
			`"input":{"type":"string","description":"The task."},` +
			`"agent":{"type":"string","description":"Subagent definition, when no handle is given."},` +
			`"handle":{"type":"string","description":"A ready onboarding handle."}},` +
			`"required":["input"]}`),
	},
	ToolFork: {
		Name: ToolFork,
		Description: "Copy a ready onboarding handle into `count` new handles that share its questions and answers, " +
			"so one onboarding serves many similar tasks. Use each with call_agent.",
		Parameters: jsonSchema(`{"type":"object","properties":{` +
			`"handle":{"type":"string","description":"A ready onboarding handle."},` +
			`"count":{"type":"integer","minimum":1,"maximum":50,"description":"How many handles to make."}},` +
			`"required":["handle","count"]}`),
	},
	ToolCreateAgent: {
		Name: ToolCreateAgent,
		Description: "Write a new subagent definition for this run (it needs the user's approval). " +
			"It is saved under .cadre/agents/generated/ for review and reuse; call it with agent_call.",
		Parameters: jsonSchema(`{"type":"object","properties":{` +
			`"name":{"type":"string","description":"Letters, digits, - and _ only; must not be an existing agent's name."},` +
			`"description":{"type":"string","description":"What the agent does and when to use it."},` +
			`"instructions":{"type":"string","description":"Its system prompt."},` +
			`"tools":{"type":"array","items":{"type":"string"},"description":"Tools it may use (a subset of yours); default yours."},` +
			`"model":{"type":"string","description":"Optional model; default yours."}},` +
			`"required":["name","description","instructions"]}`),
	},
	ToolAgentCall: {
		Name:        ToolAgentCall,
		Description: "Run an agent (one you created with agent_create, or any other) on an input and wait for its report.",
		Parameters: jsonSchema(`{"type":"object","properties":{` +
			`"agent":{"type":"string","description":"The agent's name."},` +
			`"input":{"type":"string","description":"The task."}},` +
			`"required":["agent","input"]}`),
	},
}

// subagentSchemas are the parameter schemas of the subagent tools, read
// once; they are never changed.
var subagentSchemas = func() map[string]*schema.Schema {
	m := make(map[string]*schema.Schema, len(subagentSpecs))
	for name, spec := range subagentSpecs {
		sc, err := schema.Compile(spec.Parameters)
		if err != nil {
			panic(fmt.Sprintf("loop: the schema of %s: %v", name, err))
		}
		m[name] = sc
	}
	return m
}()

// subagentOrder is the order in which subagent tools are offered; a
// toolSet has bit i set for subagentOrder[i].
var subagentOrder = [...]string{
	ToolSpawnAgent, ToolStartBackground, ToolSendAgentMessage, ToolListAgents, ToolCancelAgent, ToolWaitAgent,
	ToolAnswerAgent, ToolOnboard, ToolOnboardReply, ToolCallAgent, ToolFork, ToolCreateAgent, ToolAgentCall,
	ToolAskCaller,
}

// orderedSpecs are the specs of the subagent tools in subagentOrder.
var orderedSpecs = func() (out [len(subagentOrder)]cadre.ToolSpec) {
	if len(subagentOrder) != len(subagentSpecs) {
		panic(fmt.Sprintf("loop: %d subagent tools are ordered, %d have specs", len(subagentOrder), len(subagentSpecs)))
	}
	for i, name := range subagentOrder {
		spec, ok := subagentSpecs[name]
		if !ok {
			panic(fmt.Sprintf("loop: the subagent tool %s has no spec", name))
		}
		out[i] = spec
	}
	return out
}()

// sharedSpecs are the tools offered to an agent without ordinary tools,
// for each set of subagent tools such an agent is offered when every
// delegation tool is granted (see Config.subagentTools): built once, never
// changed, and shared by the agents offered the same set.
var sharedSpecs = func() map[toolSet][]cadre.ToolSpec {
	m := map[toolSet][]cadre.ToolSpec{}
	for mask := range 1 << 5 {
		on := func(i int) bool { return mask&(1<<i) != 0 }
		c := Config{Delegate: on(0), AskCaller: on(1), Catalog: []CatalogEntry{{Name: "a", AskCaller: on(2)}}}
		if on(3) {
			c.Parent = "parent"
		}
		if on(4) {
			c.Mode = ModeOnboarding
		}
		ts := c.subagentTools()
		if _, ok := m[ts]; !ok {
			m[ts] = slices.Clip(ts.appendSpecs(make([]cadre.ToolSpec, 0, ts.len())))
		}
	}
	return m
}()

// appendSpecs appends the specs of the tools of ts to specs, in the order
// they are offered.
func (ts toolSet) appendSpecs(specs []cadre.ToolSpec) []cadre.ToolSpec {
	for i := range orderedSpecs {
		if ts&(1<<i) != 0 {
			specs = append(specs, orderedSpecs[i])
		}
	}
	return specs
}

// A toolSet is a set of subagent tools (see subagentOrder).
type toolSet uint32

func toolBit(name string) toolSet {
	for i, t := range subagentOrder {
		if t == name {
			return 1 << i
		}
	}
	return 0
}

func (ts toolSet) has(name string) bool { return ts&toolBit(name) != 0 }

func (ts toolSet) len() int { return bits.OnesCount32(uint32(ts)) }

// subagentTools returns the subagent tools an agent with cfg is offered.
func (c *Config) subagentTools() toolSet {
	if c.onboarding() {
		return toolBit(ToolAskCaller)
	}
	var ts toolSet
	grant := func(t string) {
		if c.Granted(t) {
			ts |= toolBit(t)
		}
	}
	if c.Delegate {
		grant(ToolSpawnAgent)
		grant(ToolStartBackground)
	}
	if c.Delegate || c.isChild() {
		ts |= toolBit(ToolSendAgentMessage)
	}
	if c.Delegate {
		grant(ToolListAgents)
		grant(ToolCancelAgent)
		grant(ToolWaitAgent)
		if c.anyAskCaller() {
			grant(ToolAnswerAgent)
		}
		for _, t := range []string{ToolOnboard, ToolOnboardReply, ToolCallAgent, ToolFork, ToolCreateAgent, ToolAgentCall} {
			grant(t)
		}
	}
	if c.AskCaller {
		ts |= toolBit(ToolAskCaller)
	}
	return ts
}
