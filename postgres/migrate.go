package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// A migration is one numbered file of migrations/.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in order. Their numbers must
// run 1, 2, 3… with no gaps.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("migration file %s: the name must start with its number, as in 001_init.sql", name)
		}
		b, err := migrationFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: base, sql: string(b)})
	}
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration file %s has number %d, want %d: migrations are numbered from 1 with no gaps", m.name, m.version, i+1)
		}
	}
	return out, nil
}

// SchemaVersion is the newest schema this build knows.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// migrate brings the schema up to date, one migration per transaction, and
// refuses a schema written by a newer build. An advisory lock, one per
// schema, keeps two processes opening the store at once from both
// migrating.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	for {
		done, err := s.migrateOne(ctx, ms)
		if err != nil || done {
			return err
		}
	}
}

func (s *Store) migrateOne(ctx context.Context, ms []migration) (done bool, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('cadre.migrate.' || COALESCE(current_schema(), '')))`); err != nil {
			return fmt.Errorf("lock the schema: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
			version integer     NOT NULL PRIMARY KEY,
			applied timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return fmt.Errorf("create the schema_version table: %w", err)
		}
		var cur int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&cur); err != nil {
			return fmt.Errorf("read the schema version: %w", err)
		}
		if cur > len(ms) {
			var schema string
			_ = tx.QueryRow(ctx, `SELECT COALESCE(current_schema(), '')`).Scan(&schema)
			return &SchemaError{Database: s.where, Schema: schema, Version: cur, Known: len(ms)}
		}
		if cur == len(ms) {
			done = true
			return nil
		}
		m := ms[cur]
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("apply migration %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_version (version) VALUES ($1)`, m.version); err != nil {
			return fmt.Errorf("record migration %s: %w", m.name, err)
		}
		return nil
	})
	return done, err
}

// A SchemaError reports tables whose schema is newer than this build of
// cadre knows.
type SchemaError struct {
	Database string // host:port/database
	Schema   string // the PostgreSQL schema holding the tables
	Version  int    // the tables' schema version
	Known    int    // the newest version this build knows
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("PostgreSQL %s (tables in %q) was written by a newer cadre (schema %d, this build knows up to %d): upgrade cadre or use another --store",
		e.Database, e.Schema, e.Version, e.Known)
}
