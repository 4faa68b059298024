// Package groupcommit is the queue of a store that group-commits: callers
// queue their writes and wait, and one goroutine takes all the writes
// queued while it was busy and commits them together, paying for one
// transaction and one sync to disk instead of one each. The store says how
// a group is committed; the queue, how writes wait for it.
package groupcommit

import (
	"context"
	"slices"
	"sync"
)

// A Queue holds the writes of type W waiting for the committer. Create one
// with New.
type Queue[W any] struct {
	mu      sync.Mutex
	pending []*W
	closed  bool

	wake   chan struct{} // capacity 1: the committer has work
	quit   chan struct{} // closed by Close
	exited chan struct{} // closed when Run has returned
}

// New returns an empty queue.
func New[W any]() *Queue[W] {
	return &Queue[W]{wake: make(chan struct{}, 1), quit: make(chan struct{}), exited: make(chan struct{})}
}

// Add queues w for the committer and reports whether it was: a queue that
// is closed takes no more writes.
func (q *Queue[W]) Add(w *W) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.pending = append(q.pending, w)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// Wait waits for the outcome of w, queued by Add, which the committer
// sends on done. When ctx ends first, w is taken out of the queue if the
// committer has not taken it yet, and Wait reports it withdrawn with ctx's
// error; once taken it is waited for, so that the caller learns what
// became of it (and the store may still read what the caller gave it
// until then).
func (q *Queue[W]) Wait(ctx context.Context, w *W, done <-chan error) (withdrawn bool, err error) {
	select {
	case err := <-done:
		return false, err
	case <-ctx.Done():
		if q.withdraw(w) {
			return true, ctx.Err()
		}
		return false, <-done
	}
}

// withdraw takes w out of the queue and reports whether it was there.
func (q *Queue[W]) withdraw(w *W) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if i := slices.Index(q.pending, w); i >= 0 {
		q.pending = slices.Delete(q.pending, i, i+1)
		return true
	}
	return false
}

// Take removes the first n queued writes (all of them when fewer are
// queued) and returns them in the order they were queued.
func (q *Queue[W]) Take(n int) []*W {
	q.mu.Lock()
	defer q.mu.Unlock()
	n = min(n, len(q.pending))
	group := slices.Clone(q.pending[:n])
	q.pending = slices.Delete(q.pending, 0, n)
	return group
}

// Len returns the number of writes queued.
func (q *Queue[W]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}

// Closed reports whether Close has been called.
func (q *Queue[W]) Closed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

// Run is the committer's goroutine: it calls drain each time writes are
// queued, and once more when Close is called, then returns. drain takes
// the writes (Take) and commits them until the queue is empty.
func (q *Queue[W]) Run(drain func()) {
	defer close(q.exited)
	for {
		select {
		case <-q.wake:
		case <-q.quit:
			drain()
			return
		}
		drain()
	}
}

// Close makes the queue take no more writes and waits until Run has
// committed those queued before and returned.
func (q *Queue[W]) Close() {
	q.mu.Lock()
	already := q.closed
	q.closed = true
	q.mu.Unlock()
	if !already {
		close(q.quit)
	}
	<-q.exited
}
