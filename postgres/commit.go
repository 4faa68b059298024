package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/eventlines"
	"github.com/cadre-ai/cadre/internal/groupcommit"
)

// ErrClosed is returned by the write methods of a Store that has been
// closed.
var ErrClosed = errors.New("postgres: the store is closed")

// A write is one caller's journal entries, agent records or events, queued
// for the committer.
type write struct {
	op      string                      // what the write does, for messages (see name)
	agents  []*cadre.AgentRecord        // records to create or replace
	entries []cadre.JournalEntry        // checked, with their sums
	events  []cadre.Event               // to number and store
	payload [][]byte                    // the events' JSON, without seq
	seqs    []int64                     // the events' Seqs, set once committed
	alone   func(context.Context) error // the write in a transaction of its own
	done    chan error                  // receives the outcome once; buffered
}

// name is what w does, for messages. The op of a write of an agent's
// record holds %s for the agent and its run, put in only when a message
// needs it: the text would cost every write allocations.
func (w *write) name() string {
	if len(w.agents) == 1 && strings.Contains(w.op, "%s") {
		return fmt.Sprintf(w.op, string(w.agents[0].ID)+" of run "+strconv.Quote(w.agents[0].Run))
	}
	return w.op
}

// committer group-commits the writes that a run makes most: journal
// entries, agent records and events. Every such write of a Store goes
// through one goroutine, which takes all the writes queued while it was
// busy and applies them in one transaction: a few round trips to the
// server and one flush of its write-ahead log for the whole group, instead
// of a transaction, its round trips and its flush per write. The rows of a
// group go in one statement per table (INSERT … SELECT FROM unnest of one
// array per column), whatever their number.
//
// A write that fails must fail alone: when a statement of a group fails
// (an entry that exists already, a run that does not, a lost lease), the
// transaction is rolled back and the group's writes are applied again, one
// transaction each, which says which write failed and why, and keeps the
// others. Run records and leases are written at once, not queued: they are
// few, and a run's record must be there before its journal is.
//
// What a commit covers: PostgreSQL makes a transaction durable when its
// commit is flushed to its write-ahead log (synchronous_commit, on by
// default); no write of a group is told it succeeded before the group's
// commit returned, and a crash keeps all of a group or none of it.
type committer struct {
	queue *groupcommit.Queue[write]

	groups  atomic.Int64 // transactions of more than one write committed
	retried atomic.Int64 // groups applied again write by write, after one of them failed
}

// maxGroup is the most writes the committer applies in one transaction.
const maxGroup = 1024

func newCommitter() *committer {
	return &committer{queue: groupcommit.New[write]()}
}

// submit queues w and waits until it has been committed or has failed.
// When ctx ends first, the write is withdrawn if it has not started and the
// context's error returned; once started it is waited for, so that nil
// always means committed, and the caller's entries and events are not read
// after it has returned.
func (s *Store) submit(ctx context.Context, w *write) error {
	w.done = make(chan error, 1)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("postgres: %s: %w", w.name(), err)
	}
	if !s.c.queue.Add(w) {
		return fmt.Errorf("%w: %s after Close", ErrClosed, w.name())
	}
	withdrawn, err := s.c.queue.Wait(ctx, w, w.done)
	if withdrawn {
		return fmt.Errorf("postgres: %s: %w", w.name(), err)
	}
	return err
}

// run is the committer's goroutine. Close stops it after the writes queued
// before Close are done.
func (s *Store) run() {
	s.c.queue.Run(func() {
		for {
			group := s.c.queue.Take(maxGroup)
			if len(group) == 0 {
				return
			}
			s.commit(group)
		}
	})
}

// CommitTimeout bounds how long a write of the committer waits for a lock
// another session holds: the server gives the statement up then
// (lock_timeout, set on every connection of the Store), and the write
// fails with nothing of it kept, so that it does not hold back the writes
// queued behind it, of every run. A group held up so is applied again
// write by write, so one locked run can hold the others back twice as
// long. A server that stops answering is given up at the client after
// half as long again (see answerTimeout).
const CommitTimeout = 30 * time.Second

// answerTimeout is how long the committer waits for the server to answer
// a transaction: longer than commitTimeout, so that a lock wait ends at
// the server, with nothing kept, before the client stops waiting.
func (s *Store) answerTimeout() time.Duration { return s.commitTimeout * 3 / 2 }

