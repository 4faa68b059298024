// Package modeltest is the conformance suite every HTTP model provider of
// cadre passes, in the manner of testing/slogtest.
//
// [Run] starts an httptest server on 127.0.0.1 for each case and asks the
// [Harness] to answer in the provider's real wire format: server-sent events
// for replies, the provider's JSON shape for errors. The cases cover plain
// replies, streamed text, tool calls whose arguments arrive in pieces, usage,
// retries (429 with Retry-After, 500 until attempts run out, a connection
// dropped before any text), failures that must not be retried (401, 404), and
// streams cut short (an error, never a short reply, never a hang). No case
// sleeps: the suite injects the retry policy's Sleep and Rand.
package modeltest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model"
)

// A Harness connects the suite to one provider.
type Harness struct {
	// New returns the provider under test, sending its requests to
	// baseURL (an httptest server's URL) with apiKey and policy.
	New func(baseURL, apiKey string, policy model.RetryPolicy) cadre.Model
	// WriteReply answers one request with reply, streamed as the
	// provider's server does (SSE), flushing after each event. When
	// reply.Cut is set it writes the start of the reply and its text, then
	// returns without the events that end a reply.
	WriteReply func(w http.ResponseWriter, reply Reply)
	// WriteError answers one request with an HTTP error status and message
	// in the provider's error format. Headers set on w before the call
	// (Retry-After) must be kept.
	WriteError func(w http.ResponseWriter, status int, message string)
	// KeyVar is the environment variable that a hint after 401 must name.
	KeyVar string
}

// A Reply is what the test server streams for one request.
type Reply struct {
	// Text is streamed as one delta per piece.
	Text []string
	// ToolCalls follow the text, in order.
	ToolCalls []ToolCall
	Usage     cadre.Usage
	// Cut stops the stream after the text: no tool calls, no end.
	Cut bool
}

// A ToolCall is streamed as a start with ID and Name, then one delta per
// piece of Arguments.
type ToolCall struct {
	ID, Name  string
	Arguments []string
}

// Failsafe bounds each case, so that a provider that hangs fails the case
// instead of stalling the test binary. It is a guard, not an assertion.
const Failsafe = 30 * time.Second

// Run runs the conformance suite against h's provider. Each case is a
// subtest whose name works with -run.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil || h.WriteReply == nil || h.WriteError == nil {
		t.Fatal("modeltest: Harness needs New, WriteReply and WriteError")
	}
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, &h)
		})
	}
}

func cases() []struct {
	name string
	run  func(t *testing.T, h *Harness)
} {
	return []struct {
		name string
		run  func(t *testing.T, h *Harness)
	}{
		{"PlainReply", testPlainReply},
		{"StreamedText", testStreamedText},
		{"ToolCalls", testToolCalls},
		{"TextThenToolCalls", testTextThenToolCalls},
		{"Usage", testUsage},
		{"RequestShape", testRequestShape},
		{"RateLimitedThenSuccess", testRateLimited},
		{"ServerErrorExhausted", testServerErrorExhausted},
		{"Unauthorized", testUnauthorized},
		{"NotFound", testNotFound},
		{"CutBeforeTextIsRetried", testCutBeforeText},
		{"DroppedConnectionIsRetried", testDroppedConnection},
		{"StreamCutShort", testCutShort},
		{"StreamCutAbruptly", testCutAbruptly},
		{"ConsumerStopsEarly", testStopEarly},
		{"CancelledMidStream", testCancelled},
		{"Concurrent", testConcurrent},
	}
}

// server is one case's test server: handle answers the n-th request
// (1-based).
type server struct {
	*httptest.Server
	n      atomic.Int32
	mu     sync.Mutex
	bodies []string
}

func newServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, n int)) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		if r.Body != nil {
			buf := make([]byte, 32<<10)
			for {
				k, err := r.Body.Read(buf)
				b.Write(buf[:k])
				if err != nil {
					break
				}
			}
		}
		s.mu.Lock()
		s.bodies = append(s.bodies, b.String())
		s.mu.Unlock()
		handle(w, r, int(s.n.Add(1)))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) requests() int { return int(s.n.Load()) }

