// Package sqlite is a cadre.Store in a SQLite database file, the default
// store of the cadre command (.cadre/cadre.db). It uses modernc.org/sqlite,
// a SQLite compiled to Go, so it needs no C compiler.
//
// The database runs in WAL mode with foreign keys on and synchronous=FULL:
// a committed batch survives a crash of the process or of the machine, and
// a crash keeps a prefix of batches, never part of one. Its schema is
// created and upgraded by numbered migrations embedded in the binary and
// recorded in the schema_version table; Open refuses, with a *SchemaError,
// a database written by a newer build.
//
// Concurrency: a Store is safe for concurrent use. All writes of a Store go
// through one goroutine and one connection, which group-commits them:
// writes that arrive while a transaction is being written to disk are
// applied together in the next one, the rows of their journal entries,
// agent records and events in INSERTs of many rows each, so that
// concurrent writers share one sync to disk. When one write of a group
// fails, the group is applied again with each write in a savepoint of its
// own, so that it fails alone. Events are kept a batch to a row: the
// events of one run that a group stores are one row, their JSON one per
// line (see migration 004). A write returns once it is durable. Reads use a pool
// of read-only connections and are not blocked by writes. Other processes
// may open the same file; their writes wait for each other up to
// BusyTimeout.
//
// Leases (cadre.Lease) expire by the clock of the machine that reads them,
// which every process sharing the file shares. Append checks the lease
// tokens of its entries in the transaction that writes them.
//
// Errors: a missing run is reported with an error wrapping
// cadre.ErrNotFound. Appending a journal entry whose (run, agent, seq)
// exists is an error, and the batch holding it is not applied. Writes
// after Close fail with ErrClosed. Strings and
// payloads are stored byte for byte; times are kept to the nanosecond and
// come back in UTC, and must lie within the years 0 to 9999.
package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/agentrec"
	"github.com/cadre-ai/cadre/internal/eventlines"
)

var _ cadre.Store = (*Store)(nil)

// BusyTimeout is how long a write waits for another process's write to
// the same database before it fails.
const BusyTimeout = 10 * time.Second

// Store is a cadre.Store in a SQLite database. Create one with Open.
type Store struct {
	path string        // as given to Open, for messages
	busy time.Duration // how long a write waits for another process's lock
	w    *sql.DB       // one connection: every write, made by c
	r    *sql.DB       // read-only connections
	c    *committer    // group-commits writes
	// Statements of the busiest writes, prepared once on w: INSERTs of
	// 1 to 128 rows (see rowBuckets), the fence of Append, and the
	// numbering of events.
	insJournals, insEvents, insAgents rowsStmts
	delAgents                         rowsStmts // of agents kept with their journal from then on (see record.go)
	selLease, bumpSeq                 *sql.Stmt

	closeOnce sync.Once
	closeErr  error
}

// Open opens the database at path, creating it and its parent directory
// when they do not exist, and brings its schema up to date. An existing
// file of 0 bytes is refused with an *EmptyError rather than taken for a
// new store, and a SQLite database of another program with a
// *ForeignError. A database it
// creates can be read and written by its owner only (mode 0600, in a
// directory of mode 0700 when it makes that too), as can the -wal and
// -shm files SQLite keeps beside it; the permissions of an existing
// database are left as they are.
func Open(ctx context.Context, path string) (*Store, error) {
	return open(ctx, path, options{grouped: true, synchronous: "FULL"})
}

// options are the settings Open fixes; benchmarks compare the
// alternatives.
type options struct {
	grouped     bool          // group commit; false gives each write its own transaction
	synchronous string        // PRAGMA synchronous
	busy        time.Duration // how long a write waits for another's lock; BusyTimeout when 0
}

