package openai_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model"
	"github.com/cadre-ai/cadre/model/modeltest"
	"github.com/cadre-ai/cadre/model/openai"
)

// FuzzStream serves arbitrary bytes as a streamed chat completion. The
// provider must end in a reply or an error, never a panic, and a reply it
// accepts has named tool calls.
func FuzzStream(f *testing.F) {
	f.Add([]byte("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":null}]}\n\n" +
		"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1,\"total_tokens\":4}}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"t1\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"\"}}]}}]}\n\n" +
		"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"path\\\":\"}}]}}]}\n\n" +
		"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"a\\\"}\"}}]}}]}\n\n" +
		"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n"))
	f.Add([]byte("data: {\"choices\": [oops\n\n"))

	// From memory rather than a server (see anthropic's FuzzStream).
	var body atomic.Pointer[[]byte]
	p := openai.New(openai.Config{BaseURL: "http://openai.test/v1", Model: "m",
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
