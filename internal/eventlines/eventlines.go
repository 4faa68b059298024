// Package eventlines is how the SQL stores keep a run's events: many in
// one row, each as cadre.Event's JSON on a line of its own that starts
// with its Seq. A row per event cost its insertion and its key, which was
// most of what a store spent on events; a row per batch costs one for all
// of them. JSON as cadre writes it holds no newline.
package eventlines

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/cadre-ai/cadre"
)

// Append appends an event's line to b: obj, the event's JSON object
// encoded without "seq", with "seq" first. A row's lines are separated by
// a newline, which the caller appends between them.
func Append(b, obj []byte, seq int64) []byte {
	b = strconv.AppendInt(append(b, `{"seq":`...), seq, 10)
	if len(obj) > 2 {
		b = append(b, ',')
	}
	return append(b, obj[1:]...)
}

// maxRowBuf is the largest buffer of a row that Reset keeps.
const maxRowBuf = 1 << 20

// Rows builds the rows of a batch of events: for each run, its events'
// lines. Row i, for i below len(Run), is run Run[i]'s events First[i] to
// Last[i], as Text[i] (Text may be longer: Reset keeps its buffers). Rows
// come in the order their runs first came.
type Rows struct {
	Run         []string
	First, Last []int64
	Text        [][]byte
	at          map[string]int // index in Run
}

// Add appends an event's JSON object, encoded without "seq", as its run's
// next line. A run's events must come in the order of their Seq, with none
// missing.
func (r *Rows) Add(run string, seq int64, obj []byte) {
	if r.at == nil {
		r.at = map[string]int{}
	}
	i, ok := r.at[run]
	if !ok {
		i = len(r.Run)
		r.at[run] = i
		r.Run = append(r.Run, run)
		r.First = append(r.First, seq)
		r.Last = append(r.Last, seq)
		if i == len(r.Text) {
			r.Text = append(r.Text, nil)
		}
	} else {
		r.Text[i] = append(r.Text[i], '\n')
		r.Last[i] = seq
	}
	r.Text[i] = Append(r.Text[i], obj, seq)
}

// Reset empties r, keeping its buffers but one grown past a MiB by a huge
// batch.
func (r *Rows) Reset() {
	r.Run, r.First, r.Last = r.Run[:0], r.First[:0], r.Last[:0]
	for i := range r.Text {
		if cap(r.Text[i]) > maxRowBuf {
			r.Text[i] = nil
		}
		r.Text[i] = r.Text[i][:0]
	}
	clear(r.at)
}

// Decode appends to out the events of a row whose first line is event
// first, those with a Seq greater than after. Each line's Seq is read
// from its start, so that a payload's own fields (a RawPayload's) cannot
// change it, and a line at or before after is not decoded.
func Decode(out []cadre.Event, payload []byte, first, after int64) ([]cadre.Event, error) {
	i := int64(0)
	for line := range bytes.SplitSeq(payload, []byte{'\n'}) {
		seq, ok := leadingSeq(line)
		if !ok {
			seq = first + i
		}
		i++
		if seq <= after {
			continue
		}
		var ev cadre.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return out, fmt.Errorf("the event stored as %d: %w", seq, err)
		}
		ev.Seq = seq
		out = append(out, ev)
	}
	return out, nil
}

// leadingSeq reads the seq a line starts with.
func leadingSeq(line []byte) (int64, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(`{"seq":`))
	if !ok {
		return 0, false
	}
	end := bytes.IndexAny(rest, ",}")
	if end <= 0 {
		return 0, false
	}
	seq, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	return seq, err == nil
}