func open(ctx context.Context, path string, o options) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: open: the database path is empty: give a file path such as .cadre/cadre.db")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: create its directory: %w", path, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if target, lerr := os.Readlink(abs); lerr == nil {
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(abs), target)
			}
			// A link to nothing: SQLite would make a database where it
			// points, or fail with a message that names neither.
			return nil, fmt.Errorf("sqlite: %s is a symbolic link to %s, which does not exist: create the database there with cadre (give --store %s), remove the link to have one made at %s, or give another --store", path, target, target, path)
		}
		if err := create(ctx, abs, path); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	case fi.IsDir():
		return nil, fmt.Errorf("sqlite: %s is a folder: give the path of a database file, such as .cadre/cadre.db", path)
	case fi.Size() == 0 && emptyWAL(abs):
		return nil, &EmptyError{Path: path}
	default:
		// SQLite would open a file it may not write read-only, and fail
		// only at the first write, in the middle of a run.
		f, err := os.OpenFile(abs, os.O_RDWR, 0)
		if err != nil {
			return nil, &FaultError{Path: path, Why: readOnly, Err: err}
		}
		f.Close()
	}
	if err := checkOwnDatabase(ctx, abs, path); err != nil {
		return nil, err
	}
	if o.busy <= 0 {
		o.busy = BusyTimeout
	}
	busy := strconv.FormatInt(o.busy.Milliseconds(), 10)
	w, err := sql.Open("sqlite", dsn(abs, url.Values{
		"_busy_timeout": {busy},
		"_journal_mode": {"WAL"},
		"_synchronous":  {o.synchronous},
		"_foreign_keys": {"1"},
		"_txlock":       {"immediate"},
		// A statement of many rows keeps, until it ends, the pages it
		// changes as they were, so that it can be undone alone; past 64
		// KiB SQLite moves them to a temporary file, written with a system
		// call per page. In memory they cost a copy. Durability is the
		// -wal file's, untouched by this.
		"_pragma": {"temp_store = MEMORY"},
	}))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	s := &Store{path: path, busy: o.busy, w: w, c: newCommitter(o.grouped)}
	if err := s.migrate(ctx); err != nil {
		_ = w.Close()
		if _, ok := errors.AsType[*SchemaError](err); ok {
			return nil, err
		}
		if code(err) == sqlite3.SQLITE_NOTADB {
			return nil, fmt.Errorf("sqlite: %s is not a SQLite database: give the path of a cadre store, or of a file that does not exist yet", path)
		}
		return nil, fault(path, busyTimeout(o.busy), fmt.Errorf("sqlite: open %s: %w", path, err))
	}
	r, err := sql.Open("sqlite", dsn(abs, url.Values{
		"_busy_timeout": {busy},
		"_query_only":   {"1"},
	}))
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	s.r = r
	if err := s.prepare(ctx); err != nil {
		_ = errors.Join(s.closeStmts(), r.Close(), w.Close())
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	go s.run()
	return s, nil
}

// PageSize is the page size, in bytes, of the databases Open creates.
// Twice SQLite's default of 4096: a delegated child's rows take about
// 4.5 KiB (its start entry alone 2.5 KiB), and a commit writes each page
// it changed to the -wal file in two system calls (a frame's header, then
// the page) and copies it to the database at the next checkpoint, so
// larger pages cost fewer calls for the same bytes. A database keeps the
// page size it was created with.
const PageSize = 8192

