// Package storetest is the conformance suite for cadre.Store
// implementations. Every store in this module passes it, and a store
// written elsewhere can use it the same way:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) cadre.Store {
//			s, err := mystore.Open(t.Context(), filepath.Join(t.TempDir(), "runs.db"))
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// Run calls open once per subtest and expects an empty store each time; it
// closes each store itself, so open must not. Subtests have stable names
// (Runs/ListNewestFirst, Journal/DuplicateRejectsBatch, …) for -run.
//
// What the suite holds a store to, beyond the comments on cadre.Store:
//
//   - a missing run is an error wrapping cadre.ErrNotFound, from GetRun,
//     UpdateRun, PutAgent, ListAgents, Append, Journal, AppendEvents and
//     Events alike;
//   - creating a run twice is an error;
//   - UpdateRun keeps the stored Started and Config when the new record's
//     are zero;
//   - ListRuns orders by Started then ID, both descending; ListAgents by
//     Started then ID, both ascending, IDs compared bytewise;
//   - a batch with a duplicate (run, agent, seq), an unknown run or an event
//     that cannot be encoded as JSON fails whole, and AppendEvents leaves
//     the Seq fields of a failed batch as they were;
//   - events round-trip through cadre.Event's JSON form;
//   - times round-trip to the millisecond or better, zero stays zero;
//   - a 1 MiB payload round-trips byte for byte;
//   - Append sets each entry's Sum to its checksum, whatever it was, and
//     Journal returns it (see also Damaged);
//   - records are copies: changing what was passed in or handed back does
//     not change the store;
//   - concurrent use: many goroutines may write different runs, and the
//     same run, at once; a reader polling Events(run, last seen) while
//     others append sees every event exactly once, in Seq order (an event
//     is never visible before those with lower Seqs); a batch that fails
//     does not make another caller's batch fail;
//   - leases: one owner per run; a held lease is refused with a
//     *cadre.LeaseError naming the holder, and taken once it has expired by
//     the store's clock (waited for by polling, with a TTL of ShortTTL) or
//     when the request replaces its token; renewing or appending with a
//     token that no longer holds the run fails with cadre.ErrLeaseLost, the
//     batch whole; of owners acquiring a run at once exactly one wins; once
//     a takeover has returned, the old owner's appends fail, so the new
//     owner can append after the journal it reads.
//
// Bench and BenchAppend measure the cost of journaling the same way for
// every store, with entries shaped like the loop's inputs (Journal).
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/journal"
)

// TimeMargin is how far a time read back from a store may be from the time
// written.
const TimeMargin = time.Millisecond

// Run runs the conformance suite. open returns a new, empty store for the
// subtest it is given.
func Run(t *testing.T, open func(t *testing.T) cadre.Store) {
	t.Helper()
	s := suite{open: open}
	groups := []struct {
		name  string
		tests []subtest
	}{
		{"Runs", []subtest{
			{"CreateGet", s.runCreateGet},
			{"CreateTwice", s.runCreateTwice},
			{"CreateInvalid", s.runCreateInvalid},
			{"GetMissing", s.runGetMissing},
			{"Update", s.runUpdate},
			{"UpdateKeepsStartedAndConfig", s.runUpdateKeeps},
			{"UpdateMissing", s.runUpdateMissing},
			{"ListNewestFirst", s.runList},
			{"ListEmpty", s.runListEmpty},
			{"Copies", s.runCopies},
			{"CancelledContext", s.runCancelled},
		}},
		{"Agents", []subtest{
			{"PutUpsert", s.agentUpsert},
			{"ListOrder", s.agentOrder},
			{"MissingRun", s.agentMissingRun},
			{"SeparateRuns", s.agentSeparateRuns},
			{"AppendAgentTogether", s.agentAppend},
		}},
		{"Journal", []subtest{
			{"AppendRead", s.journalAppendRead},
			{"EmptyBatch", s.journalEmpty},
			{"DuplicateRejectsBatch", s.journalDuplicate},
			{"DuplicateWithinBatch", s.journalDuplicateInBatch},
			{"MissingRun", s.journalMissingRun},
			{"LargeBatches", s.journalLargeBatches},
			{"Invalid", s.journalInvalid},
			{"Copies", s.journalCopies},
			{"Checksums", s.journalChecksums},
			{"RunJournals", s.journalRun},
		}},
		{"Events", []subtest{
			{"SeqAssigned", s.eventsSeq},
			{"After", s.eventsAfter},
			{"RoundTrip", s.eventsRoundTrip},
			{"SeveralRunsInOneBatch", s.eventsMixedBatch},
			{"MissingRunRejectsBatch", s.eventsMissingRun},
			{"UnencodableRejectsBatch", s.eventsUnencodable},
			{"EmptyBatch", s.eventsEmpty},
			{"SeqFieldInPayload", s.eventsSeqField},
		}},
		{"Concurrent", []subtest{
			{"AppendsToSeveralRuns", s.concurrentAppends},
			{"WholeRuns", s.concurrentRuns},
			{"FollowersSeeEveryEvent", s.concurrentFollow},
			{"FailuresStayInTheirBatch", s.concurrentFailures},
		}},
		{"Lease", []subtest{
			{"Acquire", s.leaseAcquire},
			{"Held", s.leaseHeld},
			{"Replace", s.leaseReplace},
			{"Renew", s.leaseRenew},
			{"Release", s.leaseRelease},
			{"Expiry", s.leaseExpiry},
			{"Fencing", s.leaseFencing},
			{"Invalid", s.leaseInvalid},
			{"ConcurrentAcquire", s.leaseConcurrentAcquire},
			{"ConcurrentTakeover", s.leaseConcurrentTakeover},
		}},
		{"Times", []subtest{
			{"RoundTrip", s.timesRoundTrip},
		}},
		{"Large", []subtest{
			{"MiBPayloads", s.largePayloads},
		}},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, st := range g.tests {
				t.Run(st.name, func(t *testing.T) {
					store := open(t)
					defer func() {
						if err := store.Close(); err != nil {
							t.Errorf("Close: %v", err)
						}
					}()
					st.fn(t, store)
				})
			}
		})
	}
}

type subtest struct {
	name string
	fn   func(t *testing.T, s cadre.Store)
}

type suite struct {
	open func(t *testing.T) cadre.Store
}

// base is a fixed instant with sub-millisecond digits, in a zone that is
// not UTC, so that stores that drop the zone or the precision are caught.
var base = time.Date(2025, 3, 14, 15, 9, 26, 535_897_932, time.FixedZone("X", 5*3600+30*60))

func at(d time.Duration) time.Time { return base.Add(d) }

// opts compares records the way the suite promises: times to TimeMargin,
// nil and empty the same.
// The checksums of journal entries are checked apart (readJournal), since
// entries made to compare with have none.
var opts = cmp.Options{cmpopts.EquateApproxTime(TimeMargin), cmpopts.EquateEmpty(), cmpopts.IgnoreFields(cadre.JournalEntry{}, "Sum")}

func diff(want, got any) string { return cmp.Diff(want, got, opts) }

func sampleRun(id string, started time.Time) *cadre.RunRecord {
	return &cadre.RunRecord{
		ID:      id,
		Task:    "summarise the README of " + id,
		Status:  cadre.StatusRunning,
		Model:   "openai:gpt-4o-mini",
		Started: started,
		Config:  json.RawMessage(`{"limits":{"max_depth":3},"workspace":"/tmp/w"}`),
	}
}

func mustCreate(t *testing.T, s cadre.Store, r *cadre.RunRecord) {
	t.Helper()
	if err := s.CreateRun(t.Context(), r); err != nil {
		t.Fatalf("CreateRun(%q): %v", r.ID, err)
	}
}

func mustGet(t *testing.T, s cadre.Store, id string) *cadre.RunRecord {
	t.Helper()
	r, err := s.GetRun(t.Context(), id)
	if err != nil {
		t.Fatalf("GetRun(%q): %v", id, err)
	}
	if r == nil {
		t.Fatalf("GetRun(%q) returned nil and no error", id)
	}
	return r
}

func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, cadre.ErrNotFound) {
		t.Errorf("%s: got error %v, want one wrapping cadre.ErrNotFound", what, err)
	}
}

func (suite) runCreateGet(t *testing.T, s cadre.Store) {
	want := sampleRun("r1", at(0))
	want.Usage = cadre.Usage{InputTokens: 12, OutputTokens: 34}
	want.Agents = 1
	mustCreate(t, s, want)
	got := mustGet(t, s, "r1")
	if d := diff(want, got); d != "" {
		t.Errorf("GetRun after CreateRun (-want +got):\n%s", d)
	}
}

