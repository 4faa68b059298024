// Package agentrec is how the SQLite store keeps an agent's record with
// a journal entry (the one AppendAgent writes with it) rather than in a
// row of agents: the record, less its run and ID (the entry's), in a
// compact binary form that only the store reads, on every ListAgents. An agent
// whose start and end are each one record then costs one row of agents,
// inserted at its end, instead of a row inserted and then updated.
package agentrec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/cadre-ai/cadre"
)

// format is the first byte of a record: the layout that follows, for a
// later build to tell it from another.
const format = 1

// Append appends a's record: format, then the fields of an AgentRecord
// after its run and ID, in their order, each string as its length (a
// uvarint) and its bytes, each number a varint, and each time a byte
// saying whether it is set and, when it is, its Unix seconds (a varint)
// and nanoseconds (a uvarint), in UTC. Binary reads back in a tenth of the
// time JSON takes.
func Append(b []byte, a *cadre.AgentRecord) []byte {
	str := func(v string) { b = append(binary.AppendUvarint(b, uint64(len(v))), v...) }
	num := func(v int64) { b = binary.AppendVarint(b, v) }
	when := func(t time.Time) {
		if t.IsZero() {
			b = append(b, 0)
			return
		}
		b = binary.AppendUvarint(binary.AppendVarint(append(b, 1), t.Unix()), uint64(t.Nanosecond()))
	}
	b = append(b, format)
	str(string(a.Parent))
	num(int64(a.Depth))
	str(a.Definition)
	str(a.Model)
	str(a.Task)
	str(string(a.Status))
	num(int64(a.Turns))
	num(a.Usage.InputTokens)
	num(a.Usage.OutputTokens)
	when(a.Started)
	when(a.Ended)
	str(a.Result)
	str(a.Error)
	return b
}

// Size is about how many bytes Append writes for a, to size a buffer.
func Size(a *cadre.AgentRecord) int {
	return 64 + len(a.Parent) + len(a.Definition) + len(a.Model) + len(a.Task) + len(a.Status) + len(a.Result) + len(a.Error)
}

// Decode reads back the record Append wrote for agent id of run.
func Decode(run, id string, data []byte) (*cadre.AgentRecord, error) {
	switch {
	case len(data) == 0:
		return nil, errors.New("the record kept in its journal is empty")
	case data[0] != format:
		return nil, fmt.Errorf("the record kept in its journal has format %d, which this build does not know: a newer cadre wrote it", data[0])
	}
	d := decoder{rest: data[1:], size: len(data)}
	a := &cadre.AgentRecord{Run: run, ID: cadre.AgentID(id)}
	a.Parent = cadre.AgentID(d.str("parent"))
	a.Depth = int(d.num("depth"))
	a.Definition = d.str("definition")
	a.Model = d.str("model")
	a.Task = d.str("task")
	a.Status = cadre.Status(d.str("status"))
	a.Turns = int(d.num("turns"))
	a.Usage.InputTokens = d.num("input tokens")
	a.Usage.OutputTokens = d.num("output tokens")
	a.Started = d.when("start time")
	a.Ended = d.when("end time")
	a.Result = d.str("result")
	a.Error = d.str("error")
	if d.err == nil && len(d.rest) != 0 {
		d.fail("end, which has bytes after the last field")
	}
	if d.err != nil {
		return nil, d.err
	}
	return a, nil
}

// A decoder reads a record's fields from rest; the first that is not
// whole sets err, and every read after it gives a zero value.
type decoder struct {
	rest []byte
	size int // the record's, for messages
	err  error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("the record kept in its journal (%d bytes) is damaged at its %s", d.size, what)
	}
	d.rest = nil
}

func (d *decoder) str(what string) string {
	n, k := binary.Uvarint(d.rest)
	if k <= 0 || n > uint64(len(d.rest)-k) {
		d.fail(what)
		return ""
	}
	v := string(d.rest[k : k+int(n)])
	d.rest = d.rest[k+int(n):]
	return v
}

func (d *decoder) num(what string) int64 {
	v, k := binary.Varint(d.rest)
	if k <= 0 {
		d.fail(what)
		return 0
	}
	d.rest = d.rest[k:]
	return v
}

func (d *decoder) when(what string) time.Time {
	if len(d.rest) == 0 || d.rest[0] > 1 {
		d.fail(what)
		return time.Time{}
	}
	set := d.rest[0] == 1
	d.rest = d.rest[1:]
	if !set {
		return time.Time{}
	}
	sec := d.num(what)
	ns, k := binary.Uvarint(d.rest)
	if d.err != nil || k <= 0 || ns >= uint64(time.Second) {
		d.fail(what)
		return time.Time{}
	}
	d.rest = d.rest[k:]
	return time.Unix(sec, int64(ns)).UTC()
}

// Kept reports whether a store keeps a's record, written by AppendAgent
// with entries, in the row of entries[0]: when that entry is the agent's
// own. Otherwise the record is a row of agents, as PutAgent writes it.
func Kept(a *cadre.AgentRecord, entries []cadre.JournalEntry) bool {
	return len(entries) > 0 && entries[0].Run == a.Run && entries[0].Agent == a.ID
}
