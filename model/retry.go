package model

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cadre-ai/cadre"
)

// Defaults of RetryPolicy. A zero field of RetryPolicy means its default.
const (
	DefaultMaxAttempts = 4
	DefaultBaseDelay   = 500 * time.Millisecond
	DefaultMaxDelay    = 30 * time.Second
)

// RetryPolicy says how often and how patiently a failed model call is tried
// again. Its zero value is the default policy.
type RetryPolicy struct {
	// MaxAttempts is the number of tries in all, the first included; 1 means
	// no retries. Zero means DefaultMaxAttempts.
	MaxAttempts int
	// BaseDelay is the backoff before the second try; each later try
	// doubles it, up to MaxDelay. The wait actually taken is a random
	// fraction of it (full jitter). Zero means DefaultBaseDelay.
	BaseDelay time.Duration
	// MaxDelay caps every wait, Retry-After included. Zero means
	// DefaultMaxDelay.
	MaxDelay time.Duration

	// Sleep waits for d or until ctx is done, whichever comes first, and
	// returns ctx's error in the second case. Nil means a timer. Tests set a
	// function that records d and returns at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0, 1) used for jitter. Nil means
	// math/rand/v2.Float64.
	Rand func() float64
	// Now is the clock used to read Retry-After dates. Nil means time.Now.
	Now func() time.Time
}

// WithDefaults returns p with zero fields set to their defaults.
func (p RetryPolicy) WithDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultBaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultMaxDelay
	}
	if p.Sleep == nil {
		p.Sleep = sleep
	}
	if p.Rand == nil {
		p.Rand = rand.Float64
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	return p
}

// Backoff returns the wait before try number attempt+1, after attempt
// failed tries: a random duration in [0, min(MaxDelay, BaseDelay·2^(attempt-1))).
// p must have its defaults set.
func (p RetryPolicy) Backoff(attempt int) time.Duration {
	ceiling := p.MaxDelay
	if attempt < 1 {
		attempt = 1
	}
	if attempt <= 32 {
		if d := p.BaseDelay << (attempt - 1); d > 0 && d < ceiling {
			ceiling = d
		}
	}
	r := p.Rand()
	if r < 0 || r >= 1 {
		r = 0
	}
	return time.Duration(r * float64(ceiling))
}

// wait returns how long to wait after the attempt-th failure, err: the
// server's Retry-After when it sent one, else the backoff. Both are capped
// by MaxDelay.
func (p RetryPolicy) wait(attempt int, err error) time.Duration {
	var se *ServerError
	if errors.As(err, &se) {
		if d, ok := RetryAfter(se.Header, p.Now()); ok {
			return min(d, p.MaxDelay)
		}
	}
	return p.Backoff(attempt)
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RetryAfter reads how long a server asked to wait from h: the
// retry-after-ms header (milliseconds), else Retry-After in seconds or as an
// HTTP date (relative to now). It reports false when neither is present or
// readable. A date in the past is a wait of zero.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || s > 1e9 {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// A ServerError is a failure a model server reported: an HTTP status with
// its headers, or an error event inside a stream (Header nil). Providers turn
// their SDK's errors into ServerErrors so that [Retryable] and the hints can
// read them.
type ServerError struct {
	// Status is the HTTP status. For an error event inside a stream it is
	// the status the event stands for (429 for a rate limit, 529 for an
	// overload), or 0 when the event does not say.
	Status int
	// Type is the server's error type or code, such as "rate_limit_error".
	Type string
	// Message is the server's explanation, as it gave it.
	Message string
	Header  http.Header
}

func (e *ServerError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = e.Type
	}
	if msg == "" {
		if e.Status != 0 {
			msg = http.StatusText(e.Status)
		}
		if msg == "" {
			msg = "error reported by the server"
		}
	}
	if e.Header == nil {
		return "server error in stream: " + msg
	}
	return "server said: " + msg
}

// Retryable reports whether a failed try may be made again: a status of
// 408, 409, 429 or 5xx, an error event inside a stream (unless its status
// says otherwise), a reset, refused or timed-out connection, a server that
// stalled ([ErrStalled]), a stream that ended early or sent an event that
// is not valid ([ErrInvalidReply]). Context cancellation is not retryable.
func Retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) {
		return false
	}
	var se *ServerError
	if errors.As(err, &se) {
		switch s := se.Status; {
		case s == 0 && se.Header == nil:
			return true
		case s == http.StatusRequestTimeout, s == http.StatusConflict, s == http.StatusTooManyRequests, s >= 500:
			return true
		}
		return false
	}
	switch {
	case errors.Is(err, ErrStalled),
		errors.Is(err, ErrInvalidReply),
		errors.Is(err, cadre.ErrIncompleteStream),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, net.ErrClosed),
		isTimeout(err):
		return true
	}
	return false
}

// Unreachable reports whether err says that no connection to the server
// could be made: the name did not resolve, the connection was refused, or
// dialling timed out. Providers use it to hint at the base URL.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	var dns *net.DNSError
	if errors.As(err, &dns) || errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Status returns the HTTP status carried by err, or 0.
func Status(err error) int {
	var se *ServerError
	if errors.As(err, &se) {
		return se.Status
	}
	var me *cadre.ModelError
	if errors.As(err, &me) {
		return me.Status
	}
	return 0
}