func (suite) runCreateTwice(t *testing.T, s cadre.Store) {
	mustCreate(t, s, sampleRun("r1", at(0)))
	second := sampleRun("r1", at(time.Hour))
	second.Task = "another task"
	if err := s.CreateRun(t.Context(), second); err == nil {
		t.Fatal("CreateRun with an ID in use succeeded, want an error")
	}
	if got := mustGet(t, s, "r1"); got.Task != "summarise the README of r1" {
		t.Errorf("the failed CreateRun changed the run: task is %q", got.Task)
	}
}

func (suite) runCreateInvalid(t *testing.T, s cadre.Store) {
	if err := s.CreateRun(t.Context(), &cadre.RunRecord{Task: "no id"}); err == nil {
		t.Error("CreateRun of a run without an ID succeeded, want an error")
	}
}

func (suite) runGetMissing(t *testing.T, s cadre.Store) {
	r, err := s.GetRun(t.Context(), "nope")
	wantNotFound(t, "GetRun of a missing run", err)
	if r != nil {
		t.Errorf("GetRun of a missing run returned %+v, want nil", r)
	}
}

func (suite) runUpdate(t *testing.T, s cadre.Store) {
	mustCreate(t, s, sampleRun("r1", at(0)))
	want := sampleRun("r1", at(0))
	want.Status = cadre.StatusDone
	want.Ended = at(90 * time.Second)
	want.Usage = cadre.Usage{InputTokens: 1000, OutputTokens: 250}
	want.Answer = "The README explains how to build cadre."
	want.Agents = 4
	want.Config = json.RawMessage(`{"limits":{"max_depth":5}}`)
	if err := s.UpdateRun(t.Context(), want); err != nil {
		t.Fatalf("UpdateRun: %v", err)
	}
	got := mustGet(t, s, "r1")
	if d := diff(want, got); d != "" {
		t.Errorf("GetRun after UpdateRun (-want +got):\n%s", d)
	}

	failed := *want
	failed.Status, failed.Answer, failed.Error = cadre.StatusFailed, "", "model unavailable"
	if err := s.UpdateRun(t.Context(), &failed); err != nil {
		t.Fatalf("second UpdateRun: %v", err)
	}
	got = mustGet(t, s, "r1")
	if d := diff(&failed, got); d != "" {
		t.Errorf("GetRun after a second UpdateRun (-want +got):\n%s", d)
	}
}

func (suite) runUpdateKeeps(t *testing.T, s cadre.Store) {
	created := sampleRun("r1", at(0))
	mustCreate(t, s, created)
	if err := s.UpdateRun(t.Context(), &cadre.RunRecord{ID: "r1", Task: created.Task, Status: cadre.StatusDone, Ended: at(time.Minute)}); err != nil {
		t.Fatalf("UpdateRun: %v", err)
	}
	want := *created
	want.Status, want.Ended, want.Model = cadre.StatusDone, at(time.Minute), ""
	got := mustGet(t, s, "r1")
	if d := diff(&want, got); d != "" {
		t.Errorf("UpdateRun with zero Started and nil Config (-want +got):\n%s", d)
	}
}

func (suite) runUpdateMissing(t *testing.T, s cadre.Store) {
	err := s.UpdateRun(t.Context(), sampleRun("nope", at(0)))
	wantNotFound(t, "UpdateRun of a missing run", err)
	if _, err := s.GetRun(t.Context(), "nope"); !errors.Is(err, cadre.ErrNotFound) {
		t.Errorf("UpdateRun of a missing run created it (GetRun: %v)", err)
	}
}

func (suite) runList(t *testing.T, s cadre.Store) {
	// Created out of order; two share a start time and are ordered by ID.
	starts := map[string]time.Duration{"a": 2 * time.Hour, "b": 0, "c": 5 * time.Hour, "d": time.Hour, "e": time.Hour}
	for _, id := range []string{"d", "a", "c", "b", "e"} {
		mustCreate(t, s, sampleRun(id, at(starts[id])))
	}
	ids := func(rs []*cadre.RunRecord) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		limit int
		want  []string
	}{
		{"all", 0, []string{"c", "a", "e", "d", "b"}},
		{"negative", -1, []string{"c", "a", "e", "d", "b"}},
		{"limit2", 2, []string{"c", "a"}},
		{"limit3", 3, []string{"c", "a", "e"}},
		{"limitAboveCount", 10, []string{"c", "a", "e", "d", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ListRuns(t.Context(), tc.limit)
			if err != nil {
				t.Fatalf("ListRuns(%d): %v", tc.limit, err)
			}
			if d := cmp.Diff(tc.want, ids(got)); d != "" {
				t.Errorf("ListRuns(%d) IDs (-want +got):\n%s", tc.limit, d)
			}
		})
	}
	got, err := s.ListRuns(t.Context(), 1)
	if err != nil {
		t.Fatalf("ListRuns(1): %v", err)
	}
	if len(got) == 1 {
		if d := diff(sampleRun("c", at(5*time.Hour)), got[0]); d != "" {
			t.Errorf("ListRuns record (-want +got):\n%s", d)
		}
	}
}

func (suite) runListEmpty(t *testing.T, s cadre.Store) {
	got, err := s.ListRuns(t.Context(), 0)
	if err != nil {
		t.Fatalf("ListRuns on an empty store: %v", err)
	}
	if len(got) != 0 {
		t.Errorf("ListRuns on an empty store returned %d runs", len(got))
	}
}

func (suite) runCopies(t *testing.T, s cadre.Store) {
	in := sampleRun("r1", at(0))
	mustCreate(t, s, in)
	in.Task = "changed after CreateRun"
	in.Config[2] = 'X'
	got := mustGet(t, s, "r1")
	if d := diff(sampleRun("r1", at(0)), got); d != "" {
		t.Fatalf("changing the record passed to CreateRun changed the store (-want +got):\n%s", d)
	}
	got.Task = "changed after GetRun"
	got.Config[2] = 'Y'
	again := mustGet(t, s, "r1")
	if d := diff(sampleRun("r1", at(0)), again); d != "" {
		t.Errorf("changing the record GetRun returned changed the store (-want +got):\n%s", d)
	}
}

func (suite) runCancelled(t *testing.T, s cadre.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.CreateRun(ctx, sampleRun("r1", at(0))); err == nil {
		t.Error("CreateRun with a cancelled context succeeded, want an error")
	}
}

func sampleAgent(run string, id cadre.AgentID, started time.Time) *cadre.AgentRecord {
	return &cadre.AgentRecord{
		Run:        run,
		ID:         id,
		Parent:     id.Parent(),
		Depth:      id.Depth(),
		Definition: "research-assistant",
		Model:      "anthropic:claude-sonnet-4-5",
		Task:       "find what " + string(id) + " should",
		Status:     cadre.StatusRunning,
		Started:    started,
	}
}

func listAgents(t *testing.T, s cadre.Store, run string) []*cadre.AgentRecord {
	t.Helper()
	got, err := s.ListAgents(t.Context(), run)
	if err != nil {
		t.Fatalf("ListAgents(%q): %v", run, err)
	}
	return got
}

func (suite) agentUpsert(t *testing.T, s cadre.Store) {
	mustCreate(t, s, sampleRun("r1", at(0)))
	a := sampleAgent("r1", cadre.RootID, at(time.Second))
	if err := s.PutAgent(t.Context(), a); err != nil {
		t.Fatalf("PutAgent: %v", err)
	}
	if d := diff([]*cadre.AgentRecord{a}, listAgents(t, s, "r1")); d != "" {
		t.Errorf("ListAgents after one PutAgent (-want +got):\n%s", d)
	}
	done := *a
	done.Status, done.Turns, done.Usage = cadre.StatusDone, 7, cadre.Usage{InputTokens: 4000, OutputTokens: 900}
	done.Ended, done.Result = at(time.Minute), "Found three causes."
	if err := s.PutAgent(t.Context(), &done); err != nil {
		t.Fatalf("second PutAgent: %v", err)
	}
	if d := diff([]*cadre.AgentRecord{&done}, listAgents(t, s, "r1")); d != "" {
		t.Errorf("ListAgents after replacing the record (-want +got):\n%s", d)
	}
	failed := done
	failed.Status, failed.Result, failed.Error, failed.Ended = cadre.StatusFailed, "", "tool crashed", time.Time{}
	if err := s.PutAgent(t.Context(), &failed); err != nil {
		t.Fatalf("third PutAgent: %v", err)
	}
	if d := diff([]*cadre.AgentRecord{&failed}, listAgents(t, s, "r1")); d != "" {
		t.Errorf("ListAgents after clearing fields (-want +got):\n%s", d)
	}
}

