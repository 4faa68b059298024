package telemetry

import (
	"encoding/json"

	"github.com/cadre-ai/cadre"
)

// The JSON of gen_ai.input.messages, gen_ai.output.messages and
// gen_ai.system_instructions: messages of parts, as the GenAI conventions
// describe them.

type part struct {
	Type      string `json:"type"`
	Content   string `json:"content,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments any    `json:"arguments,omitempty"`
	Response  string `json:"response,omitempty"`
}

type chatMessage struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

func messageParts(m cadre.Message) chatMessage {
	cm := chatMessage{Role: string(m.Role), Parts: []part{}}
	if m.Role == cadre.RoleTool {
		cm.Parts = append(cm.Parts, part{Type: "tool_call_response", ID: m.ToolCallID, Response: m.Content})
		return cm
	}
	if m.Content != "" {
		cm.Parts = append(cm.Parts, part{Type: "text", Content: m.Content})
	}
	for _, c := range m.ToolCalls {
		var args any = c.Arguments
		if json.Valid([]byte(c.Arguments)) {
			args = json.RawMessage(c.Arguments)
		}
		cm.Parts = append(cm.Parts, part{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: args})
	}
	return cm
}

func messagesJSON(ms []cadre.Message) string {
	out := make([]chatMessage, 0, len(ms))
	for _, m := range ms {
		out = append(out, messageParts(m))
	}
	return marshal(out)
}

func outputJSON(m cadre.Message, finish string) string {
	cm := messageParts(m)
	cm.FinishReason = finish
	return marshal([]chatMessage{cm})
}

func systemJSON(s string) string {
	return marshal([]part{{Type: "text", Content: s}})
}

func marshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}
