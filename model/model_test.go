package model_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model"
)

func TestParseName(t *testing.T) {
	tests := []struct {
		in          string
		prov, model string
		errHas      []string
	}{
		{in: "openai:gpt-4o", prov: "openai", model: "gpt-4o"},
		{in: "ollama:llama3.2:3b", prov: "ollama", model: "llama3.2:3b"},
		{in: " anthropic:claude-sonnet-4-5 ", prov: "anthropic", model: "claude-sonnet-4-5"},
		{in: "scripted:testdata/demo.yaml", prov: "scripted", model: "testdata/demo.yaml"},
		{in: "scripted:C:\\scripts\\a.yaml", prov: "scripted", model: "C:\\scripts\\a.yaml"},
		{in: "gpt-4o", errHas: []string{`"gpt-4o" has no provider prefix`, "openai:gpt-4o", "openai, ollama, anthropic, scripted"}},
		{in: "claude-3-haiku", errHas: []string{"anthropic:claude-3-haiku"}},
		{in: "llama3", errHas: []string{"ollama:llama3"}},
		{in: "", errHas: []string{"empty", "openai, ollama, anthropic, scripted"}},
		{in: "gemini:pro", errHas: []string{`unknown provider "gemini"`, "openai, ollama, anthropic, scripted"}},
		{in: "openai:", errHas: []string{"nothing after", "openai:gpt-4o"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			p, m, err := model.ParseName(tt.in)
			if len(tt.errHas) > 0 {
				var ne *model.NameError
				if !errors.As(err, &ne) {
					t.Fatalf("ParseName(%q) = %q, %q, %v; want a *NameError", tt.in, p, m, err)
				}
				for _, s := range tt.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q lacks %q", err, s)
					}
				}
				return
			}
			if err != nil || p != tt.prov || m != tt.model {
				t.Errorf("ParseName(%q) = %q, %q, %v; want %q, %q", tt.in, p, m, err, tt.prov, tt.model)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	p := model.RetryPolicy{BaseDelay: time.Second, MaxDelay: 10 * time.Second, Rand: func() float64 { return 0.5 }}.WithDefaults()
	var got []time.Duration
	for a := 1; a <= 6; a++ {
		got = append(got, p.Backoff(a))
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("backoff (-want +got):\n%s", diff)
	}
	p.Rand = func() float64 { return 0 }
	if d := p.Backoff(3); d != 0 {
		t.Errorf("full jitter with rand 0 = %v, want 0", d)
	}
	if d := p.Backoff(1000); d != 0 {
		t.Errorf("huge attempt overflowed: %v", d)
	}
}

func TestDefaults(t *testing.T) {
	p := model.RetryPolicy{}.WithDefaults()
	if p.MaxAttempts != model.DefaultMaxAttempts || p.BaseDelay != model.DefaultBaseDelay || p.MaxDelay != model.DefaultMaxDelay || p.Sleep == nil || p.Rand == nil || p.Now == nil {
		t.Errorf("WithDefaults left fields unset: %+v", p)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{"seconds", http.Header{"Retry-After": {"7"}}, 7 * time.Second, true},
		{"fractional seconds", http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond, true},
		{"http date", http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second, true},
		{"date in the past", http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}, 0, true},
		{"milliseconds first", http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond, true},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0, false},
		{"negative", http.Header{"Retry-After": {"-3"}}, 0, false},
		{"absent", http.Header{}, 0, false},
		{"nil", nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := model.RetryAfter(tt.h, now)
			if got != tt.want || ok != tt.ok {
				t.Errorf("RetryAfter = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestRetryable(t *testing.T) {
	hdr := http.Header{}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"429", &model.ServerError{Status: 429, Header: hdr}, true},
		{"500", &model.ServerError{Status: 500, Header: hdr}, true},
		{"503 wrapped", fmt.Errorf("call: %w", &model.ServerError{Status: 503, Header: hdr}), true},
		{"529", &model.ServerError{Status: 529, Header: hdr}, true},
		{"408", &model.ServerError{Status: 408, Header: hdr}, true},
		{"400", &model.ServerError{Status: 400, Header: hdr}, false},
		{"401", &model.ServerError{Status: 401, Header: hdr}, false},
		{"403", &model.ServerError{Status: 403, Header: hdr}, false},
		{"404", &model.ServerError{Status: 404, Header: hdr}, false},
		{"stream error event", &model.ServerError{Message: "overloaded"}, true},
		{"connection reset", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, true},
		{"connection refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{"unexpected EOF", io.ErrUnexpectedEOF, true},
		{"timeout", &net.OpError{Op: "read", Err: timeoutErr{}}, true},
		{"incomplete stream", cadre.ErrIncompleteStream, true},
		{"cancelled", context.Canceled, false},
		{"caller deadline", context.DeadlineExceeded, true /* a net timeout too; Stream checks ctx first */},
		{"other", errors.New("bad request shape"), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := model.Retryable(tt.err); got != tt.want {
				t.Errorf("Retryable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// fake plays a list of outcomes, one per attempt.
type outcome struct {
	texts []string
	resp  *cadre.Response
	err   error
}

func run(t *testing.T, ctx context.Context, pol model.RetryPolicy, outs ...outcome) (texts []string, final *cadre.Response, err error, attempts int, waits []time.Duration) {
	t.Helper()
	pol.Sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	if pol.Rand == nil {
		pol.Rand = func() float64 { return 0.5 }
	}
	call := model.Call{
		Provider: "fake",
		Policy:   pol,
		Attempt: func(ctx context.Context, try *model.Try) (*cadre.Response, error) {
			o := outs[min(attempts, len(outs)-1)]
			attempts++
			for _, s := range o.texts {
				if !try.Emit(s) {
					return nil, context.Canceled
				}
			}
			return o.resp, o.err
		},
		Hint: func(err error, status int) string {
			if status == 401 {
				return "check FAKE_API_KEY"
			}
			return ""
		},
	}
	for c, e := range model.Stream(ctx, call) {
		if e != nil {
			if err != nil {
				t.Errorf("second error after %v: %v", err, e)
			}
			err = e
			continue
		}
		if c.Text != "" {
			texts = append(texts, c.Text)
		}
		if c.Response != nil {
			if final != nil {
				t.Error("two final chunks")
			}
			final = c.Response
		}
	}
	return
}

var okResp = &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: "ok"}}

func TestStream(t *testing.T) {
	s429 := &model.ServerError{Status: 429, Header: http.Header{"Retry-After": {"120"}}}
	s500 := &model.ServerError{Status: 500, Header: http.Header{}}
	s401 := &model.ServerError{Status: 401, Header: http.Header{}, Message: "bad key"}
	tests := []struct {
		name         string
		pol          model.RetryPolicy
		outs         []outcome
		wantTexts    []string
		wantOK       bool
		wantAttempts int
		wantWaits    []time.Duration
		wantStatus   int
		wantErrHas   []string
		wantIs       error
	}{
		{name: "success", outs: []outcome{{texts: []string{"o", "k"}, resp: okResp}}, wantTexts: []string{"o", "k"}, wantOK: true, wantAttempts: 1},
		{name: "429 waits Retry-After capped by MaxDelay", pol: model.RetryPolicy{MaxDelay: time.Minute},
			outs: []outcome{{err: s429}, {resp: okResp}}, wantOK: true, wantAttempts: 2, wantWaits: []time.Duration{time.Minute}},
		{name: "500 backs off exponentially then gives up", pol: model.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Second},
			outs: []outcome{{err: s500}}, wantAttempts: 3, wantWaits: []time.Duration{500 * time.Millisecond, time.Second},
			wantStatus: 500, wantErrHas: []string{"gave up after 3 attempts", "fake: HTTP 500"}},
		{name: "401 fails at once with the hint", outs: []outcome{{err: s401}}, wantAttempts: 1, wantStatus: 401,
			wantErrHas: []string{"bad key", "check FAKE_API_KEY"}},
		{name: "nil response counts as incomplete and is retried", outs: []outcome{{}, {resp: okResp}}, wantOK: true, wantAttempts: 2, wantWaits: []time.Duration{250 * time.Millisecond}},
		{name: "break after text is not retried", outs: []outcome{{texts: []string{"par"}, err: io.ErrUnexpectedEOF}, {resp: okResp}},
			wantTexts: []string{"par"}, wantAttempts: 1, wantIs: cadre.ErrIncompleteStream, wantErrHas: []string{"broke off", "unexpected EOF"}},
		{name: "single attempt says nothing of attempts", pol: model.RetryPolicy{MaxAttempts: 1}, outs: []outcome{{err: s500}},
			wantAttempts: 1, wantStatus: 500},
		{name: "permanent error", outs: []outcome{{err: errors.New("bad shape")}}, wantAttempts: 1, wantErrHas: []string{"bad shape"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			texts, final, err, attempts, waits := run(t, context.Background(), tt.pol, tt.outs...)
			if diff := cmp.Diff(tt.wantTexts, texts); diff != "" {
				t.Errorf("texts (-want +got):\n%s", diff)
			}
			if (final != nil) != tt.wantOK || (err == nil) != tt.wantOK {
				t.Fatalf("final = %v, err = %v; want success %v", final, err, tt.wantOK)
			}
			if attempts != tt.wantAttempts {
				t.Errorf("attempts = %d, want %d", attempts, tt.wantAttempts)
			}
			if diff := cmp.Diff(tt.wantWaits, waits); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			if err == nil {
				return
			}
			var me *cadre.ModelError
			if !errors.As(err, &me) {
				t.Fatalf("error %v is not a *cadre.ModelError", err)
			}
			if me.Status != tt.wantStatus {
				t.Errorf("Status = %d, want %d", me.Status, tt.wantStatus)
			}
			for _, s := range tt.wantErrHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v does not wrap %v", err, tt.wantIs)
			}
			if strings.Contains(err.Error(), "attempts") && tt.pol.MaxAttempts == 1 {
				t.Errorf("error %q talks of attempts with retries off", err)
			}
		})
	}
}

func TestStreamCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, final, err, attempts, waits := run(t, ctx, model.RetryPolicy{}, outcome{err: context.Canceled})
	if final != nil || !errors.Is(err, context.Canceled) || attempts != 1 || len(waits) != 0 {
		t.Errorf("got final %v err %v after %d attempts, %d waits; want one attempt failing with context.Canceled", final, err, attempts, len(waits))
	}
}

func TestStreamConsumerStops(t *testing.T) {
	attempts := 0
	call := model.Call{Provider: "fake", Attempt: func(ctx context.Context, try *model.Try) (*cadre.Response, error) {
		attempts++
		for _, s := range []string{"a", "b", "c"} {
			if !try.Emit(s) {
				return nil, errors.New("stopped")
			}
		}
		return okResp, nil
	}}
	var got []string
	for c, err := range model.Stream(context.Background(), call) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c.Text)
		if len(got) == 2 {
			break
		}
	}
	if diff := cmp.Diff([]string{"a", "b"}, got); diff != "" || attempts != 1 {
		t.Errorf("chunks (-want +got):\n%s\nattempts = %d, want 1", diff, attempts)
	}
}
