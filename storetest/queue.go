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

	wg sync.WaitGroup
	n  int
}

// Add starts write and waits until the store has queued it.
func (q *Queue) Add(t testing.TB, write func() error) {
	t.Helper()
	i := q.n
	q.n++
	q.Errs = append(q.Errs, nil)
	q.wg.Go(func() { q.Errs[i] = write() })
	deadline := time.Now().Add(10 * time.Second)
	for q.Store.Queued() < q.n {
		if time.Now().After(deadline) {
			t.Fatalf("write %d was not queued within 10s", q.n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Wait waits until every write added has returned.
func (q *Queue) Wait() { q.wg.Wait() }
