// Package postgres is a cadre.Store in a PostgreSQL database, for a store
// that several machines share. It uses github.com/jackc/pgx/v5 with a
// connection pool.
//
// Open takes a connection string in either of libpq's forms
// (postgres://user@host:5432/db?sslmode=disable, or host=… dbname=…).
// The tables go in the first schema of the search_path, which the
// connection string may set (…&search_path=cadre), so several independent
// stores can share one database. The schema is created and upgraded by
// numbered migrations embedded in the binary, applied one per transaction
// under an advisory lock and recorded in the schema_version table; Open
// refuses, with a *SchemaError, a schema written by a newer build.
//
// Concurrency: a Store is safe for concurrent use, and any number of
// processes may use the same tables. Journal entries, agent records and
// events are group-committed: one goroutine applies all those queued while
// it was busy in one transaction, a statement per table (see committer).
// Run records and leases are written at once, each in a transaction of
// its own on a pooled connection. Event Seqs are allocated
// under a lock on the run's row, held until the commit, so they are
// gap-free and increasing per run whoever appends, and a reader never sees
// an event before those with lower Seqs.
//
// Leases (cadre.Lease) expire by the server's clock. Append checks the
// lease tokens of its entries in the transaction that writes them, and
// holds a share lock on each lease's row until it commits, so a takeover
// waits for the appends under way (see migrations/002_leases.sql).
//
// Errors: a missing run is reported with an error wrapping
// cadre.ErrNotFound. Appending a journal entry whose (run, agent, seq)
// exists is an error, and the batch holding it is not applied. Journal data
// and run config are stored byte for byte; text fields must be valid UTF-8
// without NUL bytes, as PostgreSQL's text requires. Times are kept to the
// microsecond and come back in UTC.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/eventlines"
)

var _ cadre.Store = (*Store)(nil)

// SQLSTATE codes the store tells apart.
const (
	codeUniqueViolation     = "23505"
	codeForeignKeyViolation = "23503"
	codeNoSchema            = "3F000"
	codeLockTimeout         = "55P03" // lock_not_available: lock_timeout passed
)

// Store is a cadre.Store in PostgreSQL. Create one with Open.
type Store struct {
	pool  *pgxpool.Pool
	where string // host:port/database, for messages
	c     *committer

	commitTimeout time.Duration // CommitTimeout, or a test's
	lockTimeout   *atomic.Int64 // in milliseconds, set as lock_timeout on each connection: commitTimeout
}

// Open connects to the database dsn names and brings the schema up to
// date.
func Open(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, parseError(err)
	}
	if cfg.MaxConns < 4 {
		cfg.MaxConns = int32(max(4, runtime.GOMAXPROCS(0)))
	}
	where := describe(cfg.ConnConfig)
	// A statement waiting longer than CommitTimeout for a lock fails at
	// the server (see commit): giving it up at the client only would leave
	// the server to apply it once the lock is let go.
	lockTimeout := new(atomic.Int64)
	lockTimeout.Store(CommitTimeout.Milliseconds())
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SET lock_timeout = "+strconv.FormatInt(lockTimeout.Load(), 10))
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open %s: %w", where, err)
	}
	s := &Store{pool: pool, where: where, commitTimeout: CommitTimeout, lockTimeout: lockTimeout}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect to %s: %w: check that PostgreSQL runs there and the connection string is right", where, err)
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		if _, ok := errors.AsType[*SchemaError](err); ok {
			return nil, err
		}
		if pgCode(err) == codeNoSchema {
			return nil, fmt.Errorf("postgres: open %s: no schema of the search_path exists: create the schema, or fix search_path in the connection string", where)
		}
		return nil, fmt.Errorf("postgres: open %s: %w", where, err)
	}
	s.c = newCommitter()
	go s.run()
	return s, nil
}

// parseError says why a connection string could not be parsed without
// repeating it: pgx hides its password, but not in every form libpq
// accepts (password = x, with spaces; an escaped space; an @ in a URL's
// password).
func parseError(err error) error {
	why := "it could not be read"
	if pe, ok := errors.AsType[*pgconn.ParseConfigError](err); ok {
		// pgx writes "cannot parse `<the string>`: <why>", and why may
		// quote a part of the string (`missing "=" after "secret"`), which
		// may be a piece of the password: quoted parts are left out.
		msg := pe.Error()
		if i := strings.LastIndex(msg, "`: "); i >= 0 {
			why = quoted.ReplaceAllString(msg[i+3:], "…")
		}
	}
	return fmt.Errorf("postgres: the connection string is not valid: %s. It is not shown here, since it may hold a password; see https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING for its forms", why)
}

