// Package modeltest is the conformance suite every HTTP model provider of
// cadre passes, in the manner of testing/slogtest.
//
// [Run] starts an httptest server on 127.0.0.1 for each case and asks the
// [Harness] to answer in the provider's real wire format: server-sent events
// for replies, the provider's JSON shape for errors. The cases cover plain
// replies, streamed text, tool calls whose arguments arrive in pieces (empty
// or not valid JSON included), empty and truncated replies, usage (reported
// or not), the model the server says answered (another than the one asked
// for is recorded, not refused), an answer that is not an event stream,
// failures that must not be retried (401, 403, 404), errors that must not
// show the API key or the base URL's password, a consumer that stops early,
// a context cancelled mid-stream, and concurrent calls.
//
// Flaky servers: 429 with Retry-After in seconds or as a date (honoured)
// and without it (backoff), a storm of 503s that ends within the attempts
// and one that outlasts them (the error says how many attempts and the last
// status), a connection dropped or reset before any text, an error event,
// an event that is not valid JSON, a server that sends no headers or sends
// headers and then nothing, all retried. A stream that breaks after part of
// its text (cut short, closed, reset, an error event, an event that is not
// valid JSON, silence) is retried too: the caller receives one chunk with
// Restart set and then the second reply, and the response is the second
// reply alone; a reply that breaks every time ends in an error wrapping
// [cadre.ErrIncompleteStream], never a short reply, never a hang. A slow
// but steady stream must not count as stalled.
//
// An event that is not valid JSON is retried like a broken stream: it is
// more often a reply mangled on its way than a server that speaks another
// language. When it persists, the error wraps [model.ErrInvalidReply] and
// says the reply was not valid.
//
// No case waits for a retry: the suite injects the retry policy's Sleep and
// Rand. The stall cases let the provider's stall watchdog run on a short
// [StallTimeout]; no case measures how long anything took.
package modeltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
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
	// New returns the provider under test, configured by o.
	New func(o Options) cadre.Model
	// WriteReply answers one request with reply, streamed as the
	// provider's server does (SSE), flushing after each event.
	WriteReply func(w http.ResponseWriter, reply Reply)
	// WriteError answers one request with an HTTP error status and message
	// in the provider's error format. Headers set on w before the call
	// (Retry-After) must be kept.
	WriteError func(w http.ResponseWriter, status int, message string)
	// KeyVar is the environment variable that the hint after a 401 or 403
	// must name, such as OPENAI_API_KEY. It is required.
	KeyVar string
}

// Options configure the provider a case runs against.
type Options struct {
	// BaseURL is the test server's URL, with no path.
	BaseURL string
	APIKey  string
	// Model is the model name; hints after a 403 or 404 must name it.
	Model string
	Retry model.RetryPolicy
	// StallTimeout is the provider's stall timeout; zero means its
	// default.
	StallTimeout time.Duration
}

// A Reply is what the test server streams for one request.
type Reply struct {
	// Text is streamed as one delta per piece.
	Text []string
	// ToolCalls follow the text, in order.
	ToolCalls []ToolCall
	Usage     cadre.Usage
	// NoUsage leaves every token count out of the stream, as some
	// compatible servers do.
	NoUsage bool
	// Truncated ends the reply for reaching its token limit (OpenAI's
	// finish_reason "length", Anthropic's stop_reason "max_tokens").
	Truncated bool
	// ErrorEvent, when set, ends the stream after the text with an error
	// event carrying this message, of the kind an overloaded server sends
	// (one that may be retried).
	ErrorEvent string
	// Cut stops the stream after the text: no tool calls, no end.
	Cut bool
	// Invalid, when set, ends the stream after the text with an event whose
	// data is Invalid, which is not valid JSON, in the place of the next
	// event the provider's server would send.
	Invalid string
	// Model is the model the server names as the one answering; empty
	// means ModelName, the model asked for.
	Model string
}

// AnsweringModel returns the model name the server puts in the reply:
// r.Model, or ModelName.
func (r Reply) AnsweringModel() string {
	if r.Model == "" {
		return ModelName
	}
	return r.Model
}

// A ToolCall is streamed as a start with ID and Name, then one delta per
// piece of Arguments; no pieces means no arguments at all.
type ToolCall struct {
	ID, Name  string
	Arguments []string
}

// Failsafe bounds each case, so that a provider that hangs fails the case
// instead of stalling the test binary. It is a guard, not an assertion.
const Failsafe = 30 * time.Second

// StallTimeout is the stall timeout of the cases where the server stalls.
// It only needs to be long enough for the test server to send a reply
// without pausing.
const StallTimeout = 300 * time.Millisecond

// ModelName is the model name the suite configures.
const ModelName = "model-under-test"

