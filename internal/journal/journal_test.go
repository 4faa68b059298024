package journal

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
)

// memJournal is a Store whose Journal gives fixed entries and counts its
// calls; the rest of cadre.Store is not used.
type memJournal struct {
	cadre.Store
	entries map[cadre.AgentID][]cadre.JournalEntry
	calls   int
}

func (m *memJournal) Journal(_ context.Context, _ string, agent cadre.AgentID) ([]cadre.JournalEntry, error) {
	m.calls++
	return m.entries[agent], nil
}

// firstEntry is agent's first journal entry in run r, holding in.
func firstEntry(t *testing.T, agent cadre.AgentID, in loop.Input) cadre.JournalEntry {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	e := cadre.JournalEntry{Run: "r", Agent: agent, Seq: 1, Kind: in.Kind(), Data: b}
	e.Sum = e.Checksum()
	return e
}

// TestReader: a Start naming another's configuration is given it,
// with its own ID, parent and definition, the other journal read once;
// and a configuration that cannot be read is an error naming both agents.
func TestReader(t *testing.T) {
	entry := func(agent cadre.AgentID, in loop.Input) cadre.JournalEntry { return firstEntry(t, agent, in) }
	whole := loop.Config{ID: "root/w.1", Parent: "root", Depth: 1, MaxDepth: 3, Definition: "w", System: "You are w.", MaxTurns: 7,
		Tools: []cadre.ToolSpec{{Name: "read_file", Description: "Reads.", Parameters: json.RawMessage(`{"type":"object"}`)}}}
	damaged := entry("root/w.5", loop.Start{Config: whole})
	damaged.Data = []byte(strings.Replace(string(damaged.Data), "You are", "You were", 1))
	m := &memJournal{entries: map[cadre.AgentID][]cadre.JournalEntry{
		"root/w.1": {entry("root/w.1", loop.Start{Config: whole, Task: "one"})},
		"root/w.3": {entry("root/w.3", loop.Start{Config: loop.Config{ID: "root/w.3"}, ConfigFrom: "root/w.1"})},
		"root/w.4": {entry("root/w.4", loop.ModelResult{Err: "x"})},
		"root/w.5": {damaged},
	}}
	rd := &Reader{Store: m, Run: "r"}
	ins := []loop.Input{
		loop.Start{Config: loop.Config{ID: "root/w.2", Parent: "root/lead.1", Definition: "w2"}, Task: "two", ConfigFrom: "root/w.1"},
		loop.ChildEnded{Child: "x"},
		loop.Start{Config: loop.Config{ID: "root/w.6", Parent: "root", Definition: "w"}, Task: "six", ConfigFrom: "root/w.1"},
	}
	if err := rd.Resolve(t.Context(), ins); err != nil {
		t.Fatal(err)
	}
	want := whole
	want.ID, want.Parent, want.Definition = "root/w.2", "root/lead.1", "w2"
	if d := cmp.Diff(loop.Start{Config: want, Task: "two"}, ins[0]); d != "" {
		t.Errorf("resolved (-want +got):\n%s", d)
	}
	if s := ins[2].(loop.Start); s.Config.ID != "root/w.6" || s.Config.System != "You are w." || s.ConfigFrom != "" {
		t.Errorf("the second Start resolved to %+v", s)
	}
	if m.calls != 1 {
		t.Errorf("the journal of root/w.1 was read %d times, want once", m.calls)
	}
	for from, why := range map[cadre.AgentID]string{
		"root/w.3": "it takes its own from root/w.1",
		"root/w.4": "does not begin with a start",
		"root/w.5": "damaged",
		"root/w.9": "does not begin with a start",
	} {
		err := rd.Resolve(t.Context(), []loop.Input{loop.Start{Config: loop.Config{ID: "root/w.7"}, ConfigFrom: from}})
		if err == nil || !strings.Contains(err.Error(), "the start of root/w.7 takes its configuration from that of "+string(from)) || !strings.Contains(err.Error(), why) {
			t.Errorf("from %s: error %v, want one saying %q", from, err, why)
		}
	}
}

