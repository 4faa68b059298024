package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/model/scripted"
)

// gate is a model whose calls wait until the test opens it (or their
// context ends), and which counts them.
type gate struct {
	called chan struct{} // receives once per call, when it starts
	open   chan struct{}
	mu     sync.Mutex
	calls  int
	ended  []error // how each call that was cut short ended
}

func newGate() *gate {
	return &gate{called: make(chan struct{}, 100), open: make(chan struct{})}
}

func (g *gate) model() *scripted.Model {
	return scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		g.mu.Lock()
		g.calls++
		g.mu.Unlock()
		g.called <- struct{}{}
		select {
		case <-g.open:
			return text("the answer"), nil
		case <-ctx.Done():
			g.mu.Lock()
			g.ended = append(g.ended, context.Cause(ctx))
			g.mu.Unlock()
			return nil, context.Cause(ctx)
		}
	})
}

func (g *gate) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls
}

// waitCall waits for the gate's next call.
func (g *gate) waitCall(t *testing.T) {
	t.Helper()
	select {
	case <-g.called:
	case <-time.After(time.Minute):
		t.Fatal("no model call within a minute")
	}
}

func gateConfig(m cadre.Model, s cadre.Store) Config {
	return Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Store: s}
}

// wait waits for a run with a failsafe.
func wait(t *testing.T, r testRun) (*cadre.Result, error) {
	t.Helper()
	return waitRun(t, r.e, r.id)
}

func leaseOf(t *testing.T, s cadre.Store, run string) *cadre.Lease {
	t.Helper()
	l, err := s.Lease(context.Background(), run)
	if err != nil {
		t.Fatalf("Lease(%s): %v", run, err)
	}
	return l
}

// takeOver gives the run to another owner, as another process that found
// the lease dead would.
func takeOver(t *testing.T, s cadre.Store, run string, ttl time.Duration) cadre.LeaseOwner {
	t.Helper()
	other := cadre.LeaseOwner{Host: "other-host", PID: 99, Process: "elsewhere:1", Token: "other-token"}
	held := leaseOf(t, s, run)
	if _, err := s.AcquireLease(context.Background(), cadre.LeaseRequest{Run: run, Owner: other, TTL: ttl, Replace: held.Owner.Token}); err != nil {
		t.Fatalf("take the run over: %v", err)
	}
	return other
}

func journalLen(t *testing.T, s cadre.Store, run string) int {
	t.Helper()
	agents, err := s.ListAgents(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range agents {
		j, err := s.Journal(context.Background(), run, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		n += len(j)
	}
	return n
}

// A run holds its lease from its start to its end; a second engine that
// resumes it meanwhile is refused, with the owner named, before it calls
// the model.
func TestLeaseSecondOwnerRefused(t *testing.T) {
	checkNoLeaks(t)
	mem := memstore.New()
	g := newGate()
	r, err := begin(New(gateConfig(g.model(), mem)), "the task")
	if err != nil {
		t.Fatal(err)
	}
	g.waitCall(t)
	l := leaseOf(t, mem, r.ID())
	host, _ := os.Hostname()
	if l.Owner.PID != os.Getpid() || l.Owner.Host != host || l.Owner.Token == "" || l.Expired {
		t.Errorf("the run's lease is %+v, want this process (pid %d on %s), live", l, os.Getpid(), host)
	}

	second := newGate()
	_, err = resumeRun(New(gateConfig(second.model(), mem)), r.ID())
	le, ok := errors.AsType[*cadre.LeaseError](err)
	if !ok || !errors.Is(err, cadre.ErrRunOwned) || le.Held == nil || le.Held.Owner.PID != os.Getpid() {
		t.Fatalf("the second Resume: %v, want a *cadre.LeaseError wrapping ErrRunOwned naming this process", err)
	}
	if want := fmt.Sprintf("process %d on host %s", os.Getpid(), host); !strings.Contains(err.Error(), want) {
		t.Errorf("the second Resume's error %q does not name the owner as %q", err, want)
	}
	if n := second.count(); n != 0 {
		t.Errorf("the refused Resume made %d model calls", n)
	}

	close(g.open)
	if res, err := wait(t, r); err != nil || res.Answer != "the answer" {
		t.Fatalf("the run: %v, %+v", err, res)
	}
	if _, err := mem.Lease(context.Background(), r.ID()); !errors.Is(err, cadre.ErrNotFound) {
		t.Errorf("after the run ended its lease is still there: %v", err)
	}
}

// The owner renews its lease while the run goes on.
func TestLeaseRenewed(t *testing.T) {
	checkNoLeaks(t)
	mem := memstore.New()
	g := newGate()
	cfg := gateConfig(g.model(), mem)
	cfg.LeaseTTL = 300 * time.Millisecond
	r, err := begin(New(cfg), "the task")
	if err != nil {
		t.Fatal(err)
	}
	g.waitCall(t)
	first := leaseOf(t, mem, r.ID())
	seen, last := 0, first.Renewed
	deadline := time.Now().Add(time.Minute)
	for seen < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d renewals of the lease in a minute, want 3; it is %+v", seen, leaseOf(t, mem, r.ID()))
		}
		time.Sleep(10 * time.Millisecond)
		l := leaseOf(t, mem, r.ID())
		if l.Owner != first.Owner || !l.Acquired.Equal(first.Acquired) {
			t.Fatalf("the lease changed hands: %+v, was %+v", l, first)
		}
		if l.Renewed.After(last) {
			seen++
			last = l.Renewed
		}
	}
	close(g.open)
	if _, err := wait(t, r); err != nil {
		t.Fatal(err)
	}
}