// create makes a new database at abs with cadre's schema. It is built
// under another name beside abs and linked to abs only once complete, so
// that a database at abs is never seen empty or half made, by another
// process opening it at the same time or after a crash; when another
// process links its own first, that one is used. A new database is its
// owner's alone (mode 0600), and so are the -wal and -shm files SQLite
// makes beside it, which take the database's permissions.
func create(ctx context.Context, abs, path string) error {
	removeAbandoned(abs)
	var b [8]byte
	_, _ = rand.Read(b[:])
	tmp := abs + ".new-" + hex.EncodeToString(b[:])
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrPermission) {
		return &FaultError{Path: path, Why: "cannot be created: cadre may not write in its folder. Give it write access there, or use another --store", Err: err}
	}
	if err != nil {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	f.Close()
	defer os.Remove(tmp)
	db, err := sql.Open("sqlite", dsn(tmp, url.Values{
		"_pragma":       {"page_size = " + strconv.Itoa(PageSize)},
		"_journal_mode": {"WAL"},
		"_synchronous":  {"FULL"},
		"_txlock":       {"immediate"},
	}))
	if err != nil {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	s := &Store{path: path, w: db}
	err = s.migrate(ctx)
	// Closing the last connection moves the -wal file into the database
	// and removes it: the file is complete on its own.
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	err = os.Link(tmp, abs)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		// A file system without hard links: renaming is as complete,
		// though two processes creating the store at once may then each
		// put theirs in place, and the later one wins.
		if _, serr := os.Lstat(abs); errors.Is(serr, fs.ErrNotExist) {
			err = os.Rename(tmp, abs)
		}
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	return nil
}

// abandonedAfter is how old a database left half made beside abs (by a
// process that died in create) must be before create removes it: one in
// the making by another process is younger.
const abandonedAfter = time.Hour

// removeAbandoned removes what create left beside abs in a process that
// died before it finished: the database under its temporary name, and
// SQLite's -wal and -journal and -shm files of it.
func removeAbandoned(abs string) {
	dir, prefix := filepath.Dir(abs), filepath.Base(abs)+".new-"
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !madeByCreate(rest) || !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) >= abandonedAfter {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// madeByCreate reports whether rest, what follows ".new-" in a file's
// name, is create's: 16 hexadecimal digits, and SQLite's suffix of a file
// beside a database, if any.
func madeByCreate(rest string) bool {
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		if r, ok := strings.CutSuffix(rest, suffix); ok {
			rest = r
			break
		}
	}
	if len(rest) != 16 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil
}

// emptyWAL reports whether the database at abs has no -wal file with
// something in it, which SQLite would read the database from.
func emptyWAL(abs string) bool {
	fi, err := os.Stat(abs + "-wal")
	return err != nil || fi.Size() == 0
}

// An EmptyError is returned by Open for a database file of 0 bytes. cadre
// never leaves a store empty (it creates one whole, schema included), so
// an empty file is one that something truncated, or that was made for
// cadre by hand; cadre does not take it for an empty store, which would
// show a store that lost its runs as one that never had any.
type EmptyError struct {
	Path string // as given to Open
}

func (e *EmptyError) Error() string {
	return fmt.Sprintf("sqlite: %s is empty (0 bytes), and cadre never leaves a store empty: something truncated it, or it was created by hand. "+
		"If it held runs, restore it from a backup; to start a new store there, delete the file and cadre creates it again", e.Path)
}

// prepare prepares the statements of the busiest writes on w.
func (s *Store) prepare(ctx context.Context) (err error) {
	if s.insJournals, err = journalTable.prepare(ctx, s.w); err != nil {
		return err
	}
	if s.insEvents, err = eventsTable.prepare(ctx, s.w); err != nil {
		return err
	}
	if s.insAgents, err = agentsTable.prepare(ctx, s.w); err != nil {
		return err
	}
	if s.delAgents, err = deleteAgents.prepare(ctx, s.w); err != nil {
		return err
	}
	if s.selLease, err = s.w.PrepareContext(ctx, selectLeaseToken); err != nil {
		return err
	}
	s.bumpSeq, err = s.w.PrepareContext(ctx, bumpEventSeq)
	return err
}

// closeStmts closes the statements prepare prepared.
func (s *Store) closeStmts() error {
	return errors.Join(closeStmts(s.insJournals[:]), closeStmts(s.insEvents[:]), closeStmts(s.insAgents[:]), closeStmts(s.delAgents[:]),
		closeStmts([]*sql.Stmt{s.selLease, s.bumpSeq}))
}

// single is the statement of rowsStmts that inserts one row.
func single(stmts *rowsStmts) *sql.Stmt { return stmts[len(stmts)-1] }

// dsn is a file: URI for the driver, so that any path works.
func dsn(abs string, q url.Values) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	return u.String()
}

// Close waits for the writes under way, then closes the database. Writes
// after Close fail with ErrClosed. Calling Close again does nothing.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.c.queue.Close()
		s.closeErr = errors.Join(s.closeStmts(), s.r.Close(), s.w.Close())
	})
	return s.closeErr
}

// code returns the SQLite result code of err, or 0.
func code(err error) int {
	if e, ok := errors.AsType[*msqlite.Error](err); ok {
		return e.Code()
	}
	return 0
}

const runColumns = `id, task, status, model, started, ended, tokens_in, tokens_out, answer, error, agents, config`