// sleeps records the waits the retry policy asked for, without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) policy(attempts int) model.RetryPolicy {
	return model.RetryPolicy{
		MaxAttempts: attempts,
		Sleep: func(ctx context.Context, d time.Duration) error {
			s.mu.Lock()
			s.d = append(s.d, d)
			s.mu.Unlock()
			return ctx.Err()
		},
		Rand: func() float64 { return 0.5 },
		Now:  func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) },
	}
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// result is everything a stream produced.
type result struct {
	texts  []string
	final  *cadre.Response
	finals int
	// afterFinal counts chunks or errors after the final chunk.
	afterFinal int
	err        error
}

func collect(t *testing.T, m cadre.Model, req *cadre.Request) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Failsafe)
	defer cancel()
	var r result
	for c, err := range m.Stream(ctx, req) {
		if r.finals > 0 {
			r.afterFinal++
		}
		if err != nil {
			if r.err == nil {
				r.err = err
			}
			continue
		}
		if c == nil {
			continue
		}
		if c.Text != "" {
			r.texts = append(r.texts, c.Text)
		}
		if c.Response != nil {
			r.final = c.Response
			r.finals++
		}
	}
	if errors.Is(r.err, context.DeadlineExceeded) && ctx.Err() != nil {
		t.Fatalf("the stream did not end within the %v failsafe: it hangs", Failsafe)
	}
	return r
}

func request() *cadre.Request {
	return &cadre.Request{
		Agent:    cadre.RootID,
		Turn:     1,
		System:   "You are a careful assistant.",
		Messages: []cadre.Message{{Role: cadre.RoleUser, Content: "Say hello."}},
	}
}

func mustSucceed(t *testing.T, r result) *cadre.Response {
	t.Helper()
	if r.err != nil {
		t.Fatalf("stream failed: %v", r.err)
	}
	if r.finals != 1 {
		t.Fatalf("got %d final chunks, want exactly 1", r.finals)
	}
	if r.afterFinal != 0 {
		t.Fatalf("got %d chunks after the final one, want none", r.afterFinal)
	}
	return r.final
}

func mustModelError(t *testing.T, r result) *cadre.ModelError {
	t.Helper()
	if r.err == nil {
		t.Fatalf("stream succeeded with %+v, want an error", r.final)
	}
	if r.final != nil {
		t.Errorf("got a final response %+v along with error %v", r.final, r.err)
	}
	var me *cadre.ModelError
	if !errors.As(r.err, &me) {
		t.Fatalf("error %v (%T) is not a *cadre.ModelError", r.err, r.err)
	}
	return me
}

func testPlainReply(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(w, Reply{Text: []string{"Hello, world."}, Usage: cadre.Usage{InputTokens: 12, OutputTokens: 4}})
	})
	var sl sleeps
	resp := mustSucceed(t, collect(t, h.New(srv.URL, "test-key", sl.policy(0)), request()))
	want := cadre.Message{Role: cadre.RoleAssistant, Content: "Hello, world."}
	if diff := cmp.Diff(want, resp.Message); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
	if resp.StopReason == "" {
		t.Error("StopReason is empty, want the provider's reason")
	}
	if srv.requests() != 1 {
		t.Errorf("server saw %d requests, want 1", srv.requests())
	}
}

func testStreamedText(t *testing.T, h *Harness) {
	pieces := []string{"Once ", "upon ", "a ", "time."}
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(w, Reply{Text: pieces, Usage: cadre.Usage{InputTokens: 3, OutputTokens: 4}})
	})
	var sl sleeps
	r := collect(t, h.New(srv.URL, "test-key", sl.policy(0)), request())
	resp := mustSucceed(t, r)
	if diff := cmp.Diff(pieces, r.texts); diff != "" {
		t.Errorf("text chunks (-want +got):\n%s", diff)
	}
	if got, want := resp.Message.Content, strings.Join(pieces, ""); got != want {
		t.Errorf("content = %q, want %q", got, want)
	}
}

