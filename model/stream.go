package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/redact"
)

// DefaultStallTimeout is how long a model server may send nothing, before
// its response headers or between two reads of its stream, before the try
// is abandoned. It is long because a local server may load a model or read
// a long prompt before its first byte.
const DefaultStallTimeout = 5 * time.Minute

// ErrStalled is wrapped by the error of a try whose server sent nothing for
// the stall timeout. Such a try is retried like a timeout.
var ErrStalled = errors.New("model: the server stopped sending")

// ErrMaxTokens is wrapped by the error of a reply that reached its token
// limit before it held any text or tool call: there is nothing to hand to
// the agent, and asking again would spend the same tokens the same way. It
// is not retried.
var ErrMaxTokens = errors.New("model: the reply reached its token limit before it said anything")

// ErrInvalidReply is wrapped by the error of a try whose server sent an
// event that is not valid JSON, or not of the shape the API defines: a
// reply mangled on its way (a proxy, a cut line) more often than a server
// that speaks another language. It is retried like a broken stream; when
// every try fails so, the error says so.
var ErrInvalidReply = errors.New("model: the server's reply was not valid")

// ErrNotStream is wrapped by the error of a try whose server answered a
// streaming request with a JSON document or a web page instead of an event
// stream: usually a base URL that points at something other than the API.
// It is not retried.
var ErrNotStream = errors.New("model: the server did not answer with an event stream")

// A Call is one model call as [Stream] runs it: a way to make one try, and
// what to say when tries fail.
type Call struct {
	// Provider names the provider in errors and logs: "openai", "ollama",
	// "anthropic".
	Provider string
	Policy   RetryPolicy
	// StallTimeout abandons a try when the server sends nothing for this
	// long: no response headers, no byte of the body. The try's Middleware
	// or Alive tells the watchdog what arrived. Zero means
	// DefaultStallTimeout; a negative value means no limit.
	StallTimeout time.Duration
	// Attempt makes one try. It hands each piece of text to t.Emit as it
	// arrives, lets t see the server's signs of life (t.Middleware on the
	// HTTP request, or t.Alive), and returns the complete response; a nil
	// response with a nil error counts as a stream that ended early. When
	// Emit returns false the caller has stopped reading: Attempt should
	// return at once, and its result is ignored.
	Attempt func(ctx context.Context, t *Try) (*cadre.Response, error)
	// Hint, when not nil, returns what a person should check after the call
	// failed with err (whose HTTP status is status, or 0), or "". An empty
	// hint leaves the choice to [Stream], which has hints for rate limits,
	// server failures, stalls and cut streams.
	Hint func(err error, status int) string
	// Logger, when not nil, hears about each retry at level Warn.
	Logger *slog.Logger
	// Redactor hides secrets (the API key, the base URL's password) in
	// the errors Stream returns and logs. Nil still hides URL userinfo
	// and credential headers.
	Redactor *redact.Redactor
}

// A Try is one attempt of a [Call], as its Attempt function sees it. Emit
// must be called from the goroutine running Attempt; Alive and Middleware
// from any.
type Try struct {
	emit  func(string) bool
	alive func()
}

// Emit hands a piece of text to the caller and reports whether the caller
// still reads. Empty text is ignored. When the try fails after it emitted
// text and is retried, [Stream] tells the caller to drop that text before
// the next try begins.
func (t *Try) Emit(text string) bool {
	t.Alive()
	return t.emit(text)
}

// Alive tells the stall watchdog that the server sent something.
func (t *Try) Alive() {
	if t.alive != nil {
		t.alive()
	}
}

// Middleware is an HTTP middleware, of the shape both provider SDKs take
// (option.WithMiddleware), that counts the response headers and every read
// of the response body that returns data as signs of life. A successful
// response whose Content-Type is JSON or HTML becomes an error wrapping
// [ErrNotStream] that quotes the start of the body.
func (t *Try) Middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	resp, err := next(req)
	if err != nil || resp == nil {
		return resp, err
	}
	t.Alive()
	if err := notStream(resp); err != nil {
		return nil, err
	}
	if resp.Body != nil {
		resp.Body = &liveBody{ReadCloser: resp.Body, alive: t.Alive}
	}
	return resp, nil
}