// When another process takes the run over, the renewal finds out, and the
// run stops at once: its model call is aborted, it fails naming the new
// owner, and it writes nothing more (the run's record is the new owner's).
func TestLeaseTakenOverStopsRun(t *testing.T) {
	checkNoLeaks(t)
	mem := memstore.New()
	g := newGate()
	cfg := gateConfig(g.model(), mem)
	cfg.LeaseTTL = 300 * time.Millisecond
	r, err := begin(New(cfg), "the task")
	if err != nil {
		t.Fatal(err)
	}
	g.waitCall(t)
	entries := journalLen(t, mem, r.ID())
	other := takeOver(t, mem, r.ID(), time.Hour)
	res, err := wait(t, r)
	re, ok := errors.AsType[*cadre.RunError](err)
	if !ok || re.Status != cadre.StatusFailed || res.Status != cadre.StatusFailed {
		t.Fatalf("the run: %v, want a *cadre.RunError with status failed", err)
	}
	if !strings.Contains(re.Reason, "no longer owns") || !strings.Contains(re.Reason, other.Describe()) {
		t.Errorf("the reason %q does not say that %s took the run over", re.Reason, other.Describe())
	}
	g.mu.Lock()
	if len(g.ended) != 1 || !errors.Is(g.ended[0], cadre.ErrLeaseLost) {
		t.Errorf("the model call in flight ended with %v, want it aborted with the lost lease", g.ended)
	}
	g.mu.Unlock()
	if n := journalLen(t, mem, r.ID()); n != entries {
		t.Errorf("the journal has %d entries after the takeover, want the %d it had", n, entries)
	}
	if rec, err := mem.GetRun(context.Background(), r.ID()); err != nil || rec.Status != cadre.StatusRunning {
		t.Errorf("the run's record after the old owner stopped: %+v, %v; want it left running for the new owner", rec, err)
	}
	if l := leaseOf(t, mem, r.ID()); l.Owner != other {
		t.Errorf("the old owner released or changed the new owner's lease: %+v", l)
	}
}

// An owner that has not noticed the takeover yet cannot add to the
// journal: the store refuses the append, and the run fails.
func TestLeaseFencedAppend(t *testing.T) {
	checkNoLeaks(t)
	mem := memstore.New()
	g := newGate()
	cfg := gateConfig(g.model(), mem)
	cfg.LeaseTTL = time.Hour // no renewal during the test
	r, err := begin(New(cfg), "the task")
	if err != nil {
		t.Fatal(err)
	}
	g.waitCall(t)
	entries := journalLen(t, mem, r.ID())
	other := takeOver(t, mem, r.ID(), time.Hour)
	close(g.open) // the model answers; its result cannot be journaled
	res, err := wait(t, r)
	re, ok := errors.AsType[*cadre.RunError](err)
	if !ok || re.Status != cadre.StatusFailed || res.Status != cadre.StatusFailed {
		t.Fatalf("the run: %v, want a *cadre.RunError with status failed", err)
	}
	if !strings.Contains(re.Reason, "no longer owns") || !strings.Contains(re.Reason, other.Describe()) {
		t.Errorf("the reason %q does not say that %s took the run over", re.Reason, other.Describe())
	}
	if n := journalLen(t, mem, r.ID()); n != entries {
		t.Errorf("the journal has %d entries after the takeover, want the %d it had", n, entries)
	}
	if rec, err := mem.GetRun(context.Background(), r.ID()); err != nil || rec.Status != cadre.StatusRunning {
		t.Errorf("the run's record: %+v, %v; want it left running for the new owner", rec, err)
	}
}

// failingStore fails every journal append after the first limit entries,
// as a full disk would.
type failingStore struct {
	*memstore.Store
	mu    sync.Mutex
	limit int
}

var errDiskFull = errors.New("disk I/O error: no space left on device")

func (f *failingStore) Append(ctx context.Context, entries []cadre.JournalEntry) error {
	f.mu.Lock()
	f.limit -= len(entries)
	full := f.limit < 0
	f.mu.Unlock()
	if full {
		return errDiskFull
	}
	return f.Store.Append(ctx, entries)
}