// quoted matches a part of a string pgx quotes in its messages.
var quoted = regexp.MustCompile(`"[^"]*"`)

// describe names a database for messages, without credentials.
func describe(c *pgx.ConnConfig) string {
	s := c.Host + ":" + strconv.Itoa(int(c.Port)) + "/" + c.Database
	if sp := c.RuntimeParams["search_path"]; sp != "" {
		s += " (search_path " + sp + ")"
	}
	return s
}

// Close finishes the writes already queued, then closes the pool's
// connections, waiting for those in use. Writes after Close fail with
// ErrClosed.
func (s *Store) Close() error {
	s.c.queue.Close()
	s.pool.Close()
	return nil
}

func pgCode(err error) string {
	if e, ok := errors.AsType[*pgconn.PgError](err); ok {
		return e.Code
	}
	return ""
}

func pgDetail(err error) string {
	if e, ok := errors.AsType[*pgconn.PgError](err); ok && e.Detail != "" {
		return " (" + e.Detail + ")"
	}
	return ""
}

const runColumns = `id, task, status, model, started, ended, tokens_in, tokens_out, answer, error, agents, config`

// CreateRun stores a new run. A run with the same ID must not exist.
func (s *Store) createRunOnce(ctx context.Context, r *cadre.RunRecord) error {
	if r == nil || r.ID == "" {
		return errors.New("postgres: create run: the run has no ID: give every run a unique ID")
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO runs (`+runColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		r.ID, r.Task, string(r.Status), r.Model, r.Started, nullTime(r.Ended), r.Usage.InputTokens, r.Usage.OutputTokens,
		r.Answer, r.Error, r.Agents, []byte(r.Config))
	if pgCode(err) == codeUniqueViolation {
		return fmt.Errorf("postgres: create run %q: a run with this ID exists already: use UpdateRun to change it", r.ID)
	}
	if err != nil {
		return fmt.Errorf("postgres: create run %q: %w", r.ID, err)
	}
	return nil
}

// UpdateRun replaces a run's record. A zero Started and a nil Config keep
// the values stored when the run was created.
func (s *Store) updateRunOnce(ctx context.Context, r *cadre.RunRecord) error {
	if r == nil || r.ID == "" {
		return errors.New("postgres: update run: the run has no ID: say which run to update")
	}
	tag, err := s.pool.Exec(ctx, `UPDATE runs SET task = $2, status = $3, model = $4, started = COALESCE($5, started),
		ended = $6, tokens_in = $7, tokens_out = $8, answer = $9, error = $10, agents = $11, config = COALESCE($12, config)
		WHERE id = $1`,
		r.ID, r.Task, string(r.Status), r.Model, nullTime(r.Started), nullTime(r.Ended), r.Usage.InputTokens, r.Usage.OutputTokens,
		r.Answer, r.Error, r.Agents, []byte(r.Config))
	if err != nil {
		return fmt.Errorf("postgres: update run %q: %w", r.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: update run %q: %w", r.ID, cadre.ErrNotFound)
	}
	return nil
}

// GetRun returns a run's record.
func (s *Store) GetRun(ctx context.Context, id string) (*cadre.RunRecord, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: run %q: %w", id, cadre.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get run %q: %w", id, err)
	}
	return r, nil
}

// ListRuns returns runs, newest first (by Started, then by ID, descending);
// limit <= 0 means all.
func (s *Store) ListRuns(ctx context.Context, limit int) ([]*cadre.RunRecord, error) {
	var lim any // NULL: no limit
	if limit > 0 {
		lim = limit
	}
	rows, err := s.pool.Query(ctx, `SELECT `+runColumns+` FROM runs ORDER BY started DESC, id DESC LIMIT $1`, lim)
	if err != nil {
		return nil, fmt.Errorf("postgres: list runs: %w", err)
	}
	defer rows.Close()
	out := []*cadre.RunRecord{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: list runs: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list runs: %w", err)
	}
	return out, nil
}

func scanRun(row pgx.Row) (*cadre.RunRecord, error) {
	var (
		r      cadre.RunRecord
		status string
		ended  *time.Time
		config []byte
	)
	if err := row.Scan(&r.ID, &r.Task, &status, &r.Model, &r.Started, &ended, &r.Usage.InputTokens, &r.Usage.OutputTokens,
		&r.Answer, &r.Error, &r.Agents, &config); err != nil {
		return nil, err
	}
	r.Status = cadre.Status(status)
	r.Started, r.Ended = utc(r.Started), utcPtr(ended)
	if config != nil {
		r.Config = json.RawMessage(config)
	}
	return &r, nil
}

// checkAgent refuses a record that names no run or agent.
func checkAgent(a *cadre.AgentRecord) error {
	if a == nil || a.Run == "" || a.ID == "" {
		return errors.New("postgres: put agent: the record needs a Run and an ID")
	}
	return nil
}

const upsertAgent = `INSERT INTO agents (run, id, parent, depth, definition, model, task, status, turns,
			tokens_in, tokens_out, started, ended, result, error)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
		ON CONFLICT (run, id) DO UPDATE SET ` + agentUpdate

// putAgentOnce creates or replaces an agent's record in a transaction of
// its own. The run must exist.
func (s *Store) putAgentOnce(ctx context.Context, a *cadre.AgentRecord) error {
	return putAgent(ctx, s.pool, a)
}

// An execer runs a statement: the pool, or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func putAgent(ctx context.Context, db execer, a *cadre.AgentRecord) error {
	_, err := db.Exec(ctx, upsertAgent,
		a.Run, string(a.ID), string(a.Parent), a.Depth, a.Definition, a.Model, a.Task, string(a.Status), a.Turns,
		a.Usage.InputTokens, a.Usage.OutputTokens, a.Started, nullTime(a.Ended), a.Result, a.Error)
	if pgCode(err) == codeForeignKeyViolation {
		return fmt.Errorf("postgres: put agent %s: run %q: %w", a.ID, a.Run, cadre.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("postgres: put agent %s of run %q: %w", a.ID, a.Run, err)
	}
	return nil
}

// appendAgentOnce is AppendAgent in a transaction of its own.
func (s *Store) appendAgentOnce(ctx context.Context, a *cadre.AgentRecord, entries []cadre.JournalEntry) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := putAgent(ctx, tx, a); err != nil {
			return err
		}
		if len(entries) == 0 {
			return nil
		}
		return s.insertJournal(ctx, tx, fences(entries), entries)
	})
}

// ListAgents returns a run's agents ordered by Started, then by ID.
func (s *Store) ListAgents(ctx context.Context, run string) ([]*cadre.AgentRecord, error) {
	if err := s.mustExist(ctx, run); err != nil {
		return nil, fmt.Errorf("postgres: list agents: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT id, parent, depth, definition, model, task, status, turns,
		tokens_in, tokens_out, started, ended, result, error FROM agents WHERE run = $1 ORDER BY started, id`, run)
	if err != nil {
		return nil, fmt.Errorf("postgres: list agents of run %q: %w", run, err)
	}
	defer rows.Close()
	out := []*cadre.AgentRecord{}
	for rows.Next() {
		var (
			a                  = cadre.AgentRecord{Run: run}
			id, parent, status string
			ended              *time.Time
		)
		if err := rows.Scan(&id, &parent, &a.Depth, &a.Definition, &a.Model, &a.Task, &status, &a.Turns,
			&a.Usage.InputTokens, &a.Usage.OutputTokens, &a.Started, &ended, &a.Result, &a.Error); err != nil {
			return nil, fmt.Errorf("postgres: list agents of run %q: %w", run, err)
		}
		a.ID, a.Parent, a.Status = cadre.AgentID(id), cadre.AgentID(parent), cadre.Status(status)
		a.Started, a.Ended = utc(a.Started), utcPtr(ended)
		out = append(out, &a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list agents of run %q: %w", run, err)
	}
	return out, nil
}

// mustExist returns an error wrapping cadre.ErrNotFound when the run does
// not exist.
func (s *Store) mustExist(ctx context.Context, run string) error {
	var one int
	err := s.pool.QueryRow(ctx, `SELECT 1 FROM runs WHERE id = $1`, run).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("run %q: %w", run, cadre.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("run %q: %w", run, err)
	}
	return nil
}

const insertJournal = `INSERT INTO journal (run, agent, seq, kind, data, time, sum) VALUES ($1, $2, $3, $4, $5, $6, $7)`

// copyFrom is the batch size from which Append uses COPY, which costs more
// round trips but less per entry than a pipeline of INSERTs (measured
// with journal entries of 0.5 to 7 KiB: at 16 entries INSERTs are 1.4
// times as fast, at 256 COPY is 1.5 to 2 times as fast).
const copyFrom = 64

// appendOnce is Append in a transaction of its own, for entries Append
// has checked and summed.
func (s *Store) appendOnce(ctx context.Context, entries []cadre.JournalEntry) error {
	if len(entries) == 0 {
		return nil
	}
	fence := fences(entries)
	if len(entries) >= copyFrom {
		err := s.copyJournal(ctx, fence, entries)
		switch pgCode(err) {
		case codeUniqueViolation, codeForeignKeyViolation:
			// Nothing was written. The INSERTs below fail the same way and
			// say which entry is at fault.
		case codeLeaseLost:
			return fmt.Errorf("postgres: append %d journal entries: %w; nothing in this batch was written", len(entries), s.lost(ctx, fenceRun(err, fence)))
		default:
			if err != nil {
				return fmt.Errorf("postgres: append %d journal entries: %w", len(entries), err)
			}
			return nil
		}
	}
	return s.insertJournal(ctx, s.pool, fence, entries)
}

// sumEntries checks entries and sets each one's Sum to its checksum.
func sumEntries(entries []cadre.JournalEntry) error {
	for i := range entries {
		if err := checkEntry(&entries[i], i, len(entries)); err != nil {
			return err
		}
		entries[i].Sum = entries[i].Checksum()
	}
	return nil
}

// fenceRun is the run whose fence failed with err: the one its message
// names, else the first.
func fenceRun(err error, fence [][2]string) string {
	for _, f := range fence {
		if e, ok := errors.AsType[*pgconn.PgError](err); ok && strings.HasSuffix(e.Message, " run "+f[0]) {
			return f[0]
		}
	}
	if len(fence) > 0 {
		return fence[0][0]
	}
	return ""
}

func (s *Store) copyJournal(ctx context.Context, fence [][2]string, entries []cadre.JournalEntry) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, f := range fence {
			if _, err := tx.Exec(ctx, fenceQuery, f[0], f[1]); err != nil {
				return err
			}
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"journal"}, []string{"run", "agent", "seq", "kind", "data", "time", "sum"},
			pgx.CopyFromSlice(len(entries), func(i int) ([]any, error) {
				e := &entries[i]
				return []any{e.Run, string(e.Agent), e.Seq, e.Kind, []byte(e.Data), e.Time, int64(e.Sum)}, nil
			}))
		return err
	})
}

