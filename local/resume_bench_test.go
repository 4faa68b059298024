package local_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/cputime"
	"github.com/cadre-ai/cadre/loop"
)

// BenchmarkResume is what resuming a large run costs: a root has N
// children, each stopped in its first model call when the process's
// store stops taking writes (as if the process had died); a new engine
// on the same store resumes the run, which replays every journal, makes
// the N model calls again and ends. It runs with the in-memory store and
// SQLite at 1,000 and 10,000 children (and 100,000 with
// CADRE_BENCH_SCALE), and prints
//
//	resume-ms      the time Resume takes: reading and replaying the run
//	ms/run         from Resume to the run's end
//	cpu-µs/child   CPU of the whole process over that time / N
func BenchmarkResume(b *testing.B) {
	for _, st := range benchStores[1:] {
		for _, n := range scaleSizes() {
			b.Run(fmt.Sprintf("store=%s/children=%d", st.name, n), func(b *testing.B) {
				resumeBench(b, st.open, n)
			})
		}
	}
}

func resumeBench(b *testing.B, open func(*testing.B) (cadre.Store, func() int64), n int) {
	ctx := context.Background()
	first := fanOutReply(n, loop.ToolSpawnAgent)
	var cpu, wall, resume time.Duration
	for b.Loop() {
		b.StopTimer()
		store, closeStore := open(b)
		// The first process: every child waits in its model call, then
		// the store takes no more writes and the children are let go.
		hold := make(chan struct{})
		w := &workload{rootFirst: first, hold: hold, childrenOnly: true}
		dying := &stopping{Store: store}
		e1 := w.engine(dying)
		id, err := e1.Start(ctx, "Do the benchmark's work.", cadre.StartOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for w.parked.Load() < int64(n) {
			time.Sleep(time.Millisecond)
		}
		dying.stopped.Store(true)
		close(hold)
		if _, err := e1.Wait(ctx, id); err == nil {
			b.Fatal("the first process's run ended well with a store that took no writes")
		}

		e2 := (&workload{rootFirst: first, childrenOnly: true}).engine(store)
		cpu0, t0 := cputime.Process(), time.Now()
		b.StartTimer()
		if err := e2.Resume(ctx, id); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		res, err := e2.Wait(ctx, id)
		b.StopTimer()
		cpu += cputime.Process() - cpu0
		wall += time.Since(t0)
		resume += t1.Sub(t0)
		if err != nil || len(res.Agents) != n+1 || res.Status != cadre.StatusDone {
			b.Fatalf("resumed run: %v, %d agents, want %d done", err, len(res.Agents), n+1)
		}
		closeStore()
		b.StartTimer()
	}
	runs := float64(b.N)
	b.ReportMetric(float64(resume.Microseconds())/1000/runs, "resume-ms")
	b.ReportMetric(float64(wall.Microseconds())/1000/runs, "ms/run")
	if cputime.Process() >= 0 {
		b.ReportMetric(float64(cpu.Microseconds())/runs/float64(n), "cpu-µs/child")
	}
}

// stopping is a store that takes no more journal entries, records or
// events once stopped is set, as the store of a process that died.
type stopping struct {
	cadre.Store
	stopped atomic.Bool
}

var errStopped = errors.New("the process stopped")

func (s *stopping) Append(ctx context.Context, entries []cadre.JournalEntry) error {
	if s.stopped.Load() {
		return errStopped
	}
	return s.Store.Append(ctx, entries)
}

func (s *stopping) PutAgent(ctx context.Context, a *cadre.AgentRecord) error {
	if s.stopped.Load() {
		return errStopped
	}
	return s.Store.PutAgent(ctx, a)
}

func (s *stopping) UpdateRun(ctx context.Context, r *cadre.RunRecord) error {
	if s.stopped.Load() {
		return errStopped
	}
	return s.Store.UpdateRun(ctx, r)
}

func (s *stopping) AppendEvents(ctx context.Context, evs []cadre.Event) error {
	if s.stopped.Load() {
		return errStopped
	}
	return s.Store.AppendEvents(ctx, evs)
}