// CreateRun stores a new run. A run with the same ID must not exist.
func (s *Store) CreateRun(ctx context.Context, r *cadre.RunRecord) error {
	if r == nil || r.ID == "" {
		return errors.New("sqlite: create run: the run has no ID: give every run a unique ID")
	}
	started, ended, err := times(r.Started, r.Ended)
	if err != nil {
		return fmt.Errorf("sqlite: create run %q: %w", r.ID, err)
	}
	args := []any{r.ID, r.Task, string(r.Status), r.Model, started, ended, r.Usage.InputTokens, r.Usage.OutputTokens,
		r.Answer, r.Error, r.Agents, blob(r.Config)}
	return s.write(ctx, "create run "+strconv.Quote(r.ID), func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO runs (`+runColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...)
		if code(err) == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY {
			return fmt.Errorf("sqlite: create run %q: a run with this ID exists already: use UpdateRun to change it", r.ID)
		}
		if err != nil {
			return fmt.Errorf("sqlite: create run %q: %w", r.ID, err)
		}
		return nil
	})
}

// UpdateRun replaces a run's record. A zero Started and a nil Config keep
// the values stored when the run was created.
func (s *Store) UpdateRun(ctx context.Context, r *cadre.RunRecord) error {
	if r == nil || r.ID == "" {
		return errors.New("sqlite: update run: the run has no ID: say which run to update")
	}
	started, ended, err := times(r.Started, r.Ended)
	if err != nil {
		return fmt.Errorf("sqlite: update run %q: %w", r.ID, err)
	}
	var keepStarted any
	if !r.Started.IsZero() {
		keepStarted = started
	}
	args := []any{r.Task, string(r.Status), r.Model, keepStarted, ended, r.Usage.InputTokens, r.Usage.OutputTokens,
		r.Answer, r.Error, r.Agents, blob(r.Config), r.ID}
	return s.write(ctx, "update run "+strconv.Quote(r.ID), func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE runs SET task = ?, status = ?, model = ?, started = COALESCE(?, started), ended = ?,
		tokens_in = ?, tokens_out = ?, answer = ?, error = ?, agents = ?, config = COALESCE(?, config) WHERE id = ?`, args...)
		if err != nil {
			return fmt.Errorf("sqlite: update run %q: %w", r.ID, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("sqlite: update run %q: %w", r.ID, err)
		} else if n == 0 {
			return fmt.Errorf("sqlite: update run %q: %w", r.ID, cadre.ErrNotFound)
		}
		return nil
	})
}

// GetRun returns a run's record.
func (s *Store) GetRun(ctx context.Context, id string) (*cadre.RunRecord, error) {
	r, err := scanRun(s.r.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: run %q: %w", id, cadre.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get run %q: %w", id, err)
	}
	return r, nil
}