// A run whose store fails has failed: it was not cancelled by anyone, and
// it is carried on by a resume once the store works again.
func TestStoreFailureFailsTheRun(t *testing.T) {
	checkNoLeaks(t)
	s := &failingStore{Store: memstore.New(), limit: 1} // the root's start
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) { return text("the answer"), nil })
	res, err, _ := runTask(t, gateConfig(m, s), "the task")
	re, ok := errors.AsType[*cadre.RunError](err)
	if !ok || re.Status != cadre.StatusFailed || res.Status != cadre.StatusFailed {
		t.Fatalf("the run: %v (result status %s), want a *cadre.RunError with status failed", err, res.Status)
	}
	if !strings.Contains(re.Reason, "store failed") || !strings.Contains(re.Reason, errDiskFull.Error()) {
		t.Errorf("the reason %q does not say the store failed and how", re.Reason)
	}
	if !strings.Contains(re.Reason, "cadre resume "+res.RunID) {
		t.Errorf("the reason %q does not say how to carry the run on", re.Reason)
	}
	// The run was stopped, not ended: its record says running (readers
	// show it interrupted), its lease is released, and once the store
	// works again a resume completes it.
	if rec, err := s.GetRun(context.Background(), res.RunID); err != nil || rec.Status != cadre.StatusRunning {
		t.Errorf("the run's record: %+v, %v; want it left running, for a resume", rec, err)
	}
	if _, err := s.Lease(context.Background(), res.RunID); !errors.Is(err, cadre.ErrNotFound) {
		t.Errorf("the stopped run's lease: %v, want it released", err)
	}
	s.mu.Lock()
	s.limit = 1 << 30
	s.mu.Unlock()
	r2, err := resumeRun(New(gateConfig(m, s)), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r2.Wait(); err != nil || res.Answer != "the answer" {
		t.Fatalf("the resumed run: %v %+v", err, res)
	}
}

// A run whose owner is on another machine waits for the lease to expire,
// by the store's clock; then it is taken over.
func TestLeaseExpiredTakenOver(t *testing.T) {
	checkNoLeaks(t)
	mem := memstore.New()
	id := interruptedRun(t, mem)
	other := cadre.LeaseOwner{Host: "other-host", PID: 99, Process: "elsewhere:1", Token: "other-token"}
	if _, err := mem.AcquireLease(context.Background(), cadre.LeaseRequest{Run: id, Owner: other, TTL: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	g := newGate()
	close(g.open)
	_, err := resumeRun(New(gateConfig(g.model(), mem)), id)
	if !errors.Is(err, cadre.ErrRunOwned) || !strings.Contains(err.Error(), other.Describe()) {
		t.Fatalf("Resume while the other owner's lease holds: %v, want ErrRunOwned naming %s", err, other.Describe())
	}
	deadline := time.Now().Add(time.Minute)
	for !leaseOf(t, mem, id).Expired {
		if time.Now().After(deadline) {
			t.Fatal("the lease did not expire within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !Abandoned(leaseOf(t, mem, id)) {
		t.Error("Abandoned says no to an expired lease")
	}
	r, err := resumeRun(New(gateConfig(g.model(), mem)), id)
	if err != nil {
		t.Fatalf("Resume after the lease expired: %v", err)
	}
	if res, err := wait(t, r); err != nil || res.Answer != "the answer" {
		t.Fatalf("the resumed run: %v, %+v", err, res)
	}
	if g.count() != 1 {
		t.Errorf("the model was called %d times, want once", g.count())
	}
}

// interruptedRun leaves in s a run whose process died after journaling the
// root's start.
func interruptedRun(t *testing.T, mem *memstore.Store) string {
	t.Helper()
	crash := &crashStore{Store: mem, limit: 1}
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) { return text("never kept"), nil })
	r, err := begin(New(gateConfig(m, crash)), "the task")
	if err != nil {
		t.Fatal(err)
	}
	wait(t, r)
	if !crash.dead() {
		t.Fatal("the store did not crash")
	}
	if _, err := mem.Lease(context.Background(), r.ID()); !errors.Is(err, cadre.ErrNotFound) {
		t.Fatalf("the crashed run left its lease: %v", err)
	}
	return r.ID()
}

// storeWithoutRuns cannot record runs.
type storeWithoutRuns struct{ *memstore.Store }

func (storeWithoutRuns) CreateRun(context.Context, *cadre.RunRecord) error {
	return errors.New("the database is read-only")
}

// A run that cannot be recorded gives its lease back.
func TestLeaseReleasedWhenStartFails(t *testing.T) {
	checkNoLeaks(t)
	s := storeWithoutRuns{memstore.New()}
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) { return text("never"), nil })
	if _, err := New(gateConfig(m, s)).Start(context.Background(), "the task", cadre.StartOptions{ID: "r1"}); err == nil {
		t.Fatal("Start succeeded with a store that cannot record runs")
	}
	if _, err := s.Lease(context.Background(), "r1"); !errors.Is(err, cadre.ErrNotFound) {
		t.Errorf("the run that never started kept its lease: %v", err)
	}
}
