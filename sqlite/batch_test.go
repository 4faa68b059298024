package sqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/sqlite"
	"github.com/cadre-ai/cadre/storetest"
)

// TestBatchedGroup queues writes of every kind behind a held committer and
// checks that the group commits in one transaction without being retried
// write by write, and that each write sees those queued before it: the
// rows of a run created in the group, entries fenced by a lease taken in
// it, an agent's later record over its earlier one, and events numbered
// in the order of their writes. One append of 300 entries takes
// statements of several sizes.
func TestBatchedGroup(t *testing.T) {
	s, ctx, now := leasedRun(t)
	defer s.Close()

	worker := cadre.RootID.Child("worker", 1)
	long := make([]cadre.JournalEntry, 300)
	for i := range long {
		long[i] = cadre.JournalEntry{Run: "r1", Agent: "root", Seq: int64(i + 1), Kind: "spawned", Time: now,
			Data: json.RawMessage(fmt.Sprintf(`{"ref":"c%d"}`, i+1)), Lease: "new"}
	}
	running := &cadre.AgentRecord{Run: "r1", ID: worker, Parent: "root", Depth: 1, Definition: "worker", Task: "unit 1", Status: cadre.StatusRunning, Started: now}
	done := *running
	done.Status, done.Turns, done.Ended, done.Result = cadre.StatusDone, 1, now.Add(time.Second), "Unit done."
	events := [][]cadre.Event{
		{{Type: cadre.EventSay, Run: "r1", Time: now, Data: cadre.Say{Text: "one"}}, {Type: cadre.EventSay, Run: "r2", Time: now, Data: cadre.Say{Text: "r2 one"}}},
		{{Type: cadre.EventSay, Run: "r1", Time: now, Data: cadre.Say{Text: "two"}}},
		{{Type: cadre.EventSay, Run: "r1", Time: now, Data: cadre.Say{Text: "three"}}, {Type: cadre.EventSay, Run: "r1", Time: now, Data: cadre.Say{Text: "four"}}},
	}

	release := s.Hold()
	groups, retried := s.Groups(), s.Retried()
	q := &storetest.Queue{Store: s}
	q.Add(t, func() error {
		return s.CreateRun(ctx, &cadre.RunRecord{ID: "r2", Started: now})
	})
	q.Add(t, func() error {
		return s.Append(ctx, []cadre.JournalEntry{{Run: "r2", Agent: "root", Seq: 1, Kind: "start", Time: now, Data: json.RawMessage(`{}`)}})
	})
	q.Add(t, func() error {
		// Fenced by the lease as it is before the next write replaces it.
		return s.Append(ctx, []cadre.JournalEntry{{Run: "r1", Agent: "root/worker.2", Seq: 1, Kind: "start", Time: now, Lease: "old"}})
	})
	q.Add(t, func() error {
		_, err := s.AcquireLease(ctx, cadre.LeaseRequest{Run: "r1", Owner: cadre.LeaseOwner{Token: "new"}, Replace: "old", TTL: time.Hour})
		return err
	})
	q.Add(t, func() error {
		return s.AppendAgent(ctx, running, []cadre.JournalEntry{{Run: "r1", Agent: worker, Seq: 1, Kind: "start", Time: now, Lease: "new"}})
	})
	q.Add(t, func() error { return s.Append(ctx, long) })
	for _, evs := range events {
		q.Add(t, func() error { return s.AppendEvents(ctx, evs) })
	}
	q.Add(t, func() error { return s.PutAgent(ctx, &done) })
	q.Commit(t, release)
	for i, err := range q.Errs {
		if err != nil {
			t.Errorf("write %d of the group: %v", i+1, err)
		}
	}
	if got := s.Groups() - groups; got != 2 {
		t.Errorf("%d transactions committed, want 2: the held write's and the group's", got)
	}
	if got := s.Retried() - retried; got != 0 {
		t.Errorf("the group was applied again write by write %d times, want 0: none of its writes fails", got)
	}

	j, err := s.Journal(ctx, "r1", "root")
	if err != nil {
		t.Fatal(err)
	}
	if len(j) != len(long) {
		t.Fatalf("the root's journal has %d entries, want %d", len(j), len(long))
	}
	for i := range j {
		if err := j[i].Verify(); err != nil {
			t.Errorf("entry %d: %v", i+1, err)
		}
		want := long[i]
		want.Lease = "" // not stored
		if diff := cmp.Diff(want, j[i]); diff != "" {
			t.Errorf("entry %d (-appended +read):\n%s", i+1, diff)
		}
	}
	if j, err := s.Journal(ctx, "r2", "root"); err != nil || len(j) != 1 {
		t.Errorf("the entry of the run created in the same group: %v, %v", j, err)
	}
	if j, err := s.Journal(ctx, "r1", worker); err != nil || len(j) != 1 {
		t.Errorf("the worker's start: %v, %v", j, err)
	}

	agents, err := s.ListAgents(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(agents) != 1 || agents[0].Status != cadre.StatusDone || agents[0].Result != "Unit done." || !agents[0].Ended.Equal(done.Ended) {
		t.Errorf("agents of r1 = %+v, want the worker's later record, done", agents)
	}

	wantSeqs := [][]int64{{1, 1}, {2}, {3, 4}}
	for i, evs := range events {
		for k, ev := range evs {
			if ev.Seq != wantSeqs[i][k] {
				t.Errorf("event %d of write %d (run %s): Seq %d, want %d", k+1, i+1, ev.Run, ev.Seq, wantSeqs[i][k])
			}
		}
	}
	stored, err := s.Events(ctx, "r1", 0)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for i, ev := range stored {
		if ev.Seq != int64(i+1) {
			t.Errorf("stored event %d has Seq %d", i+1, ev.Seq)
		}
		texts = append(texts, ev.Data.(cadre.Say).Text)
	}
	if want := []string{"one", "two", "three", "four"}; !cmp.Equal(texts, want) {
		t.Errorf("events of r1 read back %q, want %q", texts, want)
	}
	// The next write numbers on from the group's.
	more := []cadre.Event{{Type: cadre.EventSay, Run: "r1", Time: now, Data: cadre.Say{Text: "five"}}}
	if err := s.AppendEvents(ctx, more); err != nil || more[0].Seq != 5 {
		t.Errorf("the event after the group: Seq %d, err %v; want 5", more[0].Seq, err)
	}
}

// TestBatchedGroupFailsAlone queues, behind a held committer, writes of
// rows that fail among writes that succeed: entries fenced by a lease
// replaced earlier in the group, an entry that exists, an agent of a
// missing run, events of a missing run. Each failing write fails alone,
// with its own error, and the others commit.
func TestBatchedGroupFailsAlone(t *testing.T) {
	s, ctx, now := leasedRun(t)
	defer s.Close()
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
	q.Add(t, func() error { return s.Append(ctx, entry("a", 1, "old")) }) // 0: fenced by the lease as it was
	q.Add(t, func() error {
		_, err := s.AcquireLease(ctx, cadre.LeaseRequest{Run: "r1", Owner: cadre.LeaseOwner{Token: "new"}, Replace: "old", TTL: time.Hour})
		return err
	})
	q.Add(t, func() error { return s.Append(ctx, entry("b", 1, "old")) }) // 2: the lease is no longer its writer's
	q.Add(t, func() error { return s.Append(ctx, entry("root", 1, "new")) })
	q.Add(t, func() error { return s.PutAgent(ctx, &cadre.AgentRecord{Run: "nope", ID: "root", Started: now}) })
	q.Add(t, func() error {
		return s.AppendEvents(ctx, []cadre.Event{{Type: cadre.EventSay, Run: "nope", Time: now}})
	})
	q.Add(t, func() error { return s.Append(ctx, entry("c", 1, "new")) })
	q.Add(t, func() error { return s.AppendEvents(ctx, good) })
	q.Commit(t, release)

	for _, i := range []int{0, 1, 6, 7} {
		if q.Errs[i] != nil {
			t.Errorf("write %d failed although it is good: %v", i+1, q.Errs[i])
		}
	}
	if !errors.Is(q.Errs[2], cadre.ErrLeaseLost) {
		t.Errorf("an append under the replaced lease: got %v, want cadre.ErrLeaseLost", q.Errs[2])
	}
	if q.Errs[3] == nil || !strings.Contains(q.Errs[3].Error(), "seq 1 exists already") {
		t.Errorf("an entry that exists: got %v, want an error saying it exists", q.Errs[3])
	}
	if !errors.Is(q.Errs[4], cadre.ErrNotFound) || !errors.Is(q.Errs[5], cadre.ErrNotFound) {
		t.Errorf("writes to a missing run: got %v and %v, want cadre.ErrNotFound", q.Errs[4], q.Errs[5])
	}
	if got := s.Retried() - retried; got != 1 {
		t.Errorf("the group was applied again write by write %d times, want 1", got)
	}
	for _, agent := range []cadre.AgentID{"a", "c"} {
		if j, err := s.Journal(ctx, "r1", agent); err != nil || len(j) != 1 {
			t.Errorf("the journal of %s: %v, %v; want its entry", agent, j, err)
		}
	}
	if j, err := s.Journal(ctx, "r1", "b"); err != nil || len(j) != 0 {
		t.Errorf("the entry fenced off was written: %v, %v", j, err)
	}
	if good[0].Seq != 1 {
		t.Errorf("the good event has Seq %d, want 1: the failed write's events took no numbers", good[0].Seq)
	}
}

// TestBatchedFence checks that entries appended under a lease that no
// longer holds their run are refused when they are batched with others
// whose lease holds: the others are written, they are not.
func TestBatchedFence(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "cadre.db"))
	defer s.Close()
	ctx := t.Context()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := s.CreateRun(ctx, &cadre.RunRecord{ID: "r1", Started: now}); err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{"old", "new"} {
		if _, err := s.AcquireLease(ctx, cadre.LeaseRequest{Run: "r1", Owner: cadre.LeaseOwner{Token: token}, Replace: "old", TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	release := s.Hold()
	retried := s.Retried()
	q := &storetest.Queue{Store: s}
	for i, token := range []string{"new", "old", "new"} {
		q.Add(t, func() error {
			agent := cadre.RootID.Child("worker", i+1)
			return s.Append(ctx, []cadre.JournalEntry{{Run: "r1", Agent: agent, Seq: 1, Kind: "start", Time: now, Lease: token}})
		})
	}
	q.Commit(t, release)
	if q.Errs[0] != nil || q.Errs[2] != nil {
		t.Errorf("appends under the lease that holds the run failed: %v, %v", q.Errs[0], q.Errs[2])
	}
	if !errors.Is(q.Errs[1], cadre.ErrLeaseLost) {
		t.Errorf("an append under a replaced lease: got %v, want cadre.ErrLeaseLost", q.Errs[1])
	}
	if got := s.Retried() - retried; got != 1 {
		t.Errorf("the group was applied again write by write %d times, want 1", got)
	}
	for i, want := range []int{1, 0, 1} {
		agent := cadre.RootID.Child("worker", i+1)
		if j, err := s.Journal(ctx, "r1", agent); err != nil || len(j) != want {
			t.Errorf("the journal of %s has %d entries (%v), want %d", agent, len(j), err, want)
		}
	}
}

// TestStatementJournalInMemory checks that the connection that writes
// keeps statement journals in memory (see open).
func TestStatementJournalInMemory(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "cadre.db"))
	defer s.Close()
	n, err := s.TempStore()
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("temp_store is %d on the connection that writes, want 2 (MEMORY)", n)
	}
}

