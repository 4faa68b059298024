package local_test

// BenchmarkDelegation is the engine's cost per delegated child, the figure
// to compare with other agent runtimes: a root fans out to N workers through
// one delegation tool called N times in one reply (spawn_agent, so the root
// waits for every report as the calls' results), and each worker's model
// answers after L (the root's at once, so a run takes at least L). It runs without a store, with the in-memory store and
// with the SQLite journal, and prints
//
//	cpu-µs/child   CPU of the whole process (user + system) / N
//	ms/run         wall time of one run
//	allocs/agent   heap allocations per agent of the run
//	calls/run      model calls of one run, the root's included
//	tokens/run     tokens of those calls (each answers with 10 in, 10 out)
//	disk-B/child   with SQLite, the database's size once closed / N
//	spawned-ms     with a latency, when the last child's model call began
//	tail-ms        with a latency, from the last child's reply to the run's end
//
// A run takes at least L; with L = 200 ms what it takes more is about
// spawned-ms (the children are started, one goroutine each, while the
// first already wait for their models) plus tail-ms (the last child's
// reply and the parent's next step, each journaled first).
//
// With CADRE_TEST_POSTGRES set (`source .ci/postgres.sh` starts a server
// and sets it), the stores include PostgreSQL, each run in a schema of its
// own; the server's CPU is not counted, only this process's.
//
// `make bench BENCH=Delegation` runs it. BenchmarkScale and
// BenchmarkIdleAgents go up to 100,000 children when CADRE_BENCH_SCALE is
// set, as `make bench-scale` does.

import (
	"context"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/cputime"
	"github.com/cadre-ai/cadre/internal/pgtest"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/model/scripted"
	"github.com/cadre-ai/cadre/postgres"
	"github.com/cadre-ai/cadre/sqlite"
)

// delegationCases are the (N, L) pairs of BenchmarkDelegation.
var delegationCases = []struct {
	children int
	latency  time.Duration
}{
	{1_000, 0},
	{1_000, 200 * time.Millisecond},
	{10_000, 0},
}

// benchStores are the stores the delegation benchmarks run with; open
// returns nil for none and a function that closes the store and returns
// the bytes it keeps on disk (0 for a store in memory).
var benchStores = []struct {
	name string
	open func(b *testing.B) (cadre.Store, func() int64)
}{
	{"none", func(*testing.B) (cadre.Store, func() int64) { return nil, func() int64 { return 0 } }},
	{"memstore", func(*testing.B) (cadre.Store, func() int64) {
		s := memstore.New()
		return s, func() int64 { s.Close(); return 0 }
	}},
	{"sqlite", func(b *testing.B) (cadre.Store, func() int64) {
		path := filepath.Join(b.TempDir(), "cadre.db")
		s, err := sqlite.Open(context.Background(), path)
		if err != nil {
			b.Fatal(err)
		}
		return s, func() int64 {
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			// Closing moves the -wal file into the database.
			fi, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			return fi.Size()
		}
	}},
	{"postgres", openPostgres},
}

// openPostgres opens a PostgreSQL store in a new schema of the database
// CADRE_TEST_POSTGRES names, dropped when the benchmark ends, and skips
// the benchmark when it is not set.
func openPostgres(b *testing.B) (cadre.Store, func() int64) {
	base := os.Getenv("CADRE_TEST_POSTGRES")
	if base == "" {
		b.Skip("CADRE_TEST_POSTGRES is not set: `source .ci/postgres.sh` to run this benchmark with PostgreSQL")
	}
	dsn, _ := pgtest.Schema(b, base, "cadre_bench")
	s, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	return s, func() int64 { s.Close(); return 0 }
}

func BenchmarkDelegation(b *testing.B) {
	for _, st := range benchStores {
		for _, c := range delegationCases {
			b.Run(fmt.Sprintf("store=%s/children=%d/latency=%s", st.name, c.children, c.latency), func(b *testing.B) {
				delegate(b, st.open, loop.ToolSpawnAgent, c.children, c.latency)
			})
		}
	}
}

// scaleSizes are the numbers of children of the scale benchmarks: 100,000
// only when CADRE_BENCH_SCALE is set (it takes minutes and gigabytes).
func scaleSizes() []int {
	if os.Getenv("CADRE_BENCH_SCALE") != "" {
		return []int{1_000, 10_000, 100_000}
	}
	return []int{1_000, 10_000}
}

// BenchmarkScale runs the delegation workload with an instant
// model at 1,000, 10,000 and (see scaleSizes) 100,000 children, sync and
// background, so that the cost per child can be seen not to grow with N.
func BenchmarkScale(b *testing.B) {
	for _, mode := range []string{"sync", "background"} {
		tool := loop.ToolSpawnAgent
		if mode == "background" {
			tool = loop.ToolStartBackground
		}
		for _, st := range benchStores {
			for _, n := range scaleSizes() {
				b.Run(fmt.Sprintf("%s/store=%s/children=%d", mode, st.name, n), func(b *testing.B) {
					delegate(b, st.open, tool, n, 0)
				})
			}
		}
	}
}

