package model_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model"
	"github.com/cadre-ai/cadre/redact"
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
		{"invalid reply", fmt.Errorf("event: %w", model.ErrInvalidReply), true},
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
		if c.Restart {
			if c.Text != "" || c.Response != nil {
				t.Errorf("restart chunk %+v carries more than the restart", c)
			}
			texts = append(texts, restart)
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

// restart stands for a chunk with Restart set among the texts of a stream.
const restart = "<restart>"

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
		{name: "break after text is retried after a restart", outs: []outcome{{texts: []string{"par"}, err: io.ErrUnexpectedEOF}, {texts: []string{"o", "k"}, resp: okResp}},
			wantTexts: []string{"par", restart, "o", "k"}, wantOK: true, wantAttempts: 2, wantWaits: []time.Duration{250 * time.Millisecond}},
		{name: "break after text then before text restarts once", outs: []outcome{{texts: []string{"par"}, err: io.ErrUnexpectedEOF}, {err: s500}, {texts: []string{"ok"}, resp: okResp}},
			wantTexts: []string{"par", restart, "ok"}, wantOK: true, wantAttempts: 3, wantWaits: []time.Duration{250 * time.Millisecond, 500 * time.Millisecond}},
		{name: "429 after text waits Retry-After", pol: model.RetryPolicy{MaxDelay: time.Minute}, outs: []outcome{{texts: []string{"par"}, err: s429}, {resp: okResp}},
			wantTexts: []string{"par", restart}, wantOK: true, wantAttempts: 2, wantWaits: []time.Duration{time.Minute}},
		{name: "break after text every time gives up", pol: model.RetryPolicy{MaxAttempts: 2}, outs: []outcome{{texts: []string{"par"}, err: io.ErrUnexpectedEOF}},
			wantTexts: []string{"par", restart, "par"}, wantAttempts: 2, wantWaits: []time.Duration{250 * time.Millisecond},
			wantIs: cadre.ErrIncompleteStream, wantErrHas: []string{"gave up after 2 attempts", "broke off", "unexpected EOF"}},
		{name: "failure after text that is not retryable fails at once", outs: []outcome{{texts: []string{"par"}, err: s401}},
			wantTexts: []string{"par"}, wantAttempts: 1, wantStatus: 401, wantIs: cadre.ErrIncompleteStream, wantErrHas: []string{"broke off", "bad key"}},
		{name: "single attempt says nothing of attempts", pol: model.RetryPolicy{MaxAttempts: 1}, outs: []outcome{{err: s500}},
			wantAttempts: 1, wantStatus: 500},
		{name: "permanent error after text fails at once", outs: []outcome{{texts: []string{"par"}, err: errors.New("bad shape")}},
			wantTexts: []string{"par"}, wantAttempts: 1, wantIs: cadre.ErrIncompleteStream, wantErrHas: []string{"broke off", "bad shape"}},
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

// TestStreamConsumerStopsAtRestart checks that a caller that stops reading
// at the restart is not asked to read another try.
func TestStreamConsumerStopsAtRestart(t *testing.T) {
	attempts := 0
	call := model.Call{Provider: "fake", Attempt: func(ctx context.Context, try *model.Try) (*cadre.Response, error) {
		attempts++
		try.Emit("half")
		return nil, io.ErrUnexpectedEOF
	}, Policy: model.RetryPolicy{Sleep: func(ctx context.Context, d time.Duration) error {
		t.Error("waited to retry for a caller that stopped reading")
		return nil
	}}}
	var got []*cadre.Chunk
	for c, err := range model.Stream(context.Background(), call) {
		if err != nil {
			t.Fatalf("error after the caller stopped: %v", err)
		}
		got = append(got, c)
		if c.Restart {
			break
		}
	}
	want := []*cadre.Chunk{{Text: "half"}, {Restart: true}}
	if diff := cmp.Diff(want, got); diff != "" || attempts != 1 {
		t.Errorf("chunks (-want +got):\n%s\nattempts = %d, want 1", diff, attempts)
	}
}

func TestRetryableStalled(t *testing.T) {
	err := fmt.Errorf("%w: nothing arrived for 1s", model.ErrStalled)
	if !model.Retryable(err) {
		t.Errorf("Retryable(%v) = false, want a stall retried like a timeout", err)
	}
	if model.Retryable(model.ErrMaxTokens) {
		t.Error("Retryable(ErrMaxTokens) = true, want a reply that spent its tokens not asked again")
	}
}

func TestUnreachable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{"dial timeout", &net.OpError{Op: "dial", Err: timeoutErr{}}, true},
		{"no such host", fmt.Errorf("post: %w", &net.DNSError{Err: "no such host", Name: "nowhere.invalid", IsNotFound: true}), true},
		{"reset while reading", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, false},
		{"eof", io.EOF, false},
		{"server error", &model.ServerError{Status: 500, Header: http.Header{}}, false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := model.Unreachable(tt.err); got != tt.want {
				t.Errorf("Unreachable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestEstimateUsage(t *testing.T) {
	req := &cadre.Request{
		System:   strings.Repeat("s", 40),
		Messages: []cadre.Message{{Role: cadre.RoleUser, Content: strings.Repeat("u", 40)}},
		Tools:    []cadre.ToolSpec{{Name: "t", Description: strings.Repeat("d", 17), Parameters: []byte(`{"type":"object"}`)}},
	}
	reply := &cadre.Message{Role: cadre.RoleAssistant, Content: "abcd", ToolCalls: []cadre.ToolCall{{Name: "read", Arguments: `{"p":"x"}`}}}
	// In: 40 + 40 + 1 + 17 + 17 = 115 bytes; out: 4 + 4 + 9 = 17 bytes.
	if diff := cmp.Diff(cadre.Usage{InputTokens: 28, OutputTokens: 4}, model.EstimateUsage(req, reply)); diff != "" {
		t.Errorf("estimate (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(cadre.Usage{InputTokens: 1, OutputTokens: 1}, model.EstimateUsage(nil, nil)); diff != "" {
		t.Errorf("estimate of nothing (-want +got), want at least one token each way:\n%s", diff)
	}
}

// TestStall runs the stall watchdog on synctest's clock: the tries block
// until the watchdog ends them, and no test time passes.
func TestStall(t *testing.T) {
	const stall = time.Minute
	blockUntilDone := func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}
	tests := []struct {
		name         string
		attempt      func(ctx context.Context, try *model.Try, n int) (*cadre.Response, error)
		wantOK       bool
		wantAttempts int
		wantTexts    []string
		wantIs       []error
	}{
		{
			name: "silent server is retried",
			attempt: func(ctx context.Context, try *model.Try, n int) (*cadre.Response, error) {
				if n == 1 {
					return nil, blockUntilDone(ctx)
				}
				return okResp, nil
			},
			wantOK: true, wantAttempts: 2,
		},
		{
			name: "silent after text is retried after a restart",
			attempt: func(ctx context.Context, try *model.Try, n int) (*cadre.Response, error) {
				try.Emit("half")
				if n == 1 {
					return nil, blockUntilDone(ctx)
				}
				return okResp, nil
			},
			wantOK: true, wantAttempts: 2, wantTexts: []string{"half", restart, "half"},
		},
		{
			name: "silent after text every time is an incomplete stream",
			attempt: func(ctx context.Context, try *model.Try, n int) (*cadre.Response, error) {
				try.Emit("half")
				return nil, blockUntilDone(ctx)
			},
			wantAttempts: 2, wantTexts: []string{"half", restart, "half"}, wantIs: []error{model.ErrStalled, cadre.ErrIncompleteStream},
		},
		{
			name: "silent every time gives up",
			attempt: func(ctx context.Context, try *model.Try, n int) (*cadre.Response, error) {
				return nil, blockUntilDone(ctx)
			},
			wantAttempts: 2, wantIs: []error{model.ErrStalled},
		},
		{
			name: "signs of life keep a slow try going",
			attempt: func(ctx context.Context, try *model.Try, n int) (*cadre.Response, error) {
				for range 10 {
					select {
					case <-time.After(stall / 2):
						try.Alive()
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
				return okResp, nil
			},
			wantOK: true, wantAttempts: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				attempts := 0
				call := model.Call{
					Provider:     "fake",
					StallTimeout: stall,
					Policy:       model.RetryPolicy{MaxAttempts: 2, Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() }},
					Attempt: func(ctx context.Context, try *model.Try) (*cadre.Response, error) {
						attempts++
						return tt.attempt(ctx, try, attempts)
					},
				}
				var texts []string
				resp, err := cadre.CollectFunc(model.Stream(context.Background(), call), func(c *cadre.Chunk) {
					if c.Restart {
						texts = append(texts, restart)
					}
					if c.Text != "" {
						texts = append(texts, c.Text)
					}
				})
				if (err == nil) != tt.wantOK || (resp != nil) != tt.wantOK {
					t.Fatalf("got %v, %v; want success %v", resp, err, tt.wantOK)
				}
				if attempts != tt.wantAttempts {
					t.Errorf("attempts = %d, want %d", attempts, tt.wantAttempts)
				}
				if diff := cmp.Diff(tt.wantTexts, texts); diff != "" {
					t.Errorf("texts (-want +got):\n%s", diff)
				}
				for _, target := range tt.wantIs {
					if !errors.Is(err, target) {
						t.Errorf("error %v does not wrap %v", err, target)
					}
				}
				if err != nil && !strings.Contains(err.Error(), "1m0s") {
					t.Errorf("error %q does not say how long the server was silent", err)
				}
			})
		})
	}
}

func TestStallMiddleware(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const stall = time.Minute
		// The body trickles in: a byte every half stall, four in all. Each
		// read counts as a sign of life, so the try outlives two stalls.
		body := &trickle{left: 4, every: stall / 2}
		call := model.Call{
			Provider:     "fake",
			StallTimeout: stall,
			Policy:       model.RetryPolicy{MaxAttempts: 1},
			Attempt: func(ctx context.Context, try *model.Try) (*cadre.Response, error) {
				resp, err := try.Middleware(&http.Request{}, func(*http.Request) (*http.Response, error) {
					return &http.Response{StatusCode: 200, Body: body}, nil
				})
				if err != nil {
					return nil, err
				}
				defer resp.Body.Close()
				body.ctx = ctx
				b, err := io.ReadAll(resp.Body)
				if err != nil {
					return nil, err
				}
				return &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: string(b)}}, nil
			},
		}
		resp, err := cadre.Collect(model.Stream(context.Background(), call), nil)
		if err != nil || resp.Message.Content != "xxxx" {
			t.Errorf("got %v, %v; want the whole trickled body", resp, err)
		}
	})
}