// Run runs the conformance suite against h's provider. Each case is a
// subtest whose name works with -run.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil || h.WriteReply == nil || h.WriteError == nil || h.KeyVar == "" {
		t.Fatal("modeltest: Harness needs New, WriteReply, WriteError and KeyVar")
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
		{"ToolCallWithoutArguments", testToolCallWithoutArguments},
		{"InvalidToolArgumentsPassedOn", testInvalidArguments},
		{"TextThenToolCalls", testTextThenToolCalls},
		{"EmptyReply", testEmptyReply},
		{"Usage", testUsage},
		{"NoUsage", testNoUsage},
		{"Truncated", testTruncated},
		{"TruncatedBeforeAnything", testTruncatedEmpty},
		{"RequestShape", testRequestShape},
		{"AnsweredByAnotherModel", testAnotherModel},
		{"RateLimitedThenSuccess", testRateLimited},
		{"RateLimitedRetryAfterDate", testRateLimitedDate},
		{"RateLimitedWithoutRetryAfter", testRateLimitedBackoff},
		{"ServerErrorExhausted", testServerErrorExhausted},
		{"ServerErrorStormThenSuccess", testServerErrorStorm},
		{"ServerErrorStormExhausted", testServerErrorStormExhausted},
		{"Unauthorized", testUnauthorized},
		{"SecretsHiddenInErrors", testSecretsHidden},
		{"Forbidden", testForbidden},
		{"NotFound", testNotFound},
		{"NotAnEventStream", testNotAnEventStream},
		{"CutBeforeTextIsRetried", testCutBeforeText},
		{"DroppedConnectionIsRetried", testDroppedConnection},
		{"ResetConnectionIsRetried", testResetConnection},
		{"ErrorEventBeforeTextIsRetried", testErrorEventBeforeText},
		{"InvalidJSONBeforeTextIsRetried", testInvalidBeforeText},
		{"StallBeforeHeadersIsRetried", testStallBeforeReply},
		{"StallAfterHeadersIsRetried", testStallAfterHeaders},
		{"SteadyStreamIsNotStalled", testSteadyStream},
		{"CutAfterTextIsRetried", testCutShort},
		{"ClosedAfterTextIsRetried", testCutAbruptly},
		{"ResetAfterTextIsRetried", testResetAfterText},
		{"ErrorEventAfterTextIsRetried", testErrorEventAfterText},
		{"InvalidJSONAfterTextIsRetried", testInvalidAfterText},
		{"StallAfterTextIsRetried", testStallMidReply},
		{"CutAfterTextEveryTime", testCutEveryTime},
		{"InvalidJSONEveryTime", testInvalidEveryTime},
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

func (s *server) body(i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[i]
}

// open returns the provider under test, talking to srv.
func open(h *Harness, srv *server, key string, pol model.RetryPolicy) cadre.Model {
	return h.New(Options{BaseURL: srv.URL, APIKey: key, Model: ModelName, Retry: pol})
}

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
	// texts are the text chunks, of every try.
	texts []string
	// restarts counts the chunks with Restart set; sinceRestart holds the
	// text chunks after the last of them.
	restarts     int
	sinceRestart []string
	// badRestarts counts chunks with Restart set that carried more.
	badRestarts int
	final       *cadre.Response
	finals      int
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
		if c.Restart {
			r.restarts++
			r.sinceRestart = nil
			if c.Text != "" || c.Response != nil {
				r.badRestarts++
			}
			continue
		}
		if c.Text != "" {
			r.texts = append(r.texts, c.Text)
			r.sinceRestart = append(r.sinceRestart, c.Text)
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
	if r.badRestarts != 0 {
		t.Errorf("%d restart chunks carried text or a response, want none", r.badRestarts)
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
	resp := mustSucceed(t, collect(t, open(h, srv, "test-key", sl.policy(0)), request()))
	want := cadre.Message{Role: cadre.RoleAssistant, Content: "Hello, world."}
	if diff := cmp.Diff(want, resp.Message); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
	if resp.StopReason == "" {
		t.Error("StopReason is empty, want the provider's reason")
	}
	if resp.Model != ModelName {
		t.Errorf("Model = %q, want %q, the model the server said answered", resp.Model, ModelName)
	}
	if srv.requests() != 1 {
		t.Errorf("server saw %d requests, want 1", srv.requests())
	}
}

// testAnotherModel checks that a reply from another model than the one
// asked for, as a router or an alias gives, is taken and says which model
// answered.
func testAnotherModel(t *testing.T, h *Harness) {
	const other = "model-under-test-2026-01-02"
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(w, Reply{Text: []string{"routed"}, Model: other})
	})
	var sl sleeps
	resp := mustSucceed(t, collect(t, open(h, srv, "test-key", sl.policy(4)), request()))
	if resp.Message.Content != "routed" || resp.Model != other {
		t.Errorf("got %q from model %q, want %q from %q", resp.Message.Content, resp.Model, "routed", other)
	}
	if srv.requests() != 1 {
		t.Errorf("server saw %d requests, want 1: another model is no failure", srv.requests())
	}
}

