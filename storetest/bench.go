package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
)

// Journal returns n journal entries of a typical agent, numbered from seq
// from on, shaped and sized like the loop's inputs: the start (seq 1)
// carries a system prompt, a tool list and the task, about 7 KiB; then
// model replies with a tool call (about 0.5 KiB) alternate with the
// tools' results (a file's worth, about 3 KiB), and every eighth entry is
// a subagent's report (about 1.5 KiB). Entries with the same seq have the
// same size whatever the agent, so batches of different agents compare.
func Journal(run string, agent cadre.AgentID, from int64, n int) []cadre.JournalEntry {
	out := make([]cadre.JournalEntry, n)
	for i := range out {
		seq := from + int64(i)
		kind, data := journalInput(agent, seq)
		out[i] = cadre.JournalEntry{Run: run, Agent: agent, Seq: seq, Kind: kind, Data: data, Time: base.Add(time.Duration(seq) * time.Second)}
	}
	return out
}

var (
	systemPrompt = strings.Repeat("You are a careful research assistant. Read the files you need, cite them, and report once. ", 48)
	fileContent  = strings.Repeat("func (s *Store) Append(ctx context.Context, entries []cadre.JournalEntry) error {\n", 38)
	reportText   = strings.Repeat("The configuration is read in config.go and merged with the flags in run.go. ", 20)
	toolSpecs    = `[{"name":"read_file","description":"Read a file of the workspace.","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}},` +
		`{"name":"search_files","description":"Search the workspace for a regular expression.","parameters":{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"}},"required":["pattern"]}}]`
)

// journalInput is the kind and JSON of the input with the given seq.
func journalInput(agent cadre.AgentID, seq int64) (string, json.RawMessage) {
	enc := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return b
	}
	switch {
	case seq == 1:
		return "start", enc(map[string]any{
			"config": map[string]any{"id": agent, "depth": agent.Depth(), "max_depth": 3, "definition": "research-assistant",
				"system": systemPrompt, "tools": json.RawMessage(toolSpecs), "max_turns": 40},
			"task":     "Find where the configuration is read and how flags override it.",
			"messages": []map[string]any{{"role": "user", "content": "Find where the configuration is read and how flags override it."}},
		})
	case seq%8 == 0:
		return "child_report", enc(map[string]any{"child": agent.Child("critic", int(seq/8)), "text": reportText})
	case seq%2 == 0:
		return "model_result", enc(map[string]any{"response": map[string]any{
			"message": map[string]any{"role": "assistant", "content": "I will read the store's source next to see how batches are written.",
				"tool_calls": []map[string]any{{"id": fmt.Sprintf("call_%d", seq), "name": "read_file", "arguments": `{"path":"sqlite/sqlite.go"}`}}},
			"usage": map[string]any{"input_tokens": 1800 + seq*40, "output_tokens": 57}, "stop_reason": "tool_use",
		}})
	default:
		return "tool_results", enc(map[string]any{"results": []map[string]any{{"call_id": fmt.Sprintf("call_%d", seq-1), "content": fileContent}}})
	}
}

// benchEntries is how many journal entries one benchmark operation
// appends, whatever the batch size, so that even -benchtime 1x measures
// many transactions.
const benchEntries = 256

// Bench measures what journaling costs a store, per entry, with the
// entries of Journal: appended one per call (an engine that does not
// batch), in batches of 4 and 16 (what group commit hands the store when
// that many agents step at once) and of 256 (a bulk import), from one
// goroutine; and one entry per call from 8 goroutines at once, each its
// own agent, where a store that group-commits shares transactions between
// them. It also measures AppendEvents in batches of 16. Every benchmark
// reports ns/entry, entries/s and MB/s. open returns a new, empty store;
// Bench closes it.
func Bench(b *testing.B, open func(b *testing.B) cadre.Store) {
	for _, n := range []int{1, 4, 16, 256} {
		name := fmt.Sprintf("Append/batch=%d", n)
		if n == 1 {
			name = "Append/single"
		}
		b.Run(name, func(b *testing.B) { benchAppend(b, open, 1, n) })
	}
	b.Run("Append/goroutines=8/single", func(b *testing.B) { benchAppend(b, open, 8, 1) })
	b.Run("AppendEvents/batch=16", func(b *testing.B) { benchEvents(b, open, 16) })
}

// BenchAppend measures appends of Journal's entries in batches of n from
// the given number of goroutines, each its own agent, and reports the
// cost per entry. It is what Bench runs; stores use it to compare their
// own settings.
func BenchAppend(b *testing.B, s cadre.Store, goroutines, n int) {
	b.Helper()
	ctx := context.Background()
	if err := s.CreateRun(ctx, &cadre.RunRecord{ID: "bench", Status: cadre.StatusRunning, Started: time.Now()}); err != nil {
		b.Fatal(err)
	}
	// The entries are made before the clock starts: seq k carries the
	// data of Journal's entry (k-1)%benchEntries+1.
	tmpl := make([][]cadre.JournalEntry, goroutines)
	var size int64
	for g := range tmpl {
		tmpl[g] = Journal("bench", cadre.RootID.Child("worker", g+1), 1, benchEntries)
	}
	for _, e := range tmpl[0] {
		size += int64(len(e.Data))
	}
	b.SetBytes(size * int64(goroutines))
	seqs := make([]int64, goroutines)
	ops := 0
	for b.Loop() {
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				batch := make([]cadre.JournalEntry, n)
				for done := 0; done < benchEntries; done += n {
					for i := range batch {
						seqs[g]++
						batch[i] = tmpl[g][(seqs[g]-1)%benchEntries]
						batch[i].Seq = seqs[g]
					}
					if err := s.Append(ctx, batch); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		ops++
	}
	perEntry(b, int64(ops*goroutines*benchEntries))
}

func benchAppend(b *testing.B, open func(b *testing.B) cadre.Store, goroutines, n int) {
	s := open(b)
	defer s.Close()
	BenchAppend(b, s, goroutines, n)
}

func benchEvents(b *testing.B, open func(b *testing.B) cadre.Store, n int) {
	s := open(b)
	defer s.Close()
	ctx := context.Background()
	if err := s.CreateRun(ctx, &cadre.RunRecord{ID: "bench", Status: cadre.StatusRunning, Started: time.Now()}); err != nil {
		b.Fatal(err)
	}
	batch := make([]cadre.Event, n)
	var size int64
	for i := range batch {
		batch[i] = cadre.Event{Type: cadre.EventToolResult, Run: "bench", Agent: cadre.RootID, Time: time.Now(),
			Data: cadre.ToolResult{Tool: "read_file", CallID: fmt.Sprintf("call_%d", i), Content: fileContent[:2000]}}
		size += 2100
	}
	b.SetBytes(size * benchEntries / int64(n))
	ops := 0
	for b.Loop() {
		for done := 0; done < benchEntries; done += n {
			if err := s.AppendEvents(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		ops++
	}
	perEntry(b, int64(ops*benchEntries))
}

func perEntry(b *testing.B, entries int64) {
	el := b.Elapsed()
	if entries == 0 || el <= 0 {
		return
	}
	b.ReportMetric(float64(el.Nanoseconds())/float64(entries), "ns/entry")
	b.ReportMetric(float64(entries)/el.Seconds(), "entries/s")
}