// trickle is a body that yields one byte every so often, until ctx ends.
type trickle struct {
	ctx   context.Context
	left  int
	every time.Duration
}

func (b *trickle) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	select {
	case <-time.After(b.every):
	case <-b.ctx.Done():
		return 0, b.ctx.Err()
	}
	b.left--
	p[0] = 'x'
	return 1, nil
}

func (b *trickle) Close() error { return nil }

func TestHintsByFailure(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"rate limited", &model.ServerError{Status: 429, Header: http.Header{}}, "rate limiting"},
		{"overloaded", &model.ServerError{Status: 529, Header: http.Header{}}, "overloaded"},
		{"server failing", &model.ServerError{Status: 503, Header: http.Header{}}, "kept failing"},
		{"bad request", &model.ServerError{Status: 400, Header: http.Header{}}, "rejected the request"},
		{"error event", &model.ServerError{Message: "boom"}, "reported an error while streaming"},
		{"refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, "could not be reached"},
		{"reset", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, "connection to the model server broke"},
		{"incomplete", cadre.ErrIncompleteStream, "closed the stream before the reply was complete"},
		{"max tokens", fmt.Errorf("finish_reason length: %w", model.ErrMaxTokens), "raise the model's max tokens"},
		{"not a stream", fmt.Errorf("%w: it sent text/html", model.ErrNotStream), "check the base URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err, _, _ := run(t, context.Background(), model.RetryPolicy{MaxAttempts: 1}, outcome{err: tt.err})
			var me *cadre.ModelError
			if !errors.As(err, &me) || !strings.Contains(me.Hint, tt.want) {
				t.Errorf("error = %v, want a hint containing %q", err, tt.want)
			}
		})
	}
}