func testStreamedText(t *testing.T, h *Harness) {
	pieces := []string{"Once ", "upon ", "a ", "time."}
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(w, Reply{Text: pieces, Usage: cadre.Usage{InputTokens: 3, OutputTokens: 4}})
	})
	var sl sleeps
	r := collect(t, open(h, srv, "test-key", sl.policy(0)), request())
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
	r := collect(t, open(h, srv, "test-key", sl.policy(0)), request())
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

func testToolCallWithoutArguments(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(w, Reply{ToolCalls: []ToolCall{{ID: "call_now", Name: "current_time"}}, Usage: cadre.Usage{InputTokens: 4, OutputTokens: 2}})
	})
	var sl sleeps
	resp := mustSucceed(t, collect(t, open(h, srv, "test-key", sl.policy(0)), request()))
	want := []cadre.ToolCall{{ID: "call_now", Name: "current_time", Arguments: "{}"}}
	if diff := cmp.Diff(want, resp.Message.ToolCalls); diff != "" {
		t.Errorf("tool calls (-want +got), want no arguments to read as {}:\n%s", diff)
	}
}

// testInvalidArguments checks that arguments that are not JSON reach the
// caller as the model wrote them: the agent loop tells the model so.
func testInvalidArguments(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(w, Reply{ToolCalls: []ToolCall{{ID: "call_bad", Name: "read_file", Arguments: []string{`{"path": `, `notes.txt`}}}})
	})
	var sl sleeps
	resp := mustSucceed(t, collect(t, open(h, srv, "test-key", sl.policy(4)), request()))
	want := []cadre.ToolCall{{ID: "call_bad", Name: "read_file", Arguments: `{"path": notes.txt`}}
	if diff := cmp.Diff(want, resp.Message.ToolCalls); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	if srv.requests() != 1 {
		t.Errorf("server saw %d requests, want 1: invalid arguments are the loop's to report", srv.requests())
	}
}

// testEmptyReply checks that a reply with neither text nor tool calls is
// passed on as it is: whether that is a failure is the agent loop's call.
func testEmptyReply(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(w, Reply{Usage: cadre.Usage{InputTokens: 9, OutputTokens: 1}})
	})
	var sl sleeps
	r := collect(t, open(h, srv, "test-key", sl.policy(4)), request())
	resp := mustSucceed(t, r)
	if diff := cmp.Diff(cadre.Message{Role: cadre.RoleAssistant}, resp.Message); diff != "" || len(r.texts) != 0 {
		t.Errorf("message (-want +got):\n%s\ntext chunks: %q", diff, r.texts)
	}
	if srv.requests() != 1 {
		t.Errorf("server saw %d requests, want 1", srv.requests())
	}
}

func testTextThenToolCalls(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(w, Reply{Text: []string{"Let me ", "look."}, ToolCalls: twoCalls()[:1], Usage: cadre.Usage{InputTokens: 5, OutputTokens: 6}})
	})
	var sl sleeps
	resp := mustSucceed(t, collect(t, open(h, srv, "test-key", sl.policy(0)), request()))
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
	resp := mustSucceed(t, collect(t, open(h, srv, "test-key", sl.policy(0)), request()))
	if diff := cmp.Diff(cadre.Usage{InputTokens: 1234, OutputTokens: 56}, resp.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

// testNoUsage checks that a server that counts no tokens is not an error:
// the usage is then zero or an estimate.
func testNoUsage(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(w, Reply{Text: []string{"uncounted ", "words"}, ToolCalls: twoCalls()[:1], NoUsage: true})
	})
	var sl sleeps
	resp := mustSucceed(t, collect(t, open(h, srv, "test-key", sl.policy(4)), request()))
	if resp.Message.Content != "uncounted words" || len(resp.Message.ToolCalls) != 1 {
		t.Errorf("message = %+v, want the text and the tool call", resp.Message)
	}
	if u := resp.Usage; u != (cadre.Usage{}) && (u.InputTokens <= 0 || u.OutputTokens <= 0) {
		t.Errorf("usage = %+v, want zero or an estimate counting both ways", u)
	}
	if srv.requests() != 1 {
		t.Errorf("server saw %d requests, want 1", srv.requests())
	}
}

