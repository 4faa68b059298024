// Package memstore is a cadre.Store that keeps everything in memory: for
// tests, and for runs that need no record (cadre run --store none).
//
// A Store is safe for concurrent use. It behaves like the durable stores
// (package sqlite and package postgres) in everything the conformance suite
// in package storetest checks, down to the details that are easy to get
// wrong:
//
//   - records are copied in and out, so a caller may change what it passed
//     or got back without changing the store;
//   - event Data goes through JSON on the way in, so numbers come back as
//     float64, slices as []any and objects as map[string]any, exactly as
//     they do from a database;
//   - times come back in UTC without a monotonic reading;
//   - a batch passed to Append or AppendEvents is applied whole or not at
//     all;
//   - leases expire by this process's clock, and Append checks the lease
//     tokens of its entries under the same lock as the write.
//
// Errors: a missing run is reported with an error that wraps
// cadre.ErrNotFound; a journal entry whose (run, agent, seq) exists already,
// invalid input, and any use after Close are errors too. Nothing is kept
// after Close.
package memstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cadre-ai/cadre"
)

var _ cadre.Store = (*Store)(nil)

// ErrClosed is returned by every method of a Store that has been closed.
var ErrClosed = errors.New("memstore: the store is closed")

// Store is an in-memory cadre.Store. Create one with New.
type Store struct {
	mu     sync.RWMutex
	closed bool
	runs   map[string]*run
	leases map[string]*cadre.Lease // by run
}

// A run keeps its journals and events in an arena of bytes and in slices
// of values without pointers: a run of many agents costs the garbage
// collector a few large objects it need not look into, not a dozen small
// ones per agent.
type run struct {
	rec     cadre.RunRecord
	agents  map[cadre.AgentID]cadre.AgentRecord
	journal map[cadre.AgentID][]entry // each slice sorted by Seq
	events  []span                    // events[i] has Seq i+1: its JSON, without seq
	bytes   arena
	kinds   kinds
}

// An entry is a journal entry as a run keeps it; its run and agent are
// where it is kept, and its lease is not kept.
type entry struct {
	seq   int64
	sec   int64 // Time, in Unix seconds and nanoseconds (UTC)
	nsec  int32
	kind  uint32 // in the run's kinds
	sum   uint32
	isNil bool // Data is nil, not empty
	data  span
}

func (r *run) keep(e *cadre.JournalEntry) entry {
	t := normTime(e.Time)
	return entry{seq: e.Seq, sec: t.Unix(), nsec: int32(t.Nanosecond()), kind: r.kinds.index(e.Kind), sum: e.Sum,
		isNil: e.Data == nil, data: r.bytes.add(e.Data)}
}

// give returns what keep kept, with a copy of its Data.
func (r *run) give(agent cadre.AgentID, x *entry) cadre.JournalEntry {
	e := cadre.JournalEntry{Run: r.rec.ID, Agent: agent, Seq: x.seq, Kind: r.kinds.names[x.kind], Time: time.Unix(x.sec, int64(x.nsec)).UTC(), Sum: x.sum}
	if !x.isNil {
		e.Data = bytes.Clone(r.bytes.get(x.data))
		if e.Data == nil {
			e.Data = json.RawMessage{}
		}
	}
	return e
}

// kinds numbers the kinds of a run's journal entries.
type kinds struct {
	names []string
	ids   map[string]uint32
}

func (k *kinds) index(name string) uint32 {
	if i, ok := k.ids[name]; ok {
		return i
	}
	if k.ids == nil {
		k.ids = map[string]uint32{}
	}
	i := uint32(len(k.names))
	k.names = append(k.names, name)
	k.ids[name] = i
	return i
}

// An arena keeps bytes in chunks that are filled in turn and never moved
// or changed: what it gives back stays valid, and reads need no lock
// against later writes beyond the store's.
type arena struct {
	chunks [][]byte
	cur    int // the chunk being filled
}

// arenaChunk is the size of an arena's chunks; a value of more than a
// quarter of it gets a chunk of its own.
const arenaChunk = 64 << 10

// A span is where an arena keeps a value.
type span struct {
	chunk  int32
	off, n uint32
}

