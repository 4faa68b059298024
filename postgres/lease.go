package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cadre-ai/cadre"
)

// Leases expire by the server's clock (now()), whatever the clocks of the
// machines that use them.

// codeLeaseLost is the SQLSTATE of cadre_fence (see migrations).
const codeLeaseLost = "CD001"

const leaseColumns = `run, token, host, pid, process, acquired, renewed, expires, expires <= now()`

// leaseAttempts bounds AcquireLease's retries when the lease it was
// refused is released before it can read it.
const leaseAttempts = 3

// AcquireLease makes req.Owner the owner of req.Run; see cadre.Store.
func (s *Store) AcquireLease(ctx context.Context, req cadre.LeaseRequest) (*cadre.Lease, error) {
	if err := checkLeaseRequest(req); err != nil {
		return nil, err
	}
	for range leaseAttempts {
		// Concurrent acquisitions queue on the row: each sees the one before.
		l, err := scanLease(s.pool.QueryRow(ctx, `INSERT INTO leases AS l (run, token, host, pid, process, acquired, renewed, expires)
			VALUES ($1, $2, $3, $4, $5, now(), now(), now() + $6 * interval '1 microsecond')
			ON CONFLICT (run) DO UPDATE SET token = excluded.token, host = excluded.host, pid = excluded.pid,
				process = excluded.process, acquired = excluded.acquired, renewed = excluded.renewed, expires = excluded.expires
			WHERE l.expires <= now() OR l.token = $7
			RETURNING `+leaseColumns,
			req.Run, req.Owner.Token, req.Owner.Host, req.Owner.PID, req.Owner.Process, req.TTL.Microseconds(), req.Replace))
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("postgres: acquire the lease on run %q: %w%s", req.Run, err, pgDetail(err))
		}
		// Another lease holds the run.
		held, err := s.Lease(ctx, req.Run)
		if errors.Is(err, cadre.ErrNotFound) {
			continue // released meanwhile: try again
		}
		if err != nil {
			return nil, fmt.Errorf("postgres: acquire the lease on run %q: %w", req.Run, err)
		}
		return nil, &cadre.LeaseError{Run: req.Run, Held: held, Err: cadre.ErrRunOwned}
	}
	return nil, fmt.Errorf("postgres: acquire the lease on run %q: it was taken and released %d times while this process tried: try again", req.Run, leaseAttempts)
}

// RenewLease extends the lease of token on run; see cadre.Store.
func (s *Store) RenewLease(ctx context.Context, run, token string, ttl time.Duration) (*cadre.Lease, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("postgres: renew the lease on run %q: the TTL is %v: give a positive duration", run, ttl)
	}
	l, err := scanLease(s.pool.QueryRow(ctx, `UPDATE leases SET renewed = now(), expires = now() + $3 * interval '1 microsecond'
		WHERE run = $1 AND token = $2 RETURNING `+leaseColumns, run, token, ttl.Microseconds()))
	if err == nil {
		return l, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: renew the lease on run %q: %w", run, err)
	}
	return nil, s.lost(ctx, run)
}

// ReleaseLease ends the lease of token on run; see cadre.Store.
func (s *Store) ReleaseLease(ctx context.Context, run, token string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM leases WHERE run = $1 AND token = $2`, run, token); err != nil {
		return fmt.Errorf("postgres: release the lease on run %q: %w", run, err)
	}
	return nil
}

// Lease returns the lease that holds run; see cadre.Store.
func (s *Store) Lease(ctx context.Context, run string) (*cadre.Lease, error) {
	l, err := scanLease(s.pool.QueryRow(ctx, `SELECT `+leaseColumns+` FROM leases WHERE run = $1`, run))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: run %q has no lease: %w", run, cadre.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: read the lease on run %q: %w", run, err)
	}
	return l, nil
}

// lost is the *cadre.LeaseError of a lease that no longer holds run,
// naming the one that does.
func (s *Store) lost(ctx context.Context, run string) *cadre.LeaseError {
	le := &cadre.LeaseError{Run: run, Err: cadre.ErrLeaseLost}
	if held, err := s.Lease(context.WithoutCancel(ctx), run); err == nil {
		le.Held = held
	}
	return le
}

func scanLease(row pgx.Row) (*cadre.Lease, error) {
	var l cadre.Lease
	if err := row.Scan(&l.Run, &l.Owner.Token, &l.Owner.Host, &l.Owner.PID, &l.Owner.Process, &l.Acquired, &l.Renewed, &l.Expires, &l.Expired); err != nil {
		return nil, err
	}
	l.Acquired, l.Renewed, l.Expires = utc(l.Acquired), utc(l.Renewed), utc(l.Expires)
	return &l, nil
}

// fences returns the (run, token) pairs an append must check, in order.
func fences(entries []cadre.JournalEntry) [][2]string {
	var out [][2]string
	for i := range entries {
		e := &entries[i]
		if e.Lease == "" {
			continue
		}
		f := [2]string{e.Run, e.Lease}
		if len(out) == 0 || out[len(out)-1] != f {
			out = append(out, f)
		}
	}
	return out
}

func checkLeaseRequest(req cadre.LeaseRequest) error {
	switch {
	case req.Run == "":
		return errors.New("postgres: acquire a lease: the request names no run")
	case req.Owner.Token == "":
		return fmt.Errorf("postgres: acquire the lease on run %q: the owner has no token: give each acquisition a new random one", req.Run)
	case req.TTL <= 0:
		return fmt.Errorf("postgres: acquire the lease on run %q: the TTL is %v: give a positive duration", req.Run, req.TTL)
	}
	return nil
}
