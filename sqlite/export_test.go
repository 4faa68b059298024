package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/cadre-ai/cadre/storetest"
)

// OpenWith opens a store with settings other than Open's, for benchmarks:
// grouped false gives every write a transaction of its own.
func OpenWith(ctx context.Context, path string, grouped bool, synchronous string) (*Store, error) {
	return open(ctx, path, options{grouped: grouped, synchronous: synchronous})
}

// Groups is the number of transactions the store has committed.
func (s *Store) Groups() int64 { return s.c.groups.Load() }

// Retried is the number of groups the committer applied again write by
// write because the group failed as a whole.
func (s *Store) Retried() int64 { return s.c.retried.Load() }

// Queued is the number of writes waiting for the committer.
func (s *Store) Queued() int { return s.c.queue.Len() }

// Hold occupies the committer with a write that does nothing until release
// is called (see storetest.Hold); release waits for it to commit.
func (s *Store) Hold() (release func() error) {
	return storetest.Hold(func(block func()) error {
		return s.write(context.Background(), "hold", func(context.Context, *sql.Tx) error {
			block()
			return nil
		})
	})
}

// OpenBusy opens a store whose writes wait busy for another process's
// lock instead of BusyTimeout.
func OpenBusy(ctx context.Context, path string, busy time.Duration) (*Store, error) {
	return open(ctx, path, options{grouped: true, synchronous: "FULL", busy: busy})
}

// SetMaxPages caps the database at n pages, or at its present size when n
// is smaller (SQLite's max_page_count, on the connection that writes), so
// that a write needing more fails as on a full disk.
func (s *Store) SetMaxPages(n int) error {
	_, err := s.w.Exec(fmt.Sprintf(`PRAGMA max_page_count = %d`, n))
	return err
}

// TempStore is PRAGMA temp_store on the connection that writes: 2 when
// temporary files, statement journals among them, are kept in memory.
func (s *Store) TempStore() (int, error) {
	var n int
	err := s.w.QueryRow(`PRAGMA temp_store`).Scan(&n)
	return n, err
}