// replyFunc is the lightest model there can be: a function that answers
// each request at once, in one chunk, keeping nothing. (The scripted model
// counts every call under a lock, for its tests; a real provider's cost is
// its server's.) The benchmark measures the engine around it.
type replyFunc func(context.Context, *cadre.Request) (*cadre.Response, error)

func (f replyFunc) Stream(ctx context.Context, req *cadre.Request) iter.Seq2[*cadre.Chunk, error] {
	return func(yield func(*cadre.Chunk, error) bool) {
		resp, err := f(ctx, req)
		if err != nil {
			yield(nil, err)
			return
		}
		yield(&cadre.Chunk{Response: resp}, nil)
	}
}

// countingModel counts a benchmark's model calls and their tokens, and
// times the children's calls in the run under way (see clock).
type countingModel struct {
	w      *workload
	calls  atomic.Int64
	tokens atomic.Int64
	clock  clock
}

// clock times the calls of a run's children from its start: when the last
// of them began, and when the last of them returned.
type clock struct {
	mu               sync.Mutex
	start            time.Time
	lastCall, lastUp time.Duration
}

func (c *clock) reset(start time.Time) {
	c.mu.Lock()
	c.start, c.lastCall, c.lastUp = start, 0, 0
	c.mu.Unlock()
}

func (c *clock) mark(at *time.Duration) {
	c.mu.Lock()
	*at = max(*at, time.Since(c.start))
	c.mu.Unlock()
}

func (c *countingModel) reply(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
	child := req.Turn == 1 && scripted.DefinitionName(req.Agent) == "worker"
	if child {
		c.clock.mark(&c.clock.lastCall)
	}
	resp, err := c.w.reply(ctx, req)
	if err == nil {
		c.calls.Add(1)
		c.tokens.Add(int64(resp.Usage.Total()))
	}
	if child {
		c.clock.mark(&c.clock.lastUp)
	}
	return resp, err
}

// delegate runs the delegation workload b.N times on a fresh store each
// time and reports its figures.
func delegate(b *testing.B, open func(*testing.B) (cadre.Store, func() int64), tool string, n int, latency time.Duration) {
	first := fanOutReply(n, tool)
	w := &workload{latency: latency, rootFirst: first, childrenOnly: true}
	cm := &countingModel{w: w}
	m := replyFunc(cm.reply)
	b.ReportAllocs()
	var (
		cpu         time.Duration
		wall        time.Duration
		lastCall    time.Duration // when the last child's model call began
		tail        time.Duration // from the last child's reply to the run's end
		allocs      uint64
		stored      int64
		before, aft runtime.MemStats
	)
	for b.Loop() {
		b.StopTimer()
		store, closeStore := open(b)
		e := local.New(local.Config{
			Models:      local.OneModel{Name: "bench", Model: m},
			RootModel:   "bench",
			Definitions: benchDefs,
			Store:       store,
			Limits:      benchLimits,
		})
		runtime.GC()
		runtime.ReadMemStats(&before)
		cpu0, t0 := cputime.Process(), time.Now()
		cm.clock.reset(t0)
		b.StartTimer()
		runOnce(b, e, n+1)
		b.StopTimer()
		cpu1, t1 := cputime.Process(), time.Now()
		lastCall += cm.clock.lastCall
		tail += t1.Sub(t0) - cm.clock.lastUp
		runtime.ReadMemStats(&aft)
		cpu += cpu1 - cpu0
		wall += t1.Sub(t0)
		allocs += aft.Mallocs - before.Mallocs
		stored += closeStore()
		b.StartTimer()
	}
	runs := float64(b.N)
	if cputime.Process() >= 0 {
		b.ReportMetric(float64(cpu.Microseconds())/runs/float64(n), "cpu-µs/child")
	}
	b.ReportMetric(float64(wall.Microseconds())/1000/runs, "ms/run")
	if latency > 0 {
		b.ReportMetric(float64(lastCall.Microseconds())/1000/runs, "spawned-ms")
		b.ReportMetric(float64(tail.Microseconds())/1000/runs, "tail-ms")
	}
	b.ReportMetric(float64(allocs)/runs/float64(n+1), "allocs/agent")
	b.ReportMetric(float64(cm.calls.Load())/runs, "calls/run")
	b.ReportMetric(float64(cm.tokens.Load())/runs, "tokens/run")
	if stored > 0 {
		b.ReportMetric(float64(stored)/runs/float64(n), "disk-B/child")
	}
}