func (suite) agentOrder(t *testing.T, s cadre.Store) {
	mustCreate(t, s, sampleRun("r1", at(0)))
	root := cadre.RootID
	a1 := root.Child("research-assistant", 1)
	a2 := root.Child("research-assistant", 2)
	b1 := root.Child("Writer", 1) // upper case sorts before lower case bytewise
	deep := a1.Child("critic", 1)
	put := []*cadre.AgentRecord{
		sampleAgent("r1", deep, at(3*time.Second)),
		sampleAgent("r1", a2, at(2*time.Second)),
		sampleAgent("r1", root, at(0)),
		sampleAgent("r1", a1, at(2*time.Second)),
		sampleAgent("r1", b1, at(2*time.Second)),
	}
	for _, a := range put {
		if err := s.PutAgent(t.Context(), a); err != nil {
			t.Fatalf("PutAgent(%s): %v", a.ID, err)
		}
	}
	var got []cadre.AgentID
	for _, a := range listAgents(t, s, "r1") {
		got = append(got, a.ID)
	}
	want := []cadre.AgentID{root, b1, a1, a2, deep}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ListAgents order (-want +got):\n%s", d)
	}
}

func (suite) agentMissingRun(t *testing.T, s cadre.Store) {
	err := s.PutAgent(t.Context(), sampleAgent("nope", cadre.RootID, at(0)))
	wantNotFound(t, "PutAgent for a missing run", err)
	_, err = s.ListAgents(t.Context(), "nope")
	wantNotFound(t, "ListAgents of a missing run", err)
	mustCreate(t, s, sampleRun("r1", at(0)))
	if got := listAgents(t, s, "r1"); len(got) != 0 {
		t.Errorf("ListAgents of a run without agents returned %d records", len(got))
	}
}

func (suite) agentSeparateRuns(t *testing.T, s cadre.Store) {
	mustCreate(t, s, sampleRun("r1", at(0)))
	mustCreate(t, s, sampleRun("r2", at(0)))
	a := sampleAgent("r1", cadre.RootID, at(0))
	b := sampleAgent("r2", cadre.RootID, at(0))
	b.Task = "the other run's root"
	for _, rec := range []*cadre.AgentRecord{a, b} {
		if err := s.PutAgent(t.Context(), rec); err != nil {
			t.Fatalf("PutAgent(%s, %s): %v", rec.Run, rec.ID, err)
		}
	}
	if d := diff([]*cadre.AgentRecord{a}, listAgents(t, s, "r1")); d != "" {
		t.Errorf("ListAgents(r1) (-want +got):\n%s", d)
	}
	if d := diff([]*cadre.AgentRecord{b}, listAgents(t, s, "r2")); d != "" {
		t.Errorf("ListAgents(r2) (-want +got):\n%s", d)
	}
}

// agentAppend: a store that writes an agent's record with journal entries
// in one call (AppendAgent, which the engine uses when a store has it)
// writes both or neither.
func (suite) agentAppend(t *testing.T, s cadre.Store) {
	aa, ok := s.(interface {
		AppendAgent(ctx context.Context, a *cadre.AgentRecord, entries []cadre.JournalEntry) error
	})
	if !ok {
		t.Skip("the store has no AppendAgent")
	}
	ctx := t.Context()
	mustCreate(t, s, sampleRun("r1", at(0)))
	w1, w2 := cadre.RootID.Child("worker", 1), cadre.RootID.Child("worker", 2)
	if err := aa.AppendAgent(ctx, sampleAgent("r1", w1, at(time.Second)), []cadre.JournalEntry{entry("r1", w1, 1)}); err != nil {
		t.Fatalf("AppendAgent: %v", err)
	}
	if agents := listAgents(t, s, "r1"); len(agents) != 1 || agents[0].ID != w1 {
		t.Fatalf("agents %+v, want %s", agents, w1)
	}
	if j := readJournal(t, s, "r1", w1); len(j) != 1 {
		t.Fatalf("the journal of %s has %d entries, want 1", w1, len(j))
	}

	// An entry that exists already: the record is not written either.
	if err := s.Append(ctx, []cadre.JournalEntry{entry("r1", w2, 1)}); err != nil {
		t.Fatal(err)
	}
	if err := aa.AppendAgent(ctx, sampleAgent("r1", w2, at(time.Second)), []cadre.JournalEntry{entry("r1", w2, 1)}); err == nil {
		t.Fatal("AppendAgent with an entry that exists succeeded")
	}
	if agents := listAgents(t, s, "r1"); len(agents) != 1 {
		t.Fatalf("%d agents after a failed AppendAgent, want 1: the record was written without its entries", len(agents))
	}

	// A missing run.
	err := aa.AppendAgent(ctx, sampleAgent("nope", w2, at(time.Second)), []cadre.JournalEntry{entry("nope", w2, 1)})
	wantNotFound(t, "AppendAgent for a missing run", err)

	// Checked before anything is written.
	if err := aa.AppendAgent(ctx, &cadre.AgentRecord{Run: "r1"}, nil); err == nil {
		t.Error("AppendAgent of a record without an ID succeeded")
	}
	bad := entry("r1", w2, 1)
	bad.Seq = 0
	if err := aa.AppendAgent(ctx, sampleAgent("r1", w2, at(time.Second)), []cadre.JournalEntry{bad}); err == nil {
		t.Error("AppendAgent of an entry with seq 0 succeeded")
	}
	if agents := listAgents(t, s, "r1"); len(agents) != 1 {
		t.Errorf("%d agents after refused AppendAgents, want 1", len(agents))
	}

	// Whichever way it was written, an agent's latest record is the one
	// listed, in full: AppendAgent's replaces PutAgent's and the other way
	// round, and a record written with an entry of another agent is
	// written as it is.
	done := sampleAgent("r1", w1, at(time.Second))
	done.Status, done.Turns, done.Usage = cadre.StatusDone, 3, cadre.Usage{InputTokens: 120, OutputTokens: 45}
	done.Ended, done.Result, done.Error = at(9*time.Second), "the answer, with \"quotes\" and a\nline", "a note <&>"
	if err := s.PutAgent(ctx, done); err != nil {
		t.Fatal(err)
	}
	if d := diff([]*cadre.AgentRecord{done}, listAgents(t, s, "r1")); d != "" {
		t.Errorf("after PutAgent over AppendAgent's record (-want +got):\n%s", d)
	}
	again := sampleAgent("r1", w1, at(10*time.Second))
	again.Status, again.Turns = cadre.StatusRunning, 3
	if err := aa.AppendAgent(ctx, again, []cadre.JournalEntry{entry("r1", w1, 2)}); err != nil {
		t.Fatal(err)
	}
	if d := diff([]*cadre.AgentRecord{again}, listAgents(t, s, "r1")); d != "" {
		t.Errorf("after AppendAgent over PutAgent's record (-want +got):\n%s", d)
	}
	w3 := cadre.RootID.Child("worker", 3)
	third := sampleAgent("r1", w3, at(0))
	if err := aa.AppendAgent(ctx, third, []cadre.JournalEntry{entry("r1", w2, 2)}); err != nil {
		t.Fatal(err)
	}
	if d := diff([]*cadre.AgentRecord{third, again}, listAgents(t, s, "r1")); d != "" {
		t.Errorf("after AppendAgent of a record with another agent's entry (-want +got):\n%s", d)
	}
	if err := aa.AppendAgent(ctx, done, []cadre.JournalEntry{entry("r1", w1, 3)}); err != nil {
		t.Fatal(err)
	}
	if d := diff([]*cadre.AgentRecord{third, done}, listAgents(t, s, "r1")); d != "" {
		t.Errorf("after AppendAgent of an ended record (-want +got):\n%s", d)
	}
}

func entry(run string, agent cadre.AgentID, seq int64) cadre.JournalEntry {
	return cadre.JournalEntry{
		Run:   run,
		Agent: agent,
		Seq:   seq,
		Kind:  "model_result",
		Data:  json.RawMessage(fmt.Sprintf(`{"text":"reply %d of %s","usage":{"input_tokens":%d}}`, seq, agent, seq*10)),
		Time:  at(time.Duration(seq) * time.Second),
	}
}

