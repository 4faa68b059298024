package cadre

import (
	"context"
	"errors"
	"fmt"
	"iter"
)

// A Request is one call to a model.
type Request struct {
	// Agent names the agent making the call. Providers ignore it; the
	// scripted model uses it to pick the reply.
	Agent AgentID `json:"agent,omitempty"`
	// Turn is the 1-based number of this model call for the agent.
	Turn     int       `json:"turn,omitempty"`
	System   string    `json:"system,omitempty"`
	Messages []Message `json:"messages"`
	// Tools offered to the model. Empty means the model may not call tools.
	Tools       []ToolSpec `json:"tools,omitempty"`
	MaxTokens   int        `json:"max_tokens,omitempty"`
	Temperature *float64   `json:"temperature,omitempty"`
}

// A Response is a model's complete reply.
type Response struct {
	// Message is the assistant message: text, tool calls or both.
	Message Message `json:"message"`
	Usage   Usage   `json:"usage"`
	// StopReason is the provider's reason for ending the reply, as it gave it.
	StopReason string `json:"stop_reason,omitempty"`
	// Model is the model that answered, as the server named it: often the
	// name asked for with a version or date appended, or, behind a router
	// or proxy, another model altogether. Empty when the server did not say.
	Model string `json:"model,omitempty"`
}

// A Chunk is one piece of a streamed reply. Every stream that succeeds ends
// with exactly one chunk whose Response is set; the chunks before it carry
// text as it arrives, or say that the reply starts again.
type Chunk struct {
	Text     string
	Response *Response
	// Restart says that the text streamed so far is void: the reply broke
	// off and is being asked for again, and the text that follows is the
	// new reply from its beginning. A chunk with Restart carries nothing
	// else. The final Response holds only the reply that completed.
	Restart bool
}

// Model is a language model that can be asked for a reply.
//
// Stream returns the reply as it is generated. Implementations must be safe
// for concurrent use: the engine calls one Model from many agents at once.
// A stream that ends without a final Response is an error; providers report
// a connection cut mid-reply as an error or, when they ask again, as a
// chunk with Restart set before the new reply's text; never as a short
// reply.
type Model interface {
	Stream(ctx context.Context, req *Request) iter.Seq2[*Chunk, error]
}

// ErrIncompleteStream is returned when a stream ends before the reply does.
var ErrIncompleteStream = errors.New("cadre: model stream ended before the reply was complete")

// Collect reads a stream to its end and returns the final Response. onText,
// when not nil, is called with each piece of text as it arrives, the text
// of a reply that broke off and was asked for again included: a caller
// that shows the text uses [CollectFunc] to learn of restarts.
func Collect(seq iter.Seq2[*Chunk, error], onText func(string)) (*Response, error) {
	if onText == nil {
		return CollectFunc(seq, nil)
	}
	return CollectFunc(seq, func(c *Chunk) {
		if c.Text != "" {
			onText(c.Text)
		}
	})
}

// CollectFunc reads a stream to its end and returns the final Response.
// each, when not nil, is called with every chunk that carries text, as it
// arrives, and with every chunk with Restart set, after which the text
// starts again.
func CollectFunc(seq iter.Seq2[*Chunk, error], each func(*Chunk)) (*Response, error) {
	var final *Response
	for c, err := range seq {
		if err != nil {
			return nil, err
		}
		if c == nil {
			continue
		}
		if each != nil && (c.Text != "" || c.Restart) {
			each(c)
		}
		if c.Response != nil {
			final = c.Response
		}
	}
	if final == nil {
		return nil, ErrIncompleteStream
	}
	return final, nil
}

// A ModelError is a failure reported by a model server.
type ModelError struct {
	Provider string // "openai", "anthropic", …
	Status   int    // HTTP status, 0 when there was no response
	// Hint tells a person what to check, for example which key variable.
	Hint string
	Err  error
}

func (e *ModelError) Error() string {
	msg := e.Provider
	if e.Status != 0 {
		msg += fmt.Sprintf(": HTTP %d", e.Status)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

func (e *ModelError) Unwrap() error { return e.Err }
