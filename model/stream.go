package model

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"

	"github.com/cadre-ai/cadre"
)

// A Call is one model call as [Stream] runs it: a way to make one try, and
// what to say when tries fail.
type Call struct {
	// Provider names the provider in errors and logs: "openai", "ollama",
	// "anthropic".
	Provider string
	Policy   RetryPolicy
	// Attempt makes one try. It passes each piece of text to emit as it
	// arrives and returns the complete response; a nil response with a nil
	// error counts as a stream that ended early. When emit returns false the
	// caller has stopped reading: Attempt should return at once, and its
	// result is ignored.
	Attempt func(ctx context.Context, emit func(text string) bool) (*cadre.Response, error)
	// Hint, when not nil, returns what a person should check after the call
	// failed with err (whose HTTP status is status, or 0), or "".
	Hint func(err error, status int) string
	// Logger, when not nil, hears about each retry at level Warn.
	Logger *slog.Logger
}

// Stream runs c under its retry policy and returns the reply as a
// [cadre.Model] stream: text chunks as they arrive, then exactly one chunk
// with the complete response, or an error.
//
// A failed try is made again only when [Retryable] says so, tries remain,
// ctx is not done, and no chunk was yielded yet. Errors are
// *[cadre.ModelError]s; once text was yielded they also wrap
// [cadre.ErrIncompleteStream]. When ctx is done the error wraps ctx.Err().
func Stream(ctx context.Context, c Call) iter.Seq2[*cadre.Chunk, error] {
	return func(yield func(*cadre.Chunk, error) bool) {
		pol := c.Policy.WithDefaults()
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
			resp, err := runAttempt(ctx, c.Attempt, emit)
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
				yield(nil, c.fail(fmt.Errorf("call abandoned: %w", ctx.Err()), 0, ""))
				return
			}
			if yielded {
				if !errors.Is(err, cadre.ErrIncompleteStream) {
					err = fmt.Errorf("%w: %w", cadre.ErrIncompleteStream, err)
				}
				yield(nil, c.fail(fmt.Errorf("the reply broke off after it had started: %w", err), Status(err), "the model server closed the stream early; try again"))
				return
			}
			if !Retryable(err) {
				yield(nil, c.fail(err, Status(err), ""))
				return
			}
			if attempt >= pol.MaxAttempts {
				if attempt > 1 {
					err = fmt.Errorf("gave up after %d attempts: %w", attempt, err)
				}
				yield(nil, c.fail(err, Status(err), ""))
				return
			}
			d := pol.wait(attempt, err)
			if c.Logger != nil {
				c.Logger.WarnContext(ctx, "model call failed, retrying",
					"provider", c.Provider, "attempt", attempt, "max_attempts", pol.MaxAttempts, "wait", d, "err", err)
			}
			if serr := pol.Sleep(ctx, d); serr != nil {
				yield(nil, c.fail(fmt.Errorf("call abandoned while waiting to retry after %d attempts (last error: %v): %w", attempt, err, serr), Status(err), ""))
				return
			}
		}
	}
}

// runAttempt makes one try with its own context, so that whatever the try
// left open (a response body) is released when it returns.
func runAttempt(ctx context.Context, attempt func(context.Context, func(string) bool) (*cadre.Response, error), emit func(string) bool) (*cadre.Response, error) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	return attempt(actx, emit)
}

func (c Call) fail(err error, status int, fallback string) error {
	hint := ""
	if c.Hint != nil {
		hint = c.Hint(err, status)
	}
	if hint == "" {
		hint = fallback
	}
	if hint == "" {
		hint = defaultHint(err, status)
	}
	return &cadre.ModelError{Provider: c.Provider, Status: status, Hint: hint, Err: err}
}

func defaultHint(err error, status int) string {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded) && !Retryable(err):
		return ""
	case status == 429:
		return "the server is rate limiting: wait a little, lower limits.max_concurrent, or allow more retry attempts"
	case status >= 500:
		return "the model server kept failing: try again later"
	case status == 400:
		return "the server rejected the request: check the model name and that the model supports tool calling"
	case status == 0 && Retryable(err):
		return "the model server could not be reached or dropped the connection: check the base URL and the network"
	}
	return ""
}