func readJournal(t *testing.T, s cadre.Store, run string, agent cadre.AgentID) []cadre.JournalEntry {
	t.Helper()
	got, err := s.Journal(t.Context(), run, agent)
	if err != nil {
		t.Fatalf("Journal(%q, %s): %v", run, agent, err)
	}
	for _, e := range got {
		if want := e.Checksum(); e.Sum != want {
			t.Errorf("Journal(%q, %s): entry %d came back with checksum %08x, want %08x, the checksum of its content", run, agent, e.Seq, e.Sum, want)
		}
	}
	return got
}

func seqs(j []cadre.JournalEntry) []int64 {
	var out []int64
	for _, e := range j {
		out = append(out, e.Seq)
	}
	return out
}

func (suite) journalAppendRead(t *testing.T, s cadre.Store) {
	mustCreate(t, s, sampleRun("r1", at(0)))
	root, child := cadre.RootID, cadre.RootID.Child("critic", 1)
	// Two batches, interleaving agents, one batch out of seq order.
	b1 := []cadre.JournalEntry{entry("r1", root, 1), entry("r1", child, 1), entry("r1", root, 2)}
	b2 := []cadre.JournalEntry{entry("r1", root, 4), entry("r1", child, 2), entry("r1", root, 3)}
	b2[0].Kind, b2[0].Data = "tool_results", json.RawMessage(`[{"id":"c1","content":"ok \u0000 done"}]`)
	for i, b := range [][]cadre.JournalEntry{b1, b2} {
		if err := s.Append(t.Context(), b); err != nil {
			t.Fatalf("Append batch %d: %v", i+1, err)
		}
	}
	want := []cadre.JournalEntry{b1[0], b1[2], b2[2], b2[0]}
	if d := diff(want, readJournal(t, s, "r1", root)); d != "" {
		t.Errorf("Journal(root) (-want +got):\n%s", d)
	}
	if d := diff([]cadre.JournalEntry{b1[1], b2[1]}, readJournal(t, s, "r1", child)); d != "" {
		t.Errorf("Journal(child) (-want +got):\n%s", d)
	}
	if got := readJournal(t, s, "r1", "root/unknown.1"); len(got) != 0 {
		t.Errorf("Journal of an agent without entries returned %d entries", len(got))
	}
}

// journalRun: a store that reads all a run's journals at once (RunJournals,
// which resuming a run uses when a store has it) gives what Journal gives
// for each agent, and nothing of another run.
func (suite) journalRun(t *testing.T, s cadre.Store) {
	rj, ok := s.(journal.RunJournaler)
	if !ok {
		t.Skip("the store has no RunJournals")
	}
	mustCreate(t, s, sampleRun("r1", at(0)))
	mustCreate(t, s, sampleRun("r2", at(time.Second)))
	root, child := cadre.RootID, cadre.RootID.Child("critic", 1)
	batch := []cadre.JournalEntry{entry("r1", root, 1), entry("r1", child, 1), entry("r2", root, 1), entry("r1", root, 2), entry("r1", child, 2)}
	batch[3].Data = nil
	if err := s.Append(t.Context(), batch); err != nil {
		t.Fatalf("Append: %v", err)
	}
	if got, err := rj.RunJournals(t.Context(), "r2"); err != nil || len(got) != 1 || len(got[root]) != 1 {
		t.Errorf("RunJournals(r2): %v (err %v), want the root's one entry", got, err)
	}
	got, err := rj.RunJournals(t.Context(), "r1")
	if err != nil {
		t.Fatalf("RunJournals(r1): %v", err)
	}
	if len(got) != 2 {
		t.Errorf("RunJournals(r1) has the journals of %d agents, want 2", len(got))
	}
	for _, id := range []cadre.AgentID{root, child} {
		if d := diff(readJournal(t, s, "r1", id), got[id]); d != "" {
			t.Errorf("RunJournals(r1)[%s] differs from Journal (-Journal +RunJournals):\n%s", id, d)
		}
	}
	mustCreate(t, s, sampleRun("r3", at(2*time.Second)))
	if got, err := rj.RunJournals(t.Context(), "r3"); err != nil || len(got) != 0 {
		t.Errorf("RunJournals of a run without entries: %v (err %v), want none", got, err)
	}
	_, err = rj.RunJournals(t.Context(), "nope")
	wantNotFound(t, "RunJournals of a missing run", err)
}

func (suite) journalEmpty(t *testing.T, s cadre.Store) {
	if err := s.Append(t.Context(), nil); err != nil {
		t.Errorf("Append(nil): %v", err)
	}
}

func (suite) journalDuplicate(t *testing.T, s cadre.Store) {
	mustCreate(t, s, sampleRun("r1", at(0)))
	mustCreate(t, s, sampleRun("r2", at(0)))
	if err := s.Append(t.Context(), []cadre.JournalEntry{entry("r1", "root", 1), entry("r1", "root", 2)}); err != nil {
		t.Fatalf("Append: %v", err)
	}
	dup := entry("r1", "root", 2)
	dup.Data = json.RawMessage(`{"text":"a different reply"}`)
	batch := []cadre.JournalEntry{entry("r2", "root", 1), entry("r1", "root", 3), dup, entry("r1", "root", 4)}
	if err := s.Append(t.Context(), batch); err == nil {
		t.Fatal("Append of a batch holding an existing (run, agent, seq) succeeded, want an error")
	}
	want := []cadre.JournalEntry{entry("r1", "root", 1), entry("r1", "root", 2)}
	if d := diff(want, readJournal(t, s, "r1", "root")); d != "" {
		t.Errorf("the failed batch was partly applied to r1 (-want +got):\n%s", d)
	}
	if got := readJournal(t, s, "r2", "root"); len(got) != 0 {
		t.Errorf("the failed batch was partly applied to r2: seqs %v", seqs(got))
	}
	// The store still works after the failure.
	if err := s.Append(t.Context(), []cadre.JournalEntry{entry("r1", "root", 3)}); err != nil {
		t.Fatalf("Append after a failed batch: %v", err)
	}
	if d := cmp.Diff([]int64{1, 2, 3}, seqs(readJournal(t, s, "r1", "root"))); d != "" {
		t.Errorf("seqs after recovering (-want +got):\n%s", d)
	}
}

func (suite) journalDuplicateInBatch(t *testing.T, s cadre.Store) {
	mustCreate(t, s, sampleRun("r1", at(0)))
	batch := []cadre.JournalEntry{entry("r1", "root", 1), entry("r1", "root", 2), entry("r1", "root", 1)}
	if err := s.Append(t.Context(), batch); err == nil {
		t.Fatal("Append of a batch holding the same seq twice succeeded, want an error")
	}
	if got := readJournal(t, s, "r1", "root"); len(got) != 0 {
		t.Errorf("the failed batch was partly applied: seqs %v", seqs(got))
	}
}

func (suite) journalMissingRun(t *testing.T, s cadre.Store) {
	mustCreate(t, s, sampleRun("r1", at(0)))
	err := s.Append(t.Context(), []cadre.JournalEntry{entry("r1", "root", 1), entry("nope", "root", 1)})
	wantNotFound(t, "Append for a missing run", err)
	if got := readJournal(t, s, "r1", "root"); len(got) != 0 {
		t.Errorf("the failed batch was partly applied: seqs %v", seqs(got))
	}
	_, err = s.Journal(t.Context(), "nope", "root")
	wantNotFound(t, "Journal of a missing run", err)
}

// journalLargeBatches uses batches big enough that a store may write them
// differently (PostgreSQL's COPY, say) and checks the same promises.
func (suite) journalLargeBatches(t *testing.T, s cadre.Store) {
	mustCreate(t, s, sampleRun("r1", at(0)))
	batch := func(from, n int64) []cadre.JournalEntry {
		out := make([]cadre.JournalEntry, n)
		for i := range out {
			out[i] = entry("r1", "root", from+int64(i))
		}
		return out
	}
	first := batch(1, 300)
	if err := s.Append(t.Context(), first); err != nil {
		t.Fatalf("Append of 300 entries: %v", err)
	}
	if d := diff(first, readJournal(t, s, "r1", "root")); d != "" {
		t.Fatalf("Journal after a batch of 300 (-want +got):\n%s", d)
	}
	dup := batch(301, 300)
	dup[250].Seq = 120
	if err := s.Append(t.Context(), dup); err == nil {
		t.Error("Append of 300 entries, one of them existing, succeeded, want an error")
	}
	twice := batch(301, 300)
	twice[280].Seq = twice[20].Seq // within the batch, both new
	if err := s.Append(t.Context(), twice); err == nil {
		t.Error("Append of 300 new entries, two of them with the same seq, succeeded, want an error")
	}
	missing := batch(301, 300)
	missing[299].Run = "nope"
	wantNotFound(t, "Append of 300 entries, one for a missing run", s.Append(t.Context(), missing))
	if got := readJournal(t, s, "r1", "root"); len(got) != 300 {
		t.Errorf("failed batches were partly applied: %d entries, want 300", len(got))
	}
}

