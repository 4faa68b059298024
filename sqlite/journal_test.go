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
		`ALTER TABLE journal DROP COLUMN sum`,
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