// ListRuns returns runs, newest first (by Started, then by ID, descending);
// limit <= 0 means all.
func (s *Store) ListRuns(ctx context.Context, limit int) ([]*cadre.RunRecord, error) {
	if limit <= 0 {
		limit = -1 // no limit
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+runColumns+` FROM runs ORDER BY started DESC, id DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list runs: %w", err)
	}
	defer rows.Close()
	out := []*cadre.RunRecord{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list runs: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list runs: %w", err)
	}
	return out, nil
}

type scanner interface{ Scan(dest ...any) error }

func scanRun(row scanner) (*cadre.RunRecord, error) {
	var (
		r       cadre.RunRecord
		status  string
		started string
		ended   sql.NullString
		config  []byte
	)
	if err := row.Scan(&r.ID, &r.Task, &status, &r.Model, &started, &ended, &r.Usage.InputTokens, &r.Usage.OutputTokens,
		&r.Answer, &r.Error, &r.Agents, &config); err != nil {
		return nil, err
	}
	r.Status = cadre.Status(status)
	if len(config) > 0 {
		r.Config = json.RawMessage(config)
	}
	var err error
	if r.Started, err = parseTime(started); err != nil {
		return nil, fmt.Errorf("run %q: started: %w", r.ID, err)
	}
	if r.Ended, err = parseNullTime(ended); err != nil {
		return nil, fmt.Errorf("run %q: ended: %w", r.ID, err)
	}
	return &r, nil
}

// PutAgent creates or replaces an agent's record. The run must exist.
func (s *Store) PutAgent(ctx context.Context, a *cadre.AgentRecord) error {
	row, err := agentRowOf(a)
	if err != nil {
		return err
	}
	r := &rows{agents: []agentRow{row}}
	return s.writeRows(ctx, "put agent %s", r, func(ctx context.Context, tx *sql.Tx) error {
		return s.putAgent(ctx, tx, &row)
	})
}

// AppendAgent writes an agent's record and appends journal entries in one
// transaction: both or neither, and one sync to disk for the two. The
// engine uses it to make a new agent's record and its first entry durable
// together. When the first entry is the agent's own, the record is kept
// in that entry's row (see record.go).
func (s *Store) AppendAgent(ctx context.Context, a *cadre.AgentRecord, entries []cadre.JournalEntry) error {
	if !agentrec.Kept(a, entries) {
		row, err := agentRowOf(a)
		if err != nil {
			return err
		}
		when, err := checkEntries(entries)
		if err != nil {
			return err
		}
		r := &rows{agents: []agentRow{row}, entries: entries, when: when}
		return s.writeRows(ctx, "put agent %s and append to its journal", r, func(ctx context.Context, tx *sql.Tx) error {
			if err := s.putAgent(ctx, tx, &row); err != nil {
				return err
			}
			return s.appendTx(ctx, tx, entries, when, nil)
		})
	}
	if err := checkRecord(a); err != nil { // as agentRowOf does, its times not needed as text
		return err
	}
	when, err := checkEntries(entries)
	if err != nil {
		return err
	}
	r := &rows{entries: entries, when: when, record: agentrec.Append(make([]byte, 0, agentrec.Size(a)), a)}
	return s.writeRows(ctx, "put agent %s and append to its journal", r, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.StmtContext(ctx, single(&s.delAgents)).ExecContext(ctx, a.Run, string(a.ID)); err != nil {
			return fmt.Errorf("sqlite: put agent %s of run %q: %w", a.ID, a.Run, err)
		}
		return s.appendTx(ctx, tx, entries, when, r.record)
	})
}

// checkRecord checks an agent's record: what agentRowOf refuses.
func checkRecord(a *cadre.AgentRecord) error {
	if a == nil || a.Run == "" || a.ID == "" {
		return errors.New("sqlite: put agent: the record needs a Run and an ID")
	}
	for _, t := range [...]struct {
		what string
		t    time.Time
	}{{"started", a.Started}, {"ended", a.Ended}} {
		if err := checkYear(t.t); err != nil {
			return fmt.Errorf("sqlite: put agent %s of run %q: %s: %w", a.ID, a.Run, t.what, err)
		}
	}
	return nil
}

// agentRowOf checks an agent's record and returns its upsert.
func agentRowOf(a *cadre.AgentRecord) (agentRow, error) {
	if err := checkRecord(a); err != nil {
		return agentRow{}, err
	}
	started, ended, err := times(a.Started, a.Ended)
	if err != nil {
		return agentRow{}, fmt.Errorf("sqlite: put agent %s of run %q: %w", a.ID, a.Run, err)
	}
	return agentRow{rec: a, started: started, ended: ended}, nil
}

// putAgent creates or replaces an agent's record in tx.
func (s *Store) putAgent(ctx context.Context, tx *sql.Tx, row *agentRow) error {
	a := row.rec
	_, err := tx.StmtContext(ctx, single(&s.insAgents)).ExecContext(ctx, row.append(nil, &agentBoxes{})...)
	if code(err) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY {
		return fmt.Errorf("sqlite: put agent %s: run %q: %w", a.ID, a.Run, cadre.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("sqlite: put agent %s of run %q: %w", a.ID, a.Run, err)
	}
	return nil
}

// ListAgents returns a run's agents ordered by Started, then by ID: the
// rows of agents, and the records kept with the journal entries of agents
// that have none (see record.go).
func (s *Store) ListAgents(ctx context.Context, run string) ([]*cadre.AgentRecord, error) {
	if err := s.mustExist(ctx, run); err != nil {
		return nil, fmt.Errorf("sqlite: list agents: %w", err)
	}
	// Both reads in one transaction, which sees the database as it was at
	// the first: a record written between them would otherwise be missed
	// in one place and found stale in the other.
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list agents of run %q: %w", run, err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT run, id, parent, depth, definition, model, task, status, turns,
		tokens_in, tokens_out, started, ended, result, error FROM agents WHERE run = ?`, run)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list agents of run %q: %w", run, err)
	}
	defer rows.Close()
	byID := map[cadre.AgentID]*cadre.AgentRecord{}
	for rows.Next() {
		var (
			a                         cadre.AgentRecord
			id, parent, status, start string
			ended                     sql.NullString
		)
		if err := rows.Scan(&a.Run, &id, &parent, &a.Depth, &a.Definition, &a.Model, &a.Task, &status, &a.Turns,
			&a.Usage.InputTokens, &a.Usage.OutputTokens, &start, &ended, &a.Result, &a.Error); err != nil {
			return nil, fmt.Errorf("sqlite: list agents of run %q: %w", run, err)
		}
		a.ID, a.Parent, a.Status = cadre.AgentID(id), cadre.AgentID(parent), cadre.Status(status)
		if a.Started, err = parseTime(start); err != nil {
			return nil, fmt.Errorf("sqlite: agent %s of run %q: started: %w", id, run, err)
		}
		if a.Ended, err = parseNullTime(ended); err != nil {
			return nil, fmt.Errorf("sqlite: agent %s of run %q: ended: %w", id, run, err)
		}
		byID[a.ID] = &a
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list agents of run %q: %w", run, err)
	}
	rows.Close()
	out, err := journalRecords(ctx, tx, run, byID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list agents of run %q: %w", run, err)
	}
	return out, nil
}