// testTruncated checks that a reply cut at its token limit keeps its text
// and says why it stopped.
func testTruncated(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			h.WriteReply(w, Reply{Text: []string{"A complete answer."}, Usage: cadre.Usage{InputTokens: 3, OutputTokens: 4}})
			return
		}
		h.WriteReply(w, Reply{Text: []string{"The answer is ", "that"}, Truncated: true, Usage: cadre.Usage{InputTokens: 3, OutputTokens: 2}})
	})
	var sl sleeps
	m := open(h, srv, "test-key", sl.policy(4))
	plain := mustSucceed(t, collect(t, m, request()))
	resp := mustSucceed(t, collect(t, m, request()))
	if resp.Message.Content != "The answer is that" {
		t.Errorf("content = %q, want the text written before the limit", resp.Message.Content)
	}
	if resp.StopReason == "" || resp.StopReason == plain.StopReason {
		t.Errorf("StopReason = %q (a complete reply's is %q), want the provider's reason for hitting the token limit", resp.StopReason, plain.StopReason)
	}
	if srv.requests() != 2 {
		t.Errorf("server saw %d requests, want 2: a truncated reply is not retried", srv.requests())
	}
}

// testTruncatedEmpty checks that a reply that hit its token limit before it
// held anything is an error that says so, and is not retried.
func testTruncatedEmpty(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(w, Reply{Truncated: true, Usage: cadre.Usage{InputTokens: 3, OutputTokens: 100}})
	})
	var sl sleeps
	me := mustModelError(t, collect(t, open(h, srv, "test-key", sl.policy(4)), request()))
	if !errors.Is(me, model.ErrMaxTokens) {
		t.Errorf("error %v does not wrap model.ErrMaxTokens", me)
	}
	if me.Hint == "" {
		t.Error("hint is empty")
	}
	if srv.requests() != 1 {
		t.Errorf("server saw %d requests, want 1", srv.requests())
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
	mustSucceed(t, collect(t, open(h, srv, "test-key", sl.policy(0)), req))
	body := srv.body(0)
	for _, want := range []string{ModelName, "You are a careful assistant.", "Say hello.", "call_x9", "contents of a.md", "read_file", "Read a file.", `"stream":true`} {
		if !strings.Contains(body, want) {
			t.Errorf("request body lacks %q:\n%s", want, body)
		}
	}

	// No tools in the request: no tools in the body.
	srv2 := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(w, Reply{Text: []string{"ok"}})
	})
	mustSucceed(t, collect(t, open(h, srv2, "test-key", sl.policy(0)), request()))
	body = srv2.body(0)
	if strings.Contains(body, `"tools"`) {
		t.Errorf("request without tools sent a tools field:\n%s", body)
	}
}

// failFirst serves the first k requests with fail, and every one after
// them with a reply of text.
func failFirst(t *testing.T, h *Harness, k int, fail func(w http.ResponseWriter), text ...string) *server {
	t.Helper()
	return newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n <= k {
			fail(w)
			return
		}
		h.WriteReply(w, Reply{Text: text})
	})
}

