package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/postgres"
	"github.com/cadre-ai/cadre/storetest"
)

// leasedRun opens a store in a schema of its own with run r1, whose lease
// token "old" holds.
func leasedRun(t *testing.T) (*postgres.Store, context.Context, time.Time) {
	t.Helper()
	s, ctx, now, _ := leasedRunAt(t)
	return s, ctx, now
}

// leasedRunAt is leasedRun that also returns the store's connection string.
func leasedRunAt(t *testing.T) (*postgres.Store, context.Context, time.Time, string) {
	t.Helper()
	dsn, _ := schemaDSN(t)
	s := open(t, dsn)
	t.Cleanup(func() { s.Close() })
	ctx := t.Context()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := s.CreateRun(ctx, &cadre.RunRecord{ID: "r1", Started: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireLease(ctx, cadre.LeaseRequest{Run: "r1", Owner: cadre.LeaseOwner{Token: "old"}, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	return s, ctx, now, dsn
}

// TestGroupCommit queues writes of every kind behind a held committer and
// checks that they commit as one group, not write by write, and that the
// group holds what the writes one after the other would: an agent's later
// record over its earlier one, fenced entries, and events numbered in the
// order of their writes.
func TestGroupCommit(t *testing.T) {
	s, ctx, now := leasedRun(t)
	worker := cadre.RootID.Child("worker", 1)
	start := cadre.JournalEntry{Run: "r1", Agent: worker, Seq: 1, Kind: "start", Time: now, Data: json.RawMessage(`{"task":"unit 1"}`), Lease: "old"}
	root := make([]cadre.JournalEntry, 300)
	for i := range root {
		root[i] = cadre.JournalEntry{Run: "r1", Agent: "root", Seq: int64(i + 1), Kind: "spawned", Time: now,
			Data: json.RawMessage(fmt.Sprintf(`{"ref":"c%d"}`, i+1)), Lease: "old"}
	}
	root[7].Data = nil // stored as NULL, read back as nil
	queued := &cadre.AgentRecord{Run: "r1", ID: worker, Parent: "root", Depth: 1, Definition: "worker", Task: "unit 1", Status: cadre.StatusQueued, Started: now}
	done := *queued
	done.Status, done.Turns, done.Ended, done.Result, done.Usage = cadre.StatusDone, 1, now.Add(time.Second), "Unit done.", cadre.Usage{InputTokens: 10, OutputTokens: 5}
	first := []cadre.Event{{Type: cadre.EventSay, Run: "r1", Time: now, Data: cadre.Say{Text: "one"}}, {Type: cadre.EventSay, Run: "r1", Time: now, Data: cadre.Say{Text: "two"}}}
	second := []cadre.Event{{Type: cadre.EventSay, Run: "r1", Agent: worker, Time: now, Data: cadre.Say{Text: "three"}}}

	release := s.Hold()
	groups, retried := s.Groups(), s.Retried()
	q := &storetest.Queue{Store: s}
	q.Add(t, func() error { return s.AppendAgent(ctx, queued, []cadre.JournalEntry{start}) })
	q.Add(t, func() error { return s.Append(ctx, root) })
	q.Add(t, func() error { return s.AppendEvents(ctx, first) })
	q.Add(t, func() error { return s.PutAgent(ctx, &done) })
	q.Add(t, func() error { return s.AppendEvents(ctx, second) })
	q.Commit(t, release)
	for i, err := range q.Errs {
		if err != nil {
			t.Errorf("write %d: %v", i+1, err)
		}
	}
	if got := s.Groups() - groups; got != 1 {
		t.Errorf("%d groups committed, want 1", got)
	}
	if got := s.Retried() - retried; got != 0 {
		t.Errorf("the group was applied again write by write %d times, want 0", got)
	}

	agents, err := s.ListAgents(ctx, "r1")
	if err != nil || len(agents) != 1 {
		t.Fatalf("agents %+v (err %v), want the worker's record", agents, err)
	}
	if a := agents[0]; a.Status != cadre.StatusDone || a.Turns != 1 || !a.Ended.Equal(done.Ended) || a.Result != "Unit done." || a.Usage != done.Usage {
		t.Errorf("the worker's record is %+v, want its later one %+v", a, done)
	}
	j, err := s.Journal(ctx, "r1", "root")
	if err != nil || len(j) != len(root) {
		t.Fatalf("the root's journal has %d entries (err %v), want %d", len(j), err, len(root))
	}
	for i, e := range j {
		if e.Seq != int64(i+1) || string(e.Data) != string(root[i].Data) || e.Sum != root[i].Checksum() || !e.Time.Equal(now) {
			t.Fatalf("entry %d read back as %+v, want %+v", i+1, e, root[i])
		}
	}
	if j[7].Data != nil {
		t.Errorf("an entry without data read back with %q, want none", j[7].Data)
	}
	if w, err := s.Journal(ctx, "r1", worker); err != nil || len(w) != 1 || string(w[0].Data) != `{"task":"unit 1"}` || w[0].Verify() != nil {
		t.Errorf("the worker's journal: %+v (err %v), want its start", w, err)
	}
	if first[0].Seq != 1 || first[1].Seq != 2 || second[0].Seq != 3 {
		t.Errorf("events numbered %d, %d, %d; want 1, 2, 3 in the order of their writes", first[0].Seq, first[1].Seq, second[0].Seq)
	}
	evs, err := s.Events(ctx, "r1", 0)
	if err != nil || len(evs) != 3 {
		t.Fatalf("events %+v (err %v), want 3", evs, err)
	}
	for i, want := range []string{"one", "two", "three"} {
		if say, ok := evs[i].Data.(cadre.Say); evs[i].Seq != int64(i+1) || !ok || say.Text != want {
			t.Errorf("event %d read back as %+v, want Seq %d saying %q", i+1, evs[i], i+1, want)
		}
	}
	if evs[2].Agent != worker {
		t.Errorf("the third event's agent is %q, want %q", evs[2].Agent, worker)
	}
}

// TestGroupFailsAlone queues good writes with writes that must fail, in
// one group: each failing write gets its own error, as if written alone,
// and the good ones are written.
func TestGroupFailsAlone(t *testing.T) {
	s, ctx, now := leasedRun(t)
	if err := s.Append(ctx, []cadre.JournalEntry{{Run: "r1", Agent: "root", Seq: 1, Kind: "start", Time: now, Lease: "old"}}); err != nil {
		t.Fatal(err)
	}
	entry := func(agent cadre.AgentID, seq int64, lease string) []cadre.JournalEntry {
		return []cadre.JournalEntry{{Run: "r1", Agent: agent, Seq: seq, Kind: "start", Time: now, Lease: lease}}
	}
	good := []cadre.Event{{Type: cadre.EventSay, Run: "r1", Time: now, Data: cadre.Say{Text: "kept"}}}
	release := s.Hold()
	retried := s.Retried()
	q := &storetest.Queue{Store: s}
	q.Add(t, func() error { return s.Append(ctx, entry("a", 1, "old")) })
	q.Add(t, func() error { return s.Append(ctx, entry("b", 1, "stale")) })  // 1: a lease that does not hold the run
	q.Add(t, func() error { return s.Append(ctx, entry("root", 1, "old")) }) // 2: exists already
	q.Add(t, func() error { return s.PutAgent(ctx, &cadre.AgentRecord{Run: "nope", ID: "root", Started: now}) })
	q.Add(t, func() error {
		return s.AppendEvents(ctx, []cadre.Event{{Type: cadre.EventSay, Run: "nope", Time: now}})
	})
	q.Add(t, func() error {
		return s.AppendAgent(ctx, &cadre.AgentRecord{Run: "r1", ID: "d", Started: now}, entry("root", 1, "old")) // 5: its entry exists
	})
	q.Add(t, func() error { return s.Append(ctx, entry("c", 1, "old")) })
	q.Add(t, func() error { return s.AppendEvents(ctx, good) })
	q.Commit(t, release)

	for _, i := range []int{0, 6, 7} {
		if q.Errs[i] != nil {
			t.Errorf("write %d failed although it is good: %v", i+1, q.Errs[i])
		}
	}
	if !errors.Is(q.Errs[1], cadre.ErrLeaseLost) {
		t.Errorf("an append under a lease that does not hold the run: got %v, want cadre.ErrLeaseLost", q.Errs[1])
	}
	for _, i := range []int{2, 5} {
		if q.Errs[i] == nil || !strings.Contains(q.Errs[i].Error(), "seq 1 exists already") {
			t.Errorf("write %d, of an entry that exists: got %v, want an error saying it exists", i+1, q.Errs[i])
		}
	}
	if !errors.Is(q.Errs[3], cadre.ErrNotFound) || !errors.Is(q.Errs[4], cadre.ErrNotFound) {
		t.Errorf("writes to a missing run: got %v and %v, want cadre.ErrNotFound", q.Errs[3], q.Errs[4])
	}
	if got := s.Retried() - retried; got != 1 {
		t.Errorf("the group was applied again write by write %d times, want 1", got)
	}
	for agent, want := range map[cadre.AgentID]int{"a": 1, "b": 0, "c": 1, "d": 0} {
		if j, err := s.Journal(ctx, "r1", agent); err != nil || len(j) != want {
			t.Errorf("the journal of %s has %d entries (err %v), want %d", agent, len(j), err, want)
		}
	}
	if agents, err := s.ListAgents(ctx, "r1"); err != nil || len(agents) != 0 {
		t.Errorf("agents %+v (err %v), want none: a failed AppendAgent wrote its record without its entries", agents, err)
	}
	if good[0].Seq != 1 {
		t.Errorf("the good event has Seq %d, want 1: the failed write's events took no numbers", good[0].Seq)
	}
}

// TestWithdrawnWrite gives up on a queued write: it is not written, and
// its caller is told so; the writes queued with it are.
func TestWithdrawnWrite(t *testing.T) {
	s, ctx, now := leasedRun(t)
	release := s.Hold()
	q := &storetest.Queue{Store: s}
	gone, cancel := context.WithCancel(ctx)
	q.Add(t, func() error {
		return s.Append(gone, []cadre.JournalEntry{{Run: "r1", Agent: "a", Seq: 1, Kind: "start", Time: now}})
	})
	q.Add(t, func() error {
		return s.Append(ctx, []cadre.JournalEntry{{Run: "r1", Agent: "b", Seq: 1, Kind: "start", Time: now}})
	})
	cancel()
	for s.Queued() > 1 {
		time.Sleep(time.Millisecond)
	}
	q.Commit(t, release)
	if !errors.Is(q.Errs[0], context.Canceled) || q.Errs[1] != nil {
		t.Fatalf("errors %v, %v; want context.Canceled and nil", q.Errs[0], q.Errs[1])
	}
	for agent, want := range map[cadre.AgentID]int{"a": 0, "b": 1} {
		if j, err := s.Journal(ctx, "r1", agent); err != nil || len(j) != want {
			t.Errorf("the journal of %s has %d entries (err %v), want %d", agent, len(j), err, want)
		}
	}
}

// TestWritesAfterClose: Close finishes what is queued, and writes after it
// fail with ErrClosed.
func TestWritesAfterClose(t *testing.T) {
	s, ctx, now := leasedRun(t)
	release := s.Hold()
	q := &storetest.Queue{Store: s}
	q.Add(t, func() error {
		return s.Append(ctx, []cadre.JournalEntry{{Run: "r1", Agent: "a", Seq: 1, Kind: "start", Time: now}})
	})
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	for !s.Closed() {
		time.Sleep(time.Millisecond)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	<-closed
	q.Wait()
	if q.Errs[0] != nil {
		t.Fatalf("a write queued before Close: %v", q.Errs[0])
	}
	err := s.Append(ctx, []cadre.JournalEntry{{Run: "r1", Agent: "a", Seq: 2, Kind: "start", Time: now}})
	if !errors.Is(err, postgres.ErrClosed) {
		t.Fatalf("a write after Close: %v, want postgres.ErrClosed", err)
	}
}

// TestWritesConcurrently has many writers of every kind write at once, so
// that groups of all sizes form, and checks that all of it was stored and
// the events numbered without gaps.
func TestWritesConcurrently(t *testing.T) {
	s, ctx, now := leasedRun(t)
	const writers, each = 16, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers*each*3)
	for w := range writers {
		wg.Go(func() {
			agent := cadre.RootID.Child("worker", w+1)
			rec := &cadre.AgentRecord{Run: "r1", ID: agent, Parent: "root", Depth: 1, Started: now, Status: cadre.StatusRunning}
			for i := range each {
				e := cadre.JournalEntry{Run: "r1", Agent: agent, Seq: int64(i + 1), Kind: "model_result", Time: now, Lease: "old", Data: json.RawMessage(`{}`)}
				if i == 0 {
					errs <- s.AppendAgent(ctx, rec, []cadre.JournalEntry{e})
				} else {
					errs <- s.Append(ctx, []cadre.JournalEntry{e})
				}
				errs <- s.AppendEvents(ctx, []cadre.Event{{Type: cadre.EventSay, Run: "r1", Agent: agent, Time: now, Data: cadre.Say{Text: fmt.Sprint(i)}}})
				rec.Turns = i + 1
				errs <- s.PutAgent(ctx, rec)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	agents, err := s.ListAgents(ctx, "r1")
	if err != nil || len(agents) != writers {
		t.Fatalf("%d agents (err %v), want %d", len(agents), err, writers)
	}
	for _, a := range agents {
		if a.Turns != each {
			t.Errorf("%s has %d turns, want its last record's %d", a.ID, a.Turns, each)
		}
		if j, err := s.Journal(ctx, "r1", a.ID); err != nil || len(j) != each {
			t.Errorf("the journal of %s has %d entries (err %v), want %d", a.ID, len(j), err, each)
		}
	}
	evs, err := s.Events(ctx, "r1", 0)
	if err != nil || len(evs) != writers*each {
		t.Fatalf("%d events (err %v), want %d", len(evs), err, writers*each)
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has Seq %d: the numbers have a gap", i+1, ev.Seq)
		}
	}
	t.Logf("%d groups of more than one write", s.Groups())
}

// TestCommitTimeout: while another session holds a lock on a run's row,
// that run's writes are given up after the commit timeout, saying why,
// with nothing of them kept, and the other runs' writes queued with them
// are written.
func TestCommitTimeout(t *testing.T) {
	s, ctx, now, dsn := leasedRunAt(t)
	if err := s.CreateRun(ctx, &cadre.RunRecord{ID: "r2", Started: now}); err != nil {
		t.Fatal(err)
	}
	s.SetCommitTimeout(time.Second)
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM runs WHERE id = 'r1' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	entry := func(run string) []cadre.JournalEntry {
		return []cadre.JournalEntry{{Run: run, Agent: "root", Seq: 1, Kind: "start", Time: now}}
	}
	release := s.Hold()
	q := &storetest.Queue{Store: s}
	q.Add(t, func() error { return s.Append(ctx, entry("r1")) })
	q.Add(t, func() error { return s.AppendEvents(ctx, []cadre.Event{{Type: cadre.EventSay, Run: "r1", Time: now}}) })
	q.Add(t, func() error { return s.Append(ctx, entry("r2")) })
	q.Commit(t, release)
	if q.Errs[2] != nil {
		t.Errorf("the write to the other run: %v", q.Errs[2])
	}
	if err := q.Errs[0]; err == nil || !strings.Contains(err.Error(), "did not finish it within 1s") || !strings.Contains(err.Error(), "pg_locks") {
		t.Errorf("the first write to the locked run: %v, want an error saying it was given up after 1s, and why", err)
	}
	if err := q.Errs[1]; err == nil || !strings.Contains(err.Error(), `not tried: a write to run "r1" waited 1s`) {
		t.Errorf("the second write to the locked run: %v, want an error saying it was not tried, and why", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// What was given up stays undone once the lock is let go: the server
	// gave it up too, rather than apply it then.
	time.Sleep(300 * time.Millisecond)
	if j, err := s.Journal(ctx, "r1", "root"); err != nil || len(j) != 0 {
		t.Errorf("once the lock is gone, the journal of r1 has %d entries (err %v), want 0: a write the caller was told was given up was applied", len(j), err)
	}
	if err := s.Append(ctx, entry("r1")); err != nil {
		t.Fatalf("a write once the lock is gone: %v", err)
	}
	for _, run := range []string{"r1", "r2"} {
		if j, err := s.Journal(ctx, run, "root"); err != nil || len(j) != 1 {
			t.Errorf("the journal of run %s has %d entries (err %v), want 1", run, len(j), err)
		}
	}
}