func (suite) journalInvalid(t *testing.T, s cadre.Store) {
	mustCreate(t, s, sampleRun("r1", at(0)))
	for _, tc := range []struct {
		name string
		e    cadre.JournalEntry
	}{
		{"NoRun", cadre.JournalEntry{Agent: "root", Seq: 1, Kind: "start"}},
		{"NoAgent", cadre.JournalEntry{Run: "r1", Seq: 1, Kind: "start"}},
		{"SeqZero", cadre.JournalEntry{Run: "r1", Agent: "root", Seq: 0, Kind: "start"}},
		{"SeqNegative", cadre.JournalEntry{Run: "r1", Agent: "root", Seq: -3, Kind: "start"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.Append(t.Context(), []cadre.JournalEntry{tc.e}); err == nil {
				t.Errorf("Append(%+v) succeeded, want an error", tc.e)
			}
		})
	}
	if got := readJournal(t, s, "r1", "root"); len(got) != 0 {
		t.Errorf("invalid entries were stored: seqs %v", seqs(got))
	}
}

func (suite) journalCopies(t *testing.T, s cadre.Store) {
	mustCreate(t, s, sampleRun("r1", at(0)))
	in := []cadre.JournalEntry{entry("r1", "root", 1)}
	if err := s.Append(t.Context(), in); err != nil {
		t.Fatalf("Append: %v", err)
	}
	in[0].Data[2] = 'X'
	got := readJournal(t, s, "r1", "root")
	if d := diff([]cadre.JournalEntry{entry("r1", "root", 1)}, got); d != "" {
		t.Fatalf("changing the Data passed to Append changed the store (-want +got):\n%s", d)
	}
	got[0].Data[2] = 'Y'
	if d := diff([]cadre.JournalEntry{entry("r1", "root", 1)}, readJournal(t, s, "r1", "root")); d != "" {
		t.Errorf("changing the Data Journal returned changed the store (-want +got):\n%s", d)
	}
}

// journalChecksums: Append sets each entry's Sum to its checksum, over
// whatever the caller put there, and Journal gives it back.
func (suite) journalChecksums(t *testing.T, s cadre.Store) {
	mustCreate(t, s, sampleRun("r1", at(0)))
	in := []cadre.JournalEntry{entry("r1", "root", 1), entry("r1", "root", 2), entry("r1", "root", 3)}
	in[0].Sum = 12345 // not its checksum: the store computes its own
	in[1].Data = nil
	in[2].Kind, in[2].Data = "tool_results", json.RawMessage(strings.Repeat(`{"content":"\u00e9t\u00e9"}`, 500))
	want := make([]uint32, len(in))
	for i := range in {
		e := in[i]
		e.Sum = 0
		want[i] = e.Checksum()
	}
	if err := s.Append(t.Context(), in); err != nil {
		t.Fatalf("Append: %v", err)
	}
	for i, e := range in {
		if e.Sum != want[i] {
			t.Errorf("Append left entry %d with Sum %08x, want its checksum %08x", e.Seq, e.Sum, want[i])
		}
	}
	got := readJournal(t, s, "r1", "root") // checks each Sum
	if len(got) != len(in) {
		t.Fatalf("Journal returned %d entries, want %d", len(got), len(in))
	}
	for _, e := range got {
		if e.Sum == 0 {
			t.Errorf("entry %d came back without a checksum", e.Seq)
		}
		if err := e.Verify(); err != nil {
			t.Errorf("entry %d: %v", e.Seq, err)
		}
	}
}

// Damaged checks a store's part in catching a damaged journal: damage
// changes, behind the store's back (in its database, say), the data of
// the journal entry (run, agent, seq) without touching its checksum.
// Journal must still return every entry, the damaged one included, with
// the checksums stored when they were written, so that Verify fails on
// that entry alone with a *cadre.DamagedError that names it.
func Damaged(t *testing.T, s cadre.Store, damage func(t *testing.T, run string, agent cadre.AgentID, seq int64)) {
	t.Helper()
	mustCreate(t, s, sampleRun("damaged", at(0)))
	child := cadre.RootID.Child("critic", 1)
	in := []cadre.JournalEntry{entry("damaged", cadre.RootID, 1), entry("damaged", child, 1), entry("damaged", child, 2), entry("damaged", child, 3)}
	if err := s.Append(t.Context(), in); err != nil {
		t.Fatalf("Append: %v", err)
	}
	damage(t, "damaged", child, 2)
	for _, agent := range []cadre.AgentID{cadre.RootID, child} {
		got, err := s.Journal(t.Context(), "damaged", agent)
		if err != nil {
			t.Fatalf("Journal of %s after the damage: %v (want the entries, damaged ones included)", agent, err)
		}
		wantN := 1
		if agent == child {
			wantN = 3
		}
		if len(got) != wantN {
			t.Fatalf("Journal of %s returned %d entries, want %d", agent, len(got), wantN)
		}
		for _, e := range got {
			err := e.Verify()
			if agent != child || e.Seq != 2 {
				if err != nil {
					t.Errorf("entry %d of %s was not damaged: %v", e.Seq, agent, err)
				}
				continue
			}
			de, ok := errors.AsType[*cadre.DamagedError](err)
			if !ok {
				t.Fatalf("Verify of the damaged entry 2 of %s: %v, want a *cadre.DamagedError (stored sum %08x, data %q)", agent, err, e.Sum, e.Data)
			}
			if de.Run != "damaged" || de.Agent != child || de.Seq != 2 || de.Kind != "model_result" || de.Stored != in[2].Sum {
				t.Errorf("DamagedError %+v, want run damaged, agent %s, seq 2, kind model_result, stored %08x", de, child, in[2].Sum)
			}
		}
	}
}

func ev(run string, typ cadre.EventType, agent cadre.AgentID, d time.Duration) cadre.Event {
	e := cadre.Event{Type: typ, Run: run, Agent: agent, Time: at(d)}
	if p := agent.Parent(); p != "" {
		e.Parent, e.Depth = p, agent.Depth()
	}
	return e
}

func readEvents(t *testing.T, s cadre.Store, run string, after int64) []cadre.Event {
	t.Helper()
	got, err := s.Events(t.Context(), run, after)
	if err != nil {
		t.Fatalf("Events(%q, %d): %v", run, after, err)
	}
	return got
}

func eventSeqs(evs []cadre.Event) []int64 {
	var out []int64
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

func (suite) eventsSeq(t *testing.T, s cadre.Store) {
	mustCreate(t, s, sampleRun("r1", at(0)))
	mustCreate(t, s, sampleRun("r2", at(0)))
	first := []cadre.Event{
		ev("r1", cadre.EventRunStarted, "", 0),
		ev("r1", cadre.EventAgentStarted, "root", time.Millisecond),
		ev("r1", cadre.EventModelResponse, "root", 2*time.Millisecond),
	}
	first[2].Seq = 99 // ignored: the store numbers events
	if err := s.AppendEvents(t.Context(), first); err != nil {
		t.Fatalf("AppendEvents: %v", err)
	}
	if d := cmp.Diff([]int64{1, 2, 3}, eventSeqs(first)); d != "" {
		t.Errorf("Seq set on the first batch (-want +got):\n%s", d)
	}
	second := []cadre.Event{ev("r1", cadre.EventToolCalled, "root", 3*time.Millisecond), ev("r1", cadre.EventToolResult, "root", 4*time.Millisecond)}
	if err := s.AppendEvents(t.Context(), second); err != nil {
		t.Fatalf("AppendEvents: %v", err)
	}
	if d := cmp.Diff([]int64{4, 5}, eventSeqs(second)); d != "" {
		t.Errorf("Seq set on the second batch (-want +got):\n%s", d)
	}
	other := []cadre.Event{ev("r2", cadre.EventRunStarted, "", 0)}
	if err := s.AppendEvents(t.Context(), other); err != nil {
		t.Fatalf("AppendEvents(r2): %v", err)
	}
	if other[0].Seq != 1 {
		t.Errorf("the first event of another run got Seq %d, want 1", other[0].Seq)
	}
	want := append(append([]cadre.Event{}, first...), second...)
	if d := diff(want, readEvents(t, s, "r1", 0)); d != "" {
		t.Errorf("Events(r1, 0) (-want +got):\n%s", d)
	}
	if d := diff(other, readEvents(t, s, "r2", 0)); d != "" {
		t.Errorf("Events(r2, 0) (-want +got):\n%s", d)
	}
}

func (suite) eventsAfter(t *testing.T, s cadre.Store) {
	mustCreate(t, s, sampleRun("r1", at(0)))
	var evs []cadre.Event
	for i := range 6 {
		evs = append(evs, ev("r1", cadre.EventSay, "root", time.Duration(i)*time.Second))
	}
	// In three calls, so that a store keeping events in batches is read
	// across and inside them.
	for _, part := range [][]cadre.Event{evs[:3], evs[3:4], evs[4:]} {
		if err := s.AppendEvents(t.Context(), part); err != nil {
			t.Fatalf("AppendEvents: %v", err)
		}
	}
	for _, tc := range []struct {
		name  string
		after int64
		want  []int64
	}{
		{"Zero", 0, []int64{1, 2, 3, 4, 5, 6}},
		{"Negative", -5, []int64{1, 2, 3, 4, 5, 6}},
		{"First", 1, []int64{2, 3, 4, 5, 6}},
		{"Middle", 3, []int64{4, 5, 6}},
		{"Single", 4, []int64{5, 6}},
		{"BeforeLast", 5, []int64{6}},
		{"Last", 6, nil},
		{"Beyond", 100, nil},
		// An event stream's client says where it was (Last-Event-ID),
		// which may be any number.
		{"Int32", math.MaxInt32, nil},
		{"Int64", math.MaxInt64, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := readEvents(t, s, "r1", tc.after)
			if d := cmp.Diff(tc.want, eventSeqs(got)); d != "" {
				t.Errorf("Events(r1, %d) seqs (-want +got):\n%s", tc.after, d)
			}
		})
	}
	_, err := s.Events(t.Context(), "nope", 0)
	wantNotFound(t, "Events of a missing run", err)
}

