package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cadre-ai/cadre"
)

// DefaultLeaseTTL is how long a run's lease lasts unless its owner renews
// it, when Config.LeaseTTL is zero. The owner renews it every third of
// that, so two renewals in a row may fail before another process can take
// the run over; a process that dies without a word leaves its run to
// others (cadre resume) at most this long after, or at once when it ran
// on the same machine (see Abandoned).
const DefaultLeaseTTL = 10 * time.Second

// Abandoned reports whether l no longer stands for a live owner: it has
// expired by the store's clock, or its owner's process ran on this machine
// and has exited. Another process may then take the run over.
func Abandoned(l *cadre.Lease) bool {
	return l.Expired || processGone(l.Owner)
}

// newOwner describes this process as a lease owner, with a new token.
func newOwner() cadre.LeaseOwner {
	host, err := os.Hostname()
	if err != nil {
		host = ""
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return cadre.LeaseOwner{Host: host, PID: os.Getpid(), Process: processIdentity(), Token: hex.EncodeToString(b[:])}
}

// lease is a run's hold on its lease: a goroutine the run owns renews it
// every ttl/3 until stop, and reports through lost when it cannot.
type lease struct {
	store cadre.Store
	run   string
	owner cadre.LeaseOwner
	ttl   time.Duration
	log   *slog.Logger

	lostErr atomic.Pointer[error] // set once the lease is gone
	onLost  func(error)

	stopOnce sync.Once
	quit     chan struct{}
	done     chan struct{}
}

// own takes the run's lease before anything of the run is done, and starts
// renewing it. A lease whose owner is gone (see Abandoned) is taken over at
// once; one held by a live owner fails with a *cadre.LeaseError naming it.
func (r *run) own(ctx context.Context) error {
	s := r.e.cfg.Store
	ttl := r.e.cfg.LeaseTTL
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	req := cadre.LeaseRequest{Run: r.id, Owner: newOwner(), TTL: ttl}
	_, err := s.AcquireLease(ctx, req)
	if le, ok := errors.AsType[*cadre.LeaseError](err); ok && errors.Is(err, cadre.ErrRunOwned) && le.Held != nil && processGone(le.Held.Owner) {
		r.e.cfg.Logger.Info("taking over the run of a process that has exited", "run", r.id, "owner", le.Held.Owner.Describe())
		req.Replace = le.Held.Owner.Token
		_, err = s.AcquireLease(ctx, req)
	}
	if err != nil {
		return err
	}
	l := &lease{store: s, run: r.id, owner: req.Owner, ttl: ttl, log: r.e.cfg.Logger, onLost: r.lostLease,
		quit: make(chan struct{}), done: make(chan struct{})}
	r.lease = l
	go l.keep()
	return nil
}

// keep renews the lease until stop. It gives the run up when the store
// says another process has it, or when no renewal has succeeded for a
// whole TTL: by then another process may have taken it.
func (l *lease) keep() {
	defer close(l.done)
	period := l.ttl / 3
	tick := time.NewTicker(period)
	defer tick.Stop()
	renewed := time.Now() // when the last renewal that succeeded began
	for {
		select {
		case <-l.quit:
			return
		case <-tick.C:
		}
		began := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), period)
		_, err := l.store.RenewLease(ctx, l.run, l.owner.Token, l.ttl)
		cancel()
		switch {
		case err == nil:
			renewed = began
		case errors.Is(err, cadre.ErrLeaseLost):
			l.give(err)
			return
		case time.Since(renewed) >= l.ttl:
			l.give(fmt.Errorf("%w: no renewal of the lease on run %s has succeeded for %s, so another process may own the run now (the last renewal failed: %v)",
				cadre.ErrLeaseLost, l.run, l.ttl.Round(time.Millisecond), err))
			return
		default:
			l.log.Warn("renew the run's lease", "run", l.run, "err", err)
		}
	}
}

// give records that the lease is gone and stops the run, once.
func (l *lease) give(err error) {
	if l.lostErr.CompareAndSwap(nil, &err) {
		l.onLost(err)
	}
}

// lost returns why the lease is gone, or nil while it holds.
func (l *lease) lost() error {
	if p := l.lostErr.Load(); p != nil {
		return *p
	}
	return nil
}

// release stops the renewals, waits for them, and ends the lease unless it
// was lost.
func (l *lease) release() {
	l.stopOnce.Do(func() { close(l.quit) })
	<-l.done
	if l.lost() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.ttl)
	defer cancel()
	if err := l.store.ReleaseLease(ctx, l.run, l.owner.Token); err != nil {
		// It expires by itself.
		l.log.Warn("release the run's lease", "run", l.run, "err", err)
	}
}

// lostLease stops a run whose lease is gone: another process may be
// carrying it on, so nothing more of it is done or written here.
func (r *run) lostLease(err error) {
	r.e.cfg.Logger.Error("the run's lease is lost", "run", r.id, "err", err)
	// The run's context first, so that calls in flight end with the lost
	// lease as their cause, not with the agents' own cancel.
	r.cancel(err)
	r.fail(err.Error())
}

// disown ends the run's hold on its lease, if it has one.
func (r *run) disown() {
	if r.lease != nil {
		r.lease.release()
	}
}

// ownedStore is the store as a run that holds a lease writes to it: its
// journal entries carry the lease's token, so the store refuses them once
// another process has the run, and once the lease is known to be lost
// nothing more is written.
type ownedStore struct {
	cadre.Store
	run *run
}

// gone returns why the run may write nothing more: its lease is lost, or
// its store failed to journal (see run.storeFailed).
func (o ownedStore) gone() error {
	if l := o.run.lease; l != nil {
		if err := l.lost(); err != nil {
			return err
		}
	}
	if p := o.run.broken.Load(); p != nil {
		return fmt.Errorf("the run stopped writing to its store after it failed: %w", *p)
	}
	return nil
}

// Append stamps the entries with the lease's token (it changes them).
func (o ownedStore) Append(ctx context.Context, entries []cadre.JournalEntry) error {
	if err := o.gone(); err != nil {
		return err
	}
	l := o.run.lease
	if l == nil {
		return o.Store.Append(ctx, entries)
	}
	for i := range entries {
		entries[i].Lease = l.owner.Token
	}
	err := o.Store.Append(ctx, entries)
	if errors.Is(err, cadre.ErrLeaseLost) {
		// The store says another process has the run.
		l.give(err)
	}
	return err
}

func (o ownedStore) UpdateRun(ctx context.Context, r *cadre.RunRecord) error {
	if err := o.gone(); err != nil {
		return err
	}
	return o.Store.UpdateRun(ctx, r)
}

func (o ownedStore) PutAgent(ctx context.Context, a *cadre.AgentRecord) error {
	if err := o.gone(); err != nil {
		return err
	}
	return o.Store.PutAgent(ctx, a)
}

func (o ownedStore) AppendEvents(ctx context.Context, events []cadre.Event) error {
	if err := o.gone(); err != nil {
		return err
	}
	return o.Store.AppendEvents(ctx, events)
}