// add copies b into the arena and returns where it is.
func (a *arena) add(b []byte) span {
	if len(b) == 0 {
		return span{}
	}
	if len(b) > arenaChunk/4 {
		a.chunks = append(a.chunks, bytes.Clone(b))
		return span{chunk: int32(len(a.chunks) - 1), n: uint32(len(b))}
	}
	if len(a.chunks) == 0 || cap(a.chunks[a.cur])-len(a.chunks[a.cur]) < len(b) {
		a.chunks = append(a.chunks, make([]byte, 0, arenaChunk))
		a.cur = len(a.chunks) - 1
	}
	c := a.chunks[a.cur]
	a.chunks[a.cur] = append(c, b...)
	return span{chunk: int32(a.cur), off: uint32(len(c)), n: uint32(len(b))}
}

// get returns the bytes at s, which the caller must not change.
func (a *arena) get(s span) []byte {
	if s.n == 0 {
		return nil
	}
	end := s.off + s.n
	return a.chunks[s.chunk][s.off:end:end]
}

// InMemory reports that the store keeps everything in memory: its writes
// take no time worth overlapping with other work (package local launches
// new agents once their Starts are written, rather than while they are).
func (s *Store) InMemory() bool { return true }

// New returns an empty store.
func New() *Store {
	return &Store{runs: map[string]*run{}, leases: map[string]*cadre.Lease{}}
}

// CreateRun stores a new run. A run with the same ID must not exist.
func (s *Store) CreateRun(ctx context.Context, r *cadre.RunRecord) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: create run: %w", err)
	}
	if r == nil || r.ID == "" {
		return errors.New("memstore: create run: the run has no ID: give every run a unique ID")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if _, ok := s.runs[r.ID]; ok {
		return fmt.Errorf("memstore: create run %q: a run with this ID exists already: use UpdateRun to change it", r.ID)
	}
	s.runs[r.ID] = &run{
		rec:     copyRun(r),
		agents:  map[cadre.AgentID]cadre.AgentRecord{},
		journal: map[cadre.AgentID][]entry{},
	}
	return nil
}

// UpdateRun replaces a run's record. A zero Started and a nil Config keep
// the values stored when the run was created.
func (s *Store) UpdateRun(ctx context.Context, r *cadre.RunRecord) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: update run: %w", err)
	}
	if r == nil || r.ID == "" {
		return errors.New("memstore: update run: the run has no ID: say which run to update")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	cur, ok := s.runs[r.ID]
	if !ok {
		return fmt.Errorf("memstore: update run %q: %w", r.ID, cadre.ErrNotFound)
	}
	next := copyRun(r)
	if next.Started.IsZero() {
		next.Started = cur.rec.Started
	}
	if next.Config == nil {
		next.Config = cur.rec.Config
	}
	cur.rec = next
	return nil
}

// GetRun returns a run's record.
func (s *Store) GetRun(ctx context.Context, id string) (*cadre.RunRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memstore: get run: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	cur, ok := s.runs[id]
	if !ok {
		return nil, fmt.Errorf("memstore: run %q: %w", id, cadre.ErrNotFound)
	}
	r := copyRun(&cur.rec)
	return &r, nil
}