// TestBatchedWritesConcurrently has many writers of every kind write at
// once, so that groups of all sizes form, and checks that all of it was
// stored.
func TestBatchedWritesConcurrently(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "cadre.db"))
	defer s.Close()
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := s.CreateRun(ctx, &cadre.RunRecord{ID: "r1", Started: now}); err != nil {
		t.Fatal(err)
	}
	const writers, steps = 40, 5
	var wg sync.WaitGroup
	errc := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			id := cadre.RootID.Child("worker", w+1)
			rec := &cadre.AgentRecord{Run: "r1", ID: id, Parent: "root", Depth: 1, Status: cadre.StatusRunning, Started: now}
			if err := s.AppendAgent(ctx, rec, []cadre.JournalEntry{{Run: "r1", Agent: id, Seq: 1, Kind: "start", Time: now}}); err != nil {
				errc <- err
				return
			}
			for k := range steps {
				entries := make([]cadre.JournalEntry, k+1)
				for i := range entries {
					entries[i] = cadre.JournalEntry{Run: "r1", Agent: id, Seq: int64(2 + k*(k+1)/2 + i), Kind: "model_result", Time: now,
						Data: json.RawMessage(fmt.Sprintf(`{"step":%d,"i":%d}`, k, i))}
				}
				if err := s.Append(ctx, entries); err != nil {
					errc <- err
					return
				}
				if err := s.AppendEvents(ctx, []cadre.Event{{Type: cadre.EventSay, Run: "r1", Agent: id, Time: now, Data: cadre.Say{Text: string(id)}}}); err != nil {
					errc <- err
					return
				}
			}
			rec.Status, rec.Ended = cadre.StatusDone, now
			if err := s.PutAgent(ctx, rec); err != nil {
				errc <- err
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	agents, err := s.ListAgents(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(agents) != writers {
		t.Fatalf("%d agents stored, want %d", len(agents), writers)
	}
	for _, a := range agents {
		if a.Status != cadre.StatusDone {
			t.Errorf("agent %s is %s, want done", a.ID, a.Status)
		}
		j, err := s.Journal(ctx, "r1", a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := 1 + steps*(steps+1)/2; len(j) != want {
			t.Errorf("agent %s has %d entries, want %d", a.ID, len(j), want)
		}
		for i, e := range j {
			if e.Seq != int64(i+1) || e.Verify() != nil {
				t.Errorf("agent %s entry %d: seq %d, %v", a.ID, i+1, e.Seq, e.Verify())
			}
		}
	}
	evs, err := s.Events(ctx, "r1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != writers*steps {
		t.Errorf("%d events stored, want %d", len(evs), writers*steps)
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Errorf("event %d has Seq %d", i+1, ev.Seq)
			break
		}
	}
}

// leasedRun opens a new store with run r1, leased by the token "old".
func leasedRun(t *testing.T) (*sqlite.Store, context.Context, time.Time) {
	t.Helper()
	s := open(t, filepath.Join(t.TempDir(), "cadre.db"))
	ctx := t.Context()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := s.CreateRun(ctx, &cadre.RunRecord{ID: "r1", Started: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireLease(ctx, cadre.LeaseRequest{Run: "r1", Owner: cadre.LeaseOwner{Token: "old"}, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	return s, ctx, now
}
