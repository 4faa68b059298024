package postgres_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/storetest"
)

// Records kept with the journal: see storetest.KeptRecords.
func TestRecordsKeptWithJournal(t *testing.T) {
	serverDSN(t)
	var dsn string // the schema of the subtest under way
	storetest.KeptRecords(t, func(t *testing.T) storetest.GroupStore {
		dsn, _ = schemaDSN(t)
		return open(t, dsn)
	}, func(t *testing.T, _ storetest.GroupStore, id cadre.AgentID) int {
		c, err := pgx.Connect(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(t.Context())
		var n int
		if err := c.QueryRow(t.Context(), `SELECT count(*) FROM agents WHERE id = $1`, string(id)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	})
}

// A database of schema 5, whose records are all rows of agents, lists
// them after it is opened by this build, and takes new ones.
func TestRecordsBefore6(t *testing.T) {
	serverDSN(t)
	dsn, _ := schemaDSN(t)
	s := open(t, dsn)
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
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DROP INDEX journal_records`, `ALTER TABLE journal DROP COLUMN record`, `DELETE FROM schema_version WHERE version >= 6`} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	c.Close(ctx)

	s = open(t, dsn)
	defer s.Close()
	// A start time with nanoseconds: a record in the journal keeps it as a
	// row of agents does, to the microsecond.
	child := &cadre.AgentRecord{Run: "r1", ID: "root/worker.1", Parent: "root", Depth: 1, Status: cadre.StatusQueued, Started: now.Add(time.Second + 1500)}
	if err := s.AppendAgent(ctx, child, []cadre.JournalEntry{{Run: "r1", Agent: child.ID, Seq: 1, Kind: "start", Time: now}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ListAgents(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	want := *child
	want.Started = now.Add(time.Second + time.Microsecond)
	if d := cmp.Diff([]*cadre.AgentRecord{old, &want}, got, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("ListAgents (-want +got):\n%s", d)
	}
}

// A record a row of agents could not hold (a NUL byte in its task, a start
// time past the server's range) is refused by AppendAgent, with nothing
// written, as before records were kept in the journal: kept there, the
// server would not check it, and the agent's next record would fail at its
// end.
func TestRecordRowRefusedAtStart(t *testing.T) {
	serverDSN(t)
	dsn, _ := schemaDSN(t)
	s := open(t, dsn)
	defer s.Close()
	ctx := t.Context()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := s.CreateRun(ctx, &cadre.RunRecord{ID: "r1", Started: now}); err != nil {
		t.Fatal(err)
	}
	for name, a := range map[string]*cadre.AgentRecord{
		"a NUL byte":        {Run: "r1", ID: "root/worker.1", Task: "bad\x00task", Started: now},
		"invalid UTF-8":     {Run: "r1", ID: "root/worker.2", Result: "bad \xff", Started: now},
		"year 300000":       {Run: "r1", ID: "root/worker.3", Started: time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"its end, likewise": {Run: "r1", ID: "root/worker.4", Started: now, Ended: time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		err := s.AppendAgent(ctx, a, []cadre.JournalEntry{{Run: "r1", Agent: a.ID, Seq: 1, Kind: "start", Time: now}})
		if err == nil {
			t.Errorf("%s: AppendAgent succeeded", name)
		}
		if j, err := s.Journal(ctx, "r1", a.ID); err != nil || len(j) != 0 {
			t.Errorf("%s: the journal after a refused AppendAgent: %d entries, %v", name, len(j), err)
		}
	}
	if agents, err := s.ListAgents(ctx, "r1"); err != nil || len(agents) != 0 {
		t.Errorf("agents after refused AppendAgents: %+v, %v", agents, err)
	}
}