func testRateLimited(t *testing.T, h *Harness) {
	srv := failFirst(t, h, 1, func(w http.ResponseWriter) {
		w.Header().Set("Retry-After", "7")
		h.WriteError(w, http.StatusTooManyRequests, "rate limit reached, slow down")
	}, "second time lucky")
	var sl sleeps
	resp := mustSucceed(t, collect(t, open(h, srv, "test-key", sl.policy(4)), request()))
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

func testRateLimitedDate(t *testing.T, h *Harness) {
	var sl sleeps
	pol := sl.policy(4)
	srv := failFirst(t, h, 1, func(w http.ResponseWriter) {
		w.Header().Set("Retry-After", pol.Now().Add(12*time.Second).Format(http.TimeFormat))
		h.WriteError(w, http.StatusTooManyRequests, "rate limit reached")
	}, "on time")
	resp := mustSucceed(t, collect(t, open(h, srv, "test-key", pol), request()))
	if resp.Message.Content != "on time" || srv.requests() != 2 {
		t.Errorf("got %q after %d requests, want %q after 2", resp.Message.Content, srv.requests(), "on time")
	}
	if diff := cmp.Diff([]time.Duration{12 * time.Second}, sl.all()); diff != "" {
		t.Errorf("waits (-want +got), want the Retry-After date honoured:\n%s", diff)
	}
}

func testRateLimitedBackoff(t *testing.T, h *Harness) {
	srv := failFirst(t, h, 2, func(w http.ResponseWriter) {
		h.WriteError(w, http.StatusTooManyRequests, "rate limit reached")
	}, "patience")
	var sl sleeps
	resp := mustSucceed(t, collect(t, open(h, srv, "test-key", sl.policy(4)), request()))
	if resp.Message.Content != "patience" || srv.requests() != 3 {
		t.Errorf("got %q after %d requests, want %q after 3", resp.Message.Content, srv.requests(), "patience")
	}
	// Rand is 0.5: half of BaseDelay, then half of twice BaseDelay.
	want := []time.Duration{model.DefaultBaseDelay / 2, model.DefaultBaseDelay}
	if diff := cmp.Diff(want, sl.all()); diff != "" {
		t.Errorf("waits (-want +got), want exponential backoff when no Retry-After is given:\n%s", diff)
	}
}

// testServerErrorStorm checks that a run of 503s shorter than the attempts
// ends in the reply, after backoff between every try.
func testServerErrorStorm(t *testing.T, h *Harness) {
	srv := failFirst(t, h, 4, func(w http.ResponseWriter) {
		h.WriteError(w, http.StatusServiceUnavailable, "service unavailable")
	}, "the storm ", "passed")
	var sl sleeps
	r := collect(t, open(h, srv, "test-key", sl.policy(5)), request())
	resp := mustSucceed(t, r)
	if resp.Message.Content != "the storm passed" || srv.requests() != 5 {
		t.Errorf("got %q after %d requests, want %q after 5", resp.Message.Content, srv.requests(), "the storm passed")
	}
	if r.restarts != 0 {
		t.Errorf("got %d restarts, want none: no text came before the reply", r.restarts)
	}
	b := model.DefaultBaseDelay
	if diff := cmp.Diff([]time.Duration{b / 2, b, 2 * b, 4 * b}, sl.all()); diff != "" {
		t.Errorf("waits between the 5 attempts (-want +got):\n%s", diff)
	}
}

// testServerErrorStormExhausted checks that failures that outlast the
// attempts end in an error saying how many attempts were made and the
// status of the last.
func testServerErrorStormExhausted(t *testing.T, h *Harness) {
	statuses := []int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable}
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteError(w, statuses[min(n, len(statuses))-1], fmt.Sprintf("failure number %d", n))
	})
	var sl sleeps
	me := mustModelError(t, collect(t, open(h, srv, "test-key", sl.policy(3)), request()))
	if srv.requests() != 3 {
		t.Errorf("server saw %d requests, want 3 (MaxAttempts)", srv.requests())
	}
	if me.Status != http.StatusServiceUnavailable {
		t.Errorf("Status = %d, want 503, the last try's", me.Status)
	}
	for _, want := range []string{"3 attempts", "503", "failure number 3"} {
		if !strings.Contains(me.Error(), want) {
			t.Errorf("error %q lacks %q", me.Error(), want)
		}
	}
	if me.Hint == "" {
		t.Error("hint is empty")
	}
}

func testServerErrorExhausted(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteError(w, http.StatusInternalServerError, "internal failure")
	})
	var sl sleeps
	me := mustModelError(t, collect(t, open(h, srv, "test-key", sl.policy(3)), request()))
	if srv.requests() != 3 {
		t.Errorf("server saw %d requests, want 3 (MaxAttempts)", srv.requests())
	}
	if me.Status != http.StatusInternalServerError {
		t.Errorf("Status = %d, want 500", me.Status)
	}
	if !strings.Contains(me.Error(), "3 attempts") {
		t.Errorf("error %q does not say how many attempts were made", me.Error())
	}
	// Rand is 0.5: half of BaseDelay, then half of twice BaseDelay.
	want := []time.Duration{model.DefaultBaseDelay / 2, model.DefaultBaseDelay}
	if diff := cmp.Diff(want, sl.all()); diff != "" {
		t.Errorf("waits between the 3 attempts (-want +got), want exponential backoff with jitter:\n%s", diff)
	}
}

func testUnauthorized(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteError(w, http.StatusUnauthorized, "invalid api key")
	})
	var sl sleeps
	me := mustModelError(t, collect(t, open(h, srv, "bad-key", sl.policy(4)), request()))
	if srv.requests() != 1 {
		t.Errorf("server saw %d requests, want 1: a 401 is not retried", srv.requests())
	}
	if me.Status != http.StatusUnauthorized {
		t.Errorf("Status = %d, want 401", me.Status)
	}
	if !strings.Contains(me.Hint, h.KeyVar) {
		t.Errorf("hint %q does not name %s", me.Hint, h.KeyVar)
	}
	if !strings.Contains(me.Error(), "invalid api key") {
		t.Errorf("error %q lacks the server's message", me.Error())
	}
	if len(sl.all()) != 0 {
		t.Errorf("waited %v before failing, want no wait", sl.all())
	}
}