// fenceQuery fails the transaction unless a lease holds a run (see
// migrations/002_leases.sql).
const fenceQuery = `SELECT cadre_fence($1, $2)`

// A batcher sends a batch of statements: the pool, or a transaction.
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// insertJournal sends the fences and one INSERT per entry in a pipeline:
// one round trip.
func (s *Store) insertJournal(ctx context.Context, db batcher, fence [][2]string, entries []cadre.JournalEntry) error {
	b := &pgx.Batch{}
	for _, f := range fence {
		b.Queue(fenceQuery, f[0], f[1])
	}
	for i := range entries {
		e := &entries[i]
		b.Queue(insertJournal, e.Run, string(e.Agent), e.Seq, e.Kind, []byte(e.Data), e.Time, int64(e.Sum))
	}
	// A batch runs in one implicit transaction: the first failure rolls
	// back the statements before it and skips those after.
	br := db.SendBatch(ctx, b)
	for _, f := range fence {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			if pgCode(err) == codeLeaseLost {
				return fmt.Errorf("postgres: append %d journal entries: %w; nothing in this batch was written", len(entries), s.lost(ctx, f[0]))
			}
			return fmt.Errorf("postgres: append journal: check the writer's lease on run %q: %w", f[0], err)
		}
	}
	for i := range entries {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			e := &entries[i]
			switch pgCode(err) {
			case codeUniqueViolation:
				return fmt.Errorf("postgres: append journal entry %d of %d: run %q agent %s seq %d exists already: a journal is append-only; nothing in this batch was written", i+1, len(entries), e.Run, e.Agent, e.Seq)
			case codeForeignKeyViolation:
				return fmt.Errorf("postgres: append journal entry %d of %d (agent %s, seq %d): run %q: %w", i+1, len(entries), e.Agent, e.Seq, e.Run, cadre.ErrNotFound)
			}
			return fmt.Errorf("postgres: append journal entry %d of %d (run %q agent %s seq %d): %w%s", i+1, len(entries), e.Run, e.Agent, e.Seq, err, pgDetail(err))
		}
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("postgres: append journal: %w", err)
	}
	return nil
}

