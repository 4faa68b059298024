package openai_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model/openai"
)

func Example() {
	// A stand-in for an OpenAI-compatible server, such as Ollama.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"}}]}

data: {"choices":[{"index":0,"delta":{"content":", world."}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":4,"total_tokens":16}}

data: [DONE]

`)
	}))
	defer srv.Close()

	p := openai.New(openai.Config{Provider: "ollama", BaseURL: srv.URL + "/v1", Model: "llama3.2"})
	req := &cadre.Request{
		System:   "Be brief.",
		Messages: []cadre.Message{{Role: cadre.RoleUser, Content: "Say hello."}},
	}
	resp, err := cadre.Collect(p.Stream(context.Background(), req), func(text string) {
		fmt.Printf("chunk %q\n", text)
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Message.Content, resp.Usage.InputTokens, resp.Usage.OutputTokens, resp.StopReason)
	// Output:
	// chunk "Hello"
	// chunk ", world."
	// Hello, world. 12 4 stop
}