// ListRuns returns runs, newest first (by Started, then by ID, descending);
// limit <= 0 means all.
func (s *Store) ListRuns(ctx context.Context, limit int) ([]*cadre.RunRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memstore: list runs: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	out := make([]*cadre.RunRecord, 0, len(s.runs))
	for _, cur := range s.runs {
		r := copyRun(&cur.rec)
		out = append(out, &r)
	}
	slices.SortFunc(out, func(a, b *cadre.RunRecord) int {
		if c := b.Started.Compare(a.Started); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// PutAgent creates or replaces an agent's record. The run must exist.
func (s *Store) PutAgent(ctx context.Context, a *cadre.AgentRecord) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: put agent: %w", err)
	}
	if a == nil || a.Run == "" || a.ID == "" {
		return errors.New("memstore: put agent: the record needs a Run and an ID")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	cur, ok := s.runs[a.Run]
	if !ok {
		return fmt.Errorf("memstore: put agent %s: run %q: %w", a.ID, a.Run, cadre.ErrNotFound)
	}
	rec := *a
	rec.Started = normTime(rec.Started)
	rec.Ended = normTime(rec.Ended)
	cur.agents[a.ID] = rec
	return nil
}

// ListAgents returns a run's agents ordered by Started, then by ID.
func (s *Store) ListAgents(ctx context.Context, runID string) ([]*cadre.AgentRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memstore: list agents: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	cur, ok := s.runs[runID]
	if !ok {
		return nil, fmt.Errorf("memstore: list agents: run %q: %w", runID, cadre.ErrNotFound)
	}
	out := make([]*cadre.AgentRecord, 0, len(cur.agents))
	for _, a := range cur.agents {
		out = append(out, &a)
	}
	slices.SortFunc(out, func(a, b *cadre.AgentRecord) int {
		if c := a.Started.Compare(b.Started); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Append adds journal entries, all or none of them, and keeps each one's
// checksum with it (setting its Sum), as the durable stores do.
func (s *Store) Append(ctx context.Context, entries []cadre.JournalEntry) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: append journal: %w", err)
	}
	for i := range entries {
		if err := checkEntry(&entries[i], i, len(entries)); err != nil {
			return err
		}
		entries[i].Sum = entries[i].Checksum()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	// Check the whole batch before changing anything: the writer's lease
	// first, so that a process that lost its run learns that rather than
	// of a conflict with the new owner's entries.
	if err := s.fencedLocked(entries); err != nil {
		return err
	}
	type key struct {
		run   string
		agent cadre.AgentID
		seq   int64
	}
	var seen map[key]bool // for a large batch; a small one is searched
	if len(entries) > 16 {
		seen = make(map[key]bool, len(entries))
	}
	for i := range entries {
		e := &entries[i]
		cur, ok := s.runs[e.Run]
		if !ok {
			return fmt.Errorf("memstore: append journal entry %d of %d (agent %s, seq %d): run %q: %w", i+1, len(entries), e.Agent, e.Seq, e.Run, cadre.ErrNotFound)
		}
		k := key{e.Run, e.Agent, e.Seq}
		again := seen[k] // a nil map reads false
		if seen == nil {
			again = slices.ContainsFunc(entries[:i], func(o cadre.JournalEntry) bool { return o.Seq == e.Seq && o.Agent == e.Agent && o.Run == e.Run })
		}
		if again || hasSeq(cur.journal[e.Agent], e.Seq) {
			return fmt.Errorf("memstore: append journal entry %d of %d: run %q agent %s seq %d exists already: a journal is append-only; nothing in this batch was written", i+1, len(entries), e.Run, e.Agent, e.Seq)
		}
		if seen != nil {
			seen[k] = true
		}
	}
	for i := range entries {
		e := &entries[i]
		cur := s.runs[e.Run]
		x := cur.keep(e)
		j := cur.journal[e.Agent]
		if j == nil {
			j = make([]entry, 0, 4) // most agents write a few entries
		}
		if n := len(j); n == 0 || j[n-1].seq < e.Seq {
			cur.journal[e.Agent] = append(j, x) // the usual case: the next entry
			continue
		}
		at, _ := slices.BinarySearchFunc(j, e.Seq, bySeq)
		cur.journal[e.Agent] = slices.Insert(j, at, x)
	}
	return nil
}

func bySeq(x entry, seq int64) int { return cmp.Compare(x.seq, seq) }

func hasSeq(j []entry, seq int64) bool {
	_, ok := slices.BinarySearchFunc(j, seq, bySeq)
	return ok
}

// Journal returns an agent's entries in Seq order, with the checksums
// kept with them, unchecked.
func (s *Store) Journal(ctx context.Context, runID string, agent cadre.AgentID) ([]cadre.JournalEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memstore: read journal: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	cur, ok := s.runs[runID]
	if !ok {
		return nil, fmt.Errorf("memstore: read journal of %s: run %q: %w", agent, runID, cadre.ErrNotFound)
	}
	j := cur.journal[agent]
	out := make([]cadre.JournalEntry, len(j))
	for i := range j {
		out[i] = cur.give(agent, &j[i])
	}
	return out, nil
}

// AppendEvents stores events, all or none of them, and sets their Seq: per
// run, one more than the run's last event. Seq values already set are
// ignored.
func (s *Store) AppendEvents(ctx context.Context, events []cadre.Event) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: append events: %w", err)
	}
	for i := range events {
		if events[i].Run == "" {
			return fmt.Errorf("memstore: append event %d of %d (%s): the event has no Run: set the run it belongs to", i+1, len(events), events[i].Type)
		}
	}
	// The events are written one after the other, without their numbers
	// (which Events puts back), outside the lock.
	scratch := eventBufs.Get().(*eventBuf)
	defer func() {
		if cap(scratch.b) <= maxEventBuf { // one grown by a huge batch is let go
			eventBufs.Put(scratch)
		}
	}()
	var (
		buf  = scratch.b[:0]
		ends = slices.Grow(scratch.ends[:0], len(events))[:len(events)]
		err  error
	)
	defer func() { scratch.b, scratch.ends = buf[:0], ends[:0] }()
	for i := range events {
		ev := events[i]
		ev.Seq = 0
		if buf, err = ev.AppendJSON(buf); err != nil { // as json.Marshal writes it, without checking it again
			return fmt.Errorf("memstore: append event %d of %d (%s, agent %s): encode it as JSON: %w; nothing in this batch was written", i+1, len(events), ev.Type, ev.Agent, err)
		}
		ends[i] = uint32(len(buf))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	for i := range events {
		if _, ok := s.runs[events[i].Run]; !ok {
			return fmt.Errorf("memstore: append event %d of %d (%s): run %q: %w", i+1, len(events), events[i].Type, events[i].Run, cadre.ErrNotFound)
		}
	}
	var start uint32
	for i := range events {
		cur := s.runs[events[i].Run]
		cur.events = append(cur.events, cur.bytes.add(buf[start:ends[i]]))
		events[i].Seq = int64(len(cur.events))
		start = ends[i]
	}
	return nil
}

// An eventBuf is where AppendEvents writes a batch before it takes the
// lock; eventBufs keeps them for the next batch.
type eventBuf struct {
	b    []byte
	ends []uint32
}

var eventBufs = sync.Pool{New: func() any { return &eventBuf{b: make([]byte, 0, 16<<10)} }}

// maxEventBuf is the largest buffer eventBufs keeps.
const maxEventBuf = 1 << 20

// Events returns a run's events with Seq greater than after, in order.
func (s *Store) Events(ctx context.Context, runID string, after int64) ([]cadre.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memstore: read events: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	cur, ok := s.runs[runID]
	if !ok {
		return nil, fmt.Errorf("memstore: read events: run %q: %w", runID, cadre.ErrNotFound)
	}
	after = max(after, 0)
	if after >= int64(len(cur.events)) {
		return []cadre.Event{}, nil
	}
	stored := cur.events[after:]
	out := make([]cadre.Event, len(stored))
	for i, at := range stored {
		if err := json.Unmarshal(cur.bytes.get(at), &out[i]); err != nil {
			return nil, fmt.Errorf("memstore: read event %d of run %q: %w", after+int64(i)+1, runID, err)
		}
		out[i].Seq = after + int64(i) + 1
	}
	return out, nil
}

// Close drops everything the store holds. Later calls return ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.runs, s.leases = nil, nil
	return nil
}

func checkEntry(e *cadre.JournalEntry, i, n int) error {
	switch {
	case e.Run == "":
		return fmt.Errorf("memstore: append journal entry %d of %d: the entry has no Run: set the run it belongs to", i+1, n)
	case e.Agent == "":
		return fmt.Errorf("memstore: append journal entry %d of %d (run %q): the entry has no Agent: set the agent it belongs to", i+1, n, e.Run)
	case e.Seq < 1:
		return fmt.Errorf("memstore: append journal entry %d of %d (run %q agent %s): seq is %d: an agent's entries are numbered from 1", i+1, n, e.Run, e.Agent, e.Seq)
	}
	return nil
}

func copyRun(r *cadre.RunRecord) cadre.RunRecord {
	c := *r
	c.Config = bytes.Clone(r.Config)
	c.Started = normTime(c.Started)
	c.Ended = normTime(c.Ended)
	return c
}

// normTime returns t in UTC without its monotonic clock reading, as a
// database would give it back.
func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.Round(0).UTC()
}
