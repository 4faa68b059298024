package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
)

// LeaseTTL is the lease the suite takes when it does not wait for one to
// expire; ShortTTL the one it waits for, polling the store (never
// sleeping a fixed time) for at most ExpiryWait.
const (
	LeaseTTL   = time.Hour
	ShortTTL   = 50 * time.Millisecond
	ExpiryWait = 30 * time.Second
)

func owner(name string) cadre.LeaseOwner {
	return cadre.LeaseOwner{Host: "host-" + name, PID: 4000 + len(name), Process: "process of " + name, Token: "token-" + name}
}

func acquire(t *testing.T, s cadre.Store, run string, o cadre.LeaseOwner, ttl time.Duration) *cadre.Lease {
	t.Helper()
	l, err := s.AcquireLease(t.Context(), cadre.LeaseRequest{Run: run, Owner: o, TTL: ttl})
	if err != nil {
		t.Fatalf("AcquireLease(%q) by %s: %v", run, o.Host, err)
	}
	if l == nil {
		t.Fatalf("AcquireLease(%q) returned nil and no error", run)
	}
	return l
}

func readLease(t *testing.T, s cadre.Store, run string) *cadre.Lease {
	t.Helper()
	l, err := s.Lease(t.Context(), run)
	if err != nil {
		t.Fatalf("Lease(%q): %v", run, err)
	}
	if l == nil {
		t.Fatalf("Lease(%q) returned nil and no error", run)
	}
	return l
}

// wantLeaseError checks that err is a *cadre.LeaseError wrapping target
// about run, held by holder (nil: by no one).
func wantLeaseError(t *testing.T, what string, err, target error, run string, holder *cadre.LeaseOwner) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want one wrapping %v", what, err, target)
		return
	}
	le, ok := errors.AsType[*cadre.LeaseError](err)
	if !ok {
		t.Errorf("%s: the error %v is not a *cadre.LeaseError", what, err)
		return
	}
	if le.Run != run {
		t.Errorf("%s: the error names run %q, want %q", what, le.Run, run)
	}
	switch {
	case holder == nil && le.Held != nil:
		t.Errorf("%s: the error names the holder %+v, want none", what, le.Held.Owner)
	case holder != nil && le.Held == nil:
		t.Errorf("%s: the error names no holder, want %+v", what, *holder)
	case holder != nil && le.Held.Owner != *holder:
		t.Errorf("%s: the error names the holder %+v, want %+v", what, le.Held.Owner, *holder)
	}
}

// waitExpired polls the store until its clock has passed the lease's end.
func waitExpired(t *testing.T, s cadre.Store, run string) *cadre.Lease {
	t.Helper()
	deadline := time.Now().Add(ExpiryWait)
	for {
		l := readLease(t, s, run)
		if l.Expired {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lease on %q, of %v, has not expired after %v by the store's clock: %+v", run, ShortTTL, ExpiryWait, l)
		}
		time.Sleep(ShortTTL / 5)
	}
}

func (suite) leaseAcquire(t *testing.T, s cadre.Store) {
	a := owner("a")
	got := acquire(t, s, "r1", a, LeaseTTL)
	if got.Run != "r1" || got.Owner != a || got.Expired {
		t.Errorf("AcquireLease returned %+v, want run r1, owner %+v, not expired", got, a)
	}
	if got.Acquired.IsZero() || got.Acquired.Location() != time.UTC || !got.Renewed.Equal(got.Acquired) {
		t.Errorf("AcquireLease: acquired %v, renewed %v: want a time in UTC, renewed when acquired", got.Acquired, got.Renewed)
	}
	if d := got.Expires.Sub(got.Acquired) - LeaseTTL; d < -TimeMargin || d > TimeMargin {
		t.Errorf("AcquireLease: the lease runs from %v to %v, want %v", got.Acquired, got.Expires, LeaseTTL)
	}
	if d := cmp.Diff(got, readLease(t, s, "r1"), opts); d != "" {
		t.Errorf("Lease after AcquireLease (-acquired +read):\n%s", d)
	}
	// The run need not be recorded, and recording it changes nothing.
	mustCreate(t, s, sampleRun("r1", at(0)))
	if d := cmp.Diff(got, readLease(t, s, "r1"), opts); d != "" {
		t.Errorf("Lease after CreateRun (-acquired +read):\n%s", d)
	}
	_, err := s.Lease(t.Context(), "r2")
	wantNotFound(t, "Lease of a run nobody leased", err)
}

