package anthropic_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model"
	"github.com/cadre-ai/cadre/model/anthropic"
	"github.com/cadre-ai/cadre/model/modeltest"
)

// FuzzStream serves arbitrary bytes as a streamed Messages API reply. The
// provider must end in a reply or an error, never a panic, and a reply it
// accepts has named tool calls whose arguments are JSON.
func FuzzStream(f *testing.F) {
	f.Add([]byte(`event: message_start
data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"m","usage":{"input_tokens":10,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hello"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"read_file","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\":"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"a\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":7}}

event: message_stop
data: {"type":"message_stop"}

`))
	// A tool call without a name.
	f.Add([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"\",\"input\":{}}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":1}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	f.Add([]byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}\n\n"))
	f.Add([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{oops\n\n"))

	// The bytes come from memory rather than a server: a server's
	// goroutines make coverage differ from one run of an input to the
	// next, and the fuzzer then spends its time minimizing inputs that
	// found nothing (a handful of inputs in a whole run).
	var body atomic.Pointer[[]byte]
	p := anthropic.New(anthropic.Config{BaseURL: "http://anthropic.test", Model: "m",
		HTTPClient: modeltest.StreamClient(func() []byte { return *body.Load() }), Retry: model.RetryPolicy{MaxAttempts: 1}})

	f.Fuzz(func(t *testing.T, data []byte) {
		body.Store(&data)
		resp, err := cadre.Collect(p.Stream(context.Background(), &cadre.Request{
			Messages: []cadre.Message{{Role: cadre.RoleUser, Content: "hi"}},
		}), nil)
		if err != nil {
			return
		}
		if resp == nil {
			t.Fatal("no error and no reply")
		}
		for _, tc := range resp.Message.ToolCalls {
			if tc.Name == "" {
				t.Errorf("accepted a tool call without a name: %+v", tc)
			}
		}
	})
}
