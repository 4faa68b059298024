package loop

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/schema"
)

// checkSchema checks a report against the agent's output schema. It
// returns the report with a surrounding Markdown code fence removed, and an
// error saying what does not match.
func (s *State) checkSchema(text string) (string, error) {
	if len(s.cfg.OutputSchema) == 0 {
		return text, nil
	}
	body := unfence(text)
	if !json.Valid([]byte(body)) {
		return text, fmt.Errorf("the report is not JSON")
	}
	if err := schema.Validate(s.cfg.OutputSchema, json.RawMessage(body)); err != nil {
		return body, err
	}
	return body, nil
}

// unfence removes one Markdown code fence around text, if there is one.
func unfence(text string) string {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return t
	}
	t = strings.TrimSuffix(t[3:], "```")
	if nl := strings.IndexByte(t, '\n'); nl >= 0 && !strings.ContainsAny(t[:nl], "{[\"") {
		t = t[nl+1:] // the fence's language tag
	}
	return strings.TrimSpace(t)
}

// schemaRetryText asks the agent to send its report again.
func schemaRetryText(err error, how string) string {
	verb := "Reply again with only the JSON"
	if strings.Contains(how, "send_agent_message") {
		verb = "Send it again with send_agent_message, as JSON only"
	}
	return fmt.Sprintf("Your report does not match the output schema your parent expects: %v. %s, matching the schema.", err, verb)
}

func warning(msg string) Emit {
	return Emit{Event: cadre.Warning{Message: msg}}
}

// schemaDelivered warns that a report that does not match the output
// schema was delivered anyway, after the one retry.
func schemaDelivered(err error) Emit {
	return warning("the report still does not match the output schema and is delivered as it is: " + err.Error())
}