func checkEntry(e *cadre.JournalEntry, i, n int) error {
	switch {
	case e.Run == "":
		return fmt.Errorf("postgres: append journal entry %d of %d: the entry has no Run: set the run it belongs to", i+1, n)
	case e.Agent == "":
		return fmt.Errorf("postgres: append journal entry %d of %d (run %q): the entry has no Agent: set the agent it belongs to", i+1, n, e.Run)
	case e.Seq < 1:
		return fmt.Errorf("postgres: append journal entry %d of %d (run %q agent %s): seq is %d: an agent's entries are numbered from 1", i+1, n, e.Run, e.Agent, e.Seq)
	}
	return nil
}

// Journal returns an agent's entries in Seq order, each with the checksum
// stored with it, unchecked (see cadre.JournalEntry.Verify).
func (s *Store) Journal(ctx context.Context, run string, agent cadre.AgentID) ([]cadre.JournalEntry, error) {
	if err := s.mustExist(ctx, run); err != nil {
		return nil, fmt.Errorf("postgres: read journal of %s: %w", agent, err)
	}
	rows, err := s.pool.Query(ctx, `SELECT agent, seq, kind, data, time, sum FROM journal WHERE run = $1 AND agent = $2 ORDER BY seq`, run, string(agent))
	if err != nil {
		return nil, fmt.Errorf("postgres: read journal of %s in run %q: %w", agent, run, err)
	}
	out := []cadre.JournalEntry{}
	if err := scanJournal(rows, run, func(e cadre.JournalEntry) { out = append(out, e) }); err != nil {
		return nil, fmt.Errorf("postgres: read journal of %s in run %q: %w", agent, run, err)
	}
	return out, nil
}

