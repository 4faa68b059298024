package memstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cadre-ai/cadre"
)

// The lease's clock is this process's.

// AcquireLease makes req.Owner the owner of req.Run; see cadre.Store.
func (s *Store) AcquireLease(ctx context.Context, req cadre.LeaseRequest) (*cadre.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memstore: acquire the lease on run %q: %w", req.Run, err)
	}
	if err := checkLeaseRequest(req); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	now := normTime(time.Now())
	if cur, ok := s.leases[req.Run]; ok && now.Before(cur.Expires) && (req.Replace == "" || cur.Owner.Token != req.Replace) {
		return nil, &cadre.LeaseError{Run: req.Run, Held: leaseAt(cur, now), Err: cadre.ErrRunOwned}
	}
	l := &cadre.Lease{Run: req.Run, Owner: req.Owner, Acquired: now, Renewed: now, Expires: now.Add(req.TTL)}
	s.leases[req.Run] = l
	return leaseAt(l, now), nil
}

// RenewLease extends the lease of token on run; see cadre.Store.
func (s *Store) RenewLease(ctx context.Context, run, token string, ttl time.Duration) (*cadre.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memstore: renew the lease on run %q: %w", run, err)
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("memstore: renew the lease on run %q: the TTL is %v: give a positive duration", run, ttl)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	now := normTime(time.Now())
	cur, ok := s.leases[run]
	if !ok || cur.Owner.Token != token {
		return nil, s.lostLocked(run, now)
	}
	cur.Renewed, cur.Expires = now, now.Add(ttl)
	return leaseAt(cur, now), nil
}

// ReleaseLease ends the lease of token on run; see cadre.Store.
func (s *Store) ReleaseLease(ctx context.Context, run, token string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: release the lease on run %q: %w", run, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if cur, ok := s.leases[run]; ok && cur.Owner.Token == token {
		delete(s.leases, run)
	}
	return nil
}

// Lease returns the lease that holds run; see cadre.Store.
func (s *Store) Lease(ctx context.Context, run string) (*cadre.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memstore: read the lease on run %q: %w", run, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	cur, ok := s.leases[run]
	if !ok {
		return nil, fmt.Errorf("memstore: run %q has no lease: %w", run, cadre.ErrNotFound)
	}
	return leaseAt(cur, normTime(time.Now())), nil
}

// fencedLocked checks that the leases the entries name still hold their
// runs.
func (s *Store) fencedLocked(entries []cadre.JournalEntry) error {
	now := normTime(time.Now())
	for i := range entries {
		e := &entries[i]
		if e.Lease == "" {
			continue
		}
		if cur, ok := s.leases[e.Run]; !ok || cur.Owner.Token != e.Lease {
			return fmt.Errorf("memstore: append journal entry %d of %d (agent %s, seq %d): %w; nothing in this batch was written", i+1, len(entries), e.Agent, e.Seq, s.lostLocked(e.Run, now))
		}
	}
	return nil
}

func (s *Store) lostLocked(run string, now time.Time) *cadre.LeaseError {
	le := &cadre.LeaseError{Run: run, Err: cadre.ErrLeaseLost}
	if cur, ok := s.leases[run]; ok {
		le.Held = leaseAt(cur, now)
	}
	return le
}

// leaseAt is a copy of l as read at now.
func leaseAt(l *cadre.Lease, now time.Time) *cadre.Lease {
	c := *l
	c.Expired = !now.Before(c.Expires)
	return &c
}

func checkLeaseRequest(req cadre.LeaseRequest) error {
	switch {
	case req.Run == "":
		return errors.New("memstore: acquire a lease: the request names no run")
	case req.Owner.Token == "":
		return fmt.Errorf("memstore: acquire the lease on run %q: the owner has no token: give each acquisition a new random one", req.Run)
	case req.TTL <= 0:
		return fmt.Errorf("memstore: acquire the lease on run %q: the TTL is %v: give a positive duration", req.Run, req.TTL)
	}
	return nil
}
