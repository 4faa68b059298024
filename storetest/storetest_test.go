package storetest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/storetest"
)

// broken stores each get one thing wrong; the suite must notice.
type broken struct {
	*memstore.Store
	bug string
}

func (b broken) CreateRun(ctx context.Context, r *cadre.RunRecord) error {
	if b.bug == "SecondsOnly" {
		c := *r
		c.Started = c.Started.Truncate(time.Second)
		r = &c
	}
	return b.Store.CreateRun(ctx, r)
}

func (b broken) GetRun(ctx context.Context, id string) (*cadre.RunRecord, error) {
	r, err := b.Store.GetRun(ctx, id)
	if b.bug == "PlainNotFound" && errors.Is(err, cadre.ErrNotFound) {
		return nil, errors.New("no such run")
	}
	return r, err
}

func (b broken) ListRuns(ctx context.Context, limit int) ([]*cadre.RunRecord, error) {
	rs, err := b.Store.ListRuns(ctx, limit)
	if b.bug == "OldestFirst" {
		slices.Reverse(rs)
	}
	return rs, err
}

func (b broken) Append(ctx context.Context, entries []cadre.JournalEntry) error {
	if b.bug == "NoFencing" {
		entries = slices.Clone(entries)
		for i := range entries {
			entries[i].Lease = ""
		}
	}
	if b.bug == "PartialBatch" {
		for _, e := range entries {
			if err := b.Store.Append(ctx, []cadre.JournalEntry{e}); err != nil {
				return err
			}
		}
		return nil
	}
	return b.Store.Append(ctx, entries)
}

func (b broken) Journal(ctx context.Context, run string, agent cadre.AgentID) ([]cadre.JournalEntry, error) {
	entries, err := b.Store.Journal(ctx, run, agent)
	if b.bug == "NoChecksum" {
		for i := range entries {
			entries[i].Sum = 0
		}
	}
	return entries, err
}

func (b broken) AppendEvents(ctx context.Context, events []cadre.Event) error {
	if b.bug == "PartialEvents" {
		for i := range events {
			if err := b.Store.AppendEvents(ctx, events[i:i+1]); err != nil {
				return err
			}
		}
		return nil
	}
	return b.Store.AppendEvents(ctx, events)
}

func (b broken) Events(ctx context.Context, run string, after int64) ([]cadre.Event, error) {
	evs, err := b.Store.Events(ctx, run, after)
	if b.bug == "SeqGaps" {
		for i := range evs {
			evs[i].Seq *= 2
		}
	}
	return evs, err
}

func (b broken) AcquireLease(ctx context.Context, req cadre.LeaseRequest) (*cadre.Lease, error) {
	l, err := b.Store.AcquireLease(ctx, req)
	if le, ok := errors.AsType[*cadre.LeaseError](err); ok && b.bug == "AcquireSteals" && le.Held != nil {
		req.Replace = le.Held.Owner.Token
		return b.Store.AcquireLease(ctx, req)
	}
	return l, err
}

// TestBrokenStoreHelper runs the suite against one broken store when the
// test binary is started by TestSuiteCatches.
func TestBrokenStoreHelper(t *testing.T) {
	bug := os.Getenv("STORETEST_BUG")
	if bug == "" {
		t.Skip("run by TestSuiteCatches")
	}
	storetest.Run(t, func(t *testing.T) cadre.Store { return broken{memstore.New(), bug} })
}

func TestSuiteCatches(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the test binary once per broken store")
	}
	for _, tc := range []struct {
		bug      string
		failures []string // subtests that must fail
	}{
		{"SecondsOnly", []string{"Times/RoundTrip/SubMillisecondInZone", "Runs/CreateGet"}},
		{"PlainNotFound", []string{"Runs/GetMissing", "Runs/UpdateMissing"}},
		{"OldestFirst", []string{"Runs/ListNewestFirst/all", "Times/RoundTrip"}},
		{"PartialBatch", []string{"Journal/DuplicateRejectsBatch", "Journal/DuplicateWithinBatch", "Journal/MissingRun"}},
		{"SeqGaps", []string{"Events/SeqAssigned", "Events/After", "Concurrent/AppendsToSeveralRuns", "Concurrent/WholeRuns", "Concurrent/FollowersSeeEveryEvent"}},
		{"PartialEvents", []string{"Concurrent/FailuresStayInTheirBatch", "Events/MissingRunRejectsBatch"}},
		{"NoFencing", []string{"Lease/Expiry", "Lease/Fencing", "Lease/ConcurrentTakeover"}},
		{"AcquireSteals", []string{"Lease/Held", "Lease/ConcurrentAcquire"}},
		{"NoChecksum", []string{"Journal/AppendRead", "Journal/Checksums"}},
	} {
		t.Run(tc.bug, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestBrokenStoreHelper$", "-test.v")
			cmd.Env = append(os.Environ(), "STORETEST_BUG="+tc.bug)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a store with bug %s:\n%s", tc.bug, out)
			}
			for _, name := range tc.failures {
				if !strings.Contains(string(out), "--- FAIL: TestBrokenStoreHelper/"+name+" ") {
					t.Errorf("subtest %s did not fail for bug %s", name, tc.bug)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
			}
		})
	}
}

func TestMemstorePasses(t *testing.T) {
	storetest.Run(t, func(t *testing.T) cadre.Store { return memstore.New() })
}
