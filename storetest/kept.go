package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
)

// A GroupStore is a SQL store whose writes a test can hold back behind its
// committer (as their test hooks do), so that they form one group.
type GroupStore interface {
	cadre.Store
	Queuer
	AppendAgent(ctx context.Context, a *cadre.AgentRecord, entries []cadre.JournalEntry) error
	Hold() (release func() error)
	Retried() int64
}

// KeptRecords checks a store that keeps a record written by AppendAgent
// with the agent's own first entry in that entry's row, with no row of
// agents (see package internal/agentrec): the agent's next record, from
// PutAgent, is a row of agents, which ListAgents then lists instead. In a
// group, the later of an agent's two records is the one kept, in either
// order, whether the group is written together or, after a write in it
// failed, write by write. open gives a new store; rows counts the rows of
// agents it has for an agent.
func KeptRecords(t *testing.T, open func(t *testing.T) GroupStore, rows func(t *testing.T, s GroupStore, id cadre.AgentID) int) {
	for _, alone := range []bool{false, true} {
		name := "together"
		if alone {
			name = "write by write"
		}
		t.Run(name, func(t *testing.T) {
			s := open(t)
			defer s.Close()
			ctx := t.Context()
			now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			if err := s.CreateRun(ctx, &cadre.RunRecord{ID: "r1", Started: now}); err != nil {
				t.Fatal(err)
			}
			w := func(n int) cadre.AgentID { return cadre.RootID.Child("worker", n) }
			start := func(id cadre.AgentID, seq int64) []cadre.JournalEntry {
				return []cadre.JournalEntry{{Run: "r1", Agent: id, Seq: seq, Kind: "start", Time: now, Data: json.RawMessage(`{}`)}}
			}
			rec := func(id cadre.AgentID, status cadre.Status, at time.Duration) *cadre.AgentRecord {
				return &cadre.AgentRecord{Run: "r1", ID: id, Parent: "root", Depth: 1, Definition: "worker", Model: "m",
					Task: "unit of " + string(id), Status: status, Started: now.Add(at)}
			}
			ended := func(r *cadre.AgentRecord) *cadre.AgentRecord {
				r.Ended, r.Result, r.Turns = now.Add(time.Minute), "done: "+string(r.ID), 2
				return r
			}

			if err := s.AppendAgent(ctx, rec(w(1), cadre.StatusRunning, 0), start(w(1), 1)); err != nil {
				t.Fatal(err)
			}
			if n := rows(t, s, w(1)); n != 0 {
				t.Errorf("%d rows of agents for an agent written with its first entry, want 0: its record is in the entry's row", n)
			}
			// Two agents with a record each already, one kept in its
			// journal, one a row of agents.
			if err := s.AppendAgent(ctx, rec(w(2), cadre.StatusRunning, time.Second), start(w(2), 1)); err != nil {
				t.Fatal(err)
			}
			if err := s.PutAgent(ctx, rec(w(3), cadre.StatusRunning, 2*time.Second)); err != nil {
				t.Fatal(err)
			}

			release := s.Hold()
			q := &Queue{Store: s}
			// w2: its end, then a new start: the start is kept.
			q.Add(t, func() error { return s.PutAgent(ctx, ended(rec(w(2), cadre.StatusDone, time.Second))) })
			q.Add(t, func() error { return s.AppendAgent(ctx, rec(w(2), cadre.StatusQueued, 3*time.Second), start(w(2), 2)) })
			// w3 (a row of agents): a start, then its end: the end is kept.
			q.Add(t, func() error { return s.AppendAgent(ctx, rec(w(3), cadre.StatusQueued, 2*time.Second), start(w(3), 1)) })
			q.Add(t, func() error { return s.PutAgent(ctx, ended(rec(w(3), cadre.StatusDone, 2*time.Second))) })
			want := []*cadre.AgentRecord{rec(w(1), cadre.StatusRunning, 0), ended(rec(w(3), cadre.StatusDone, 2*time.Second)), rec(w(2), cadre.StatusQueued, 3*time.Second)}
			if alone {
				// An entry that exists: the group fails, and is applied
				// again write by write.
				q.Add(t, func() error { return s.Append(ctx, start(w(1), 1)) })
			}
			retried := s.Retried()
			q.Commit(t, release)
			for i, err := range q.Errs {
				if failed := alone && i == len(q.Errs)-1; (err != nil) != failed {
					t.Errorf("write %d of the group: %v", i+1, err)
				}
			}
			if got := s.Retried() - retried; got != map[bool]int64{false: 0, true: 1}[alone] {
				t.Fatalf("the group was applied write by write %d times", got)
			}
			got, err := s.ListAgents(ctx, "r1")
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got, opts); d != "" {
				t.Errorf("ListAgents (-want +got):\n%s", d)
			}
			if n := rows(t, s, w(2)); n != 0 {
				t.Errorf("%d rows of agents for w2, whose start came last, want 0", n)
			}
			if n := rows(t, s, w(3)); n != 1 {
				t.Errorf("%d rows of agents for w3, whose end came last, want 1", n)
			}
			// The journal reads back as it was written: the record is not
			// part of an entry.
			j, err := s.Journal(ctx, "r1", w(2))
			if err != nil || len(j) != 2 || string(j[1].Data) != `{}` {
				t.Errorf("the journal of w2: %+v, %v", j, err)
			}
		})
	}
}
