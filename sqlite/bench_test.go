package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/sqlite"
	"github.com/cadre-ai/cadre/storetest"
)

// BenchmarkStore is the journal benchmark every store runs (see
// storetest.Bench), with the settings Open uses.
func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) cadre.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "cadre.db"))
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}

// BenchmarkGroupCommit has 8 goroutines append one entry per call at once,
// each for its own agent, with group commit (what Open does) and with a
// transaction per call.
func BenchmarkGroupCommit(b *testing.B) {
	for _, grouped := range []bool{true, false} {
		b.Run(fmt.Sprintf("grouped=%t", grouped), func(b *testing.B) {
			s, err := sqlite.OpenWith(context.Background(), filepath.Join(b.TempDir(), "cadre.db"), grouped, "FULL")
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			storetest.BenchAppend(b, s, 8, 1)
			b.ReportMetric(float64(s.Groups())/float64(b.N), "commits/op")
		})
	}
}

// BenchmarkSynchronous compares synchronous=FULL, which Open uses, with
// NORMAL, which may lose the last transactions when the machine (not the
// process) crashes, for single entries and batches of 16.
func BenchmarkSynchronous(b *testing.B) {
	for _, mode := range []string{"FULL", "NORMAL"} {
		for _, n := range []int{1, 16} {
			b.Run(fmt.Sprintf("sync=%s/batch=%d", mode, n), func(b *testing.B) {
				s, err := sqlite.OpenWith(context.Background(), filepath.Join(b.TempDir(), "cadre.db"), true, mode)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				storetest.BenchAppend(b, s, 1, n)
			})
		}
	}
}