func (suite) eventsRoundTrip(t *testing.T, s cadre.Store) {
	mustCreate(t, s, sampleRun("r1", at(0)))
	child := cadre.RootID.Child("research-assistant", 2)
	in := ev("r1", cadre.EventToolResult, child, 1500*time.Microsecond)
	in.Data = cadre.ToolResult{CallID: "call_1", Tool: "read_file", IsError: true, Content: "line 1\nline 2 \u0000 tab\t quote\" <tag> & ünïcødé 🚀"}
	// An event of a type this build does not know keeps its fields as
	// they were.
	future := ev("r1", "from_a_later_version", child, 1600*time.Microsecond)
	future.Data = cadre.RawPayload{Type: "from_a_later_version", Fields: map[string]json.RawMessage{
		"ok": json.RawMessage(`true`), "count": json.RawMessage(`3`), "ratio": json.RawMessage(`0.25`),
		"nested": json.RawMessage(`{"k":[1,"two",null]}`), "nothing": json.RawMessage(`null`),
	}}
	if err := s.AppendEvents(t.Context(), []cadre.Event{in, future}); err != nil {
		t.Fatalf("AppendEvents: %v", err)
	}
	want := []cadre.Event{in, future}
	want[0].Seq, want[1].Seq = 1, 2
	got := readEvents(t, s, "r1", 0)
	if d := diff(want, got); d != "" {
		t.Errorf("events after a round trip (-want +got):\n%s", d)
	}
	if len(got) == 2 && got[0].Time.Location() != time.UTC {
		t.Errorf("event time comes back in %v, want UTC", got[0].Time.Location())
	}
}

