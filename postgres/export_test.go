package postgres

import (
	"context"
	"time"

	"github.com/cadre-ai/cadre/storetest"
)

// Groups is the number of transactions that held more than one write.
func (s *Store) Groups() int64 { return s.c.groups.Load() }

// Retried is the number of groups the committer applied again write by
// write because the group failed as a whole.
func (s *Store) Retried() int64 { return s.c.retried.Load() }

// Queued is the number of writes waiting for the committer.
func (s *Store) Queued() int { return s.c.queue.Len() }

// Hold occupies the committer with a write that does nothing until release
// is called (see storetest.Hold); release waits for it to end.
func (s *Store) Hold() (release func() error) {
	return storetest.Hold(func(block func()) error {
		return s.submit(context.Background(), &write{op: "hold", alone: func(context.Context) error {
			block()
			return nil
		}})
	})
}

// SetCommitTimeout replaces CommitTimeout for s, on connections made from
// now on (the open ones are closed). Call it before s writes.
func (s *Store) SetCommitTimeout(d time.Duration) {
	s.commitTimeout = d
	s.lockTimeout.Store(d.Milliseconds())
	s.pool.Reset()
}

// Closed reports whether Close has begun.
func (s *Store) Closed() bool { return s.c.queue.Closed() }