// The API key and the password of a base URL never show in an error, even
// when the server quotes them, or the base URL is named in a hint.
func testSecretsHidden(t *testing.T, h *Harness) {
	const key, password = "sk-conformance-0123456789", "base-url-password"
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteError(w, http.StatusUnauthorized, "invalid api key "+key+"; Authorization: Bearer "+key)
	})
	withPassword := func(base string) string {
		return strings.Replace(base, "http://", "http://user:"+password+"@", 1)
	}
	var sl sleeps
	down := newServer(t, func(http.ResponseWriter, *http.Request, int) {})
	down.Close() // nothing listens there any more
	for _, c := range []struct{ name, base string }{{"refused key", srv.URL}, {"unreachable", down.URL}} {
		m := h.New(Options{BaseURL: withPassword(c.base), APIKey: key, Model: ModelName, Retry: sl.policy(2)})
		me := mustModelError(t, collect(t, m, request()))
		msg := me.Error()
		if strings.Contains(msg, key) || strings.Contains(msg, password) {
			t.Errorf("%s: the error shows a secret: %s", c.name, msg)
		}
		if me.Hint == "" {
			t.Errorf("%s: no hint", c.name)
		}
	}
}

func testForbidden(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteError(w, http.StatusForbidden, "this key may not use this model")
	})
	var sl sleeps
	me := mustModelError(t, collect(t, open(h, srv, "test-key", sl.policy(4)), request()))
	if srv.requests() != 1 {
		t.Errorf("server saw %d requests, want 1: a 403 is not retried", srv.requests())
	}
	if me.Status != http.StatusForbidden {
		t.Errorf("Status = %d, want 403", me.Status)
	}
	if !strings.Contains(me.Hint, h.KeyVar) || !strings.Contains(me.Hint, ModelName) {
		t.Errorf("hint %q does not name both %s and the model %q", me.Hint, h.KeyVar, ModelName)
	}
}

func testNotFound(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteError(w, http.StatusNotFound, "no such model")
	})
	var sl sleeps
	me := mustModelError(t, collect(t, open(h, srv, "test-key", sl.policy(4)), request()))
	if srv.requests() != 1 {
		t.Errorf("server saw %d requests, want 1: a 404 is not retried", srv.requests())
	}
	if me.Status != http.StatusNotFound || !strings.Contains(me.Hint, ModelName) {
		t.Errorf("got status %d hint %q, want 404 with a hint naming the model %q", me.Status, me.Hint, ModelName)
	}
}

// testNotAnEventStream checks that a successful answer that is a JSON
// document or a web page, as from a wrong base URL, fails at once and says
// what arrived.
func testNotAnEventStream(t *testing.T, h *Harness) {
	for _, tt := range []struct{ contentType, body string }{
		{"application/json", `{"status":"ok","service":"gateway"}`},
		{"text/html; charset=utf-8", "<!doctype html><title>Sign in</title>"},
	} {
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
			w.Header().Set("Content-Type", tt.contentType)
			fmt.Fprint(w, tt.body)
		})
		var sl sleeps
		me := mustModelError(t, collect(t, open(h, srv, "test-key", sl.policy(4)), request()))
		if !errors.Is(me, model.ErrNotStream) || !strings.Contains(me.Error(), tt.body[:12]) {
			t.Errorf("%s: error %v does not wrap model.ErrNotStream and quote the body", tt.contentType, me)
		}
		if !strings.Contains(me.Hint, "base URL") {
			t.Errorf("%s: hint %q does not point at the base URL", tt.contentType, me.Hint)
		}
		if srv.requests() != 1 {
			t.Errorf("%s: server saw %d requests, want 1", tt.contentType, srv.requests())
		}
	}
}

// checkRetriedOnce serves a first try that fails with fail, then a reply of
// text, and checks the call succeeds with text after exactly two requests.
// stalling opens the provider with a short stall timeout.
func checkRetriedOnce(t *testing.T, h *Harness, stalling bool, fail func(w http.ResponseWriter, r *http.Request), text string) {
	t.Helper()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			fail(w, r)
			return
		}
		h.WriteReply(w, Reply{Text: []string{text}})
	})
	var sl sleeps
	var m cadre.Model
	if stalling {
		m = openStalling(h, srv, sl.policy(4))
	} else {
		m = open(h, srv, "test-key", sl.policy(4))
	}
	resp := mustSucceed(t, collect(t, m, request()))
	if resp.Message.Content != text || srv.requests() != 2 {
		t.Errorf("got %q after %d requests, want %q after 2", resp.Message.Content, srv.requests(), text)
	}
}

func testCutBeforeText(t *testing.T, h *Harness) {
	checkRetriedOnce(t, h, false, func(w http.ResponseWriter, r *http.Request) {
		h.WriteReply(w, Reply{Cut: true})
	}, "complete")
}

func testDroppedConnection(t *testing.T, h *Harness) {
	checkRetriedOnce(t, h, false, func(w http.ResponseWriter, r *http.Request) {
		hijackClose(t, w)
	}, "reconnected")
}

