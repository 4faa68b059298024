package local_test

// Benchmarks of the engine's own cost: how much CPU, memory and wall time it
// spends per agent when the model costs nothing, and how close a fan-out
// comes to the model's latency when it does not. They print figures and
// check only that each run created the agents it should; they never judge
// a timing. `make bench` runs them.
//
// Every benchmark sets the same limits (benchLimits): MaxConcurrent and
// MaxAgents far above the largest tree, so the default MaxConcurrent of 16
// does not serialise a fan-out and the default MaxAgents of 200 does not
// refuse it; BudgetTokens -1 (no budget); MaxDepth 3. The model is the
// scripted model driven by a function (scripted.Func), keeping no requests,
// with replies built once where they can be.
//
// Custom metrics, per agent of the run (the root included):
//
//	ns/agent      wall time
//	cpu-µs/agent  CPU time of the whole process (user + system), GC included
//	allocs/agent  heap allocations
//	B/agent       bytes allocated
//	x-latency     wall time as a multiple of the model's latency
//	root-calls    the root's model calls per run (background fan-outs)

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/cputime"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/model/scripted"
	"github.com/cadre-ai/cadre/sqlite"
)

// benchLimits are the limits of every benchmark run (see the file comment).
var benchLimits = cadre.Limits{MaxConcurrent: 1 << 20, MaxAgents: 1 << 20, BudgetTokens: -1, MaxDepth: 3}

var (
	fanOuts   = []int{1, 10, 100, 1_000, 10_000}
	latencies = []time.Duration{0, 200 * time.Millisecond}
)

// Definitions the benchmark models spawn: workers report and end; mids (in
// the tree) delegate to ten children, report and end.
var benchDefs = []*cadre.Definition{
	{Name: "worker", Description: "Does one unit of work and reports it.", Prompt: "You do one unit of work and report it.", Visibility: cadre.VisibilityUserFacing},
	{Name: "mid", Description: "Splits its work among ten workers.", Prompt: "You split your work among ten subagents and report.", Visibility: cadre.VisibilityUserFacing},
}

// Tree shape: the root spawns treeWidth mids, each mid treeWidth more at the
// next level, down to depth 3 where workers do the work.
const (
	treeWidth  = 10
	treeAgents = 1 + treeWidth + treeWidth*treeWidth + treeWidth*treeWidth*treeWidth // 1,111
)

var benchUsage = cadre.Usage{InputTokens: 10, OutputTokens: 10}

// workload answers the model calls of a benchmark run. It is safe for
// concurrent use.
type workload struct {
	latency time.Duration
	// rootFirst is the root's first reply (its fan-out); the root's later
	// replies are plain text, which ends its turn (sync) or makes it wait
	// for the next background report.
	rootFirst *cadre.Response
	// childrenOnly keeps the root's replies instant: latency is the
	// children's alone, as in BenchmarkDelegation, whose floor is then
	// one latency.
	childrenOnly bool
	// hold, when not nil, blocks every worker's first call until it is
	// closed (or the call is cancelled); parked counts the blocked calls.
	hold   <-chan struct{}
	parked atomic.Int64

	rootCalls atomic.Int64
}

var (
	workerReport = &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, ToolCalls: []cadre.ToolCall{
		{ID: "r1", Name: loop.ToolSendAgentMessage, Arguments: `{"text":"Unit done: nothing to add."}`},
	}}, Usage: benchUsage}
	workerDone = &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: "Done."}, Usage: benchUsage}
	rootDone   = &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: "All the work is done."}, Usage: benchUsage}
)

// fanOutReply is a reply with n calls of tool, one per child.
func fanOutReply(n int, tool string) *cadre.Response {
	calls := make([]cadre.ToolCall, n)
	for i := range calls {
		var args string
		if tool == loop.ToolStartBackground {
			args = fmt.Sprintf(`{"agent":"worker","prompt":"unit %d"}`, i+1)
		} else {
			args = fmt.Sprintf(`{"agent":"worker","task":"unit %d"}`, i+1)
		}
		calls[i] = cadre.ToolCall{ID: fmt.Sprintf("c%d", i+1), Name: tool, Arguments: args}
	}
	return &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, ToolCalls: calls}, Usage: benchUsage}
}