// twoCalls are two tool calls whose arguments arrive in pieces.
func twoCalls() []ToolCall {
	return []ToolCall{
		{ID: "call_a1", Name: "read_file", Arguments: []string{`{"pa`, `th": "no`, `tes.txt"}`}},
		{ID: "call_b2", Name: "list_files", Arguments: []string{`{"dir"`, `: ".", "dep`, `th": 2}`}},
	}
}

func testToolCalls(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(w, Reply{ToolCalls: twoCalls(), Usage: cadre.Usage{InputTokens: 20, OutputTokens: 9}})
	})
	var sl sleeps
	r := collect(t, h.New(srv.URL, "test-key", sl.policy(0)), request())
	resp := mustSucceed(t, r)
	want := []cadre.ToolCall{
		{ID: "call_a1", Name: "read_file", Arguments: `{"path": "notes.txt"}`},
		{ID: "call_b2", Name: "list_files", Arguments: `{"dir": ".", "depth": 2}`},
	}
	if diff := cmp.Diff(want, resp.Message.ToolCalls); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	if resp.Message.Content != "" || len(r.texts) != 0 {
		t.Errorf("got text %q / chunks %q for a reply with only tool calls", resp.Message.Content, r.texts)
	}
}

func testTextThenToolCalls(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(w, Reply{Text: []string{"Let me ", "look."}, ToolCalls: twoCalls()[:1], Usage: cadre.Usage{InputTokens: 5, OutputTokens: 6}})
	})
	var sl sleeps
	resp := mustSucceed(t, collect(t, h.New(srv.URL, "test-key", sl.policy(0)), request()))
	want := cadre.Message{Role: cadre.RoleAssistant, Content: "Let me look.", ToolCalls: []cadre.ToolCall{
		{ID: "call_a1", Name: "read_file", Arguments: `{"path": "notes.txt"}`},
	}}
	if diff := cmp.Diff(want, resp.Message); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
}

func testUsage(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(w, Reply{Text: []string{"ok"}, ToolCalls: twoCalls()[1:], Usage: cadre.Usage{InputTokens: 1234, OutputTokens: 56}})
	})
	var sl sleeps
	resp := mustSucceed(t, collect(t, h.New(srv.URL, "test-key", sl.policy(0)), request()))
	if diff := cmp.Diff(cadre.Usage{InputTokens: 1234, OutputTokens: 56}, resp.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

// testRequestShape checks what every provider must put in its request body,
// whatever its format: the system prompt, the messages, the tools.
func testRequestShape(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.Method != http.MethodPost {
			t.Errorf("method = %s, want POST", r.Method)
		}
		h.WriteReply(w, Reply{Text: []string{"ok"}})
	})
	var sl sleeps
	req := request()
	req.Messages = append(req.Messages,
		cadre.Message{Role: cadre.RoleAssistant, ToolCalls: []cadre.ToolCall{{ID: "call_x9", Name: "read_file", Arguments: `{"path":"a.md"}`}}},
		cadre.Message{Role: cadre.RoleTool, ToolCallID: "call_x9", ToolName: "read_file", Content: "contents of a.md"},
	)
	req.Tools = []cadre.ToolSpec{{Name: "read_file", Description: "Read a file.", Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}}
	mustSucceed(t, collect(t, h.New(srv.URL, "test-key", sl.policy(0)), req))
	srv.mu.Lock()
	body := srv.bodies[0]
	srv.mu.Unlock()
	for _, want := range []string{"You are a careful assistant.", "Say hello.", "call_x9", "contents of a.md", "read_file", "Read a file.", `"stream":true`} {
		if !strings.Contains(body, want) {
			t.Errorf("request body lacks %q:\n%s", want, body)
		}
	}

	// No tools in the request: no tools in the body.
	srv2 := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(w, Reply{Text: []string{"ok"}})
	})
	mustSucceed(t, collect(t, h.New(srv2.URL, "test-key", sl.policy(0)), request()))
	srv2.mu.Lock()
	body = srv2.bodies[0]
	srv2.mu.Unlock()
	if strings.Contains(body, `"tools"`) {
		t.Errorf("request without tools sent a tools field:\n%s", body)
	}
}

