package anthropic_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model/anthropic"
)

func Example() {
	// A stand-in for the Messages API, answering with one tool call.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","usage":{"input_tokens":30,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"read_file","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"path\": "}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"notes.md\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":18}}

event: message_stop
data: {"type":"message_stop"}

`)
	}))
	defer srv.Close()

	p := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: "sk-ant-example", Model: "claude-sonnet-4-5"})
	resp, err := cadre.Collect(p.Stream(context.Background(), &cadre.Request{
		Messages: []cadre.Message{{Role: cadre.RoleUser, Content: "What do my notes say?"}},
		Tools:    []cadre.ToolSpec{{Name: "read_file", Description: "Read a file."}},
	}), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, tc := range resp.Message.ToolCalls {
		fmt.Println(tc.ID, tc.Name, tc.Arguments)
	}
	fmt.Println(resp.Usage.InputTokens, resp.Usage.OutputTokens, resp.StopReason)
	// Output:
	// toolu_1 read_file {"path": "notes.md"}
	// 30 18 tool_use
}
