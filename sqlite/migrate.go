package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	sqlite3 "modernc.org/sqlite/lib"
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

// migrate brings the database up to the newest schema, one migration per
// transaction, and refuses a database written by a newer build.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version INTEGER NOT NULL PRIMARY KEY,
		applied TEXT    NOT NULL
	)`); err != nil {
		return fmt.Errorf("create the schema_version table: %w", err)
	}
	for {
		done, err := s.migrateOne(ctx, ms)
		if err != nil || done {
			return err
		}
	}
}

// migrateOne applies the next migration, if any, and reports whether the
// schema is up to date.
func (s *Store) migrateOne(ctx context.Context, ms []migration) (done bool, err error) {
	tx, err := s.w.BeginTx(ctx, nil) // BEGIN IMMEDIATE: one migrator at a time
	if err != nil {
		return false, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	var cur int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&cur); err != nil {
		return false, fmt.Errorf("read the schema version: %w", err)
	}
	if cur > len(ms) {
		return false, &SchemaError{Path: s.path, Version: cur, Known: len(ms)}
	}
	if cur == len(ms) {
		return true, tx.Rollback()
	}
	m := ms[cur]
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return false, fmt.Errorf("apply migration %s: %w", m.name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version, applied) VALUES (?, ?)`, m.version, time.Now().UTC().Format(time.RFC3339)); err != nil {
		return false, fmt.Errorf("record migration %s: %w", m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("commit migration %s: %w", m.name, err)
	}
	return false, nil
}

// A SchemaError reports a database whose schema is newer than this build
// of cadre knows.
type SchemaError struct {
	Path    string // the database file, as given to Open
	Version int    // the database's schema version
	Known   int    // the newest version this build knows
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("%s was written by a newer cadre (schema %d, this build knows up to %d): upgrade cadre or use another --store", e.Path, e.Version, e.Known)
}

// checkOwnDatabase refuses a database that holds tables but not cadre's
// schema_version: another program's, to which cadre must not add its
// tables. It reads the file through a connection of its own that cannot
// write, before anything (the journal mode included) is set on it.
//
// A process that died while writing (kill -9, a power cut) leaves a
// write-ahead log that the next connection must recover, which one that
// cannot write may not do: then the tables are read through a connection
// that may write but never creates the file. Recovery only replays what
// the log holds; it adds nothing to the database.
func checkOwnDatabase(ctx context.Context, abs, path string) error {
	err := readOwnTables(ctx, abs, path, "ro")
	if c := code(err); c&0xff == sqlite3.SQLITE_READONLY {
		err = readOwnTables(ctx, abs, path, "rw")
	}
	return err
}

func readOwnTables(ctx context.Context, abs, path, mode string) error {
	db, err := sql.Open("sqlite", dsn(abs, url.Values{"mode": {mode}}))
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		if code(err) == sqlite3.SQLITE_NOTADB {
			return fmt.Errorf("sqlite: %s is not a SQLite database: give the path of a cadre store, or of a file that does not exist yet", path)
		}
		return fault(path, busyTimeout(BusyTimeout), fmt.Errorf("sqlite: open %s: read its tables: %w", path, err))
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return err
		}
		if name == "schema_version" {
			return nil
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(tables) == 0 {
		return nil
	}
	shown := tables
	if len(shown) > 5 {
		shown = append(shown[:5:5], "…")
	}
	return &ForeignError{Path: path, Why: fmt.Sprintf("it is a SQLite database of another program (tables %s, and none of cadre's)", strings.Join(shown, ", "))}
}

// A ForeignError is returned by Open for a file that is not a cadre store:
// cadre leaves it as it is.
type ForeignError struct {
	Path, Why string
}

func (e *ForeignError) Error() string {
	return fmt.Sprintf("sqlite: %s is not a cadre store: %s. cadre leaves it as it is: give the store a file of its own, such as .cadre/cadre.db", e.Path, e.Why)
}
