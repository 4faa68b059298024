package sqlite_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
)

// AppendAgent writes an agent's record and its journal entries together,
// or neither.
func TestAppendAgent(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "cadre.db"))
	defer s.Close()
	ctx := t.Context()
	now := time.Now()
	if err := s.CreateRun(ctx, &cadre.RunRecord{ID: "r1", Started: now}); err != nil {
		t.Fatal(err)
	}
	rec := func(id cadre.AgentID) *cadre.AgentRecord {
		return &cadre.AgentRecord{Run: "r1", ID: id, Parent: cadre.RootID, Depth: 1, Definition: "worker", Status: cadre.StatusQueued, Started: now}
	}
	entry := func(id cadre.AgentID, seq int64) cadre.JournalEntry {
		return cadre.JournalEntry{Run: "r1", Agent: id, Seq: seq, Kind: "start", Data: []byte(`{"task":"t"}`), Time: now}
	}
	w1 := cadre.RootID.Child("worker", 1)
	if err := s.AppendAgent(ctx, rec(w1), []cadre.JournalEntry{entry(w1, 1)}); err != nil {
		t.Fatal(err)
	}
	agents, err := s.ListAgents(ctx, "r1")
	if err != nil || len(agents) != 1 || agents[0].ID != w1 || agents[0].Status != cadre.StatusQueued {
		t.Fatalf("agents %+v (err %v), want %s queued", agents, err, w1)
	}
	if j, err := s.Journal(ctx, "r1", w1); err != nil || len(j) != 1 || string(j[0].Data) != `{"task":"t"}` {
		t.Fatalf("journal %+v (err %v), want the start", j, err)
	}

	// An entry that exists already: the record is not written either.
	w2 := cadre.RootID.Child("worker", 2)
	if err := s.Append(ctx, []cadre.JournalEntry{entry(w2, 1)}); err != nil {
		t.Fatal(err)
	}
	err = s.AppendAgent(ctx, rec(w2), []cadre.JournalEntry{entry(w2, 1)})
	if err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Fatalf("AppendAgent with an existing entry: %v, want an error saying it exists", err)
	}
	if agents, err := s.ListAgents(ctx, "r1"); err != nil || len(agents) != 1 {
		t.Fatalf("%d agents (err %v) after a failed AppendAgent, want 1: the record was written without its entries", len(agents), err)
	}

	// A missing run.
	r := rec(w2)
	r.Run = "nope"
	e := entry(w2, 1)
	e.Run = "nope"
	if err := s.AppendAgent(ctx, r, []cadre.JournalEntry{e}); !errors.Is(err, cadre.ErrNotFound) {
		t.Fatalf("AppendAgent for a missing run: %v, want cadre.ErrNotFound", err)
	}
	// Checked before anything is written.
	if err := s.AppendAgent(ctx, &cadre.AgentRecord{Run: "r1"}, nil); err == nil {
		t.Fatal("AppendAgent of a record without an ID succeeded")
	}
	if err := s.AppendAgent(ctx, rec(w2), []cadre.JournalEntry{{Run: "r1", Agent: w2, Seq: 0, Kind: "start", Time: now}}); err == nil {
		t.Fatal("AppendAgent of an entry with seq 0 succeeded")
	}
}