// mustExist returns an error wrapping cadre.ErrNotFound when the run does
// not exist.
func (s *Store) mustExist(ctx context.Context, run string) error {
	var one int
	err := s.r.QueryRowContext(ctx, `SELECT 1 FROM runs WHERE id = ?`, run).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("run %q: %w", run, cadre.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("run %q: %w", run, err)
	}
	return nil
}

// Append adds journal entries in one transaction: all of them or none.
// It sets each entry's Sum to its checksum and stores it with the entry.
func (s *Store) Append(ctx context.Context, entries []cadre.JournalEntry) error {
	if len(entries) == 0 {
		return nil
	}
	when, err := checkEntries(entries)
	if err != nil {
		return err
	}
	return s.writeRows(ctx, "append journal", &rows{entries: entries, when: when}, func(ctx context.Context, tx *sql.Tx) error {
		return s.appendTx(ctx, tx, entries, when, nil)
	})
}

// checkEntries checks journal entries before they are written, sets their
// checksums, and returns their times as stored.
func checkEntries(entries []cadre.JournalEntry) ([]string, error) {
	when := make([]string, len(entries))
	for i := range entries {
		e := &entries[i]
		if err := checkEntry(e, i, len(entries)); err != nil {
			return nil, err
		}
		e.Sum = e.Checksum()
		var err error
		if when[i], err = formatTime(e.Time); err != nil {
			return nil, fmt.Errorf("sqlite: append journal entry %d of %d (run %q agent %s seq %d): %w", i+1, len(entries), e.Run, e.Agent, e.Seq, err)
		}
	}
	return when, nil
}

// appendTx appends checked journal entries in tx, after the lease fence;
// record, when not nil, is kept in the first entry's row (see record.go).
func (s *Store) appendTx(ctx context.Context, tx *sql.Tx, entries []cadre.JournalEntry, when []string, record []byte) error {
	if len(entries) == 0 {
		return nil
	}
	if err := s.fence(ctx, tx, entries); err != nil {
		return err
	}
	stmt := tx.StmtContext(ctx, single(&s.insJournals))
	defer stmt.Close()
	for i := range entries {
		e := &entries[i]
		var rec any
		if i == 0 {
			rec = blob(record)
		}
		_, err := stmt.ExecContext(ctx, e.Run, string(e.Agent), e.Seq, e.Kind, blob(e.Data), when[i], int64(e.Sum), rec)
		switch code(err) {
		case 0:
		case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("sqlite: append journal entry %d of %d: run %q agent %s seq %d exists already: a journal is append-only; nothing in this batch was written", i+1, len(entries), e.Run, e.Agent, e.Seq)
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return fmt.Errorf("sqlite: append journal entry %d of %d (agent %s, seq %d): run %q: %w", i+1, len(entries), e.Agent, e.Seq, e.Run, cadre.ErrNotFound)
		default:
			return fmt.Errorf("sqlite: append journal entry %d of %d (run %q agent %s seq %d): %w", i+1, len(entries), e.Run, e.Agent, e.Seq, err)
		}
	}
	return nil
}