// A reader without a store says so rather than fail harder.
func TestReaderWithoutStore(t *testing.T) {
	err := (&Reader{}).Resolve(t.Context(), []loop.Input{loop.Start{Config: loop.Config{ID: "root/w.2"}, ConfigFrom: "root/w.1"}})
	if err == nil || !strings.Contains(err.Error(), "no store") {
		t.Errorf("error %v, want one saying there is no store", err)
	}
}

// runJournal is memJournal that also reads a run's journals at once.
type runJournal struct {
	*memJournal
	runCalls int
}

func (m *runJournal) RunJournals(_ context.Context, run string) (map[cadre.AgentID][]cadre.JournalEntry, error) {
	m.runCalls++
	return m.entries, nil
}

// TestReaderLoad: once Load has read a run's journals at once, the
// reader reads none of them again, configurations included; a store that
// cannot read them at once is read agent by agent.
func TestReaderLoad(t *testing.T) {
	whole := loop.Config{ID: "root/w.1", Parent: "root", Depth: 1, Definition: "w", System: "You are w."}
	start := func(agent cadre.AgentID, in loop.Start) cadre.JournalEntry { return firstEntry(t, agent, in) }
	entries := map[cadre.AgentID][]cadre.JournalEntry{
		"root/w.1": {start("root/w.1", loop.Start{Config: whole})},
		"root/w.2": {start("root/w.2", loop.Start{Config: loop.Config{ID: "root/w.2", Parent: "root", Definition: "w"}, ConfigFrom: "root/w.1"})},
	}
	s := &runJournal{memJournal: &memJournal{entries: entries}}
	rd := &Reader{Store: s, Run: "r"}
	if err := rd.Load(t.Context()); err != nil {
		t.Fatalf("Load: %v", err)
	}
	for _, id := range []cadre.AgentID{"root/w.2", "root/w.1", "root/w.9"} {
		j, err := rd.Journal(t.Context(), id)
		if err != nil || len(j) != len(entries[id]) {
			t.Fatalf("Journal(%s): %d entries (err %v), want %d", id, len(j), err, len(entries[id]))
		}
		for _, e := range j {
			if _, err := rd.Inputs(t.Context(), e); err != nil {
				t.Fatalf("Inputs of %s's entry: %v", id, err)
			}
		}
	}
	if s.calls != 0 || s.runCalls != 1 {
		t.Errorf("the store was read %d times agent by agent and %d times at once, want 0 and 1", s.calls, s.runCalls)
	}

	// Take gives an agent's journal once, then keeps only its first entry,
	// from which another agent's Start may still take its configuration.
	long := &runJournal{memJournal: &memJournal{entries: map[cadre.AgentID][]cadre.JournalEntry{
		"root/w.1": {entries["root/w.1"][0], {Run: "r", Agent: "root/w.1", Seq: 2, Kind: "timeout", Data: json.RawMessage(`{}`)}},
		"root/w.2": entries["root/w.2"],
	}}}
	rd = &Reader{Store: long, Run: "r"}
	if err := rd.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	if j, err := rd.Take(t.Context(), "root/w.1"); err != nil || len(j) != 2 {
		t.Fatalf("Take(root/w.1): %d entries (err %v), want 2", len(j), err)
	}
	if j, err := rd.Journal(t.Context(), "root/w.1"); err != nil || len(j) != 1 || j[0].Seq != 1 {
		t.Errorf("Journal(root/w.1) after Take: %+v (err %v), want its first entry alone", j, err)
	}
	j, err := rd.Take(t.Context(), "root/w.2")
	if err != nil || len(j) != 1 {
		t.Fatalf("Take(root/w.2): %d entries (err %v)", len(j), err)
	}
	if _, err := rd.Inputs(t.Context(), j[0]); err != nil {
		t.Errorf("the Start that names root/w.1's configuration, after root/w.1's journal was taken: %v", err)
	}

	byAgent := &memJournal{entries: entries}
	rd = &Reader{Store: byAgent, Run: "r"}
	if err := rd.Load(t.Context()); err != nil {
		t.Fatalf("Load from a store without RunJournals: %v", err)
	}
	if j, err := rd.Journal(t.Context(), "root/w.1"); err != nil || len(j) != 1 || byAgent.calls != 1 {
		t.Errorf("Journal without Load: %d entries (err %v), %d reads; want 1 entry read from the store", len(j), err, byAgent.calls)
	}
}