// RunJournals returns the journals of all a run's agents, each in Seq
// order, as Journal returns them, in one query: resuming a run reads them
// all, which would otherwise take a round trip per agent.
func (s *Store) RunJournals(ctx context.Context, run string) (map[cadre.AgentID][]cadre.JournalEntry, error) {
	if err := s.mustExist(ctx, run); err != nil {
		return nil, fmt.Errorf("postgres: read journals: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT agent, seq, kind, data, time, sum FROM journal WHERE run = $1 ORDER BY agent, seq`, run)
	if err != nil {
		return nil, fmt.Errorf("postgres: read the journals of run %q: %w", run, err)
	}
	out := map[cadre.AgentID][]cadre.JournalEntry{}
	if err := scanJournal(rows, run, func(e cadre.JournalEntry) { out[e.Agent] = append(out[e.Agent], e) }); err != nil {
		return nil, fmt.Errorf("postgres: read the journals of run %q: %w", run, err)
	}
	return out, nil
}

// scanJournal reads rows of (agent, seq, kind, data, time, sum) into
// entries of run, giving each to add, and closes rows.
func scanJournal(rows pgx.Rows, run string, add func(cadre.JournalEntry)) error {
	defer rows.Close()
	var agent string
	for rows.Next() {
		e := cadre.JournalEntry{Run: run}
		var data []byte
		var sum *int64 // NULL: written before entries had checksums
		if err := rows.Scan(&agent, &e.Seq, &e.Kind, &data, &e.Time, &sum); err != nil {
			return err
		}
		e.Agent = cadre.AgentID(agent)
		if data != nil {
			e.Data = json.RawMessage(data)
		}
		e.Time = utc(e.Time)
		if sum != nil {
			e.Sum = uint32(*sum)
		}
		add(e)
	}
	return rows.Err()
}

// appendEventsOnce is AppendEvents in a transaction of its own, for the
// events' payloads AppendEvents encoded.
func (s *Store) appendEventsOnce(ctx context.Context, events []cadre.Event, payloads [][]byte) (err error) {
	if len(events) == 0 {
		return nil
	}
	count := map[string]int64{}
	for i := range events {
		count[events[i].Run]++
	}
	// Lock the runs' rows in ID order, so that two batches naming the same
	// runs cannot deadlock.
	runs := make([]string, 0, len(count))
	for r := range count {
		runs = append(runs, r)
	}
	slices.Sort(runs)

	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: append events: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	alloc := &pgx.Batch{}
	for _, r := range runs {
		alloc.Queue(bumpEventSeq, r, count[r])
	}
	br := tx.SendBatch(ctx, alloc)
	next, err := firstSeqs(br, runs, count)
	if err != nil {
		_ = br.Close()
		var r *seqError
		switch {
		case !errors.As(err, &r):
			return fmt.Errorf("postgres: append events: %w", err)
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("postgres: append events: run %q: %w; nothing in this batch was written", r.run, cadre.ErrNotFound)
		}
		return fmt.Errorf("postgres: append events to run %q: %w", r.run, r.err)
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("postgres: append events: %w", err)
	}

	seqs := make([]int64, len(events))
	var rows eventlines.Rows
	for i := range events {
		ev := &events[i]
		seqs[i] = next[ev.Run]
		next[ev.Run]++
		rows.Add(ev.Run, seqs[i], payloads[i])
	}
	if _, err := tx.Exec(ctx, insertEventBatches, rows.Run, rows.First, rows.Last, lines(&rows)); err != nil {
		return fmt.Errorf("postgres: append events: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: append events: commit: %w", err)
	}
	for i := range events {
		events[i].Seq = seqs[i]
	}
	return nil
}

// firstSeqs reads the answers of the bumpEventSeq queued in br for runs,
// in order, each reserving count[run] numbers, and returns the first
// number reserved for each run. An error is a *seqError naming its run.
func firstSeqs(br pgx.BatchResults, runs []string, count map[string]int64) (map[string]int64, error) {
	next := make(map[string]int64, len(runs))
	for _, r := range runs {
		var last int64
		if err := br.QueryRow().Scan(&last); err != nil {
			return nil, &seqError{run: r, err: err}
		}
		next[r] = last - count[r] + 1
	}
	return next, nil
}

// A seqError is the failure of a run's event numbers (see firstSeqs).
type seqError struct {
	run string
	err error
}

func (e *seqError) Error() string { return fmt.Sprintf("run %q: %v", e.run, e.err) }
func (e *seqError) Unwrap() error { return e.err }

// eventPayloads checks events and encodes each as JSON without its Seq.
func eventPayloads(events []cadre.Event) ([][]byte, error) {
	payloads := make([][]byte, len(events))
	for i := range events {
		ev := events[i]
		if ev.Run == "" {
			return nil, fmt.Errorf("postgres: append event %d of %d (%s): the event has no Run: set the run it belongs to", i+1, len(events), ev.Type)
		}
		ev.Seq = 0
		b, err := ev.MarshalJSON() // as json.Marshal writes it, without checking it again
		if err != nil {
			return nil, fmt.Errorf("postgres: append event %d of %d (%s, agent %s): encode it as JSON: %w; nothing in this batch was written", i+1, len(events), ev.Type, ev.Agent, err)
		}
		payloads[i] = b
	}
	return payloads, nil
}

// readEvents is the query of Events: the rows holding a run's events
// after $2 (a bigint below the largest), the first of them the one whose
// range holds $2 + 1.
const readEvents = `SELECT first_seq, payload FROM event_batches
	WHERE run = $1 AND first_seq >= COALESCE(
		(SELECT MAX(first_seq) FROM event_batches WHERE run = $1 AND first_seq <= $2::int8 + 1), 0)
	ORDER BY first_seq`

// Events returns a run's events with Seq greater than after, in order.
func (s *Store) Events(ctx context.Context, run string, after int64) ([]cadre.Event, error) {
	if err := s.mustExist(ctx, run); err != nil {
		return nil, fmt.Errorf("postgres: read events: %w", err)
	}
	rows, err := s.pool.Query(ctx, readEvents, run, min(max(after, 0), math.MaxInt64-1))
	if err != nil {
		return nil, fmt.Errorf("postgres: read events of run %q: %w", run, err)
	}
	defer rows.Close()
	out := []cadre.Event{}
	for rows.Next() {
		var (
			first   int64
			payload []byte
		)
		if err := rows.Scan(&first, &payload); err != nil {
			return nil, fmt.Errorf("postgres: read events of run %q: %w", run, err)
		}
		if out, err = eventlines.Decode(out, payload, first, after); err != nil {
			return nil, fmt.Errorf("postgres: run %q: %w", run, err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: read events of run %q: %w", run, err)
	}
	return out, nil
}

// nullTime passes a zero time as NULL.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// utc returns t in UTC, and the zero time as time.Time{}.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

func utcPtr(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return utc(*t)
}