func testResetConnection(t *testing.T, h *Harness) {
	checkRetriedOnce(t, h, false, func(w http.ResponseWriter, r *http.Request) {
		resetConn(t, w)
	}, "after the reset")
}

func testErrorEventBeforeText(t *testing.T, h *Harness) {
	checkRetriedOnce(t, h, false, func(w http.ResponseWriter, r *http.Request) {
		h.WriteReply(w, Reply{ErrorEvent: "overloaded, try again"})
	}, "recovered")
}

func hijack(t *testing.T, w http.ResponseWriter) net.Conn {
	t.Helper()
	hj, ok := w.(http.Hijacker)
	if !ok {
		t.Error("the test server cannot hijack connections")
		return nil
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return nil
	}
	return conn
}

// resetConn closes w's connection with a reset, not a goodbye.
func resetConn(t *testing.T, w http.ResponseWriter) {
	t.Helper()
	conn := hijack(t, w)
	if conn == nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

func hijackClose(t *testing.T, w http.ResponseWriter) {
	t.Helper()
	if conn := hijack(t, w); conn != nil {
		conn.Close()
	}
}

// checkRestarted serves a first try that sends the text "partial answer"
// and then fails with fail, then a complete reply, and checks that the call
// succeeds with the complete reply alone after exactly two requests, with
// one restart between the two tries' text.
func checkRestarted(t *testing.T, h *Harness, stalling bool, fail func(w http.ResponseWriter, r *http.Request)) result {
	t.Helper()
	second := []string{"the whole ", "answer"}
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			fail(w, r)
			return
		}
		h.WriteReply(w, Reply{Text: second, Usage: cadre.Usage{InputTokens: 5, OutputTokens: 3}})
	})
	var sl sleeps
	var m cadre.Model
	if stalling {
		m = openStalling(h, srv, sl.policy(4))
	} else {
		m = open(h, srv, "test-key", sl.policy(4))
	}
	r := collect(t, m, request())
	resp := mustSucceed(t, r)
	if resp.Message.Content != "the whole answer" {
		t.Errorf("content = %q, want %q, the second reply alone", resp.Message.Content, "the whole answer")
	}
	if srv.requests() != 2 {
		t.Errorf("server saw %d requests, want 2: a reply that broke off is asked for again", srv.requests())
	}
	if r.restarts != 1 {
		t.Errorf("got %d restart chunks, want 1", r.restarts)
	}
	if diff := cmp.Diff(append([]string{"partial ", "answer"}, second...), r.texts); diff != "" {
		t.Errorf("text chunks of both tries (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(second, r.sinceRestart); diff != "" {
		t.Errorf("text chunks after the restart (-want +got), want the second reply's:\n%s", diff)
	}
	if len(sl.all()) != 1 {
		t.Errorf("waited %v, want one backoff before the second try", sl.all())
	}
	return r
}

// partial is the text a try sends before it breaks.
var partial = []string{"partial ", "answer"}

func testCutShort(t *testing.T, h *Harness) {
	checkRestarted(t, h, false, func(w http.ResponseWriter, r *http.Request) {
		h.WriteReply(w, Reply{Text: partial, Cut: true})
	})
}

func testCutAbruptly(t *testing.T, h *Harness) {
	checkRestarted(t, h, false, func(w http.ResponseWriter, r *http.Request) {
		h.WriteReply(w, Reply{Text: partial, Cut: true})
		hijackClose(t, w)
	})
}

func testResetAfterText(t *testing.T, h *Harness) {
	checkRestarted(t, h, false, func(w http.ResponseWriter, r *http.Request) {
		h.WriteReply(w, Reply{Text: partial, Cut: true})
		resetConn(t, w)
	})
}

func testErrorEventAfterText(t *testing.T, h *Harness) {
	checkRestarted(t, h, false, func(w http.ResponseWriter, r *http.Request) {
		h.WriteReply(w, Reply{Text: partial, ErrorEvent: "overloaded, try again"})
	})
}

func testInvalidAfterText(t *testing.T, h *Harness) {
	checkRestarted(t, h, false, func(w http.ResponseWriter, r *http.Request) {
		h.WriteReply(w, Reply{Text: partial, Invalid: invalidJSON})
	})
}

func testStallMidReply(t *testing.T, h *Harness) {
	checkRestarted(t, h, true, func(w http.ResponseWriter, r *http.Request) {
		h.WriteReply(w, Reply{Text: partial, Cut: true})
		<-r.Context().Done() // the connection stays open, silent
	})
}

// invalidJSON is the data of an event cut in the middle of its JSON.
const invalidJSON = `{"choices":[{"delta":{"content":"the rest`