// notStream returns an error when resp succeeded but is plainly not an
// event stream. Other content types, or none, are left to the SDK: some
// servers label their streams loosely.
func notStream(resp *http.Response) error {
	if resp.StatusCode < 200 || resp.StatusCode > 299 || resp.Body == nil {
		return nil
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "application/json" && mt != "text/html" {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
	resp.Body.Close()
	return fmt.Errorf("%w: it sent %s (HTTP %d): %s", ErrNotStream, mt, resp.StatusCode, strings.TrimSpace(strings.ToValidUTF8(string(b), "")))
}

// liveBody reports each read that returns data.
type liveBody struct {
	io.ReadCloser
	alive func()
}

func (b *liveBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.alive()
	}
	return n, err
}

// Stream runs c under its retry policy and returns the reply as a
// [cadre.Model] stream: text chunks as they arrive, then exactly one chunk
// with the complete response, or an error.
//
// A try during which the server sent nothing for c.StallTimeout is
// abandoned with an error wrapping [ErrStalled]. A failed try is made again
// when [Retryable] says so, tries remain and ctx is not done, whether or
// not it had yielded text: a try that had is followed by a chunk with
// Restart set, before the wait, so that the caller drops the text it
// received; the final response is the complete reply of the last try
// alone. Errors are *[cadre.ModelError]s; when the last try had yielded
// text they also wrap [cadre.ErrIncompleteStream]. When ctx is done the
// error wraps ctx.Err().
func Stream(ctx context.Context, c Call) iter.Seq2[*cadre.Chunk, error] {
	return func(yield func(*cadre.Chunk, error) bool) {
		pol := c.Policy.WithDefaults()
		stall := c.StallTimeout
		if stall == 0 {
			stall = DefaultStallTimeout
		}
		// yielded: this try handed text to the caller.
		yielded, stopped := false, false
		emit := func(text string) bool {
			if stopped {
				return false
			}
			if text == "" {
				return true
			}
			yielded = true
			if !yield(&cadre.Chunk{Text: text}, nil) {
				stopped = true
			}
			return !stopped
		}
		for attempt := 1; ; attempt++ {
			yielded = false
			resp, err := c.try(ctx, stall, emit)
			if stopped {
				return
			}
			if err == nil && resp == nil {
				err = cadre.ErrIncompleteStream
			}
			if err == nil {
				yield(&cadre.Chunk{Response: resp}, nil)
				return
			}
			if ctx.Err() != nil {
				yield(nil, c.fail(fmt.Errorf("call abandoned: %w", ctx.Err()), 0))
				return
			}
			retryable := Retryable(err) // of the failure itself, not of the broken reply
			if yielded {
				if !errors.Is(err, cadre.ErrIncompleteStream) {
					err = fmt.Errorf("%w: %w", cadre.ErrIncompleteStream, err)
				}
				err = fmt.Errorf("the reply broke off after it had started: %w", err)
			}
			if !retryable {
				yield(nil, c.fail(err, Status(err)))
				return
			}
			if attempt >= pol.MaxAttempts {
				if attempt > 1 {
					err = fmt.Errorf("gave up after %d attempts: %w", attempt, err)
				}
				yield(nil, c.fail(err, Status(err)))
				return
			}
			if yielded && !yield(&cadre.Chunk{Restart: true}, nil) {
				return
			}
			d := pol.wait(attempt, err)
			if c.Logger != nil {
				c.Logger.WarnContext(ctx, "model call failed, retrying",
					"provider", c.Provider, "attempt", attempt, "max_attempts", pol.MaxAttempts, "wait", d, "text_discarded", yielded, "err", c.Redactor.Error(err))
			}
			if rt := ContextRetryTrace(ctx); rt != nil && rt.Retry != nil {
				rt.Retry(c.Provider, attempt, d, c.Redactor.Error(err))
			}
			if serr := pol.Sleep(ctx, d); serr != nil {
				yield(nil, c.fail(fmt.Errorf("call abandoned while waiting to retry after %d attempts (last error: %v): %w", attempt, err, serr), Status(err)))
				return
			}
		}
	}
}

// try makes one try with its own context, so that whatever the try left
// open (a response body) is released when it returns, and so that the
// stall watchdog can end it.
func (c Call) try(ctx context.Context, stall time.Duration, emit func(string) bool) (*cadre.Response, error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	t := &Try{emit: emit}
	if stall > 0 {
		watchdog := time.AfterFunc(stall, func() { cancel(ErrStalled) })
		defer watchdog.Stop()
		t.alive = func() { watchdog.Reset(stall) }
	}
	resp, err := c.Attempt(actx, t)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(actx), ErrStalled) {
		return nil, fmt.Errorf("%w: nothing arrived for %v", ErrStalled, stall)
	}
	return resp, err
}

func (c Call) fail(err error, status int) error {
	hint := ""
	if c.Hint != nil {
		hint = c.Hint(err, status)
	}
	if hint == "" {
		hint = defaultHint(err, status)
	}
	return &cadre.ModelError{Provider: c.Provider, Status: status, Hint: c.Redactor.String(hint), Err: c.Redactor.Error(err)}
}

// badRequestHint is the hint for a request the server refused as
// invalid.
const badRequestHint = "the server rejected the request, for the reason it gives: often a wrong model name, a model without tool calling, or a conversation longer than the model's context"

// defaultHint says what to do after a failure no provider hint covers.
func defaultHint(err error, status int) string {
	var se *ServerError
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded) && !Retryable(err):
		return ""
	case errors.Is(err, ErrMaxTokens):
		return "the model spent its whole token limit before answering, as reasoning models may: raise the model's max tokens"
	case errors.Is(err, ErrNotStream):
		return "check the base URL: it must point at the model API itself (for OpenAI-compatible servers it usually ends in /v1), not a web page or a proxy that does not stream"
	case errors.Is(err, ErrInvalidReply):
		return "the model server's reply could not be read (the error says how): check that the base URL points at a server speaking this provider's API, and that no proxy in between alters the stream"
	case errors.Is(err, ErrStalled):
		return "the model server stopped sending: if it is only slow, loading a large model or reading a long prompt, allow a longer stall timeout"
	case status == http.StatusTooManyRequests:
		return "the server is rate limiting: wait a minute and try again, or run fewer agents at once"
	case status == 529:
		return "the model server is overloaded: try again in a few minutes"
	case status >= 500:
		return "the model server kept failing: try again later"
	case status == http.StatusBadRequest, status == http.StatusUnprocessableEntity:
		return badRequestHint
	case errors.Is(err, cadre.ErrIncompleteStream):
		return "the model server closed the stream before the reply was complete: try again"
	case Unreachable(err):
		return "the model server could not be reached: check the base URL and that the server is running"
	case errors.As(err, &se):
		return "the model server reported an error while streaming: try again later"
	case status == 0 && Retryable(err):
		return "the connection to the model server broke: check the network and any proxy in between"
	}
	return ""
}
