package storetest

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
)

// CreateTable returns the CREATE TABLE statement of table in the migration
// file at path, without its closing semicolon: for a test that takes a
// database back to a schema before a later migration replaced the table.
func CreateTable(t testing.TB, path, table string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "CREATE TABLE "+table+" (")
	j := strings.IndexByte(s[max(i, 0):], ';')
	if i < 0 || j < 0 {
		t.Fatalf("%s has no table %s", path, table)
	}
	return s[i : i+j]
}

// EventsMigrated checks a store opened on a database whose run "old" held
// two events stored one per row before the events were batched,
// run_started and agent_started numbered 1 and 2: both read back, and the
// numbering goes on from them.
func EventsMigrated(t *testing.T, s cadre.Store) {
	t.Helper()
	ctx := t.Context()
	more := []cadre.Event{{Type: cadre.EventAgentCompleted, Time: time.Now(), Run: "old", Agent: "root"}}
	if err := s.AppendEvents(ctx, more); err != nil {
		t.Fatal(err)
	}
	got, err := s.Events(ctx, "old", 0)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	var types []cadre.EventType
	for _, ev := range got {
		seqs = append(seqs, ev.Seq)
		types = append(types, ev.Type)
	}
	if !slices.Equal(seqs, []int64{1, 2, 3}) || !slices.Equal(types, []cadre.EventType{cadre.EventRunStarted, cadre.EventAgentStarted, cadre.EventAgentCompleted}) {
		t.Errorf("events after the migration: seqs %v types %v, want 1 2 3: run_started agent_started agent_completed", seqs, types)
	}
	if got, err := s.Events(ctx, "old", 1); err != nil || len(got) != 2 || got[0].Seq != 2 {
		t.Errorf("events after 1: %+v %v", got, err)
	}
}
