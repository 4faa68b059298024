package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/sqlite"
)

// entriesPerOp is how many journal entries one benchmark operation
// appends, whatever the batch size, so that even -benchtime 1x measures
// more than one transaction.
const entriesPerOp = 1024

// data is a journal entry of a typical size: a model reply with a tool call.
var data = json.RawMessage(`{"text":"Reading the file now.","calls":[{"id":"call_1","name":"read_file","arguments":{"path":"README.md"}}],"usage":{"input_tokens":1834,"output_tokens":57}}`)

func newRun(b *testing.B, s cadre.Store, id string) {
	b.Helper()
	if err := s.CreateRun(context.Background(), &cadre.RunRecord{ID: id, Status: cadre.StatusRunning, Started: time.Now()}); err != nil {
		b.Fatal(err)
	}
}

// appendAll appends entriesPerOp entries for one agent in batches of n.
func appendAll(s cadre.Store, run string, agent cadre.AgentID, seq *int64, n int) error {
	batch := make([]cadre.JournalEntry, n)
	for done := 0; done < entriesPerOp; done += n {
		for i := range batch {
			*seq++
			batch[i] = cadre.JournalEntry{Run: run, Agent: agent, Seq: *seq, Kind: "model_result", Data: data, Time: time.Now()}
		}
		if err := s.Append(context.Background(), batch); err != nil {
			return err
		}
	}
	return nil
}

func report(b *testing.B, entries int64) {
	el := b.Elapsed()
	b.ReportMetric(float64(el.Nanoseconds())/float64(entries), "ns/entry")
	b.ReportMetric(float64(entries)/el.Seconds(), "entries/s")
}

// BenchmarkAppend is the cost of journaling, per entry, from one goroutine
// in batches of 1, 16 and 256 entries, with the settings Open uses.
func BenchmarkAppend(b *testing.B) {
	for _, n := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "cadre.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			newRun(b, s, "r1")
			var seq int64
			for b.Loop() {
				if err := appendAll(s, "r1", "root", &seq, n); err != nil {
					b.Fatal(err)
				}
			}
			report(b, seq)
		})
	}
}

// BenchmarkAppendSynchronous compares synchronous=FULL, which Open uses,
// with NORMAL, which may lose the last transactions when the machine (not
// the process) crashes.
func BenchmarkAppendSynchronous(b *testing.B) {
	for _, mode := range []string{"FULL", "NORMAL"} {
		for _, n := range []int{1, 16} {
			b.Run(fmt.Sprintf("sync=%s/batch=%d", mode, n), func(b *testing.B) {
				s, err := sqlite.OpenWith(context.Background(), filepath.Join(b.TempDir(), "cadre.db"), 1, mode)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				newRun(b, s, "r1")
				var seq int64
				for b.Loop() {
					if err := appendAll(s, "r1", "root", &seq, n); err != nil {
						b.Fatal(err)
					}
				}
				report(b, seq)
			})
		}
	}
}

// BenchmarkAppendConcurrent has 8 goroutines journal at once, each for its
// own agent, through one writing connection (what Open does) or through 8
// that contend for SQLite's write lock and wait in its busy handler.
func BenchmarkAppendConcurrent(b *testing.B) {
	const goroutines = 8
	for _, writers := range []int{1, goroutines} {
		for _, n := range []int{1, 16} {
			b.Run(fmt.Sprintf("writers=%d/batch=%d", writers, n), func(b *testing.B) {
				s, err := sqlite.OpenWith(context.Background(), filepath.Join(b.TempDir(), "cadre.db"), writers, "FULL")
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				newRun(b, s, "r1")
				seqs := make([]int64, goroutines)
				var total atomic.Int64
				for b.Loop() {
					var wg sync.WaitGroup
					for g := range goroutines {
						wg.Go(func() {
							if err := appendAll(s, "r1", cadre.RootID.Child("worker", g+1), &seqs[g], n); err != nil {
								b.Error(err)
								return
							}
							total.Add(entriesPerOp)
						})
					}
					wg.Wait()
				}
				report(b, total.Load())
			})
		}
	}
}