func (suite) eventsMixedBatch(t *testing.T, s cadre.Store) {
	mustCreate(t, s, sampleRun("r1", at(0)))
	mustCreate(t, s, sampleRun("r2", at(0)))
	if err := s.AppendEvents(t.Context(), []cadre.Event{ev("r2", cadre.EventRunStarted, "", 0)}); err != nil {
		t.Fatalf("AppendEvents: %v", err)
	}
	batch := []cadre.Event{
		ev("r1", cadre.EventRunStarted, "", 0),
		ev("r2", cadre.EventAgentStarted, "root", 1),
		ev("r1", cadre.EventAgentStarted, "root", 2),
		ev("r2", cadre.EventSay, "root", 3),
		ev("r1", cadre.EventSay, "root", 4),
	}
	if err := s.AppendEvents(t.Context(), batch); err != nil {
		t.Fatalf("AppendEvents: %v", err)
	}
	if d := cmp.Diff([]int64{1, 2, 2, 3, 3}, eventSeqs(batch)); d != "" {
		t.Errorf("Seq set on a batch for two runs (-want +got):\n%s", d)
	}
	if d := diff([]cadre.Event{batch[0], batch[2], batch[4]}, readEvents(t, s, "r1", 0)); d != "" {
		t.Errorf("Events(r1) (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int64{1, 2, 3}, eventSeqs(readEvents(t, s, "r2", 0))); d != "" {
		t.Errorf("Events(r2) seqs (-want +got):\n%s", d)
	}
}

func (suite) eventsMissingRun(t *testing.T, s cadre.Store) {
	mustCreate(t, s, sampleRun("r1", at(0)))
	batch := []cadre.Event{ev("r1", cadre.EventRunStarted, "", 0), ev("nope", cadre.EventRunStarted, "", 0)}
	err := s.AppendEvents(t.Context(), batch)
	wantNotFound(t, "AppendEvents for a missing run", err)
	if d := cmp.Diff([]int64{0, 0}, eventSeqs(batch)); d != "" {
		t.Errorf("a failed AppendEvents set Seq (-want +got):\n%s", d)
	}
	if got := readEvents(t, s, "r1", 0); len(got) != 0 {
		t.Errorf("the failed batch was partly applied: seqs %v", eventSeqs(got))
	}
	// Numbering is not disturbed by the failure.
	next := []cadre.Event{ev("r1", cadre.EventRunStarted, "", 0)}
	if err := s.AppendEvents(t.Context(), next); err != nil {
		t.Fatalf("AppendEvents after a failed batch: %v", err)
	}
	if next[0].Seq != 1 {
		t.Errorf("first event after a failed batch got Seq %d, want 1", next[0].Seq)
	}
	if err := s.AppendEvents(t.Context(), []cadre.Event{{Type: cadre.EventSay}}); err == nil {
		t.Error("AppendEvents of an event without a Run succeeded, want an error")
	}
}

func (suite) eventsUnencodable(t *testing.T, s cadre.Store) {
	mustCreate(t, s, sampleRun("r1", at(0)))
	bad := ev("r1", cadre.EventSay, "root", 1)
	bad.Data = cadre.RawPayload{Type: cadre.EventSay, Fields: map[string]json.RawMessage{"ratio": json.RawMessage(`Infinity`)}}
	batch := []cadre.Event{ev("r1", cadre.EventRunStarted, "", 0), bad}
	if err := s.AppendEvents(t.Context(), batch); err == nil {
		t.Fatal("AppendEvents of an event whose Data cannot be JSON succeeded, want an error")
	}
	if d := cmp.Diff([]int64{0, 0}, eventSeqs(batch)); d != "" {
		t.Errorf("a failed AppendEvents set Seq (-want +got):\n%s", d)
	}
	if got := readEvents(t, s, "r1", 0); len(got) != 0 {
		t.Errorf("the failed batch was partly applied: seqs %v", eventSeqs(got))
	}
}

func (suite) eventsEmpty(t *testing.T, s cadre.Store) {
	if err := s.AppendEvents(t.Context(), nil); err != nil {
		t.Errorf("AppendEvents(nil): %v", err)
	}
}

// eventsSeqField: an event whose payload has a field named seq of its own
// (a RawPayload, an event of a newer cadre) reads back with the Seq the
// store gave it, and one whose JSON held a newline reads back whole.
func (suite) eventsSeqField(t *testing.T, s cadre.Store) {
	mustCreate(t, s, sampleRun("r1", at(0)))
	evs := []cadre.Event{
		{Type: "from_a_newer_cadre", Time: at(time.Second), Run: "r1", Data: cadre.RawPayload{Type: "from_a_newer_cadre",
			Fields: map[string]json.RawMessage{"seq": json.RawMessage("0"), "k": json.RawMessage("[1,\n 2]")}}},
		ev("r1", cadre.EventAgentStarted, "root", 2*time.Second),
	}
	if err := s.AppendEvents(t.Context(), evs); err != nil {
		t.Fatalf("AppendEvents: %v", err)
	}
	for _, after := range []int64{0, 1} {
		got := readEvents(t, s, "r1", after)
		if d := cmp.Diff([]int64{1, 2}[after:], eventSeqs(got)); d != "" {
			t.Errorf("Events(r1, %d) seqs (-want +got):\n%s", after, d)
		}
	}
}

// concurrentAppends has many goroutines append journal entries and events
// to several runs at once, in batches of varying size, and then checks
// that nothing was lost and that each run's event Seqs are 1..n with no
// gaps.
func (suite) concurrentAppends(t *testing.T, s cadre.Store) {
	const (
		runs      = 3
		perRun    = 4 // goroutines per run, each its own agent
		batches   = 12
		batchSize = 3
	)
	for r := range runs {
		mustCreate(t, s, sampleRun(fmt.Sprintf("run-%d", r), at(time.Duration(r)*time.Second)))
	}
	var wg sync.WaitGroup
	errs := make(chan error, runs*perRun*batches*3)
	for r := range runs {
		for g := range perRun {
			run := fmt.Sprintf("run-%d", r)
			agent := cadre.RootID.Child("worker", g+1)
			wg.Go(func() {
				var seq int64
				for b := range batches {
					n := 1 + (b+g)%batchSize
					entries := make([]cadre.JournalEntry, n)
					evs := make([]cadre.Event, n)
					for i := range n {
						seq++
						entries[i] = entry(run, agent, seq)
						evs[i] = ev(run, cadre.EventModelResponse, agent, time.Duration(seq))
						evs[i].Data = cadre.ModelResponse{Turn: int(seq)}
					}
					if err := s.Append(context.Background(), entries); err != nil {
						errs <- fmt.Errorf("Append(%s, %s): %w", run, agent, err)
						return
					}
					if err := s.AppendEvents(context.Background(), evs); err != nil {
						errs <- fmt.Errorf("AppendEvents(%s, %s): %w", run, agent, err)
						return
					}
					if err := s.PutAgent(context.Background(), sampleAgent(run, agent, at(0))); err != nil {
						errs <- fmt.Errorf("PutAgent(%s, %s): %w", run, agent, err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	// Each goroutine appended sum over b of 1+(b+g)%3 entries.
	perAgent := func(g int) int64 {
		var n int64
		for b := range batches {
			n += int64(1 + (b+g)%batchSize)
		}
		return n
	}
	for r := range runs {
		run := fmt.Sprintf("run-%d", r)
		var total int64
		for g := range perRun {
			agent := cadre.RootID.Child("worker", g+1)
			j := readJournal(t, s, run, agent)
			want := perAgent(g)
			total += want
			if int64(len(j)) != want {
				t.Errorf("Journal(%s, %s) has %d entries, want %d", run, agent, len(j), want)
				continue
			}
			for i, e := range j {
				if e.Seq != int64(i+1) {
					t.Errorf("Journal(%s, %s)[%d].Seq = %d, want %d", run, agent, i, e.Seq, i+1)
					break
				}
			}
		}
		evs := readEvents(t, s, run, 0)
		if int64(len(evs)) != total {
			t.Errorf("Events(%s) has %d events, want %d", run, len(evs), total)
		}
		lastPerAgent := map[cadre.AgentID]int{}
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				t.Errorf("Events(%s)[%d].Seq = %d, want %d: seqs must be gap-free and increasing", run, i, e.Seq, i+1)
				break
			}
			// Each agent's own events keep the order it appended them in.
			d, _ := e.Data.(cadre.ModelResponse)
			n := d.Turn
			if n <= lastPerAgent[e.Agent] {
				t.Errorf("Events(%s): %s's event %v came after its event %v", run, e.Agent, n, lastPerAgent[e.Agent])
				break
			}
			lastPerAgent[e.Agent] = n
		}
		if got := len(listAgents(t, s, run)); got != perRun {
			t.Errorf("ListAgents(%s) has %d records, want %d", run, got, perRun)
		}
	}
}

func (suite) timesRoundTrip(t *testing.T, s cadre.Store) {
	for _, tc := range []struct {
		name string
		t    time.Time
	}{
		{"SubMillisecondInZone", base},
		{"UTCWholeSecond", time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"FractionBelowPrevious", time.Date(2024, 1, 1, 0, 0, 0, 450_000_000, time.UTC)},
		{"Local", time.Date(2030, 12, 31, 23, 59, 59, 999_000_000, time.Local)},
		{"WithMonotonic", time.Now()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "run-" + tc.name
			r := sampleRun(id, tc.t)
			mustCreate(t, s, r)
			got := mustGet(t, s, id)
			if !near(got.Started, tc.t) {
				t.Errorf("Started %v came back as %v", tc.t, got.Started)
			}
			if !got.Ended.IsZero() {
				t.Errorf("zero Ended came back as %v", got.Ended)
			}
			a := sampleAgent(id, cadre.RootID, tc.t)
			a.Ended = tc.t.Add(time.Minute)
			if err := s.PutAgent(t.Context(), a); err != nil {
				t.Fatalf("PutAgent: %v", err)
			}
			if ag := listAgents(t, s, id); len(ag) != 1 || !near(ag[0].Started, tc.t) || !near(ag[0].Ended, a.Ended) {
				t.Errorf("agent times %v, %v came back as %+v", a.Started, a.Ended, ag)
			}
			e := entry(id, cadre.RootID, 1)
			e.Time = tc.t
			if err := s.Append(t.Context(), []cadre.JournalEntry{e}); err != nil {
				t.Fatalf("Append: %v", err)
			}
			if j := readJournal(t, s, id, cadre.RootID); len(j) != 1 || !near(j[0].Time, tc.t) {
				t.Errorf("journal time %v came back as %+v", tc.t, j)
			}
			if err := s.AppendEvents(t.Context(), []cadre.Event{{Type: cadre.EventSay, Run: id, Time: tc.t}}); err != nil {
				t.Fatalf("AppendEvents: %v", err)
			}
			if evs := readEvents(t, s, id, 0); len(evs) != 1 || !near(evs[0].Time, tc.t) {
				t.Errorf("event time %v came back as %+v", tc.t, evs)
			}
		})
	}
	// Run ordering must follow the instant, not the zone or the text.
	got, err := s.ListRuns(t.Context(), 0)
	if err != nil {
		t.Fatalf("ListRuns: %v", err)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Started.After(got[i-1].Started) {
			t.Errorf("ListRuns: %s (%v) is listed after %s (%v)", got[i].ID, got[i].Started, got[i-1].ID, got[i-1].Started)
		}
	}
}

func near(a, b time.Time) bool {
	d := a.Sub(b)
	return d < TimeMargin && d > -TimeMargin
}

func (suite) largePayloads(t *testing.T, s cadre.Store) {
	const size = 1 << 20
	big := strings.Repeat("0123456789abcdef", size/16)
	r := sampleRun("r1", at(0))
	r.Answer = big
	mustCreate(t, s, r)
	if got := mustGet(t, s, "r1"); got.Answer != big {
		t.Errorf("a 1 MiB answer came back as %d bytes", len(got.Answer))
	}
	a := sampleAgent("r1", cadre.RootID, at(0))
	a.Result = big
	if err := s.PutAgent(t.Context(), a); err != nil {
		t.Fatalf("PutAgent: %v", err)
	}
	if ag := listAgents(t, s, "r1"); len(ag) != 1 || ag[0].Result != big {
		t.Errorf("a 1 MiB agent result did not round-trip")
	}
	data, err := json.Marshal(map[string]string{"content": big})
	if err != nil {
		t.Fatal(err)
	}
	e := entry("r1", cadre.RootID, 1)
	e.Data = data
	if err := s.Append(t.Context(), []cadre.JournalEntry{e}); err != nil {
		t.Fatalf("Append of a 1 MiB entry: %v", err)
	}
	if j := readJournal(t, s, "r1", cadre.RootID); len(j) != 1 || !bytes.Equal(j[0].Data, data) {
		t.Errorf("a 1 MiB journal entry did not round-trip")
	}
	evt := ev("r1", cadre.EventToolResult, cadre.RootID, 0)
	evt.Data = cadre.ToolResult{Content: big}
	if err := s.AppendEvents(t.Context(), []cadre.Event{evt}); err != nil {
		t.Fatalf("AppendEvents of a 1 MiB event: %v", err)
	}
	if evs := readEvents(t, s, "r1", 0); len(evs) != 1 || evs[0].Data != (cadre.ToolResult{Content: big}) {
		t.Errorf("a 1 MiB event did not round-trip")
	}
}

// concurrentRuns has many goroutines each carry a whole run, as several
// engines sharing one store would: create it, record two agents, journal
// and emit events in turns, and finish it.
func (suite) concurrentRuns(t *testing.T, s cadre.Store) {
	const (
		runs  = 12
		turns = 10
	)
	child := cadre.RootID.Child("critic", 1)
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for r := range runs {
		wg.Go(func() {
			ctx := context.Background()
			id := fmt.Sprintf("run-%02d", r)
			fail := func(what string, err error) { errs <- fmt.Errorf("%s %s: %w", what, id, err) }
			if err := s.CreateRun(ctx, sampleRun(id, at(time.Duration(r)*time.Second))); err != nil {
				fail("CreateRun", err)
				return
			}
			for _, a := range []cadre.AgentID{cadre.RootID, child} {
				if err := s.PutAgent(ctx, sampleAgent(id, a, at(0))); err != nil {
					fail("PutAgent", err)
					return
				}
			}
			for i := range turns {
				seq := int64(i + 1)
				if err := s.Append(ctx, []cadre.JournalEntry{entry(id, cadre.RootID, seq), entry(id, child, seq)}); err != nil {
					fail("Append", err)
					return
				}
				if err := s.AppendEvents(ctx, []cadre.Event{ev(id, cadre.EventModelResponse, cadre.RootID, time.Duration(seq)), ev(id, cadre.EventToolCalled, child, time.Duration(seq))}); err != nil {
					fail("AppendEvents", err)
					return
				}
			}
			done := sampleRun(id, at(time.Duration(r)*time.Second))
			done.Status, done.Ended, done.Agents, done.Answer = cadre.StatusDone, at(time.Hour), 2, "answer of "+id
			if err := s.UpdateRun(ctx, done); err != nil {
				fail("UpdateRun", err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	all, err := s.ListRuns(t.Context(), 0)
	if err != nil {
		t.Fatalf("ListRuns: %v", err)
	}
	if len(all) != runs {
		t.Errorf("ListRuns returned %d runs, want %d", len(all), runs)
	}
	for r := range runs {
		id := fmt.Sprintf("run-%02d", r)
		got := mustGet(t, s, id)
		if got.Status != cadre.StatusDone || got.Answer != "answer of "+id {
			t.Errorf("run %s is %s with answer %q, want done with its own answer", id, got.Status, got.Answer)
		}
		if n := len(listAgents(t, s, id)); n != 2 {
			t.Errorf("run %s has %d agents, want 2", id, n)
		}
		for _, a := range []cadre.AgentID{cadre.RootID, child} {
			want := make([]cadre.JournalEntry, turns)
			for i := range want {
				want[i] = entry(id, a, int64(i+1))
			}
			if d := diff(want, readJournal(t, s, id, a)); d != "" {
				t.Errorf("Journal(%s, %s) (-want +got):\n%s", id, a, d)
			}
		}
		evs := readEvents(t, s, id, 0)
		for i, e := range evs {
			if e.Seq != int64(i+1) || e.Run != id {
				t.Errorf("Events(%s)[%d] is seq %d of run %q, want seq %d of %s", id, i, e.Seq, e.Run, i+1, id)
				break
			}
		}
		if len(evs) != 2*turns {
			t.Errorf("Events(%s) has %d events, want %d", id, len(evs), 2*turns)
		}
	}
}

// concurrentFollow has readers follow a run's events, as cadre runs show
// --follow does from another process, while writers append to it: each
// reader asks for the events after the last it saw, and must see every
// Seq once, in order. A store that lets a later Seq become visible before
// an earlier one would make a reader skip the earlier for good.
func (suite) concurrentFollow(t *testing.T, s cadre.Store) {
	const (
		writers = 4
		batches = 15
		readers = 3
	)
	mustCreate(t, s, sampleRun("r1", at(0)))
	var (
		wg, rg sync.WaitGroup
		done   = make(chan struct{})
		errs   = make(chan error, writers+readers)
	)
	for w := range writers {
		agent := cadre.RootID.Child("worker", w+1)
		wg.Go(func() {
			for b := range batches {
				batch := make([]cadre.Event, 1+(w+b)%3)
				for i := range batch {
					batch[i] = ev("r1", cadre.EventSay, agent, time.Duration(b))
				}
				if err := s.AppendEvents(context.Background(), batch); err != nil {
					errs <- fmt.Errorf("AppendEvents: %w", err)
					return
				}
				if err := s.PutAgent(context.Background(), sampleAgent("r1", agent, at(0))); err != nil {
					errs <- fmt.Errorf("PutAgent: %w", err)
					return
				}
			}
		})
	}
	total := int64(0)
	for w := range writers {
		for b := range batches {
			total += int64(1 + (w+b)%3)
		}
	}
	seen := make([]int64, readers)
	for r := range readers {
		rg.Go(func() {
			ctx := context.Background()
			for {
				// Whatever was committed before done was closed is visible
				// to a read that starts after it.
				var finished bool
				select {
				case <-done:
					finished = true
				default:
				}
				evs, err := s.Events(ctx, "r1", seen[r])
				if err != nil {
					errs <- fmt.Errorf("Events: %w", err)
					return
				}
				for _, e := range evs {
					if e.Seq != seen[r]+1 {
						errs <- fmt.Errorf("a follower that had seen up to seq %d was next given seq %d", seen[r], e.Seq)
						return
					}
					seen[r] = e.Seq
				}
				if _, err := s.ListAgents(ctx, "r1"); err != nil {
					errs <- fmt.Errorf("ListAgents: %w", err)
					return
				}
				if finished && len(evs) == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	close(done)
	rg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for r, n := range seen {
		if n != total && !t.Failed() {
			t.Errorf("follower %d saw %d events, want %d", r+1, n, total)
		}
	}
}

// concurrentFailures has batches that must fail (an existing entry, a
// missing run) appended at the same time as good ones: only the bad ones
// fail, and nothing of theirs is kept.
func (suite) concurrentFailures(t *testing.T, s cadre.Store) {
	const (
		good    = 6
		bad     = 3
		batches = 10
	)
	mustCreate(t, s, sampleRun("r1", at(0)))
	if err := s.Append(t.Context(), []cadre.JournalEntry{entry("r1", "root", 1)}); err != nil {
		t.Fatalf("Append: %v", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, (good+bad)*batches)
	for g := range good {
		agent := cadre.RootID.Child("worker", g+1)
		wg.Go(func() {
			for b := range batches {
				seq := int64(2*b + 1)
				if err := s.Append(context.Background(), []cadre.JournalEntry{entry("r1", agent, seq), entry("r1", agent, seq+1)}); err != nil {
					errs <- fmt.Errorf("a good batch of %s failed: %w", agent, err)
				}
				if err := s.AppendEvents(context.Background(), []cadre.Event{ev("r1", cadre.EventSay, agent, 0)}); err != nil {
					errs <- fmt.Errorf("a good event of %s failed: %w", agent, err)
				}
			}
		})
	}
	for k := range bad {
		wg.Go(func() {
			for b := range batches {
				// A new entry for root, then one that exists.
				dup := []cadre.JournalEntry{entry("r1", "root", int64(100+k*batches+b)), entry("r1", "root", 1)}
				if err := s.Append(context.Background(), dup); err == nil {
					errs <- errors.New("a batch holding an existing entry succeeded")
				}
				missing := []cadre.Event{ev("r1", cadre.EventSay, "root", 0), ev("nope", cadre.EventSay, "root", 0)}
				if err := s.AppendEvents(context.Background(), missing); !errors.Is(err, cadre.ErrNotFound) {
					errs <- fmt.Errorf("a batch of events for a missing run: got %v, want cadre.ErrNotFound", err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if d := cmp.Diff([]int64{1}, seqs(readJournal(t, s, "r1", "root"))); d != "" {
		t.Errorf("root's journal holds entries of failed batches (-want +got):\n%s", d)
	}
	for g := range good {
		agent := cadre.RootID.Child("worker", g+1)
		if n := len(readJournal(t, s, "r1", agent)); n != 2*batches {
			t.Errorf("Journal(%s) has %d entries, want %d", agent, n, 2*batches)
		}
	}
	evs := readEvents(t, s, "r1", 0)
	if len(evs) != good*batches {
		t.Errorf("Events(r1) has %d events, want %d: the failed batches' events were kept or good ones lost", len(evs), good*batches)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) || e.Agent == cadre.RootID {
			t.Errorf("Events(r1)[%d] is seq %d of %s, want seq %d of a worker", i, e.Seq, e.Agent, i+1)
			break
		}
	}
}
