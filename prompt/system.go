package prompt

import (
	"strings"

	"github.com/cadre-ai/cadre"
)

// ChildHeader starts the section cadre appends to a definition's prompt in
// Child.
const ChildHeader = "## Working in cadre"

// rootBase opens the root agent's system prompt.
const rootBase = `You are an agent working in a workspace with tools. Work on the user's task until it is done or you are truly blocked:
- Look before you act: read the relevant files and check facts with your tools instead of guessing.
- Make the smallest change that does the job, and check that it works when you can.
- Ask the user only when you cannot find the answer yourself and a wrong guess would waste the work.
- When you finish, reply with the result: what you did, what you found, and what is still open. Be concise.`

// rootBaseText opens the root agent's system prompt on the text protocol,
// where no tool is offered to the model.
const rootBaseText = `You are an agent working on the user's task. You cannot call tools: you cannot read files, run commands or fetch pages yourself. Work on the task until it is done or you are truly blocked:
- Work from what the user gave you and what you know; where you cannot check a fact, say so instead of guessing.
- When you finish, reply with the result: what you did, what you found, and what is still open. Be concise.`

// Sentences of the <sub_agent_instructions> section of SubAgent.
const (
	subAgentFocus  = "You are executing a focused sub-task."
	subAgentDirect = "Respond with your result directly."
	subAgentStay   = "Be thorough but stay focused on the task."
	subAgentReply  = "Your final reply is sent to your parent agent as it is; the parent sees nothing else of your work."
)

// SubAgentParams are the inputs of SubAgent.
type SubAgentParams struct {
	Soul, Identity string
	// Task is the sub-task, repeated in the <task> section.
	Task string
	// Depth is the subagent's depth (the root is 0); MaxDepth the deepest
	// level any agent may run at.
	Depth, MaxDepth int
	// Defs are the definitions the subagent may name in a spawn block.
	Defs []*cadre.Definition
	// Report says how the subagent hands over its result. Empty, the
	// default, means its final reply is its result, as for every child
	// using the text protocol; ReportTool and ReportTag ask for
	// send_agent_message or a <response> block as in Child.
	Report cadre.ReportMode
}

// SubAgent is the system prompt of a subagent started without a definition,
// typically from a <spawn_agents> block: <soul> and <identity> sections when
// given (the subagent stays in character), the <task> (trimmed), the
// <sub_agent_instructions> section, and the <agent_capabilities> section
// while Depth < MaxDepth. There is no user context or memory: a subagent
// starts fresh.
//
// With the default report mode the instructions read
//
//	You are executing a focused sub-task. Respond with your result directly. Be thorough but stay focused on the task.
//	Your final reply is sent to your parent agent as it is; the parent sees nothing else of your work.
//
// With ReportTool or ReportTag, "Respond with your result directly." gives
// way to a second line asking for send_agent_message or a <response> block,
// as in Child.
func SubAgent(p SubAgentParams) string {
	var instructions string
	switch p.Report {
	case cadre.ReportTool:
		instructions = subAgentFocus + " " + subAgentStay + "\n" + reportTool
	case cadre.ReportTag:
		instructions = subAgentFocus + " " + subAgentStay + "\n" + reportTag
	default:
		instructions = subAgentFocus + " " + subAgentDirect + " " + subAgentStay + "\n" + subAgentReply
	}
	return join(
		wrap("soul", p.Soul),
		wrap("identity", p.Identity),
		wrap("task", p.Task),
		"<sub_agent_instructions>\n"+instructions+"\n</sub_agent_instructions>",
		Capabilities(p.Defs, p.Depth, p.MaxDepth),
	)
}

// RootParams are the inputs of Root.
type RootParams struct {
	Soul, Identity string
	// Guidance is the project's guidance text (AGENTS.md), verbatim but
	// trimmed.
	Guidance string
	// Defs is the agent catalogue; only user-facing definitions are shown.
	Defs []*cadre.Definition
	// Protocol selects how delegation is described: ProtocolText gives the
	// <spawn_agents> section, anything else (tools, auto, empty) the
	// spawn_agent catalogue. Resolve ProtocolAuto first when the model's
	// abilities are known.
	Protocol cadre.Protocol
	// CanDelegate adds the delegation section.
	CanDelegate bool
	// Depth and MaxDepth are as in Capabilities.
	Depth, MaxDepth int
}

// Root is the root agent's system prompt: cadre's base instruction (for
// the text protocol one that does not promise tools, since none are
// offered), the <soul> and <identity> sections when given, the project
// guidance in a <project_guidance> section when given, then, when the agent
// may delegate, Discovery(Defs) for tool delegation or Capabilities for the
// text protocol.
func Root(p RootParams) string {
	base := rootBase
	if p.Protocol == cadre.ProtocolText {
		base = rootBaseText
	}
	return join(
		base,
		wrap("soul", p.Soul),
		wrap("identity", p.Identity),
		wrap("project_guidance", p.Guidance),
		delegation(p.CanDelegate, p.Protocol, p.Defs, p.Depth, p.MaxDepth),
	)
}

