package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/cadre-ai/cadre"
)

// Leases expire by the clock of the machine that reads them. The processes
// sharing a SQLite file run on one machine (SQLite's locking does not work
// across network file systems), so they share that clock.

const leaseColumns = `run, token, host, pid, process, acquired, renewed, expires`

// selectLeaseToken is the fence of Append, prepared once.
const selectLeaseToken = `SELECT token FROM leases WHERE run = ?`

// AcquireLease makes req.Owner the owner of req.Run; see cadre.Store.
func (s *Store) AcquireLease(ctx context.Context, req cadre.LeaseRequest) (*cadre.Lease, error) {
	if err := checkLeaseRequest(req); err != nil {
		return nil, err
	}
	var got *cadre.Lease
	err := s.write(ctx, "acquire the lease on run "+strconv.Quote(req.Run), func(ctx context.Context, tx *sql.Tx) error {
		now := time.Now().UTC()
		cur, err := leaseIn(ctx, tx, req.Run, now)
		if err != nil {
			return fmt.Errorf("sqlite: acquire the lease on run %q: %w", req.Run, err)
		}
		if cur != nil && !cur.Expired && (req.Replace == "" || cur.Owner.Token != req.Replace) {
			return &cadre.LeaseError{Run: req.Run, Held: cur, Err: cadre.ErrRunOwned}
		}
		l := &cadre.Lease{Run: req.Run, Owner: req.Owner, Acquired: now, Renewed: now, Expires: now.Add(req.TTL)}
		expires, err := formatTime(l.Expires)
		if err != nil {
			return fmt.Errorf("sqlite: acquire the lease on run %q: %w", req.Run, err)
		}
		stamp := now.Format(timeLayout)
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO leases (`+leaseColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			req.Run, req.Owner.Token, req.Owner.Host, req.Owner.PID, req.Owner.Process, stamp, stamp, expires); err != nil {
			return fmt.Errorf("sqlite: acquire the lease on run %q: %w", req.Run, err)
		}
		got = l
		return nil
	})
	if err != nil {
		return nil, err
	}
	return got, nil
}

// RenewLease extends the lease of token on run; see cadre.Store.
func (s *Store) RenewLease(ctx context.Context, run, token string, ttl time.Duration) (*cadre.Lease, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("sqlite: renew the lease on run %q: the TTL is %v: give a positive duration", run, ttl)
	}
	var got *cadre.Lease
	err := s.write(ctx, "renew the lease on run "+strconv.Quote(run), func(ctx context.Context, tx *sql.Tx) error {
		now := time.Now().UTC()
		cur, err := leaseIn(ctx, tx, run, now)
		if err != nil {
			return fmt.Errorf("sqlite: renew the lease on run %q: %w", run, err)
		}
		if cur == nil || cur.Owner.Token != token {
			return &cadre.LeaseError{Run: run, Held: cur, Err: cadre.ErrLeaseLost}
		}
		cur.Renewed, cur.Expires, cur.Expired = now, now.Add(ttl), false
		expires, err := formatTime(cur.Expires)
		if err != nil {
			return fmt.Errorf("sqlite: renew the lease on run %q: %w", run, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE leases SET renewed = ?, expires = ? WHERE run = ?`, now.Format(timeLayout), expires, run); err != nil {
			return fmt.Errorf("sqlite: renew the lease on run %q: %w", run, err)
		}
		got = cur
		return nil
	})
	if err != nil {
		return nil, err
	}
	return got, nil
}

// ReleaseLease ends the lease of token on run; see cadre.Store.
func (s *Store) ReleaseLease(ctx context.Context, run, token string) error {
	return s.write(ctx, "release the lease on run "+strconv.Quote(run), func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM leases WHERE run = ? AND token = ?`, run, token); err != nil {
			return fmt.Errorf("sqlite: release the lease on run %q: %w", run, err)
		}
		return nil
	})
}

// Lease returns the lease that holds run; see cadre.Store.
func (s *Store) Lease(ctx context.Context, run string) (*cadre.Lease, error) {
	l, err := scanLease(s.r.QueryRowContext(ctx, `SELECT `+leaseColumns+` FROM leases WHERE run = ?`, run), time.Now())
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: run %q has no lease: %w", run, cadre.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: read the lease on run %q: %w", run, err)
	}
	return l, nil
}

// leaseIn reads run's lease inside a write, or nil when there is none.
func leaseIn(ctx context.Context, tx *sql.Tx, run string, now time.Time) (*cadre.Lease, error) {
	l, err := scanLease(tx.QueryRowContext(ctx, `SELECT `+leaseColumns+` FROM leases WHERE run = ?`, run), now)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return l, err
}

func scanLease(row scanner, now time.Time) (*cadre.Lease, error) {
	var (
		l                          cadre.Lease
		acquired, renewed, expires string
	)
	if err := row.Scan(&l.Run, &l.Owner.Token, &l.Owner.Host, &l.Owner.PID, &l.Owner.Process, &acquired, &renewed, &expires); err != nil {
		return nil, err
	}
	var err error
	if l.Acquired, err = parseTime(acquired); err == nil {
		if l.Renewed, err = parseTime(renewed); err == nil {
			l.Expires, err = parseTime(expires)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the lease on run %q: %w", l.Run, err)
	}
	l.Expired = !now.Before(l.Expires)
	return &l, nil
}

// fence checks, inside an append, that the leases its entries name still
// hold their runs.
func (s *Store) fence(ctx context.Context, tx *sql.Tx, entries []cadre.JournalEntry) error {
	var stmt *sql.Stmt
	checked := ""
	for i := range entries {
		e := &entries[i]
		if e.Lease == "" || e.Lease+"\x00"+e.Run == checked {
			continue
		}
		if stmt == nil {
			stmt = tx.StmtContext(ctx, s.selLease)
			defer stmt.Close()
		}
		var token string
		err := stmt.QueryRowContext(ctx, e.Run).Scan(&token)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: append journal entry %d of %d (run %q agent %s seq %d): check the writer's lease: %w", i+1, len(entries), e.Run, e.Agent, e.Seq, err)
		}
		if token != e.Lease {
			held, rerr := leaseIn(ctx, tx, e.Run, time.Now())
			if rerr != nil {
				held = nil
			}
			return fmt.Errorf("sqlite: append journal entry %d of %d (agent %s, seq %d): %w; nothing in this batch was written", i+1, len(entries), e.Agent, e.Seq,
				&cadre.LeaseError{Run: e.Run, Held: held, Err: cadre.ErrLeaseLost})
		}
		checked = e.Lease + "\x00" + e.Run
	}
	return nil
}

func checkLeaseRequest(req cadre.LeaseRequest) error {
	switch {
	case req.Run == "":
		return errors.New("sqlite: acquire a lease: the request names no run")
	case req.Owner.Token == "":
		return fmt.Errorf("sqlite: acquire the lease on run %q: the owner has no token: give each acquisition a new random one", req.Run)
	case req.TTL <= 0:
		return fmt.Errorf("sqlite: acquire the lease on run %q: the TTL is %v: give a positive duration", req.Run, req.TTL)
	}
	return nil
}
