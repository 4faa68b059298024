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
	"strconv"
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

type run struct {
	rec     cadre.RunRecord
	agents  map[cadre.AgentID]cadre.AgentRecord
	journal map[cadre.AgentID][]cadre.JournalEntry // each slice sorted by Seq
	events  [][]byte                               // events[i] has Seq i+1
}

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
		journal: map[cadre.AgentID][]cadre.JournalEntry{},
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
	var seen map[key]bool // for a batch of more than one entry
	if len(entries) > 1 {
		seen = make(map[key]bool, len(entries))
	}
	for i := range entries {
		e := &entries[i]
		cur, ok := s.runs[e.Run]
		if !ok {
			return fmt.Errorf("memstore: append journal entry %d of %d (agent %s, seq %d): run %q: %w", i+1, len(entries), e.Agent, e.Seq, e.Run, cadre.ErrNotFound)
		}
		k := key{e.Run, e.Agent, e.Seq}
		if seen[k] || hasSeq(cur.journal[e.Agent], e.Seq) { // a nil map reads false
			return fmt.Errorf("memstore: append journal entry %d of %d: run %q agent %s seq %d exists already: a journal is append-only; nothing in this batch was written", i+1, len(entries), e.Run, e.Agent, e.Seq)
		}
		if seen != nil {
			seen[k] = true
		}
	}
	for i := range entries {
		e := entries[i]
		e.Data = bytes.Clone(e.Data)
		e.Time = normTime(e.Time)
		e.Lease = "" // not stored
		cur := s.runs[e.Run]
		j := cur.journal[e.Agent]
		if n := len(j); n == 0 || j[n-1].Seq < e.Seq {
			cur.journal[e.Agent] = append(j, e) // the usual case: the next entry
			continue
		}
		at, _ := slices.BinarySearchFunc(j, e.Seq, func(x cadre.JournalEntry, seq int64) int { return cmp.Compare(x.Seq, seq) })
		cur.journal[e.Agent] = slices.Insert(j, at, e)
	}
	return nil
}

func hasSeq(j []cadre.JournalEntry, seq int64) bool {
	_, ok := slices.BinarySearchFunc(j, seq, func(x cadre.JournalEntry, seq int64) int { return cmp.Compare(x.Seq, seq) })
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
	for i, e := range j {
		e.Data = bytes.Clone(e.Data)
		out[i] = e
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
	// Each event is written without its number, outside the lock; the
	// number goes in front once it is known.
	bodies := make([][]byte, len(events))
	for i := range events {
		ev := events[i]
		ev.Seq = 0
		b, err := ev.MarshalJSON() // as json.Marshal writes it, without checking it again
		if err != nil {
			return fmt.Errorf("memstore: append event %d of %d (%s, agent %s): encode it as JSON: %w; nothing in this batch was written", i+1, len(events), ev.Type, ev.Agent, err)
		}
		bodies[i] = b
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
	for i := range events {
		cur := s.runs[events[i].Run]
		seq := int64(len(cur.events)) + 1
		body := bodies[i] // {"type":…}
		b := make([]byte, 0, len(body)+24)
		b = strconv.AppendInt(append(b, `{"seq":`...), seq, 10)
		b = append(append(b, ','), body[1:]...)
		cur.events = append(cur.events, b)
		events[i].Seq = seq
	}
	return nil
}

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
	for i, b := range stored {
		if err := json.Unmarshal(b, &out[i]); err != nil {
			return nil, fmt.Errorf("memstore: read event %d of run %q: %w", after+int64(i)+1, runID, err)
		}
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