// Call.Redactor hides secrets in the error and in the retry log, and the
// error still wraps what failed.
func TestStreamRedacts(t *testing.T) {
	const key = "sk-stream-secret-1"
	var log strings.Builder
	n := 0
	c := model.Call{
		Provider: "fake",
		Policy:   model.RetryPolicy{MaxAttempts: 2, Sleep: func(context.Context, time.Duration) error { return nil }},
		Logger:   slog.New(slog.NewTextHandler(&log, nil)),
		Redactor: redact.New(key),
		Hint:     func(error, int) string { return "check http://u:pw@h/v1 and " + key },
		Attempt: func(ctx context.Context, t *model.Try) (*cadre.Response, error) {
			n++
			return nil, &model.ServerError{Status: 500, Header: http.Header{}, Message: "key " + key + " at http://u:pw@h/v1"}
		},
	}
	_, err := cadre.Collect(model.Stream(context.Background(), c), nil)
	if err == nil || n != 2 {
		t.Fatalf("err %v after %d attempts", err, n)
	}
	for what, text := range map[string]string{"error": err.Error(), "log": log.String()} {
		if strings.Contains(text, key) || strings.Contains(text, "pw@") {
			t.Errorf("the %s shows a secret: %s", what, text)
		}
		if !strings.Contains(text, "[REDACTED]") {
			t.Errorf("the %s says nothing was hidden: %s", what, text)
		}
	}
	var se *model.ServerError
	if model.Status(err) != 500 || !errors.As(err, &se) {
		t.Errorf("the redacted error lost its cause: %v", err)
	}
}