func testRateLimited(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			w.Header().Set("Retry-After", "7")
			h.WriteError(w, http.StatusTooManyRequests, "rate limit reached, slow down")
			return
		}
		h.WriteReply(w, Reply{Text: []string{"second time lucky"}})
	})
	var sl sleeps
	resp := mustSucceed(t, collect(t, h.New(srv.URL, "test-key", sl.policy(4)), request()))
	if resp.Message.Content != "second time lucky" {
		t.Errorf("content = %q, want the reply of the second request", resp.Message.Content)
	}
	if srv.requests() != 2 {
		t.Errorf("server saw %d requests, want 2", srv.requests())
	}
	if diff := cmp.Diff([]time.Duration{7 * time.Second}, sl.all()); diff != "" {
		t.Errorf("waits (-want +got), want Retry-After honoured:\n%s", diff)
	}
}

func testServerErrorExhausted(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteError(w, http.StatusInternalServerError, "internal failure")
	})
	var sl sleeps
	me := mustModelError(t, collect(t, h.New(srv.URL, "test-key", sl.policy(3)), request()))
	if srv.requests() != 3 {
		t.Errorf("server saw %d requests, want 3 (MaxAttempts)", srv.requests())
	}
	if me.Status != http.StatusInternalServerError {
		t.Errorf("Status = %d, want 500", me.Status)
	}
	if !strings.Contains(me.Error(), "3 attempts") {
		t.Errorf("error %q does not say how many attempts were made", me.Error())
	}
	if got := len(sl.all()); got != 2 {
		t.Errorf("waited %d times, want 2 (between 3 attempts)", got)
	}
	for i, d := range sl.all() {
		if d < 0 || d > model.DefaultMaxDelay {
			t.Errorf("wait %d = %v, want within [0, %v]", i, d, model.DefaultMaxDelay)
		}
	}
}

func testUnauthorized(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteError(w, http.StatusUnauthorized, "invalid api key")
	})
	var sl sleeps
	me := mustModelError(t, collect(t, h.New(srv.URL, "bad-key", sl.policy(4)), request()))
	if srv.requests() != 1 {
		t.Errorf("server saw %d requests, want 1: a 401 is not retried", srv.requests())
	}
	if me.Status != http.StatusUnauthorized {
		t.Errorf("Status = %d, want 401", me.Status)
	}
	if h.KeyVar != "" && !strings.Contains(me.Hint, h.KeyVar) {
		t.Errorf("hint %q does not name %s", me.Hint, h.KeyVar)
	}
	if me.Hint == "" {
		t.Error("hint is empty")
	}
	if len(sl.all()) != 0 {
		t.Errorf("waited %v before failing, want no wait", sl.all())
	}
}

func testNotFound(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteError(w, http.StatusNotFound, "no such model")
	})
	var sl sleeps
	me := mustModelError(t, collect(t, h.New(srv.URL, "test-key", sl.policy(4)), request()))
	if srv.requests() != 1 {
		t.Errorf("server saw %d requests, want 1: a 404 is not retried", srv.requests())
	}
	if me.Status != http.StatusNotFound || me.Hint == "" {
		t.Errorf("got status %d hint %q, want 404 with a hint", me.Status, me.Hint)
	}
}

func testCutBeforeText(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			h.WriteReply(w, Reply{Cut: true})
			return
		}
		h.WriteReply(w, Reply{Text: []string{"complete"}})
	})
	var sl sleeps
	resp := mustSucceed(t, collect(t, h.New(srv.URL, "test-key", sl.policy(4)), request()))
	if resp.Message.Content != "complete" || srv.requests() != 2 {
		t.Errorf("got %q after %d requests, want %q after 2", resp.Message.Content, srv.requests(), "complete")
	}
}

