package model_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model"
)

func ExampleParseName() {
	p, m, _ := model.ParseName("ollama:llama3.2:3b")
	fmt.Println(p, m)
	_, _, err := model.ParseName("gpt-4o")
	fmt.Println(err)
	// Output:
	// ollama llama3.2:3b
	// model "gpt-4o" has no provider prefix: write it as provider:model, for example openai:gpt-4o (known providers: openai, ollama, anthropic, scripted)
}

func ExampleRetryAfter() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, v := range []string{"7", now.Add(90 * time.Second).Format(http.TimeFormat), "soon"} {
		d, ok := model.RetryAfter(http.Header{"Retry-After": {v}}, now)
		fmt.Println(d, ok)
	}
	// Output:
	// 7s true
	// 1m30s true
	// 0s false
}

// A provider's Attempt makes one try; Stream retries it. Here the first
// try meets a 503, the second succeeds.
func ExampleStream() {
	tries := 0
	call := model.Call{
		Provider: "example",
		Policy: model.RetryPolicy{
			MaxAttempts: 3,
			Sleep: func(ctx context.Context, d time.Duration) error {
				fmt.Println("waiting", d)
				return nil
			},
			Rand: func() float64 { return 0.5 },
		},
		Attempt: func(ctx context.Context, t *model.Try) (*cadre.Response, error) {
			tries++
			if tries == 1 {
				return nil, &model.ServerError{Status: 503, Message: "busy", Header: http.Header{}}
			}
			t.Emit("Hello")
			return &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: "Hello"}, StopReason: "stop"}, nil
		},
	}
	resp, err := cadre.Collect(model.Stream(context.Background(), call), func(s string) { fmt.Println("text:", s) })
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Message.Content, "after", tries, "tries")
	// Output:
	// waiting 250ms
	// text: Hello
	// Hello after 2 tries
}
