package postgres

import (
	"context"
	"time"
)

// Groups is the number of transactions that held more than one write.
func (s *Store) Groups() int64 { return s.c.groups.Load() }

// Retried is the number of groups the committer applied again write by
// write because the group failed as a whole.
func (s *Store) Retried() int64 { return s.c.retried.Load() }

// Queued is the number of writes waiting for the committer.
func (s *Store) Queued() int { return s.c.queue.Len() }

// Hold occupies the committer with a write that does nothing until release
// is called, so that a test can queue writes behind it. Hold returns once
// the committer is inside that write; release waits for it to end.
func (s *Store) Hold() (release func() error) {
	inside, free := make(chan struct{}), make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- s.submit(context.Background(), &write{op: "hold", alone: func(context.Context) error {
			close(inside)
			<-free
			return nil
		}})
	}()
	<-inside
	return func() error {
		close(free)
		return <-errc
	}
}

// SetCommitTimeout replaces CommitTimeout for s. Call it before s writes.
func (s *Store) SetCommitTimeout(d time.Duration) { s.commitTimeout = d }

// Closed reports whether Close has begun.
func (s *Store) Closed() bool { return s.c.queue.Closed() }
