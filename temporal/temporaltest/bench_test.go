package temporaltest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/model/scripted"
)

// fanOut is a model whose root starts n background workers in one reply
// and answers once every report is in; each worker reports at once. Each
// call answers after latency, or when it is cancelled.
func fanOut(n int, latency time.Duration) cadre.Model {
	return scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if latency > 0 {
			t := time.NewTimer(latency)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, context.Cause(ctx)
			}
		}
		if req.Agent == cadre.RootID {
			if req.Turn == 1 {
				var cs []cadre.ToolCall
				for i := range n {
					cs = append(cs, tc(fmt.Sprint("c", i), loop.ToolStartBackground, map[string]string{"agent": "worker", "prompt": fmt.Sprint("part ", i)}))
				}
				return calls(cs...), nil
			}
			return text("done"), nil
		}
		if req.Turn == 1 {
			return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "ok"})), nil
		}
		return text("reported"), nil
	})
}

// BenchmarkChildren measures a run of N children that do nothing but
// report, each model call answering after L, on the local engine and on
// Temporal (embedded server, one worker): with L=0 the time per child is
// the engine's overhead per agent.
//
// On Temporal most of it is round trips through the server that the run's
// workflow makes one after another: each model call of each agent asks it
// for a concurrency slot and tells it the usage, by signal.
//
// The runs of 1,000 children take minutes on Temporal: they run only when
// CADRE_BENCH_SCALE is set.
func BenchmarkChildren(b *testing.B) {
	type benchCase struct {
		n       int
		latency time.Duration
	}
	cases := []benchCase{{10, 0}, {100, 0}, {100, 200 * time.Millisecond}}
	if os.Getenv("CADRE_BENCH_SCALE") != "" {
		cases = append(cases, benchCase{1000, 0}, benchCase{1000, 200 * time.Millisecond})
	}
	for _, c := range cases {
		n := c.n
		lim := cadre.Limits{MaxAgents: n + 1, MaxConcurrent: 64, BudgetTokens: -1}
		b.Run(fmt.Sprintf("local/N=%d/L=%s", n, c.latency), func(b *testing.B) {
			e := local.New(local.Config{Models: local.OneModel{Name: "scripted", Model: fanOut(n, c.latency)}, Definitions: defs("worker"), Limits: lim, Store: memstore.New()})
			for b.Loop() {
				benchRun(b, e, n)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n)/1000, "ms/child")
		})
		b.Run(fmt.Sprintf("temporal/N=%d/L=%s", n, c.latency), func(b *testing.B) {
			e, _ := newEngine(b, setup{Model: fanOut(n, c.latency), Definitions: defs("worker"), Limits: lim})
			for b.Loop() {
				benchRun(b, e, n)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n)/1000, "ms/child")
		})
	}
}

// benchRun runs the fan-out to its end and checks that each of its n
// children completed.
func benchRun(b *testing.B, e cadre.Engine, n int) {
	id, err := e.Start(context.Background(), "fan out", cadre.StartOptions{})
	if err != nil {
		b.Fatal(err)
	}
	res, err := e.Wait(context.Background(), id)
	if err != nil || res.Answer != "done" {
		b.Fatalf("run: %v, %+v", err, res)
	}
	done := 0
	for _, a := range res.Agents {
		if a.Status == cadre.StatusDone {
			done++
		}
	}
	if len(res.Agents) != n+1 || done != n+1 {
		b.Fatalf("run %s: %d agents, %d done; want %d", id, len(res.Agents), done, n+1)
	}
}
