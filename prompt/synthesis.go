package prompt

import (
	"strings"

	"github.com/cadre-ai/cadre/tagproto"
)

// Result statuses used by Synthesis.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// A Result is the outcome of one task of a <spawn_agents> block.
type Result struct {
	Task string
	// Status is StatusCompleted, StatusFailed or StatusCancelled; empty
	// counts as StatusCompleted.
	Status string
	// Output is the subagent's report, or the error when it did not
	// complete.
	Output string
}

// Synthesis is the user message that hands an agent the results of its
// <spawn_agents> block and asks it to answer the original request:
//
//	<sub_agent_results>
//	<result task="TASK" status="STATUS">
//	OUTPUT
//	</result>
//	…
//	</sub_agent_results>
//
//	The original request:
//	<original_request>
//	REQUEST
//	</original_request>
//
//	…instruction to synthesize…
//
// Results appear in the given order, one per task. Task and status are
// XML-escaped; outputs are trimmed and otherwise kept as written. The
// output of a result that did not complete (any status but
// StatusCompleted) starts with "Error: " (added when missing); an empty
// output reads "(no output)" whatever the status. The request, trimmed, is
// the user's original request; its section is left out when it is blank.
func Synthesis(request string, results []Result) string {
	var b strings.Builder
	b.WriteString("<sub_agent_results>\n")
	for _, r := range results {
		status := r.Status
		if status == "" {
			status = StatusCompleted
		}
		out := strings.TrimSpace(r.Output)
		switch {
		case out == "":
			out = "(no output)"
		case status != StatusCompleted && !strings.HasPrefix(out, "Error:"):
			out = "Error: " + out
		}
		b.WriteString(`<result task="`)
		b.WriteString(tagproto.EscapeXML(r.Task))
		b.WriteString(`" status="`)
		b.WriteString(tagproto.EscapeXML(status))
		b.WriteString("\">\n")
		b.WriteString(out)
		b.WriteString("\n</result>\n")
	}
	b.WriteString("</sub_agent_results>\n\n")
	if req := strings.TrimSpace(request); req != "" {
		b.WriteString("The original request:\n<original_request>\n")
		b.WriteString(req)
		b.WriteString("\n</original_request>\n\n")
	}
	b.WriteString("Based on these sub-agent results, write one coherent response to the original request that integrates all findings. " +
		"Where a sub-agent failed or was cancelled, say what is missing and fill the gap yourself if you can. " +
		"Do not mention the sub-agents unless it helps the reader.")
	return b.String()
}
