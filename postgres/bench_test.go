package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
)

// entriesPerOp is how many journal entries one benchmark operation
// appends, whatever the batch size, so that even -benchtime 1x measures
// more than one transaction.
const entriesPerOp = 1024

// data is a journal entry of a typical size: a model reply with a tool call.
var data = json.RawMessage(`{"text":"Reading the file now.","calls":[{"id":"call_1","name":"read_file","arguments":{"path":"README.md"}}],"usage":{"input_tokens":1834,"output_tokens":57}}`)

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

// BenchmarkAppend is the cost of journaling, per entry, in batches of 1,
// 16 and 256 entries, from one goroutine and from 8 at once (each its own
// agent).
func BenchmarkAppend(b *testing.B) {
	for _, goroutines := range []int{1, 8} {
		for _, n := range []int{1, 16, 256} {
			b.Run(fmt.Sprintf("goroutines=%d/batch=%d", goroutines, n), func(b *testing.B) {
				dsn, _ := schemaDSN(b)
				s := open(b, dsn)
				defer s.Close()
				if err := s.CreateRun(context.Background(), &cadre.RunRecord{ID: "r1", Started: time.Now()}); err != nil {
					b.Fatal(err)
				}
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