func checkEntry(e *cadre.JournalEntry, i, n int) error {
	switch {
	case e.Run == "":
		return fmt.Errorf("sqlite: append journal entry %d of %d: the entry has no Run: set the run it belongs to", i+1, n)
	case e.Agent == "":
		return fmt.Errorf("sqlite: append journal entry %d of %d (run %q): the entry has no Agent: set the agent it belongs to", i+1, n, e.Run)
	case e.Seq < 1:
		return fmt.Errorf("sqlite: append journal entry %d of %d (run %q agent %s): seq is %d: an agent's entries are numbered from 1", i+1, n, e.Run, e.Agent, e.Seq)
	}
	return nil
}

// Journal returns an agent's entries in Seq order, each with the checksum
// stored with it, unchecked (see cadre.JournalEntry.Verify).
func (s *Store) Journal(ctx context.Context, run string, agent cadre.AgentID) ([]cadre.JournalEntry, error) {
	if err := s.mustExist(ctx, run); err != nil {
		return nil, fmt.Errorf("sqlite: read journal of %s: %w", agent, err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT agent, seq, kind, data, time, sum FROM journal WHERE run = ? AND agent = ? ORDER BY seq`, run, string(agent))
	if err != nil {
		return nil, fmt.Errorf("sqlite: read journal of %s in run %q: %w", agent, run, err)
	}
	out := []cadre.JournalEntry{}
	err = scanJournal(rows, run, func(e cadre.JournalEntry) { out = append(out, e) })
	if err != nil {
		return nil, fmt.Errorf("sqlite: journal of %s in run %q: %w", agent, run, err)
	}
	return out, nil
}

// RunJournals returns the journals of all a run's agents, each in Seq
// order, as Journal returns them, in one read: resuming a run reads them
// all.
func (s *Store) RunJournals(ctx context.Context, run string) (map[cadre.AgentID][]cadre.JournalEntry, error) {
	if err := s.mustExist(ctx, run); err != nil {
		return nil, fmt.Errorf("sqlite: read journals: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT agent, seq, kind, data, time, sum FROM journal WHERE run = ? ORDER BY agent, seq`, run)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read the journals of run %q: %w", run, err)
	}
	out := map[cadre.AgentID][]cadre.JournalEntry{}
	err = scanJournal(rows, run, func(e cadre.JournalEntry) { out[e.Agent] = append(out[e.Agent], e) })
	if err != nil {
		return nil, fmt.Errorf("sqlite: the journals of run %q: %w", run, err)
	}
	return out, nil
}

// scanJournal reads rows of (agent, seq, kind, data, time, sum) into
// entries of run, giving each to add, and closes rows.
func scanJournal(rows *sql.Rows, run string, add func(cadre.JournalEntry)) error {
	defer rows.Close()
	var agent string
	for rows.Next() {
		e := cadre.JournalEntry{Run: run}
		var data []byte
		var when string
		var sum sql.NullInt64 // NULL: written before entries had checksums
		if err := rows.Scan(&agent, &e.Seq, &e.Kind, &data, &when, &sum); err != nil {
			return err
		}
		e.Agent = cadre.AgentID(agent)
		if data != nil {
			e.Data = json.RawMessage(data)
		}
		e.Sum = uint32(sum.Int64)
		var err error
		if e.Time, err = parseTime(when); err != nil {
			return fmt.Errorf("agent %s, seq %d: %w", e.Agent, e.Seq, err)
		}
		add(e)
	}
	return rows.Err()
}