func testInvalidBeforeText(t *testing.T, h *Harness) {
	checkRetriedOnce(t, h, false, func(w http.ResponseWriter, r *http.Request) {
		h.WriteReply(w, Reply{Invalid: invalidJSON})
	}, "valid at last")
}

// testCutEveryTime checks that a reply that breaks after text on every try
// ends in an error, after one restart between each two tries.
func testCutEveryTime(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(w, Reply{Text: partial, Cut: true})
	})
	var sl sleeps
	r := collect(t, open(h, srv, "test-key", sl.policy(3)), request())
	me := mustModelError(t, r)
	if !errors.Is(me, cadre.ErrIncompleteStream) || !strings.Contains(me.Error(), "3 attempts") {
		t.Errorf("error %v does not wrap cadre.ErrIncompleteStream and say how many attempts were made", me)
	}
	if srv.requests() != 3 || r.restarts != 2 {
		t.Errorf("server saw %d requests and the caller %d restarts, want 3 and 2", srv.requests(), r.restarts)
	}
	if diff := cmp.Diff(partial, r.sinceRestart); diff != "" {
		t.Errorf("text after the last restart (-want +got):\n%s", diff)
	}
}

// testInvalidEveryTime checks that a server that keeps sending an event
// that is not JSON ends in an error that names the provider and says the
// reply was not valid; never a panic.
func testInvalidEveryTime(t *testing.T, h *Harness) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(w, Reply{Text: partial, Invalid: invalidJSON})
	})
	var sl sleeps
	r := collect(t, open(h, srv, "test-key", sl.policy(2)), request())
	me := mustModelError(t, r)
	if !errors.Is(me, model.ErrInvalidReply) || !strings.Contains(me.Error(), "not valid") {
		t.Errorf("error %v does not wrap model.ErrInvalidReply and say the reply was not valid", me)
	}
	if me.Provider == "" || !strings.HasPrefix(me.Error(), me.Provider+":") {
		t.Errorf("error %q does not begin with the provider's name %q", me.Error(), me.Provider)
	}
	if me.Hint == "" {
		t.Error("hint is empty")
	}
	if srv.requests() != 2 || r.restarts != 1 {
		t.Errorf("server saw %d requests and the caller %d restarts, want 2 and 1", srv.requests(), r.restarts)
	}
}

// openStalling returns the provider under test with the short
// StallTimeout.
func openStalling(h *Harness, srv *server, pol model.RetryPolicy) cadre.Model {
	return h.New(Options{BaseURL: srv.URL, APIKey: "test-key", Model: ModelName, Retry: pol, StallTimeout: StallTimeout})
}

func testStallBeforeReply(t *testing.T, h *Harness) {
	checkRetriedOnce(t, h, true, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // no headers, no body, until the client gives up
	}, "awake")
}

// testStallAfterHeaders checks that a server that sends its headers and
// then nothing is abandoned after the stall timeout and asked again.
func testStallAfterHeaders(t *testing.T, h *Harness) {
	checkRetriedOnce(t, h, true, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}, "awake")
}

// testSteadyStream checks that the stall timeout counts silence, not the
// length of a reply: events arrive a quarter of StallTimeout apart, for
// longer than StallTimeout in all.
func testSteadyStream(t *testing.T, h *Harness) {
	pieces := []string{"one ", "two ", "three ", "four ", "five ", "six"}
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h.WriteReply(&pacedWriter{ResponseWriter: w, pause: StallTimeout / 4}, Reply{Text: pieces, Usage: cadre.Usage{InputTokens: 1, OutputTokens: 6}})
	})
	var sl sleeps
	r := collect(t, openStalling(h, srv, sl.policy(1)), request())
	mustSucceed(t, r)
	if diff := cmp.Diff(pieces, r.texts); diff != "" {
		t.Errorf("text chunks (-want +got):\n%s", diff)
	}
}

// pacedWriter pauses after each flush, as a server that streams slowly.
type pacedWriter struct {
	http.ResponseWriter
	pause time.Duration
}

func (w *pacedWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	time.Sleep(w.pause)
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
	for c, err := range open(h, srv, "test-key", sl.policy(4)).Stream(ctx, request()) {
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
	for c, e := range open(h, srv, "test-key", sl.policy(4)).Stream(ctx, request()) {
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
	m := open(h, srv, "test-key", sl.policy(0))
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

// StreamClient returns an HTTP client that answers every request with
// 200 and body() as an event stream, from memory: for a fuzz target,
// whose coverage a server's goroutines would make differ between runs of
// one input.
func StreamClient(body func() []byte) *http.Client {
	return &http.Client{Transport: streamBody(body)}
}

type streamBody func() []byte

func (b streamBody) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(bytes.NewReader(b())), Request: r}, nil
}
