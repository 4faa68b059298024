package temporal

import (
	"context"
	"errors"
	"iter"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cadre-ai/cadre"
)

// paced is a model that sends a chunk of text after each of its gaps, then
// its reply, or nothing more until its call is cancelled.
type paced struct {
	gaps []time.Duration
	hang bool
}

func (m paced) Stream(ctx context.Context, req *cadre.Request) iter.Seq2[*cadre.Chunk, error] {
	return func(yield func(*cadre.Chunk, error) bool) {
		for _, g := range m.gaps {
			select {
			case <-time.After(g):
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			}
			if !yield(&cadre.Chunk{Text: "x"}, nil) {
				return
			}
		}
		if m.hang {
			<-ctx.Done()
			yield(nil, ctx.Err())
			return
		}
		yield(&cadre.Chunk{Response: &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: "done"}}}, nil)
	}
}

// A model call gives up at the inactivity limit counted from its start or
// its last chunk, and not while chunks come within it. The clock is
// synctest's.
func TestCollectInactivity(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name     string
		model    paced
		limit    time.Duration
		inactive bool
		took     time.Duration
	}{
		{"silent", paced{hang: true}, 2 * s, true, 2 * s},
		{"silent after chunks", paced{gaps: []time.Duration{s, s}, hang: true}, 2 * s, true, 4 * s},
		{"chunks within the limit", paced{gaps: []time.Duration{1500 * time.Millisecond, 1500 * time.Millisecond, 1500 * time.Millisecond, 1500 * time.Millisecond}}, 2 * s, false, 6 * s},
		{"a gap past the limit", paced{gaps: []time.Duration{s, 3 * s}}, 2 * s, true, 3 * s},
		{"no limit", paced{gaps: []time.Duration{10 * s}}, 0, false, 10 * s},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				began := time.Now()
				resp, err := collect(t.Context(), tc.model, &cadre.Request{}, tc.limit)
				if tc.inactive != errors.Is(err, errInactive) {
					t.Fatalf("err %v, want inactive %v", err, tc.inactive)
				}
				if !tc.inactive && (err != nil || resp.Message.Content != "done") {
					t.Fatalf("reply %+v, err %v", resp, err)
				}
				if took := time.Since(began); took != tc.took {
					t.Errorf("the call ended after %s of the bubble's clock, want %s", took, tc.took)
				}
			})
		})
	}
}
