package model

import "github.com/cadre-ai/cadre"

// EstimateUsage guesses the tokens of a call that reply answered: a quarter
// of the bytes of the request (system prompt, messages, tool descriptions)
// and of the reply, at least one token each way. Providers fall back on it
// when a server reports no usage, as some OpenAI-compatible servers do, so
// that token budgets still count the call; the scripted model uses it for
// replies whose script gives no usage.
func EstimateUsage(req *cadre.Request, reply *cadre.Message) cadre.Usage {
	in := 0
	if req != nil {
		in = len(req.System)
		for i := range req.Messages {
			in += messageBytes(&req.Messages[i])
		}
		for _, t := range req.Tools {
			in += len(t.Name) + len(t.Description) + len(t.Parameters)
		}
	}
	out := 0
	if reply != nil {
		out = messageBytes(reply)
	}
	return cadre.Usage{InputTokens: int64(max(in/4, 1)), OutputTokens: int64(max(out/4, 1))}
}

func messageBytes(m *cadre.Message) int {
	n := len(m.Content)
	for _, tc := range m.ToolCalls {
		n += len(tc.Name) + len(tc.Arguments)
	}
	return n
}
