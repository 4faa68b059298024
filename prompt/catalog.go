package prompt

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cadre-ai/cadre"
)

// DiscoveryHeader is the first line of the Discovery block.
const DiscoveryHeader = "[available-subagents — use spawn_agent to delegate]"

// userFacing returns the non-nil user-facing definitions sorted by name
// (ties keep their order).
func userFacing(defs []*cadre.Definition) []*cadre.Definition {
	var out []*cadre.Definition
	for _, d := range defs {
		if d != nil && d.UserFacing() {
			out = append(out, d)
		}
	}
	slices.SortStableFunc(out, func(a, b *cadre.Definition) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Discovery is the catalogue an agent that delegates with tool calls sees:
// the DiscoveryHeader line, then per user-facing definition (sorted by name)
// a "## name" heading, its full description, its tools (comma-separated, or
// "inherits the caller's tools" when the list is nil, "none" when it is
// empty) and its timeout in seconds, then a "## How to delegate" section
// with a spawn_agent example that uses the context argument. It returns ""
// when no definition is user-facing.
func Discovery(defs []*cadre.Definition) string {
	list := userFacing(defs)
	if len(list) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(DiscoveryHeader)
	b.WriteString("\n\n")
	for _, d := range list {
		fmt.Fprintf(&b, "## %s\n", d.Name)
		if desc := strings.TrimSpace(d.Description); desc != "" {
			b.WriteString(desc)
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "Tools: %s\n", toolList(d.Tools))
		fmt.Fprintf(&b, "Timeout: %ds\n\n", int64(d.TimeoutOrDefault()/time.Second))
	}
	fmt.Fprintf(&b, `## How to delegate
Call spawn_agent(agent: "<name>", task: "<specific task>", context: "<optional background>").

- agent: one of the names above.
- task: what the subagent must do, concrete and bounded. The subagent starts fresh: it does not see this conversation.
- context: optional background for this call only (the workspace, the user's broader goal, facts you already found) that the subagent would otherwise have to rediscover. Do not repeat the agent's own instructions.
- The subagent works on its own and its report comes back as the tool result: a summary, not a transcript, so large files and pages it reads stay out of your context.
- Several spawn_agent calls in one reply run at the same time; use that for independent tasks.
- A subagent that has reported keeps what it learned. To give it follow-up work, call send_agent_message(agentId: "<its id>", text: "<the new task>"): it wakes with its history and its new report reaches you as a message. list_agents shows the ids of your subagents.

Example:
spawn_agent(agent: %q, task: "Find where request timeouts are configured and list each setting with its file and line", context: "The user is moving the service from 30s to 10s timeouts and wants to know what else must change.")`, list[0].Name)
	return b.String()
}

func toolList(tools []string) string {
	switch {
	case tools == nil:
		return "inherits the caller's tools"
	case len(tools) == 0:
		return "none"
	}
	return strings.Join(tools, ", ")
}

// Capabilities is the <agent_capabilities> section that teaches an agent
// the <spawn_agents> text protocol: a parallel and a sequential example;
// the name="…" attribute with the user-facing definitions it may name (one
// line each, left out when there are none); the context="…" attribute with
// an example; quoting rules; and guidelines that say when to spawn, that
// only the first block of a reply runs, that results come back for
// synthesis, and the depth limit with the agent's own level. depth is the
// agent's own depth (the root is 0) and maxDepth the deepest level a
// subagent may run at. It returns "" when depth >= maxDepth: the agent may
// not spawn.
func Capabilities(defs []*cadre.Definition, depth, maxDepth int) string {
	if depth >= maxDepth {
		return ""
	}
	var b strings.Builder
	b.WriteString(`<agent_capabilities>
You can decompose complex tasks by spawning sub-agents. To do this, include a spawn block in your response:

For parallel execution (tasks run simultaneously):
<spawn_agents mode="parallel">
  <agent task="Description of sub-task 1" />
  <agent task="Description of sub-task 2" />
</spawn_agents>

For sequential execution (each task sees the previous result):
<spawn_agents mode="sequential">
  <agent task="First step description" />
  <agent task="Second step description" />
</spawn_agents>

Optional attributes of <agent>:
`)
	// Agents that must be onboarded first cannot be started by a block.
	var list []*cadre.Definition
	for _, d := range userFacing(defs) {
		if d.Onboarding != cadre.OnboardingRequired {
			list = append(list, d)
		}
	}
	if len(list) > 0 {
		b.WriteString(`- name="…" runs one of these subagents, with its own instructions, instead of a general sub-agent:` + "\n")
		for _, d := range list {
			if line := firstLine(d.Description); line != "" {
				fmt.Fprintf(&b, "  - %s: %s\n", d.Name, line)
			} else {
				fmt.Fprintf(&b, "  - %s\n", d.Name)
			}
		}
	}
	b.WriteString(`- context="…" gives background for that task only (the workspace, the user's goal, facts you already know); the sub-agent reads it before its task.` + "\n")
	name := ""
	if len(list) > 0 {
		name = fmt.Sprintf(`name=%q `, list[0].Name)
	}
	fmt.Fprintf(&b, `For example: <agent %stask="Find where request timeouts are configured" context="The user wants to move from 30s to 10s timeouts." />
Attribute values may use double or single quotes. Inside a value write \" or &quot; for a double quote, \' or &apos; for a single quote, and &amp; for &.

Guidelines:
- Only spawn sub-agents when the task genuinely benefits from decomposition
- Each task description should be specific and self-contained
- Sub-agents do not see this conversation: put what a task needs in its task and context
- Sub-agents inherit your personality and respond in character
- You may include text before the spawn block to explain your approach
- Only the first spawn block of a response is used; write nothing after it
- After sub-agents complete, you will receive their results and should synthesize a cohesive response
- Sub-agents can spawn their own sub-agents up to %d levels deep; you are at level %d
</agent_capabilities>`, name, maxDepth, depth)
	return b.String()
}

// firstLine returns the first non-blank line of s, trimmed.
func firstLine(s string) string {
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}
