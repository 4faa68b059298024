package cadre

import (
	"errors"
	"fmt"
	"iter"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// chunks streams cs, then err when not nil.
func chunks(err error, cs ...*Chunk) iter.Seq2[*Chunk, error] {
	return func(yield func(*Chunk, error) bool) {
		for _, c := range cs {
			if !yield(c, nil) {
				return
			}
		}
		if err != nil {
			yield(nil, err)
		}
	}
}

func TestCollect(t *testing.T) {
	final := &Response{Message: Message{Role: RoleAssistant, Content: "whole"}}
	restarted := chunks(nil, &Chunk{Text: "wh"}, &Chunk{Restart: true}, &Chunk{Text: "who"}, &Chunk{Text: "le"}, &Chunk{Response: final})
	tests := []struct {
		name      string
		seq       iter.Seq2[*Chunk, error]
		wantSeen  []string
		wantText  []string
		wantResp  *Response
		wantError string
	}{
		{name: "restart is passed on, the response is the last try's", seq: restarted,
			wantSeen: []string{"wh", "<restart>", "who", "le"}, wantText: []string{"wh", "who", "le"}, wantResp: final},
		{name: "no final chunk", seq: chunks(nil, &Chunk{Text: "wh"}), wantSeen: []string{"wh"}, wantText: []string{"wh"}, wantError: ErrIncompleteStream.Error()},
		{name: "error", seq: chunks(errors.New("boom"), &Chunk{Text: "wh"}, &Chunk{Restart: true}),
			wantSeen: []string{"wh", "<restart>"}, wantText: []string{"wh"}, wantError: "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen []string
			resp, err := CollectFunc(tt.seq, func(c *Chunk) {
				if c.Restart {
					seen = append(seen, "<restart>")
				}
				if c.Text != "" {
					seen = append(seen, c.Text)
				}
			})
			check := func(what string, got []string, want []string, resp *Response, err error) {
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s: chunks seen (-want +got):\n%s", what, diff)
				}
				if resp != tt.wantResp {
					t.Errorf("%s: response %+v, want %+v", what, resp, tt.wantResp)
				}
				if got := fmt.Sprint(err); tt.wantError != "" && got != tt.wantError || tt.wantError == "" && err != nil {
					t.Errorf("%s: error %v, want %q", what, err, tt.wantError)
				}
			}
			check("CollectFunc", seen, tt.wantSeen, resp, err)
			var texts []string
			resp, err = Collect(tt.seq, func(s string) { texts = append(texts, s) })
			check("Collect", texts, tt.wantText, resp, err)
		})
	}
}