func (suite) leaseHeld(t *testing.T, s cadre.Store) {
	a, b := owner("a"), owner("b")
	held := acquire(t, s, "r1", a, LeaseTTL)
	_, err := s.AcquireLease(t.Context(), cadre.LeaseRequest{Run: "r1", Owner: b, TTL: LeaseTTL})
	wantLeaseError(t, "AcquireLease of a held run", err, cadre.ErrRunOwned, "r1", &a)
	if le, ok := errors.AsType[*cadre.LeaseError](err); ok && le.Held != nil {
		if !le.Held.Acquired.Equal(held.Acquired) || le.Held.Expired {
			t.Errorf("the error says the lease was acquired at %v (expired %t), want %v and live", le.Held.Acquired, le.Held.Expired, held.Acquired)
		}
	}
	// A replacement names the token it replaces; another one is refused.
	_, err = s.AcquireLease(t.Context(), cadre.LeaseRequest{Run: "r1", Owner: b, TTL: LeaseTTL, Replace: "token-nobody"})
	wantLeaseError(t, "AcquireLease replacing a token that does not hold the run", err, cadre.ErrRunOwned, "r1", &a)
	// The holder itself cannot take it again with a new token either.
	again := a
	again.Token = "token-a2"
	_, err = s.AcquireLease(t.Context(), cadre.LeaseRequest{Run: "r1", Owner: again, TTL: LeaseTTL})
	wantLeaseError(t, "AcquireLease of a held run by the same host and pid", err, cadre.ErrRunOwned, "r1", &a)
	if got := readLease(t, s, "r1"); got.Owner != a {
		t.Errorf("after refused acquisitions the lease is held by %+v, want %+v", got.Owner, a)
	}
	// Other runs are not affected.
	acquire(t, s, "r2", b, LeaseTTL)
}

func (suite) leaseReplace(t *testing.T, s cadre.Store) {
	a, b, c := owner("a"), owner("b"), owner("c")
	acquire(t, s, "r1", a, LeaseTTL)
	got, err := s.AcquireLease(t.Context(), cadre.LeaseRequest{Run: "r1", Owner: b, TTL: LeaseTTL, Replace: a.Token})
	if err != nil {
		t.Fatalf("AcquireLease replacing the holder's token: %v", err)
	}
	if got.Owner != b {
		t.Errorf("the replacement is held by %+v, want %+v", got.Owner, b)
	}
	_, err = s.AcquireLease(t.Context(), cadre.LeaseRequest{Run: "r1", Owner: c, TTL: LeaseTTL, Replace: a.Token})
	wantLeaseError(t, "AcquireLease replacing a token that was replaced already", err, cadre.ErrRunOwned, "r1", &b)
	_, err = s.RenewLease(t.Context(), "r1", a.Token, LeaseTTL)
	wantLeaseError(t, "RenewLease of a replaced lease", err, cadre.ErrLeaseLost, "r1", &b)
}

