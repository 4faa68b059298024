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
