package postgres_test

import (
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cadre-ai/cadre/storetest"
)

// Events stored one per row before schema 5 are read back after it, and
// the numbering goes on from them.
func TestEventsBeforeBatches(t *testing.T) {
	dsn, _ := schemaDSN(t)
	open(t, dsn).Close()
	ctx := t.Context()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`DROP TABLE event_batches`,
		storetest.CreateTable(t, filepath.Join("migrations", "001_init.sql"), "events"), // as before schema 5
		`DELETE FROM schema_version WHERE version >= 5`,
		`INSERT INTO runs (id, task, status, model, started, tokens_in, tokens_out, answer, error, agents, event_seq)
			VALUES ('old', 't', 'running', 'm', '2025-01-01T00:00:00Z', 0, 0, '', '', 1, 2)`,
		`INSERT INTO events (run, seq, type, time, agent, payload) VALUES
			('old', 1, 'run_started', '2025-01-01T00:00:00Z', 'root', '{"seq":1,"type":"run_started","time":"2025-01-01T00:00:00Z","run":"old","agent":"root"}'),
			('old', 2, 'agent_started', '2025-01-01T00:00:01Z', 'root', '{"seq":2,"type":"agent_started","time":"2025-01-01T00:00:01Z","run":"old","agent":"root"}')`,
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	c.Close(ctx)
	s := open(t, dsn)
	defer s.Close()
	storetest.EventsMigrated(t, s)
}