// ChildParams are the inputs of Child.
type ChildParams struct {
	// Def is the child's definition; its Prompt opens the system prompt
	// verbatim and its Report mode selects the report instructions.
	Def            *cadre.Definition
	Soul, Identity string
	// Defs is the catalogue the child may delegate to.
	Defs        []*cadre.Definition
	CanDelegate bool
	Protocol    cadre.Protocol
	// Depth is the child's depth; at 0 (a definition running as the root
	// agent) there is no parent and no report section.
	Depth, MaxDepth int
	// AskCaller mentions the ask_caller tool.
	AskCaller bool
	// Report, when set, overrides Def.Report: pass the mode the agent's
	// loop really uses (a run-wide default may apply when the definition
	// names none). Empty with an empty Def.Report means ReportTool.
	Report cadre.ReportMode
}

const (
	childIntro = "You were started by a parent agent, which gave you your task. " +
		"You do not see the parent's conversation: what it sent you is all you know about the task."

	reportTool = "When you are done, call send_agent_message exactly once with your full result. " +
		"No agentId is needed — it defaults to your parent. " +
		"Put everything the parent needs in that message: it sees nothing else of your work. " +
		"Do not use it for progress updates; after sending, end your turn."

	reportTag = "When you are done, wrap your final answer in <response>...</response>. " +
		"The text between the first <response> and the last </response> is sent to your parent unmodified, only trimmed; " +
		"no escaping is needed. Put your full result inside: the parent sees nothing else of your work."

	reportReply = "When you are done, reply with your full result: your final reply is sent to your parent as it is, " +
		"and the parent sees nothing else of your work."

	askCaller = "If something essential is unclear and you cannot find it out yourself, call ask_caller with one question; " +
		"the answer comes back as the tool result. Ask only when a wrong guess would waste the work."
)

// Child is the system prompt of an agent run from a definition: the
// definition's prompt verbatim, a blank line (added only as far as the
// prompt does not already end with one), then a section starting with
// ChildHeader that holds the <soul> and <identity> sections when given, how
// to report (send_agent_message once for ReportTool, the default; a
// <response> block for ReportTag; the final reply itself for the text
// protocol, whatever the report mode), ask_caller when AskCaller is set, and, when CanDelegate,
// Discovery(Defs) or, for the text protocol, Capabilities. When that
// section would be empty (a definition running as the root agent, without
// soul, identity or delegation) the prompt is returned alone, unchanged. A
// nil Def is treated as an empty one.
func Child(p ChildParams) string {
	def := p.Def
	if def == nil {
		def = &cadre.Definition{}
	}
	mode := p.Report
	if mode == "" {
		mode = def.Report
	}
	var report string
	if p.Depth > 0 {
		switch {
		case p.Protocol == cadre.ProtocolText:
			report = reportReply
		case mode == cadre.ReportTag:
			report = reportTag
		default:
			report = reportTool
		}
		report = childIntro + "\n\n" + report
	}
	var ask string
	if p.AskCaller {
		ask = askCaller
	}
	body := join(
		wrap("soul", p.Soul),
		wrap("identity", p.Identity),
		report,
		ask,
		delegation(p.CanDelegate, p.Protocol, p.Defs, p.Depth, p.MaxDepth),
	)
	prompt := def.Prompt
	if body == "" {
		return prompt
	}
	switch {
	case prompt == "", strings.HasSuffix(prompt, "\n\n"):
	case strings.HasSuffix(prompt, "\n"):
		prompt += "\n"
	default:
		prompt += "\n\n"
	}
	return prompt + ChildHeader + "\n\n" + body
}

// delegation is the delegation section of Root and Child.
func delegation(can bool, protocol cadre.Protocol, defs []*cadre.Definition, depth, maxDepth int) string {
	switch {
	case !can:
		return ""
	case protocol == cadre.ProtocolText:
		return Capabilities(defs, depth, maxDepth)
	}
	return Discovery(defs)
}

// wrap returns text trimmed inside <tag>…</tag> lines, or "" when blank.
func wrap(tag, text string) string {
	text = strings.TrimSpace(text)
	if text == "" {
		return ""
	}
	return "<" + tag + ">\n" + text + "\n</" + tag + ">"
}

// join joins the non-empty sections with blank lines.
func join(sections ...string) string {
	var b strings.Builder
	for _, s := range sections {
		if s == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(s)
	}
	return b.String()
}
