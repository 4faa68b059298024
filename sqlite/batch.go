package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/eventlines"
)

// The rows of the busiest writes (journal entries, agent records, events)
// are written by the committer in multi-row INSERTs that take the rows of
// every such write of a group together, so that a group commit of 500 rows
// runs a handful of statements rather than 500: each statement costs its
// binding, its stepping and database/sql's bookkeeping whatever its size,
// and SQLite here is Go transpiled from C, where that cost is high.
//
// A statement is prepared once per size in rowBuckets (at Open), and a
// batch of n rows runs as few of them as add up to n, largest first.

// rowBuckets are the sizes of the multi-row statements, largest first.
var rowBuckets = [...]int{128, 32, 8, 1}

// rowsStmts are one table's INSERTs, one per size of rowBuckets.
type rowsStmts [len(rowBuckets)]*sql.Stmt

// A table is one of the tables whose rows are batched.
type table struct {
	insert string // INSERT INTO … VALUES, before the rows
	row    string // one row of parameters: (?, ?, …)
	upsert string // after the rows: ON CONFLICT …, or ""
}

var (
	journalTable = table{
		insert: `INSERT INTO journal (run, agent, seq, kind, data, time, sum, record) VALUES `,
		row:    `(?, ?, ?, ?, ?, ?, ?, ?)`,
	}
	eventsTable = table{
		insert: `INSERT INTO event_batches (run, first_seq, last_seq, payload) VALUES `,
		row:    `(?, ?, ?, ?)`,
	}
	agentsTable = table{
		insert: `INSERT INTO agents (run, id, parent, depth, definition, model, task, status, turns,
			tokens_in, tokens_out, started, ended, result, error) VALUES `,
		row: `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		upsert: ` ON CONFLICT (run, id) DO UPDATE SET parent = excluded.parent, depth = excluded.depth,
			definition = excluded.definition, model = excluded.model, task = excluded.task,
			status = excluded.status, turns = excluded.turns, tokens_in = excluded.tokens_in,
			tokens_out = excluded.tokens_out, started = excluded.started, ended = excluded.ended,
			result = excluded.result, error = excluded.error`,
	}
	// deleteAgents removes the rows of agents whose records are from then on
	// kept with their journal (see record.go), a (run, id) per row; SQLite
	// finds each with the table's key.
	deleteAgents = table{insert: `DELETE FROM agents WHERE (run, id) IN (VALUES `, row: `(?, ?)`, upsert: `)`}
)

// statement returns the table's INSERT of n rows.
func (t table) statement(n int) string {
	var b strings.Builder
	b.Grow(len(t.insert) + n*(len(t.row)+2) + len(t.upsert))
	b.WriteString(t.insert)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(t.row)
	}
	b.WriteString(t.upsert)
	return b.String()
}

// prepare prepares the table's statements on db.
func (t table) prepare(ctx context.Context, db *sql.DB) (rowsStmts, error) {
	var out rowsStmts
	for i, n := range rowBuckets {
		st, err := db.PrepareContext(ctx, t.statement(n))
		if err != nil {
			closeStmts(out[:i])
			return rowsStmts{}, err
		}
		out[i] = st
	}
	return out, nil
}

func closeStmts(stmts []*sql.Stmt) error {
	var errs []error
	for _, st := range stmts {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// rows are what a write of journal entries, agent records or events
// writes, for the committer to batch with those of other writes. The
// write's fn writes the same rows on its own, one statement each, which is
// what the committer falls back to when a batch fails (see commit).
type rows struct {
	agents []agentRow

	entries []cadre.JournalEntry // checked, with their sums
	when    []string             // the entries' times as stored
	record  []byte               // when not nil, the record of entries[0]'s agent, kept in its row (see record.go)

	events   []cadre.Event
	payloads [][]byte // the events' JSON, without seq
	seqs     []int64  // set to the events' Seq by the write that stores them
}

// An agentRow is an agent record's upsert: the record, which the caller
// keeps as it is until its write returns, and its times as stored.
type agentRow struct {
	rec     *cadre.AgentRecord
	started string
	ended   any // NULL, or the time as stored
}

// agentBoxes are the values consecutive agent rows often share, each put
// in an interface once (see boxed).
type agentBoxes struct{ run, parent, definition, model, status boxed }

// append appends the arguments of r's upsert to args.
func (r *agentRow) append(args []any, b *agentBoxes) []any {
	a := r.rec
	return append(args, b.run.of(a.Run), string(a.ID), b.parent.of(string(a.Parent)), a.Depth, b.definition.of(a.Definition),
		b.model.of(a.Model), a.Task, b.status.of(string(a.Status)), a.Turns, a.Usage.InputTokens, a.Usage.OutputTokens,
		r.started, r.ended, a.Result, a.Error)
}

// A batch gathers the rows of consecutive writes of a group, to be
// written together by flush. It belongs to the committer's goroutine.
type batch struct {
	agents  []agentRow  // a nil rec is a record dropped for a later one kept with its journal
	entries []rowsRef   // the journal entries of each write
	fresh   [][2]string // (run, id) of the agents whose records are kept with their journal from now on
	events  []*rows     // the writes with events
	n       struct{ entries, events int }

	args    []any             // scratch: the arguments of one statement
	agentAt map[[2]string]int // scratch: index in agents by (run, id)
	next    map[string]int64  // scratch: the next event Seq of each run
	count   map[string]int64  // scratch: events per run
	order   []string          // scratch: runs with events, in order
	fenced  map[[2]string]bool
	lines   eventlines.Rows // scratch: the events' rows
}

// rowsRef is one write's journal entries.
type rowsRef struct {
	entries []cadre.JournalEntry
	when    []string
	record  []byte
}

func (b *batch) add(r *rows) {
	for _, a := range r.agents {
		key := [2]string{a.rec.Run, string(a.rec.ID)}
		if i, ok := b.agentAt[key]; ok {
			// The later record of an agent replaces the earlier one, as
			// the upserts one after the other would.
			b.agents[i] = a
			continue
		}
		if b.agentAt == nil {
			b.agentAt = map[[2]string]int{}
		}
		b.agentAt[key] = len(b.agents)
		b.agents = append(b.agents, a)
	}
	if r.record != nil {
		// The record goes with the journal, and replaces the agent's
		// earlier ones: its row of agents, and one written in this batch.
		key := [2]string{r.entries[0].Run, string(r.entries[0].Agent)}
		if i, ok := b.agentAt[key]; ok {
			b.agents[i].rec = nil
			delete(b.agentAt, key)
		}
		b.fresh = append(b.fresh, key)
	}
	if len(r.entries) > 0 {
		b.entries = append(b.entries, rowsRef{r.entries, r.when, r.record})
		b.n.entries += len(r.entries)
	}
	if len(r.events) > 0 {
		b.events = append(b.events, r)
		b.n.events += len(r.events)
	}
}

func (b *batch) empty() bool {
	return len(b.agents) == 0 && len(b.entries) == 0 && len(b.events) == 0 // fresh records come with entries
}

// reset empties b for the next batch, keeping its buffers.
func (b *batch) reset() {
	clear(b.agents)
	b.agents = b.agents[:0]
	clear(b.entries)
	b.entries = b.entries[:0]
	clear(b.events)
	b.events = b.events[:0]
	clear(b.fresh)
	b.fresh = b.fresh[:0]
	b.n.entries, b.n.events = 0, 0
	clear(b.agentAt)
	clear(b.fenced)
}

// flush writes the batch's rows in tx and empties it. An error says only
// that the batch failed: the committer then applies the group's writes one
// by one, which says which write failed and why.
func (s *Store) flush(ctx context.Context, tx *sql.Tx, b *batch) error {
	defer b.reset()
	if b.empty() {
		return nil
	}
	if err := s.fenceBatch(ctx, tx, b); err != nil {
		return err
	}
	if len(b.fresh) > 0 {
		err := insertRows(ctx, tx, &s.delAgents, len(b.fresh), b, func(args []any, i int) []any {
			return append(args, b.fresh[i][0], b.fresh[i][1])
		})
		if err != nil {
			return err
		}
	}
	b.agents = slices.DeleteFunc(b.agents, func(a agentRow) bool { return a.rec == nil })
	if len(b.agents) > 0 {
		var boxes agentBoxes
		err := insertRows(ctx, tx, &s.insAgents, len(b.agents), b, func(args []any, i int) []any {
			return b.agents[i].append(args, &boxes)
		})
		if err != nil {
			return err
		}
	}
	if b.n.entries > 0 {
		w, k := 0, 0 // the write and its entry
		var run, agent, kind, when boxed
		err := insertRows(ctx, tx, &s.insJournals, b.n.entries, b, func(args []any, _ int) []any {
			for k == len(b.entries[w].entries) {
				w, k = w+1, 0
			}
			e := &b.entries[w].entries[k]
			var record any
			if k == 0 {
				record = blob(b.entries[w].record)
			}
			args = append(args, run.of(e.Run), agent.of(string(e.Agent)), e.Seq, kind.of(e.Kind), blob(e.Data),
				when.of(b.entries[w].when[k]), int64(e.Sum), record)
			k++
			return args
		})
		if err != nil {
			return err
		}
	}
	if b.n.events > 0 {
		return s.writeEvents(ctx, tx, b)
	}
	return nil
}

// writeEvents numbers the events of b's writes and writes them in tx, a
// row per run (see eventlines.Rows). A write's own fn, when the committer
// applies it alone, does the same with a batch of that write.
func (s *Store) writeEvents(ctx context.Context, tx *sql.Tx, b *batch) error {
	if err := s.numberEvents(ctx, tx, b); err != nil {
		return err
	}
	b.lines.Reset()
	for _, r := range b.events {
		for k := range r.events {
			b.lines.Add(r.events[k].Run, r.seqs[k], r.payloads[k])
		}
	}
	return s.insertEventRows(ctx, tx, &b.lines, b)
}

// insertEventRows writes the rows of l.
func (s *Store) insertEventRows(ctx context.Context, tx *sql.Tx, l *eventlines.Rows, b *batch) error {
	return insertRows(ctx, tx, &s.insEvents, len(l.Run), b, func(args []any, i int) []any {
		return append(args, l.Run[i], l.First[i], l.Last[i], string(l.Text[i]))
	})
}

// boxed is a string as a statement's argument. Consecutive rows often
// share a value (the run, an agent, a time), which is then put in an
// interface once instead of once per row: each costs an allocation.
type boxed struct {
	s string
	v any
}

func (b *boxed) of(s string) any {
	if b.v == nil || b.s != s {
		b.s, b.v = s, s
	}
	return b.v
}

// insertRows inserts n rows with the statements of stmts, largest first;
// row appends the arguments of row i to args.
func insertRows(ctx context.Context, tx *sql.Tx, stmts *rowsStmts, n int, b *batch, row func(args []any, i int) []any) error {
	i := 0
	for bi, size := range rowBuckets {
		if n-i < size {
			continue
		}
		st := tx.StmtContext(ctx, stmts[bi])
		for ; n-i >= size; i += size {
			args := b.args[:0]
			for j := range size {
				args = row(args, i+j)
			}
			b.args = args
			_, err := st.ExecContext(ctx, args...)
			clear(args)
			if err != nil {
				st.Close()
				return err
			}
		}
		if err := st.Close(); err != nil {
			return err
		}
	}
	return nil
}

// fenceBatch checks, once for each run and lease the batch's entries name,
// that the lease still holds the run (see fence).
func (s *Store) fenceBatch(ctx context.Context, tx *sql.Tx, b *batch) error {
	var st *sql.Stmt
	defer func() {
		if st != nil {
			st.Close()
		}
	}()
	for _, ref := range b.entries {
		for i := range ref.entries {
			e := &ref.entries[i]
			if e.Lease == "" {
				continue
			}
			key := [2]string{e.Run, e.Lease}
			if b.fenced[key] {
				continue
			}
			if st == nil {
				st = tx.StmtContext(ctx, s.selLease)
			}
			var token string
			if err := st.QueryRowContext(ctx, e.Run).Scan(&token); err != nil {
				return err
			}
			if token != e.Lease {
				return cadre.ErrLeaseLost
			}
			if b.fenced == nil {
				b.fenced = map[[2]string]bool{}
			}
			b.fenced[key] = true
		}
	}
	return nil
}

// numberEvents gives the batch's events their Seq: per run, on from the
// run's last, in the order of the writes and of the events in each.
func (s *Store) numberEvents(ctx context.Context, tx *sql.Tx, b *batch) error {
	if b.count == nil {
		b.count, b.next = map[string]int64{}, map[string]int64{}
	}
	defer func() {
		clear(b.count)
		clear(b.next)
		clear(b.order)
		b.order = b.order[:0]
	}()
	for _, r := range b.events {
		for i := range r.events {
			run := r.events[i].Run
			if b.count[run] == 0 {
				b.order = append(b.order, run)
			}
			b.count[run]++
		}
	}
	st := tx.StmtContext(ctx, s.bumpSeq)
	defer st.Close()
	for _, run := range b.order {
		var last int64
		err := st.QueryRowContext(ctx, b.count[run], run).Scan(&last)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: append events: run %q: %w; nothing in this batch was written", run, cadre.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("sqlite: append events to run %q: %w", run, err)
		}
		b.next[run] = last - b.count[run] + 1
	}
	for _, r := range b.events {
		for i := range r.events {
			run := r.events[i].Run
			r.seqs[i] = b.next[run]
			b.next[run]++
		}
	}
	return nil
}

// bumpEventSeq reserves n event numbers of a run and returns the last.
const bumpEventSeq = `UPDATE runs SET event_seq = event_seq + ? WHERE id = ? RETURNING event_seq`
