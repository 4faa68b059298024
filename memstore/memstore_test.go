package memstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) cadre.Store { return memstore.New() })
}

func TestClosed(t *testing.T) {
	s := memstore.New()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := context.Background()
	if err := s.CreateRun(ctx, &cadre.RunRecord{ID: "r1"}); !errors.Is(err, memstore.ErrClosed) {
		t.Errorf("CreateRun after Close: got %v, want ErrClosed", err)
	}
	if _, err := s.ListRuns(ctx, 0); !errors.Is(err, memstore.ErrClosed) {
		t.Errorf("ListRuns after Close: got %v, want ErrClosed", err)
	}
	if err := s.Append(ctx, []cadre.JournalEntry{{Run: "r1", Agent: "root", Seq: 1}}); !errors.Is(err, memstore.ErrClosed) {
		t.Errorf("Append after Close: got %v, want ErrClosed", err)
	}
}

// TestKeepsWhatItWasGiven writes journal entries and events of every size
// the store keeps differently (none, nil, empty, small, larger than a
// quarter of a chunk, larger than a chunk), out of order and interleaved
// across agents, and reads back exactly what was written.
func TestKeepsWhatItWasGiven(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	if err := s.CreateRun(ctx, &cadre.RunRecord{ID: "r1"}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{-1, 0, 1, 7, 300, 5000, 16<<10 + 1, 70 << 10}
	times := []time.Time{{}, time.Date(2026, 11, 27, 10, 0, 0, 123456789, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.FixedZone("x", 3600))}
	agents := []cadre.AgentID{cadre.RootID, cadre.RootID.Child("worker", 1), cadre.RootID.Child("worker", 2)}
	want := map[cadre.AgentID][]cadre.JournalEntry{}
	var events []string
	for i := range 300 {
		agent := agents[rng.IntN(len(agents))]
		n := sizes[rng.IntN(len(sizes))]
		var data json.RawMessage
		if n >= 0 {
			data = json.RawMessage(strings.Repeat(string(rune('a'+i%26)), n))
		}
		e := cadre.JournalEntry{Run: "r1", Agent: agent, Seq: int64(len(want[agent]) + 1), Kind: fmt.Sprintf("kind%d", i%5), Data: data, Time: times[rng.IntN(len(times))]}
		in := e
		in.Data = bytes.Clone(data)
		if err := s.Append(ctx, []cadre.JournalEntry{in}); err != nil {
			t.Fatal(err)
		}
		clear(in.Data) // the store kept its own copy
		e.Time = e.Time.UTC()
		if e.Time.Equal(time.Time{}) {
			e.Time = time.Time{}
		}
		e.Sum = e.Checksum()
		want[agent] = append(want[agent], e)
		text := strings.Repeat("é", max(n, 0)/2)
		events = append(events, text)
		if err := s.AppendEvents(ctx, []cadre.Event{{Type: cadre.EventMessageSent, Run: "r1", Agent: agent, Data: cadre.MessageSent{To: cadre.RootID, Text: text}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, agent := range agents {
		got, err := s.Journal(ctx, "r1", agent)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want[agent]) {
			t.Fatalf("%s: %d entries, want %d", agent, len(got), len(want[agent]))
		}
		for i := range got {
			w := want[agent][i]
			if g := got[i]; g.Seq != w.Seq || g.Kind != w.Kind || g.Time != w.Time || g.Sum != w.Sum || !bytes.Equal(g.Data, w.Data) || (g.Data == nil) != (w.Data == nil) {
				t.Fatalf("%s entry %d: got seq %d kind %q time %v sum %d data %d bytes (nil %t), want seq %d kind %q time %v sum %d data %d bytes (nil %t)",
					agent, i+1, g.Seq, g.Kind, g.Time, g.Sum, len(g.Data), g.Data == nil, w.Seq, w.Kind, w.Time, w.Sum, len(w.Data), w.Data == nil)
			}
		}
	}
	for _, after := range []int{0, 1, 150, 299} {
		got, err := s.Events(ctx, "r1", int64(after))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(events)-after {
			t.Fatalf("events after %d: %d, want %d", after, len(got), len(events)-after)
		}
		for i, ev := range got {
			seq := int64(after + i + 1)
			if ev.Seq != seq || ev.Data.(cadre.MessageSent).Text != events[seq-1] {
				t.Fatalf("event %d: got seq %d text of %d bytes, want seq %d text of %d bytes", i, ev.Seq, len(ev.Data.(cadre.MessageSent).Text), seq, len(events[seq-1]))
			}
		}
	}
}
