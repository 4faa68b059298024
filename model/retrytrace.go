package model

import (
	"context"
	"time"
)

// A RetryTrace hears about the retries of the model calls made with a
// context that carries it (see WithRetryTrace), as net/http/httptrace does
// for HTTP requests: instrumentation counts retries this way without the
// providers knowing of it.
type RetryTrace struct {
	// Retry, when not nil, is called before each wait for another try:
	// attempt is the number of the try that failed, wait how long Stream
	// waits, and err why the try failed (with secrets hidden). It is
	// called from the goroutine reading the stream. When the failed try
	// had streamed text, the stream has just yielded the chunk with
	// Restart set that voids it, and err wraps cadre.ErrIncompleteStream.
	Retry func(provider string, attempt int, wait time.Duration, err error)
}

type retryTraceKey struct{}

// WithRetryTrace returns ctx carrying t; model calls made with it tell t
// of their retries.
func WithRetryTrace(ctx context.Context, t *RetryTrace) context.Context {
	return context.WithValue(ctx, retryTraceKey{}, t)
}

// ContextRetryTrace returns the RetryTrace ctx carries, or nil.
func ContextRetryTrace(ctx context.Context) *RetryTrace {
	t, _ := ctx.Value(retryTraceKey{}).(*RetryTrace)
	return t
}
