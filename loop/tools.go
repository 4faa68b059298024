package loop

import (
	"encoding/json"

	"github.com/cadre-ai/cadre"
)

// Names of the subagent tools the loop handles itself.
const (
	ToolSpawnAgent       = "spawn_agent"
	ToolStartBackground  = "start_background_agent"
	ToolSendAgentMessage = "send_agent_message"
	ToolListAgents       = "list_agents"
	ToolCancelAgent      = "cancel_agent"
)

// DefaultBackgroundAgent is the definition start_background_agent uses when
// the model names none: a general-purpose child with its parent's tools.
const DefaultBackgroundAgent = "general-purpose"

// delegationTools may only be used below the depth limit.
var delegationTools = map[string]bool{
	ToolSpawnAgent:      true,
	ToolStartBackground: true,
}

// IsSubagentTool reports whether the loop handles the named tool itself.
func IsSubagentTool(name string) bool {
	switch name {
	case ToolSpawnAgent, ToolStartBackground, ToolSendAgentMessage, ToolListAgents, ToolCancelAgent:
		return true
	}
	return false
}

func schema(s string) json.RawMessage { return json.RawMessage(s) }

// SubagentToolSpecs returns the specs of the subagent tools, in a stable
// order. With delegate false, only the messaging tools are returned.
func SubagentToolSpecs(delegate bool) []cadre.ToolSpec {
	var specs []cadre.ToolSpec
	if delegate {
		specs = append(specs,
			cadre.ToolSpec{
				Name: ToolSpawnAgent,
				Description: "Delegate a task to a subagent and wait for its report, which comes back as this tool's result. " +
					"Several spawn_agent calls in one reply run concurrently. Use `context` for facts the subagent needs " +
					"(workspace details, the user's broader goal) so it does not have to rediscover them.",
				Parameters: schema(`{"type":"object","properties":{` +
					`"agent":{"type":"string","description":"Name of the subagent definition to run."},` +
					`"task":{"type":"string","description":"What the subagent must do, self-contained."},` +
					`"context":{"type":"string","description":"Optional background for this call, placed before the task."}},` +
					`"required":["agent","task"]}`),
			},
			cadre.ToolSpec{
				Name: ToolStartBackground,
				Description: "Start a subagent in the background and continue at once. Its report arrives later as a " +
					"<system_message> from its agent id. Returns the new agent's id.",
				Parameters: schema(`{"type":"object","properties":{` +
					`"prompt":{"type":"string","description":"The task for the background agent."},` +
					`"name":{"type":"string","description":"Optional short name to recognise it by."},` +
					`"agent":{"type":"string","description":"Optional subagent definition; default general-purpose."}},` +
					`"required":["prompt"]}`),
			},
		)
	}
	specs = append(specs,
		cadre.ToolSpec{
			Name: ToolSendAgentMessage,
			Description: "Send a message to another agent. Without agentId it goes to your parent agent: " +
				"that is how a subagent delivers its results. steering=true interrupts the receiver's current turn.",
			Parameters: schema(`{"type":"object","properties":{` +
				`"text":{"type":"string","description":"The message."},` +
				`"agentId":{"type":"string","description":"Receiver's agent id; defaults to your parent."},` +
				`"steering":{"type":"boolean","description":"Interrupt the receiver's current turn."}},` +
				`"required":["text"]}`),
		},
	)
	if delegate {
		specs = append(specs,
			cadre.ToolSpec{
				Name:        ToolListAgents,
				Description: "List the subagents you started, with their ids, definitions, statuses and tasks.",
				Parameters:  schema(`{"type":"object","properties":{}}`),
			},
			cadre.ToolSpec{
				Name:        ToolCancelAgent,
				Description: "Cancel one of your subagents and everything it started.",
				Parameters: schema(`{"type":"object","properties":{` +
					`"agentId":{"type":"string","description":"Id of your subagent to cancel."}},` +
					`"required":["agentId"]}`),
			},
		)
	}
	return specs
}
