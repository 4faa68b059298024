package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cadre-ai/cadre/internal/groupcommit"
)

// ErrClosed is returned by the write methods of a Store that has been
// closed.
var ErrClosed = errors.New("sqlite: the store is closed")

// A write is one caller's change. Its fn runs inside a transaction the
// committer may share with other writes; it must not keep tx.
type write struct {
	op   string // what the write does, for messages: "append journal" (see name)
	fn   func(ctx context.Context, tx *sql.Tx) error
	rows *rows      // when not nil, the rows fn writes, for the committer to batch
	done chan error // receives the outcome once; buffered
}

// committer group-commits writes. Every write of a Store goes through one
// goroutine, which takes all writes queued while it was busy and applies
// them in one transaction, paying for one sync to disk instead of one
// each. A write that fails must fail alone: when one of a group fails, the
// transaction is rolled back and the group applied again with each write
// in a savepoint of its own, so that the failed one is rolled back alone
// and the others commit together. Failures are rare, so a group usually
// costs its statements and one commit, without two more statements per
// write for savepoints.
//
// What a sync covers. The database is in WAL mode with synchronous=FULL.
// A group is one transaction: every write queued while the previous group
// was committing, whatever its kind (journal entries, agent records,
// events, run records, leases). Its commit appends each page the group
// changed to the -wal file, once, as a frame (two writes: the frame's
// header, then the page), and calls fsync on the -wal file once; only
// then is any write of the group told it succeeded. So one fsync makes
// every row of the group durable, and a crash keeps either all of a group
// or none of it. When the -wal file has grown past SQLite's automatic
// checkpoint (1,000 pages), the commit that crossed it also copies the
// -wal file into the database: one more fsync of the -wal file before the
// copy, one of the database after it, and one of the -wal file's header
// when the next commit starts writing it from the beginning again. Traced
// (strace) over 3,000 commits of one entry each: 3,014 fsyncs of the -wal
// file and 7 of the database, for 7 checkpoints.
type committer struct {
	grouped bool // false: one transaction per write, for benchmarks
	queue   *groupcommit.Queue[write]

	groups  atomic.Int64 // transactions committed
	retried atomic.Int64 // groups applied again write by write, after one of them failed

	batch    batch // the rows of a group, used by the committer's goroutine only
	released int   // how many writes the last commit told of, used by the committer's goroutine only
}

func newCommitter(grouped bool) *committer {
	return &committer{grouped: grouped, queue: groupcommit.New[write]()}
}

// write queues fn and waits until it has been committed or has failed.
// A failure that the database's situation caused (a full disk, a lock
// held by another program) is a *FaultError.
// When ctx ends first, the write is withdrawn if it has not started and the
// context's error returned; once started it is waited for, so that nil
// always means committed and an error always means nothing was written.
func (s *Store) write(ctx context.Context, op string, fn func(ctx context.Context, tx *sql.Tx) error) error {
	return s.writeRows(ctx, op, nil, fn)
}

// name is what the write does, for messages. An op of a write of one
// agent's record holds %s for the agent and its run, put in only when a
// message needs it: the text costs allocations every write would pay.
func (w *write) name() string {
	r := w.rows
	if r == nil || !strings.Contains(w.op, "%s") {
		return w.op
	}
	switch {
	case len(r.agents) == 1:
		return fmt.Sprintf(w.op, string(r.agents[0].rec.ID)+" of run "+strconv.Quote(r.agents[0].rec.Run))
	case r.record != nil: // the agent of entries[0]
		return fmt.Sprintf(w.op, string(r.entries[0].Agent)+" of run "+strconv.Quote(r.entries[0].Run))
	}
	return w.op
}

// writeRows is write for a write of rows r, which the committer may write
// together with the rows of other writes instead of calling fn.
func (s *Store) writeRows(ctx context.Context, op string, r *rows, fn func(ctx context.Context, tx *sql.Tx) error) error {
	w := writes.Get().(*write)
	w.op, w.fn, w.rows = op, fn, r
	err := s.await(ctx, w)
	// The committer is done with w once its outcome is sent, or when it was
	// withdrawn before the committer took it.
	*w = write{done: w.done}
	writes.Put(w)
	return err
}

// writes keeps the writes (and their channels) that writers are done
// with, for the next: a delegated child makes four or so.
var writes = sync.Pool{New: func() any { return &write{done: make(chan error, 1)} }}

// await queues w and waits for its outcome.
func (s *Store) await(ctx context.Context, w *write) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlite: %s: %w", w.name(), err)
	}
	if !s.c.queue.Add(w) {
		return fmt.Errorf("%w: %s after Close", ErrClosed, w.name())
	}
	withdrawn, err := s.c.queue.Wait(ctx, w, w.done)
	switch {
	case withdrawn:
		return fmt.Errorf("sqlite: %s: %w", w.name(), err)
	case err == nil:
		return nil // before fault, whose Stringer would cost every write an allocation
	}
	return fault(s.path, busyTimeout(s.busy), err)
}

