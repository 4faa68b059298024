package storetest

import (
	"sync"
	"testing"
	"time"
)

// A Queuer is a store whose writes wait in a queue for one committer,
// which says how many wait (as a test hook of the SQL stores does).
type Queuer interface{ Queued() int }

// A Queue starts writes one after another behind a committer a test
// holds, each queued before the next starts, so that they form one group
// in the order given once the committer is let go.
type Queue struct {
	Store Queuer
	Errs  []error // each write's outcome, in the order added, once Wait has returned

	wg   sync.WaitGroup
	n    int
	errs []*error // where each write's goroutine puts its outcome
}

// Add starts write and waits until the store has queued it.
func (q *Queue) Add(t testing.TB, write func() error) {
	t.Helper()
	q.n++
	err := new(error)
	q.errs = append(q.errs, err)
	q.wg.Go(func() { *err = write() })
	deadline := time.Now().Add(10 * time.Second)
	for q.Store.Queued() < q.n {
		if time.Now().After(deadline) {
			t.Fatalf("write %d was not queued within 10s", q.n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Wait waits until every write added has returned, and puts their
// outcomes in Errs.
func (q *Queue) Wait() {
	q.wg.Wait()
	q.Errs = q.Errs[:0]
	for _, err := range q.errs {
		q.Errs = append(q.Errs, *err)
	}
}

// Hold occupies a store's committer, for a test to queue writes behind it:
// submit queues a write whose work calls block. Hold returns once the
// committer is inside block; release lets it return and waits for the
// write's outcome.
func Hold(submit func(block func()) error) (release func() error) {
	inside, free := make(chan struct{}), make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- submit(func() {
			close(inside)
			<-free
		})
	}()
	<-inside
	return func() error {
		close(free)
		return <-errc
	}
}

// Commit lets the committer held by release go (see Hold) and waits until
// every write added has returned; it fails the test if the held write
// failed.
func (q *Queue) Commit(t testing.TB, release func() error) {
	t.Helper()
	if err := release(); err != nil {
		t.Fatalf("the held write: %v", err)
	}
	q.Wait()
}