// AppendEvents stores events in one transaction, all or none of them, and
// sets their Seq: per run, one more than the run's last event. Seq values
// already set are ignored; after a failure they are left as they were.
func (s *Store) AppendEvents(ctx context.Context, events []cadre.Event) error {
	if len(events) == 0 {
		return nil
	}
	// Encode first, outside the transaction, one after the other in one
	// buffer; the Seq is spliced in later.
	payloads := make([][]byte, len(events))
	buf := make([]byte, 0, 224*len(events))
	for i := range events {
		ev := events[i]
		if ev.Run == "" {
			return fmt.Errorf("sqlite: append event %d of %d (%s): the event has no Run: set the run it belongs to", i+1, len(events), ev.Type)
		}
		ev.Seq = 0
		start := len(buf)
		var err error
		if buf, err = ev.AppendJSON(buf); err != nil { // as json.Marshal writes it, without checking it again
			return fmt.Errorf("sqlite: append event %d of %d (%s, agent %s): encode it as JSON: %w; nothing in this batch was written", i+1, len(events), ev.Type, ev.Agent, err)
		}
		if y := ev.Time.UTC().Year(); y < 0 || y > 9999 {
			return fmt.Errorf("sqlite: append event %d of %d (%s, agent %s): time %v is outside the years 0 to 9999 that the store keeps", i+1, len(events), ev.Type, ev.Agent, ev.Time)
		}
		payloads[i] = buf[start:len(buf):len(buf)]
	}
	seqs := make([]int64, len(events))
	r := &rows{events: events, payloads: payloads, seqs: seqs}
	// fn is the write alone, when the committer cannot write it with
	// others (see numberEvents for the numbering of a group).
	err := s.writeRows(ctx, "append events", r, func(ctx context.Context, tx *sql.Tx) error {
		var b batch
		b.add(r)
		return s.writeEvents(ctx, tx, &b)
	})
	if err != nil {
		return err
	}
	for i := range events {
		events[i].Seq = seqs[i]
	}
	return nil
}

// readEvents is the query of Events: the rows holding a run's events
// after ?2, the first of them the one whose range holds ?2 + 1.
const readEvents = `SELECT first_seq, payload FROM event_batches
	WHERE run = ?1 AND first_seq >= COALESCE(
		(SELECT MAX(first_seq) FROM event_batches WHERE run = ?1 AND first_seq <= ?2 + 1), 0)
	ORDER BY first_seq`

// Events returns a run's events with Seq greater than after, in order.
func (s *Store) Events(ctx context.Context, run string, after int64) ([]cadre.Event, error) {
	if err := s.mustExist(ctx, run); err != nil {
		return nil, fmt.Errorf("sqlite: read events: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, readEvents, run, min(max(after, 0), math.MaxInt64-1))
	if err != nil {
		return nil, fmt.Errorf("sqlite: read events of run %q: %w", run, err)
	}
	defer rows.Close()
	out := []cadre.Event{}
	for rows.Next() {
		var (
			first   int64
			payload []byte
		)
		if err := rows.Scan(&first, &payload); err != nil {
			return nil, fmt.Errorf("sqlite: read events of run %q: %w", run, err)
		}
		if out, err = eventlines.Decode(out, payload, first, after); err != nil {
			return nil, fmt.Errorf("sqlite: run %q: %w", run, err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: read events of run %q: %w", run, err)
	}
	return out, nil
}

// blob stores nil as NULL, anything else as bytes.
func blob(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

// timeLayout is fixed-width so that the text order of stored times is
// their time order.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func formatTime(t time.Time) (string, error) {
	if err := checkYear(t); err != nil {
		return "", err
	}
	return t.UTC().Format(timeLayout), nil
}

// checkYear refuses a time the store cannot keep in timeLayout.
func checkYear(t time.Time) error {
	if y := t.UTC().Year(); y < 0 || y > 9999 {
		return fmt.Errorf("time %v is outside the years 0 to 9999 that the store keeps", t)
	}
	return nil
}

// times formats a record's start and end; a zero end is NULL.
func times(started, ended time.Time) (s string, e any, err error) {
	if s, err = formatTime(started); err != nil {
		return "", nil, fmt.Errorf("started: %w", err)
	}
	if ended.IsZero() {
		return s, nil, nil
	}
	es, err := formatTime(ended)
	if err != nil {
		return "", nil, fmt.Errorf("ended: %w", err)
	}
	return s, es, nil
}

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q: %w", s, err)
	}
	if t.IsZero() {
		return time.Time{}, nil
	}
	return t, nil
}

func parseNullTime(s sql.NullString) (time.Time, error) {
	if !s.Valid {
		return time.Time{}, nil
	}
	return parseTime(s.String)
}