// busyTimeout prints as the duration it is.
type busyTimeout time.Duration

func (b busyTimeout) String() string { return time.Duration(b).String() }

// run is the committer's goroutine. Close stops it after the writes queued
// before Close are done.
func (s *Store) run() { s.c.queue.Run(s.drain) }

// drain commits groups until the queue is empty.
func (s *Store) drain() {
	c := s.c
	for {
		c.gather()
		n := math.MaxInt
		if !c.grouped {
			n = 1
		}
		group := c.queue.Take(n)
		if len(group) == 0 {
			c.released = 0 // the writers told last did not come back
			return
		}
		s.commit(group)
		c.released = len(group)
	}
}

// gatherAfter is the fewest writes a group must have had for the
// committer to wait for its writers' next writes (see gather), and
// gatherYields how many times at most it lets them run.
const (
	gatherAfter  = 4
	gatherYields = 16
)

// gather gives the writers of the group just committed a moment to queue
// their next writes before the next group is taken. Writers that each
// write, wait and write again (the engine writes the children of a large
// spawn from many goroutines) are all released by a commit at once, but
// come back one after another: without this the committer takes the
// first alone, paying a sync to disk for one write while the others
// queue, then the rest; traced on a spawn of 1,000 children, a third of
// the commits held one write. It yields to them, which costs nothing when
// the machine has nothing else to run, until half of them are back or it
// has yielded gatherYields times; after a group of fewer than gatherAfter
// writes (one agent writing alone) it does not wait at all.
func (c *committer) gather() {
	want := c.released / 2
	if !c.grouped || c.released < gatherAfter {
		return
	}
	for range gatherYields {
		if c.queue.Len() >= want {
			return
		}
		runtime.Gosched()
	}
}

// commit applies a group of writes in one transaction and tells each
// writer how it went. The statements run under a context that is never
// cancelled: SQLite rolls back a whole transaction when a statement in it
// is interrupted, which would take the other writers' work with it.
func (s *Store) commit(group []*write) {
	ctx := context.Background()
	errs := make([]error, len(group))
	finish := func() {
		for i, w := range group {
			w.done <- errs[i]
		}
	}
	failAll := func(format string, err error) {
		for i, w := range group {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("sqlite: %s: "+format, w.name(), err)
			}
		}
		finish()
	}
	if len(group) > 1 || group[0].rows != nil {
		committed, err := s.commitAll(group)
		switch {
		case committed:
			finish()
			return
		case err != nil:
			failAll("%w", err)
			return
		}
		s.c.retried.Add(1)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		failAll("begin a transaction: %w", err)
		return
	}
	if len(group) == 1 {
		// Alone: no savepoint needed.
		if errs[0] = group[0].fn(ctx, tx); errs[0] != nil {
			_ = tx.Rollback()
			finish()
			return
		}
	} else {
		for i, w := range group {
			if _, err := tx.ExecContext(ctx, `SAVEPOINT w`); err != nil {
				_ = tx.Rollback()
				failAll("begin a savepoint: %w", err)
				return
			}
			if errs[i] = w.fn(ctx, tx); errs[i] != nil {
				if _, err := tx.ExecContext(ctx, `ROLLBACK TO w`); err != nil {
					// SQLite ended the transaction itself (a full disk,
					// say): nothing in it was kept.
					_ = tx.Rollback()
					failAll("the transaction it shared with other writes failed: %w", errs[i])
					return
				}
			}
			if _, err := tx.ExecContext(ctx, `RELEASE w`); err != nil {
				_ = tx.Rollback()
				failAll("release a savepoint: %w", err)
				return
			}
		}
	}
	if err := tx.Commit(); err != nil {
		failAll("commit: %w", err)
		return
	}
	s.c.groups.Add(1)
	finish()
}

// commitAll applies a group of writes in one transaction without
// savepoints. It reports whether the group was committed; the error is
// why the transaction could not begin or commit, which is every write's.
// When a write failed everything was rolled back and the error is nil,
// for the caller to apply the group again with savepoints, which tells
// each writer how its own write went.
func (s *Store) commitAll(group []*write) (bool, error) {
	ctx := context.Background()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		// Another process holds the database past the busy timeout (or it
		// cannot be written at all): trying again would wait as long again.
		return false, fmt.Errorf("begin a transaction: %w", err)
	}
	// The rows of consecutive writes of rows are written together, before
	// the next write of another kind, so that each write still sees those
	// before it (a run created, a lease taken) and none after it.
	b := &s.c.batch
	for _, w := range group {
		if w.rows != nil {
			b.add(w.rows)
			continue
		}
		if err := s.flush(ctx, tx, b); err != nil {
			_ = tx.Rollback()
			return false, nil
		}
		if err := w.fn(ctx, tx); err != nil {
			_ = tx.Rollback()
			return false, nil
		}
	}
	if err := s.flush(ctx, tx, b); err != nil {
		_ = tx.Rollback()
		return false, nil
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("commit: %w", err)
	}
	s.c.groups.Add(1)
	return true, nil
}