func (suite) leaseRenew(t *testing.T, s cadre.Store) {
	a, b := owner("a"), owner("b")
	first := acquire(t, s, "r1", a, ShortTTL)
	got, err := s.RenewLease(t.Context(), "r1", a.Token, LeaseTTL)
	if err != nil {
		t.Fatalf("RenewLease: %v", err)
	}
	if got.Owner != a || !got.Acquired.Equal(first.Acquired) || got.Renewed.Before(first.Renewed) || got.Expired {
		t.Errorf("RenewLease returned %+v, want owner %+v, acquired %v, renewed then or later, not expired", got, a, first.Acquired)
	}
	if d := got.Expires.Sub(got.Renewed) - LeaseTTL; d < -TimeMargin || d > TimeMargin {
		t.Errorf("RenewLease: the lease runs from %v to %v, want %v", got.Renewed, got.Expires, LeaseTTL)
	}
	if d := cmp.Diff(got, readLease(t, s, "r1"), opts); d != "" {
		t.Errorf("Lease after RenewLease (-renewed +read):\n%s", d)
	}
	_, err = s.RenewLease(t.Context(), "r1", b.Token, LeaseTTL)
	wantLeaseError(t, "RenewLease with a token that does not hold the run", err, cadre.ErrLeaseLost, "r1", &a)
	_, err = s.RenewLease(t.Context(), "r2", a.Token, LeaseTTL)
	wantLeaseError(t, "RenewLease of a run nobody leased", err, cadre.ErrLeaseLost, "r2", nil)
	if _, err := s.RenewLease(t.Context(), "r1", a.Token, 0); err == nil {
		t.Error("RenewLease with a TTL of 0 succeeded, want an error")
	}
}

func (suite) leaseRelease(t *testing.T, s cadre.Store) {
	a, b := owner("a"), owner("b")
	acquire(t, s, "r1", a, LeaseTTL)
	if err := s.ReleaseLease(t.Context(), "r1", b.Token); err != nil {
		t.Fatalf("ReleaseLease with a token that does not hold the run: %v", err)
	}
	if got := readLease(t, s, "r1"); got.Owner != a {
		t.Fatalf("ReleaseLease with another token released the lease: it is held by %+v", got.Owner)
	}
	if err := s.ReleaseLease(t.Context(), "r1", a.Token); err != nil {
		t.Fatalf("ReleaseLease: %v", err)
	}
	_, err := s.Lease(t.Context(), "r1")
	wantNotFound(t, "Lease after ReleaseLease", err)
	if err := s.ReleaseLease(t.Context(), "r1", a.Token); err != nil {
		t.Errorf("ReleaseLease of a released lease: %v", err)
	}
	_, err = s.RenewLease(t.Context(), "r1", a.Token, LeaseTTL)
	wantLeaseError(t, "RenewLease of a released lease", err, cadre.ErrLeaseLost, "r1", nil)
	if got := acquire(t, s, "r1", b, LeaseTTL); got.Owner != b {
		t.Errorf("AcquireLease after ReleaseLease: held by %+v, want %+v", got.Owner, b)
	}
}

func (suite) leaseExpiry(t *testing.T, s cadre.Store) {
	a, b := owner("a"), owner("b")
	mustCreate(t, s, sampleRun("r1", at(0)))
	acquire(t, s, "r1", a, ShortTTL)
	expired := waitExpired(t, s, "r1")
	if expired.Owner != a {
		t.Errorf("the expired lease is held by %+v, want %+v", expired.Owner, a)
	}
	// An expired lease nobody took is the holder's still.
	renewed, err := s.RenewLease(t.Context(), "r1", a.Token, ShortTTL)
	if err != nil {
		t.Fatalf("RenewLease of an expired lease nobody took: %v", err)
	}
	if renewed.Expired {
		t.Errorf("RenewLease returned an expired lease: %+v", renewed)
	}
	waitExpired(t, s, "r1")
	taken := acquire(t, s, "r1", b, LeaseTTL)
	if taken.Owner != b || !taken.Acquired.After(expired.Acquired) {
		t.Errorf("AcquireLease of an expired lease returned %+v, want owner %+v acquired after %v", taken, b, expired.Acquired)
	}
	_, err = s.RenewLease(t.Context(), "r1", a.Token, LeaseTTL)
	wantLeaseError(t, "RenewLease of a lease taken over", err, cadre.ErrLeaseLost, "r1", &b)
	err = s.Append(t.Context(), []cadre.JournalEntry{fenced("r1", "root", 1, a.Token)})
	wantLeaseError(t, "Append by the owner whose lease was taken over", err, cadre.ErrLeaseLost, "r1", &b)
	if err := s.Append(t.Context(), []cadre.JournalEntry{fenced("r1", "root", 1, b.Token)}); err != nil {
		t.Fatalf("Append by the new owner: %v", err)
	}
}