// commit applies a group and tells each writer how it went. Its statements
// run under a context that only CommitTimeout ends: a writer that gives up
// waiting must not roll back the others' work, and the writer waits for
// the outcome, since the Store may read what it was given until then (see
// submit).
//
// When the group fails, its writes are applied one by one. One that is
// given up after CommitTimeout is most likely waiting for a lock on its
// run's rows, which the run's other writes would wait for as long: those
// are not tried, while the other runs' writes go on.
func (s *Store) commit(group []*write) {
	if len(group) > 1 {
		ctx, cancel := context.WithTimeout(context.Background(), s.answerTimeout())
		err := s.commitAll(ctx, group)
		cancel()
		if err == nil {
			s.c.groups.Add(1)
			for _, w := range group {
				for i := range w.events {
					w.events[i].Seq = w.seqs[i]
				}
				w.done <- nil
			}
			return
		}
		if _, ok := errors.AsType[*uncertainError](err); ok {
			for _, w := range group {
				w.done <- s.fault(fmt.Errorf("postgres: %s: %w", w.name(), err))
			}
			return
		}
		s.c.retried.Add(1)
	}
	var stuck map[string]bool // runs whose write was given up
	for _, w := range group {
		if run, ok := w.touches(stuck); ok {
			w.done <- fmt.Errorf("postgres: %s: not tried: a write to run %q waited %s for PostgreSQL at %s and was given up; "+
				"another session may hold a lock on the run's rows (see pg_locks), or the server stopped answering", w.name(), run, s.commitTimeout, s.where)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.answerTimeout())
		err := w.alone(ctx)
		switch {
		case err != nil && pgCode(err) == codeLockTimeout:
			err = fmt.Errorf("postgres: %s: PostgreSQL at %s did not finish it within %s, so it was given up, with nothing of it kept: "+
				"another session holds a lock it needs (see pg_locks) (%w)", w.name(), s.where, s.commitTimeout, err)
			stuck = w.runs(stuck)
		case err != nil && ctx.Err() != nil:
			err = fmt.Errorf("postgres: %s: PostgreSQL at %s did not finish it within %s, so it was given up: "+
				"the server stopped answering, or another session holds a lock it needs (see pg_locks) (%w)", w.name(), s.where, s.answerTimeout(), ctx.Err())
			stuck = w.runs(stuck)
		}
		cancel()
		w.done <- err
	}
}

// runs adds to m the runs w writes to.
func (w *write) runs(m map[string]bool) map[string]bool {
	if m == nil {
		m = map[string]bool{}
	}
	for _, a := range w.agents {
		m[a.Run] = true
	}
	for i := range w.entries {
		m[w.entries[i].Run] = true
	}
	for i := range w.events {
		m[w.events[i].Run] = true
	}
	return m
}

// touches returns a run of m that w writes to, if any.
func (w *write) touches(m map[string]bool) (string, bool) {
	if len(m) == 0 {
		return "", false
	}
	for run := range w.runs(nil) {
		if m[run] {
			return run, true
		}
	}
	return "", false
}

// An uncertainError is a group's commit that failed after it was sent:
// the server may have applied it, so it is not applied again.
type uncertainError struct{ err error }

func (e *uncertainError) Error() string {
	return fmt.Sprintf("the connection failed while PostgreSQL committed this write with others, which it may have kept: %v", e.err)
}

func (e *uncertainError) Unwrap() error { return e.err }

// commitAll applies a group in one transaction. Any error but an
// *uncertainError means that nothing was written.
func (s *Store) commitAll(ctx context.Context, group []*write) error {
	var (
		fence  [][2]string
		counts = map[string]int64{}
		runs   []string // with events, sorted
		agents = agentColumns{}
		at     = map[[2]string]int{} // index in agents by (run, id)
		jr     journalColumns
		ev     eventlines.Rows
	)
	for _, w := range group {
		for _, a := range w.agents {
			// A later record of an agent replaces an earlier one, as the
			// writes one after the other would; one statement may not
			// change a row twice.
			key := [2]string{a.Run, string(a.ID)}
			if i, ok := at[key]; ok {
				agents.set(i, a)
				continue
			}
			at[key] = agents.add(a)
		}
		for i := range w.entries {
			e := &w.entries[i]
			if e.Lease != "" {
				fence = append(fence, [2]string{e.Run, e.Lease})
			}
			jr.add(e)
		}
		for i := range w.events {
			if counts[w.events[i].Run] == 0 {
				runs = append(runs, w.events[i].Run)
			}
			counts[w.events[i].Run]++
		}
	}
	// Locks are taken in one order (leases, then runs, each by run) so that
	// two groups, of this process or another, cannot wait for each other.
	slices.SortFunc(fence, func(a, b [2]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	})
	fence = slices.Compact(fence)
	slices.Sort(runs)

	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }() // after Commit, does nothing

	if len(fence) > 0 || len(runs) > 0 {
		b := &pgx.Batch{}
		for _, f := range fence {
			b.Queue(fenceQuery, f[0], f[1])
		}
		for _, r := range runs {
			b.Queue(bumpEventSeq, r, counts[r])
		}
		br := tx.SendBatch(ctx, b)
		for range fence {
			if _, err := br.Exec(); err != nil {
				_ = br.Close()
				return err
			}
		}
		next, err := firstSeqs(br, runs, counts)
		if err != nil {
			_ = br.Close()
			return err
		}
		if err := br.Close(); err != nil {
			return err
		}
		for _, w := range group {
			for i := range w.events {
				e := &w.events[i]
				w.seqs[i] = next[e.Run]
				next[e.Run]++
				ev.Add(e.Run, w.seqs[i], w.payload[i])
			}
		}
	}

	b := &pgx.Batch{}
	if len(agents.run) > 0 {
		b.Queue(insertAgents, agents.args()...)
	}
	if len(jr.run) > 0 {
		b.Queue(insertJournals, jr.run, jr.agent, jr.seq, jr.kind, jr.data, jr.time, jr.sum)
	}
	if len(ev.Run) > 0 {
		b.Queue(insertEventBatches, ev.Run, ev.First, ev.Last, lines(&ev))
	}
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		if pgconn.SafeToRetry(err) {
			return err
		}
		if _, ok := errors.AsType[*pgconn.PgError](err); ok {
			return err // the server answered the COMMIT with an error: it kept nothing
		}
		return &uncertainError{err}
	}
	return nil
}

