package sqlite_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/storetest"
)

// flipByte changes one byte of a stored journal entry's data in the
// database file, as damage to the disk or another program would.
func flipByte(t *testing.T, path, run string, agent cadre.AgentID, seq int64) {
	t.Helper()
	db := raw(t, path)
	var data []byte
	if err := db.QueryRow(`SELECT data FROM journal WHERE run = ? AND agent = ? AND seq = ?`, run, string(agent), seq).Scan(&data); err != nil {
		t.Fatalf("read entry %d of %s in run %s: %v", seq, agent, run, err)
	}
	data[len(data)/2] ^= 1
	if _, err := db.Exec(`UPDATE journal SET data = ? WHERE run = ? AND agent = ? AND seq = ?`, data, run, string(agent), seq); err != nil {
		t.Fatal(err)
	}
}

func TestDamagedEntry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cadre.db")
	s := open(t, path)
	defer s.Close()
	storetest.Damaged(t, s, func(t *testing.T, run string, agent cadre.AgentID, seq int64) {
		flipByte(t, path, run, agent, seq)
	})
}

// Entries written before the store kept checksums have none and are read
// as they are; a database of that schema gets the column when it is opened.
func TestEntriesWithoutChecksum(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cadre.db")
	open(t, path).Close()
	db := raw(t, path)
	// Back to the schema before checksums, with an entry written then.
	for _, q := range []string{
		undo6[0], undo6[1],
		`ALTER TABLE journal DROP COLUMN sum`,
		`DROP TABLE event_batches`,
		storetest.CreateTable(t, filepath.Join("migrations", "001_init.sql"), "events"), // as before schema 4
		`DELETE FROM schema_version WHERE version >= 3`,
		`INSERT INTO runs (id, task, status, model, started, tokens_in, tokens_out, answer, error, agents)
			VALUES ('old', 't', 'running', 'm', '2025-01-01T00:00:00.000000000Z', 0, 0, '', '', 1)`,
		`INSERT INTO journal (run, agent, seq, kind, data, time) VALUES ('old', 'root', 1, 'start', CAST('{"task":"t"}' AS BLOB), '2025-01-01T00:00:00.000000000Z')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	s := open(t, path)
	defer s.Close()
	if err := s.Append(t.Context(), []cadre.JournalEntry{{Run: "old", Agent: "root", Seq: 2, Kind: "timeout", Data: json.RawMessage(`{}`), Time: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Journal(t.Context(), "old", "root")
	if err != nil || len(got) != 2 {
		t.Fatalf("Journal: %v, %d entries", err, len(got))
	}
	if got[0].Sum != 0 {
		t.Errorf("the entry written before checksums came back with one: %08x", got[0].Sum)
	}
	if got[1].Sum == 0 || got[1].Sum != got[1].Checksum() {
		t.Errorf("the entry written after the migration has checksum %08x, want %08x", got[1].Sum, got[1].Checksum())
	}
	for _, e := range got {
		if err := e.Verify(); err != nil {
			t.Errorf("entry %d: %v", e.Seq, err)
		}
	}
}

// undo6 takes a database back to the schema before 6, which kept every
// agent's record in agents.
var undo6 = [2]string{`DROP INDEX journal_records`, `ALTER TABLE journal DROP COLUMN record`}

// Events stored one per row before schema 4 are read back after it, and
// the numbering goes on from them.
func TestEventsBeforeBatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cadre.db")
	open(t, path).Close()
	db := raw(t, path)
	for _, q := range []string{
		undo6[0], undo6[1],
		`DROP TABLE event_batches`,
		storetest.CreateTable(t, filepath.Join("migrations", "001_init.sql"), "events"), // as before schema 4
		`DELETE FROM schema_version WHERE version >= 4`,
		`INSERT INTO runs (id, task, status, model, started, tokens_in, tokens_out, answer, error, agents, event_seq)
			VALUES ('old', 't', 'running', 'm', '2025-01-01T00:00:00.000000000Z', 0, 0, '', '', 1, 2)`,
		`INSERT INTO events (run, seq, type, time, agent, payload) VALUES
			('old', 1, 'run_started', '2025-01-01T00:00:00.000000000Z', 'root', '{"seq":1,"type":"run_started","time":"2025-01-01T00:00:00Z","run":"old","agent":"root"}'),
			('old', 2, 'agent_started', '2025-01-01T00:00:01.000000000Z', 'root', '{"seq":2,"type":"agent_started","time":"2025-01-01T00:00:01Z","run":"old","agent":"root"}')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	s := open(t, path)
	defer s.Close()
	storetest.EventsMigrated(t, s)
}