func fenced(run string, agent cadre.AgentID, seq int64, token string) cadre.JournalEntry {
	e := entry(run, agent, seq)
	e.Lease = token
	return e
}

func (suite) leaseFencing(t *testing.T, s cadre.Store) {
	a, b := owner("a"), owner("b")
	mustCreate(t, s, sampleRun("r1", at(0)))
	mustCreate(t, s, sampleRun("r2", at(0)))
	child := cadre.RootID.Child("critic", 1)
	// Before anyone holds the run, a fenced batch fails.
	err := s.Append(t.Context(), []cadre.JournalEntry{fenced("r1", "root", 1, a.Token)})
	wantLeaseError(t, "Append fenced by a lease nobody holds", err, cadre.ErrLeaseLost, "r1", nil)
	acquire(t, s, "r1", a, LeaseTTL)
	if err := s.Append(t.Context(), []cadre.JournalEntry{fenced("r1", "root", 1, a.Token), fenced("r1", child, 1, a.Token)}); err != nil {
		t.Fatalf("Append by the owner: %v", err)
	}
	// Unfenced entries are not checked.
	if err := s.Append(t.Context(), []cadre.JournalEntry{entry("r1", "root", 2)}); err != nil {
		t.Fatalf("Append without a lease token: %v", err)
	}
	// A batch with one entry of another token fails whole.
	err = s.Append(t.Context(), []cadre.JournalEntry{fenced("r1", "root", 3, a.Token), fenced("r1", child, 2, b.Token)})
	wantLeaseError(t, "Append of a batch with an entry fenced by another token", err, cadre.ErrLeaseLost, "r1", &a)
	// A lease holds its own run only.
	err = s.Append(t.Context(), []cadre.JournalEntry{fenced("r2", "root", 1, a.Token)})
	wantLeaseError(t, "Append to another run with the owner's token", err, cadre.ErrLeaseLost, "r2", nil)
	// After the release, the owner can no longer write.
	if err := s.ReleaseLease(t.Context(), "r1", a.Token); err != nil {
		t.Fatal(err)
	}
	err = s.Append(t.Context(), []cadre.JournalEntry{fenced("r1", "root", 3, a.Token)})
	wantLeaseError(t, "Append after ReleaseLease", err, cadre.ErrLeaseLost, "r1", nil)
	if d := cmp.Diff([]int64{1, 2}, seqs(readJournal(t, s, "r1", "root"))); d != "" {
		t.Errorf("root's journal holds entries of refused batches (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int64{1}, seqs(readJournal(t, s, "r1", child))); d != "" {
		t.Errorf("%s's journal holds entries of refused batches (-want +got):\n%s", child, d)
	}
	if n := len(readJournal(t, s, "r2", "root")); n != 0 {
		t.Errorf("r2's journal has %d entries, want none", n)
	}
}

func (suite) leaseInvalid(t *testing.T, s cadre.Store) {
	o := owner("a")
	noToken := o
	noToken.Token = ""
	for name, req := range map[string]cadre.LeaseRequest{
		"NoRun":   {Owner: o, TTL: LeaseTTL},
		"NoToken": {Run: "r1", Owner: noToken, TTL: LeaseTTL},
		"ZeroTTL": {Run: "r1", Owner: o},
	} {
		if _, err := s.AcquireLease(t.Context(), req); err == nil {
			t.Errorf("%s: AcquireLease(%+v) succeeded, want an error", name, req)
		}
	}
	if _, err := s.Lease(t.Context(), "r1"); !errors.Is(err, cadre.ErrNotFound) {
		t.Errorf("after invalid requests, Lease(r1): %v, want cadre.ErrNotFound", err)
	}
}

// leaseConcurrentAcquire has several owners acquire each run at once:
// exactly one gets it, and the others are told who did.
func (suite) leaseConcurrentAcquire(t *testing.T, s cadre.Store) {
	const (
		runs    = 10
		owners  = 8
		attempt = 3 // per owner and run
	)
	for r := range runs {
		run := fmt.Sprintf("r%d", r)
		type outcome struct {
			who  cadre.LeaseOwner
			won  bool
			held cadre.LeaseOwner
			err  error
		}
		out := make(chan outcome, owners*attempt)
		var wg sync.WaitGroup
		for o := range owners {
			who := owner(fmt.Sprintf("%d-%d", r, o))
			wg.Go(func() {
				for range attempt {
					_, err := s.AcquireLease(context.Background(), cadre.LeaseRequest{Run: run, Owner: who, TTL: LeaseTTL})
					res := outcome{who: who, won: err == nil, err: err}
					if le, ok := errors.AsType[*cadre.LeaseError](err); ok && le.Held != nil && errors.Is(err, cadre.ErrRunOwned) {
						res.held, res.err = le.Held.Owner, nil
					}
					out <- res
				}
			})
		}
		wg.Wait()
		close(out)
		var winners []cadre.LeaseOwner
		var named []cadre.LeaseOwner
		for res := range out {
			switch {
			case res.won:
				winners = append(winners, res.who)
			case res.err != nil:
				t.Errorf("run %s: AcquireLease by %s failed with %v, want a *cadre.LeaseError naming the holder", run, res.who.Host, res.err)
			default:
				named = append(named, res.held)
			}
		}
		if len(winners) != 1 {
			t.Errorf("run %s: %d acquisitions succeeded at once (%v), want exactly 1", run, len(winners), winners)
			continue
		}
		for _, h := range named {
			if h != winners[0] {
				t.Errorf("run %s: a refused acquisition names %+v, but %+v won", run, h, winners[0])
			}
		}
		if got := readLease(t, s, run); got.Owner != winners[0] {
			t.Errorf("run %s is held by %+v, but %+v won", run, got.Owner, winners[0])
		}
	}
}

// leaseConcurrentTakeover has an owner append to its journal without a
// pause while another process takes the run over: once the takeover has
// returned, the old owner's appends fail, so the new owner, reading the
// journal then, can append after it without a conflict.
func (suite) leaseConcurrentTakeover(t *testing.T, s cadre.Store) {
	const rounds = 10
	for r := range rounds {
		run := fmt.Sprintf("r%d", r)
		mustCreate(t, s, sampleRun(run, at(0)))
		a, b := owner(fmt.Sprintf("a%d", r)), owner(fmt.Sprintf("b%d", r))
		acquire(t, s, run, a, LeaseTTL)
		started := make(chan struct{})
		quit := make(chan struct{})
		stopped := make(chan error, 1)
		go func() {
			var once sync.Once
			defer once.Do(func() { close(started) })
			for seq := int64(1); ; seq++ {
				err := s.Append(context.Background(), []cadre.JournalEntry{fenced(run, "root", seq, a.Token)})
				if err != nil {
					stopped <- err
					return
				}
				if seq == 2 {
					once.Do(func() { close(started) })
				}
				select {
				case <-quit:
					// Any append after the takeover must fail.
					stopped <- s.Append(context.Background(), []cadre.JournalEntry{fenced(run, "root", seq+1, a.Token)})
					return
				default:
				}
			}
		}()
		<-started
		if _, err := s.AcquireLease(t.Context(), cadre.LeaseRequest{Run: run, Owner: b, TTL: LeaseTTL, Replace: a.Token}); err != nil {
			close(quit)
			<-stopped
			t.Fatalf("round %d: the takeover failed: %v", r, err)
		}
		n := int64(len(readJournal(t, s, run, "root")))
		if err := s.Append(t.Context(), []cadre.JournalEntry{fenced(run, "root", n+1, b.Token)}); err != nil {
			t.Errorf("round %d: the new owner's append after the %d entries it read failed: %v", r, n, err)
		}
		close(quit)
		err := <-stopped
		wantLeaseError(t, fmt.Sprintf("round %d: the old owner's last append", r), err, cadre.ErrLeaseLost, run, &b)
		got := seqs(readJournal(t, s, run, "root"))
		for i, seq := range got {
			if seq != int64(i+1) {
				t.Errorf("round %d: the journal's seqs are %v, want 1 to %d without gaps", r, got, len(got))
				break
			}
		}
	}
}