// treeReply is the first reply of an agent of the tree at depth d: ten
// spawn_agent calls with tasks unique in the run (the engine refuses a task
// delegated more than cadre.DefaultCycleRepeats times).
func treeReply(id cadre.AgentID, d int) *cadre.Response {
	def := "mid"
	if d+1 == benchLimits.MaxDepth {
		def = "worker"
	}
	calls := make([]cadre.ToolCall, treeWidth)
	for i := range calls {
		calls[i] = cadre.ToolCall{ID: fmt.Sprintf("c%d", i+1), Name: loop.ToolSpawnAgent,
			Arguments: fmt.Sprintf(`{"agent":%q,"task":"part %d of %s"}`, def, i+1, id)}
	}
	return &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, ToolCalls: calls}, Usage: benchUsage}
}

func (w *workload) reply(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
	name := scripted.DefinitionName(req.Agent)
	if w.hold != nil && name == "worker" && req.Turn == 1 {
		w.parked.Add(1)
		select {
		case <-w.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if w.latency > 0 && !(w.childrenOnly && name == "root") {
		t := time.NewTimer(w.latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
	switch name {
	case "root":
		w.rootCalls.Add(1)
		if req.Turn == 1 {
			if w.rootFirst != nil {
				return w.rootFirst, nil
			}
			return treeReply(req.Agent, 0), nil
		}
		return rootDone, nil
	case "mid":
		switch req.Turn {
		case 1:
			return treeReply(req.Agent, strings.Count(string(req.Agent), "/")), nil
		case 2:
			return workerReport, nil
		}
		return workerDone, nil
	}
	if req.Turn == 1 {
		return workerReport, nil
	}
	return workerDone, nil
}

func (w *workload) engine(store cadre.Store) *local.Engine {
	m := scripted.Func(w.reply)
	m.SetRecordLimit(0)
	return local.New(local.Config{
		Models:      local.OneModel{Name: "scripted", Model: m},
		RootModel:   "scripted",
		Definitions: benchDefs,
		Store:       store,
		Limits:      benchLimits,
	})
}

// runOnce runs the engine to its end and checks that every agent was
// created and the run completed.
func runOnce(b *testing.B, e *local.Engine, agents int) {
	b.Helper()
	ctx := context.Background()
	id, err := e.Start(ctx, "Do the benchmark's work.", cadre.StartOptions{})
	if err != nil {
		b.Fatal(err)
	}
	res, err := e.Wait(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	if len(res.Agents) != agents {
		b.Fatalf("the run created %d agents, want %d", len(res.Agents), agents)
	}
}

// measure runs the engine b.N times and reports the per-agent metrics.
func measure(b *testing.B, w *workload, e *local.Engine, agents int) {
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cpu0 := cputime.Process()
	for b.Loop() {
		runOnce(b, e, agents)
	}
	cpu1 := cputime.Process()
	runtime.ReadMemStats(&after)
	n := float64(b.N) * float64(agents)
	wall := b.Elapsed()
	b.ReportMetric(float64(wall.Nanoseconds())/n, "ns/agent")
	if cpu0 >= 0 && cpu1 >= 0 {
		b.ReportMetric(float64((cpu1-cpu0).Microseconds())/n, "cpu-µs/agent")
	}
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/agent")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/agent")
	if w.latency > 0 {
		b.ReportMetric(float64(wall)/float64(b.N)/float64(w.latency), "x-latency")
	}
	if w.rootFirst != nil && w.rootFirst.Message.ToolCalls[0].Name == loop.ToolStartBackground {
		b.ReportMetric(float64(w.rootCalls.Load())/float64(b.N), "root-calls")
	}
}

// BenchmarkFanOut has the root start n workers in one reply, with
// spawn_agent (sync: they run concurrently, the root waits for their
// reports as the calls' results) or start_background_agent (background:
// the root ends its turn and every report wakes it). Each worker reports
// with send_agent_message on its first turn and ends with text on its
// second. With a latency L every model call takes L, so the fastest a run
// can be is 3L: the root's first call, the workers' first, then the
// workers' second beside the root's second (a background root that was
// woken while the last reports came in needs one call more).
func BenchmarkFanOut(b *testing.B) {
	for _, mode := range []string{"sync", "background"} {
		tool := loop.ToolSpawnAgent
		if mode == "background" {
			tool = loop.ToolStartBackground
		}
		for _, n := range fanOuts {
			first := fanOutReply(n, tool)
			for _, lat := range latencies {
				b.Run(fmt.Sprintf("%s/children=%d/latency=%s", mode, n, lat), func(b *testing.B) {
					w := &workload{latency: lat, rootFirst: first}
					measure(b, w, w.engine(nil), n+1)
				})
			}
		}
	}
}

// BenchmarkTree runs a tree three levels deep, all sync: the root spawns
// ten mids, each of them ten mids, each of those ten workers (1,111 agents).
// A mid reports on its second turn, after its children's reports, and ends
// on its third. With a latency L the fastest run takes 7L.
func BenchmarkTree(b *testing.B) {
	for _, lat := range latencies {
		b.Run(fmt.Sprintf("latency=%s", lat), func(b *testing.B) {
			w := &workload{latency: lat}
			measure(b, w, w.engine(nil), treeAgents)
		})
	}
}

// BenchmarkStore compares a sync fan-out of 100 workers without a store
// and with the SQLite store journaling every input and event, to show the
// journal's share of a run, with an instant model and with a slow one.
func BenchmarkStore(b *testing.B) {
	const n = 100
	first := fanOutReply(n, loop.ToolSpawnAgent)
	for _, lat := range latencies {
		b.Run(fmt.Sprintf("store=none/children=%d/latency=%s", n, lat), func(b *testing.B) {
			w := &workload{latency: lat, rootFirst: first}
			measure(b, w, w.engine(nil), n+1)
		})
		b.Run(fmt.Sprintf("store=sqlite/children=%d/latency=%s", n, lat), func(b *testing.B) {
			s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "cadre.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			w := &workload{latency: lat, rootFirst: first}
			measure(b, w, w.engine(s), n+1)
		})
	}
}

// BenchmarkIdleAgents measures the memory of agents waiting for their
// model: the root starts n background workers whose first model call blocks
// until released, and once all n are blocked the heap and the goroutine
// stacks in use are compared with what they were before the run. Each idle
// worker is then two goroutines (its own, parked on its mailbox, and its
// model call's), its state, its conversation and its system prompt; the
// root's share (n tool calls and their results in its history) is counted
// too. When the workers are released the run ends, and every goroutine it
// started must have exited.
func BenchmarkIdleAgents(b *testing.B) {
	for _, n := range scaleSizes() {
		b.Run(fmt.Sprintf("agents=%d", n), func(b *testing.B) {
			first := fanOutReply(n, loop.ToolStartBackground)
			goroutines := runtime.NumGoroutine()
			var heap, stack, gs float64
			for b.Loop() {
				hold := make(chan struct{})
				w := &workload{rootFirst: first, hold: hold}
				e := w.engine(nil)
				before := inUse()
				g0 := runtime.NumGoroutine()
				ctx := context.Background()
				id, err := e.Start(ctx, "Do the benchmark's work.", cadre.StartOptions{})
				if err != nil {
					b.Fatal(err)
				}
				// Every worker is blocked in its model call and the root,
				// done with its second call, waits for reports.
				for w.parked.Load() < int64(n) || w.rootCalls.Load() < 2 || !rootWaiting(e, id) {
					time.Sleep(time.Millisecond)
				}
				idle := inUse()
				heap += float64(int64(idle.HeapInuse)-int64(before.HeapInuse)) / float64(n)
				stack += float64(int64(idle.StackInuse)-int64(before.StackInuse)) / float64(n)
				gs += float64(runtime.NumGoroutine()-g0) / float64(n)
				close(hold)
				res, err := e.Wait(ctx, id)
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Agents) != n+1 {
					b.Fatalf("the run created %d agents, want %d", len(res.Agents), n+1)
				}
			}
			runs := float64(b.N)
			b.ReportMetric((heap+stack)/runs, "B/idle-agent")
			b.ReportMetric(heap/runs, "heap-B/idle-agent")
			b.ReportMetric(stack/runs, "stack-B/idle-agent")
			b.ReportMetric(gs/runs, "goroutines/idle-agent")
			if left := settledGoroutines(goroutines); left > goroutines {
				b.Errorf("%d goroutines were still running after the runs ended, %d before", left, goroutines)
			}
		})
	}
}

// rootWaiting reports whether the root has ended its turn and waits.
func rootWaiting(e *local.Engine, id string) bool {
	tree, err := e.Tree(context.Background(), id)
	return err == nil && len(tree.Agents) > 0 && tree.Agents[0].Status == cadre.StatusWaiting
}

// inUse returns the memory statistics after a collection, for the heap
// and the goroutine stacks in use.
func inUse() runtime.MemStats {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms
}

// settledGoroutines waits a little for exiting goroutines to be gone and
// returns how many are left.
func settledGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 100 && n > want; i++ {
		time.Sleep(10 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}
