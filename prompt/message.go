package prompt

import (
	"strings"

	"github.com/cadre-ai/cadre/tagproto"
)

// Fixed messages of the agent loop.
const (
	// NudgeTool is sent, once, to a child that ends its turn without having
	// sent its report with send_agent_message.
	NudgeTool = "You haven't sent your results to your parent agent yet. Use the send_agent_message tool to deliver your results. No agentId is needed — it defaults to your parent."

	// NudgeTag is sent, once, to a child in tag report mode whose reply has
	// no <response> block.
	NudgeTag = "You must wrap your final answer in <response>...</response> tags. Emit your response now."

	// NoResponseError is the report of a child in tag report mode that
	// produced no <response> block even after NudgeTag.
	NoResponseError = "Error: subagent did not produce a response."

	// FinalAnswerRequest is sent as a user message when an agent has used
	// all its turns: the next reply must be its final answer.
	FinalAnswerRequest = "You have reached the maximum number of turns for this task. Do not call any more tools. " +
		"Reply now with your final answer, based on what you have done and found so far, " +
		"and say plainly what is unfinished or unverified."
)

// previousResultHeader starts the message that hands a sequential step the
// result of the step before it.
const previousResultHeader = "Previous sub-agent result for context:\n"

// UserMessage is a child's first user message: the task alone when context
// is blank, otherwise "Context:\n" + the trimmed context + "\n\nTask:\n" +
// the task. The task is used as given.
func UserMessage(task, context string) string {
	context = strings.TrimSpace(context)
	if context == "" {
		return task
	}
	return "Context:\n" + context + "\n\nTask:\n" + task
}

// SystemMessage wraps a message that reaches an agent from outside its own
// conversation (a child's report, another agent's message, a note from the
// runtime): <system_message origin="ORIGIN">TEXT</system_message>. The
// origin is XML-escaped and the attribute is left out when origin is empty;
// text is trimmed and otherwise kept as it is.
func SystemMessage(origin, text string) string {
	var b strings.Builder
	b.WriteString("<system_message")
	if origin != "" {
		b.WriteString(` origin="`)
		b.WriteString(tagproto.EscapeXML(origin))
		b.WriteByte('"')
	}
	b.WriteByte('>')
	b.WriteString(strings.TrimSpace(text))
	b.WriteString("</system_message>")
	return b.String()
}

// FollowUpMessage wraps a message a child sends after its report, so the
// parent does not take it for the report:
//
//	<system_message origin="ORIGIN" kind="follow-up">Follow-up from ORIGIN, sent after its report (this is not the report):
//	TEXT</system_message>
func FollowUpMessage(origin, text string) string {
	o := tagproto.EscapeXML(origin)
	from := "a subagent"
	if origin != "" {
		from = origin
	}
	var b strings.Builder
	b.WriteString("<system_message")
	if origin != "" {
		b.WriteString(` origin="` + o + `"`)
	}
	b.WriteString(` kind="follow-up">Follow-up from `)
	b.WriteString(from)
	b.WriteString(", sent after its report (this is not the report):\n")
	b.WriteString(strings.TrimSpace(text))
	b.WriteString("</system_message>")
	return b.String()
}

// PreviousResult is the message that gives a sequential step the result of
// the step before it: "Previous sub-agent result for context:\n" + result.
func PreviousResult(result string) string {
	return previousResultHeader + result
}