func testDroppedConnection(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			hijackClose(t, w)
			return
		}
		h.WriteReply(w, Reply{Text: []string{"reconnected"}})
	})
	var sl sleeps
	resp := mustSucceed(t, collect(t, h.New(srv.URL, "test-key", sl.policy(4)), request()))
	if resp.Message.Content != "reconnected" || srv.requests() != 2 {
		t.Errorf("got %q after %d requests, want %q after 2", resp.Message.Content, srv.requests(), "reconnected")
	}
}

func hijackClose(t *testing.T, w http.ResponseWriter) {
	t.Helper()
	hj, ok := w.(http.Hijacker)
	if !ok {
		t.Error("the test server cannot hijack connections")
		return
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	conn.Close()
}

func checkCut(t *testing.T, r result, srv *server) {
	t.Helper()
	me := mustModelError(t, r)
	if !errors.Is(me, cadre.ErrIncompleteStream) {
		t.Errorf("error %v does not wrap cadre.ErrIncompleteStream", me)
	}
	if diff := cmp.Diff([]string{"partial ", "answer"}, r.texts); diff != "" {
		t.Errorf("text before the cut (-want +got):\n%s", diff)
	}
	if srv.requests() != 1 {
		t.Errorf("server saw %d requests, want 1: a stream that produced text is never restarted", srv.requests())
	}
}

func testCutShort(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(w, Reply{Text: []string{"partial ", "answer"}, Cut: true})
	})
	var sl sleeps
	checkCut(t, collect(t, h.New(srv.URL, "test-key", sl.policy(4)), request()), srv)
}

func testCutAbruptly(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(w, Reply{Text: []string{"partial ", "answer"}, Cut: true})
		hijackClose(t, w)
	})
	var sl sleeps
	checkCut(t, collect(t, h.New(srv.URL, "test-key", sl.policy(4)), request()), srv)
}

func testStopEarly(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(w, Reply{Text: []string{"one ", "two ", "three"}, Cut: true})
		<-r.Context().Done() // the client must hang up
	})
	var sl sleeps
	ctx, cancel := context.WithTimeout(context.Background(), Failsafe)
	defer cancel()
	got := 0
	for c, err := range h.New(srv.URL, "test-key", sl.policy(4)).Stream(ctx, request()) {
		if err != nil {
			t.Fatalf("error before the consumer stopped: %v", err)
		}
		if c.Text != "" {
			got++
			break
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("stopping early took the whole %v failsafe", Failsafe)
	}
	if got != 1 || srv.requests() != 1 {
		t.Errorf("got %d chunks from %d requests, want 1 from 1", got, srv.requests())
	}
}

func testCancelled(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(w, Reply{Text: []string{"thinking "}, Cut: true})
		<-r.Context().Done()
	})
	var sl sleeps
	guard, stop := context.WithTimeout(context.Background(), Failsafe)
	defer stop()
	ctx, cancel := context.WithCancel(guard)
	defer cancel()
	var err error
	for c, e := range h.New(srv.URL, "test-key", sl.policy(4)).Stream(ctx, request()) {
		if e != nil {
			err = e
			break
		}
		if c.Text != "" {
			cancel()
		}
	}
	if guard.Err() != nil {
		t.Fatalf("cancelling did not end the stream within the %v failsafe", Failsafe)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want one wrapping context.Canceled", err)
	}
	if srv.requests() != 1 {
		t.Errorf("server saw %d requests, want 1", srv.requests())
	}
}

func testConcurrent(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(w, Reply{Text: []string{"same ", "answer"}, ToolCalls: twoCalls()[:1], Usage: cadre.Usage{InputTokens: 2, OutputTokens: 3}})
	})
	var sl sleeps
	m := h.New(srv.URL, "test-key", sl.policy(0))
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), Failsafe)
			defer cancel()
			resp, err := cadre.Collect(m.Stream(ctx, request()), nil)
			if err == nil && (resp.Message.Content != "same answer" || len(resp.Message.ToolCalls) != 1) {
				err = fmt.Errorf("wrong reply %+v", resp.Message)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("stream %d: %v", i, err)
		}
	}
}
