package model_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model"
)

func TestRetryTrace(t *testing.T) {
	tries := 0
	c := model.Call{
		Provider: "fake",
		Policy:   model.RetryPolicy{MaxAttempts: 3, Sleep: func(context.Context, time.Duration) error { return nil }},
		Attempt: func(ctx context.Context, _ *model.Try) (*cadre.Response, error) {
			tries++
			if tries < 3 {
				return nil, &model.ServerError{Status: 503, Header: http.Header{}}
			}
			return &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: "ok"}}, nil
		},
	}
	var got []int
	ctx := model.WithRetryTrace(context.Background(), &model.RetryTrace{Retry: func(provider string, attempt int, _ time.Duration, err error) {
		if provider != "fake" || err == nil {
			t.Errorf("retry of %q with error %v", provider, err)
		}
		got = append(got, attempt)
	}})
	if _, err := cadre.Collect(model.Stream(ctx, c), nil); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("the trace heard of retries after attempts %v, want [1 2]", got)
	}
	if model.ContextRetryTrace(context.Background()) != nil {
		t.Error("a context without a RetryTrace returned one")
	}
}
