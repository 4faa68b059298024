package cadre

import "encoding/json"

// Role says who wrote a Message.
type Role string

// The roles of a conversation.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// A Message is one entry of an agent's conversation. The system prompt is
// not a Message: it travels in Request.System.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID and ToolName identify the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	// IsError marks a tool result that reports a failure.
	IsError bool `json:"is_error,omitempty"`
	// Media are the images and sounds of a tool result (see MediaTool).
	// Content describes each of them, so a provider whose model cannot
	// take one leaves it out and adds its Media.LeftOut line.
	Media []Media `json:"media,omitempty"`
}

// A ToolCall is a model's request to run one tool. Arguments is the text the
// model produced; it is not guaranteed to be valid JSON.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolSpec describes a tool to a model.
type ToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Parameters is a JSON Schema object describing the arguments.
	Parameters json.RawMessage `json:"parameters"`
}

// Usage counts the tokens of one model call, or of many added together.
type Usage struct {
	// InputTokens counts every token of the prompt, those read from the
	// provider's cache included.
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// CachedInputTokens is the part of InputTokens the provider read from
	// its prompt cache, when it says (OpenAI's cached tokens, Anthropic's
	// cache reads); zero when it does not.
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
}

// Total is the number of input and output tokens.
func (u Usage) Total() int64 { return u.InputTokens + u.OutputTokens }

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens,
		CachedInputTokens: u.CachedInputTokens + v.CachedInputTokens}
}
