package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/storetest"
)

// Records kept with the journal: see storetest.KeptRecords.
func TestRecordsKeptWithJournal(t *testing.T) {
	var path string // the database of the subtest under way
	storetest.KeptRecords(t, func(t *testing.T) storetest.GroupStore {
		path = filepath.Join(t.TempDir(), "cadre.db")
		return open(t, path)
	}, func(t *testing.T, _ storetest.GroupStore, id cadre.AgentID) int {
		return agentRows(t, path, id)
	})
}

// agentRows counts the rows of agents the database at path has for id.
func agentRows(t *testing.T, path string, id cadre.AgentID) int {
	t.Helper()
	var n int
	if err := raw(t, path).QueryRowContext(context.Background(), `SELECT COUNT(*) FROM agents WHERE id = ?`, string(id)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A database of schema 5, whose records are all rows of agents, lists
// them after it is opened by this build, and takes new ones.
func TestRecordsBefore6(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cadre.db")
	s := open(t, path)
	ctx := t.Context()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := s.CreateRun(ctx, &cadre.RunRecord{ID: "r1", Started: now}); err != nil {
		t.Fatal(err)
	}
	old := &cadre.AgentRecord{Run: "r1", ID: "root", Definition: "root", Status: cadre.StatusRunning, Started: now}
	if err := s.PutAgent(ctx, old); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db := raw(t, path)
	for _, q := range []string{undo6[0], undo6[1], `DELETE FROM schema_version WHERE version >= 6`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s = open(t, path)
	defer s.Close()
	child := &cadre.AgentRecord{Run: "r1", ID: "root/worker.1", Parent: "root", Depth: 1, Status: cadre.StatusQueued, Started: now.Add(time.Second)}
	if err := s.AppendAgent(ctx, child, []cadre.JournalEntry{{Run: "r1", Agent: child.ID, Seq: 1, Kind: "start", Time: now}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ListAgents(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]*cadre.AgentRecord{old, child}, got); d != "" {
		t.Errorf("ListAgents (-want +got):\n%s", d)
	}
}

// A group of 41 records kept with the journal removes the 41 rows of
// agents they replace, with statements of several sizes (32, 8 and 1).
func TestRecordsKeptManyInGroup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cadre.db")
	s := open(t, path)
	defer s.Close()
	ctx := t.Context()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := s.CreateRun(ctx, &cadre.RunRecord{ID: "r1", Started: now}); err != nil {
		t.Fatal(err)
	}
	const n = 41
	rec := func(i int, status cadre.Status) *cadre.AgentRecord {
		return &cadre.AgentRecord{Run: "r1", ID: cadre.RootID.Child("worker", i), Parent: "root", Depth: 1, Status: status, Started: now.Add(time.Duration(i) * time.Second)}
	}
	for i := 1; i <= n; i++ {
		if err := s.PutAgent(ctx, rec(i, cadre.StatusDone)); err != nil {
			t.Fatal(err)
		}
	}
	release := s.Hold()
	q := &storetest.Queue{Store: s}
	for i := 1; i <= n; i++ {
		a := rec(i, cadre.StatusQueued)
		q.Add(t, func() error {
			return s.AppendAgent(ctx, a, []cadre.JournalEntry{{Run: "r1", Agent: a.ID, Seq: 1, Kind: "start", Time: now}})
		})
	}
	retried := s.Retried()
	q.Commit(t, release)
	for i, err := range q.Errs {
		if err != nil {
			t.Errorf("AppendAgent %d: %v", i+1, err)
		}
	}
	if s.Retried() != retried {
		t.Error("the group was applied write by write")
	}
	agents, err := s.ListAgents(ctx, "r1")
	if err != nil || len(agents) != n {
		t.Fatalf("ListAgents: %d agents, %v; want %d", len(agents), err, n)
	}
	for _, a := range agents {
		if a.Status != cadre.StatusQueued {
			t.Errorf("%s is %s, want queued: the row of agents was not removed", a.ID, a.Status)
		}
	}
	var rows int
	if err := raw(t, path).QueryRowContext(ctx, `SELECT COUNT(*) FROM agents`).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("%d rows of agents left (%v), want 0", rows, err)
	}
}