// bumpEventSeq reserves $2 event numbers of run $1 and returns the last.
const bumpEventSeq = `UPDATE runs SET event_seq = event_seq + $2 WHERE id = $1 RETURNING event_seq`

// The INSERTs of a group: one row per element of the arrays, which have
// one element per row.
const (
	insertAgents = `INSERT INTO agents (run, id, parent, depth, definition, model, task, status, turns,
			tokens_in, tokens_out, started, ended, result, error)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int4[], $5::text[], $6::text[], $7::text[], $8::text[],
			$9::int4[], $10::int8[], $11::int8[], $12::timestamptz[], $13::timestamptz[], $14::text[], $15::text[])
		ON CONFLICT (run, id) DO UPDATE SET ` + agentUpdate
	insertJournals = `INSERT INTO journal (run, agent, seq, kind, data, time, sum)
		SELECT * FROM unnest($1::text[], $2::text[], $3::int8[], $4::text[], $5::bytea[], $6::timestamptz[], $7::int8[])`
	insertEventBatches = `INSERT INTO event_batches (run, first_seq, last_seq, payload)
		SELECT * FROM unnest($1::text[], $2::int8[], $3::int8[], $4::text[])`
)

// agentUpdate is what an agent's upsert sets when its record exists.
const agentUpdate = `parent = excluded.parent, depth = excluded.depth,
			definition = excluded.definition, model = excluded.model, task = excluded.task,
			status = excluded.status, turns = excluded.turns, tokens_in = excluded.tokens_in,
			tokens_out = excluded.tokens_out, started = excluded.started, ended = excluded.ended,
			result = excluded.result, error = excluded.error`

// agentColumns are the agent records of a group, a slice per column.
type agentColumns struct {
	run, id, parent               []string
	depth                         []int32
	definition, model, task, stat []string
	turns                         []int32
	in, out                       []int64
	started                       []time.Time
	ended                         []pgtype.Timestamptz
	result, err                   []string
}

func (c *agentColumns) add(a *cadre.AgentRecord) int {
	c.run = append(c.run, a.Run)
	c.id = append(c.id, string(a.ID))
	c.parent = append(c.parent, "")
	c.depth = append(c.depth, 0)
	c.definition = append(c.definition, "")
	c.model = append(c.model, "")
	c.task = append(c.task, "")
	c.stat = append(c.stat, "")
	c.turns = append(c.turns, 0)
	c.in = append(c.in, 0)
	c.out = append(c.out, 0)
	c.started = append(c.started, time.Time{})
	c.ended = append(c.ended, pgtype.Timestamptz{})
	c.result = append(c.result, "")
	c.err = append(c.err, "")
	i := len(c.run) - 1
	c.set(i, a)
	return i
}

func (c *agentColumns) set(i int, a *cadre.AgentRecord) {
	c.parent[i], c.depth[i], c.definition[i], c.model[i] = string(a.Parent), int32(a.Depth), a.Definition, a.Model
	c.task[i], c.stat[i], c.turns[i] = a.Task, string(a.Status), int32(a.Turns)
	c.in[i], c.out[i], c.started[i] = a.Usage.InputTokens, a.Usage.OutputTokens, a.Started
	c.ended[i] = pgtype.Timestamptz{Time: a.Ended, Valid: !a.Ended.IsZero()}
	c.result[i], c.err[i] = a.Result, a.Error
}

func (c *agentColumns) args() []any {
	return []any{c.run, c.id, c.parent, c.depth, c.definition, c.model, c.task, c.stat, c.turns,
		c.in, c.out, c.started, c.ended, c.result, c.err}
}

// journalColumns are the journal entries of a group, a slice per column.
type journalColumns struct {
	run, agent []string
	seq        []int64
	kind       []string
	data       [][]byte
	time       []time.Time
	sum        []int64
}

func (c *journalColumns) add(e *cadre.JournalEntry) {
	c.run = append(c.run, e.Run)
	c.agent = append(c.agent, string(e.Agent))
	c.seq = append(c.seq, e.Seq)
	c.kind = append(c.kind, e.Kind)
	c.data = append(c.data, []byte(e.Data))
	c.time = append(c.time, e.Time)
	c.sum = append(c.sum, int64(e.Sum))
}

// lines returns the text of r's rows.
func lines(r *eventlines.Rows) []string {
	out := make([]string, len(r.Run))
	for i := range out {
		out[i] = string(r.Text[i])
	}
	return out
}
