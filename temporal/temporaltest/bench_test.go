package temporaltest

import (
	"context"
	"fmt"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/model/scripted"
)

// fanOut is a model whose root starts n background workers in one reply
// and answers once every report is in; each worker reports at once.
func fanOut(n int) cadre.Model {
	return scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
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
// report, on the local engine and on Temporal (embedded server, one
// worker): the time per child is the engine's overhead per agent.
//
// On Temporal most of it is round trips through the server that the run's
// workflow makes one after another: each model call of each agent asks it
// for a concurrency slot and tells it the usage, by signal, and it answers
// each request by a signal it waits to be acknowledged before taking the
// next.
func BenchmarkChildren(b *testing.B) {
	for _, n := range []int{10, 100} {
		lim := cadre.Limits{MaxAgents: n + 1, MaxConcurrent: 64, BudgetTokens: -1}
		b.Run(fmt.Sprintf("local/N=%d", n), func(b *testing.B) {
			e := local.New(local.Config{Models: local.OneModel{Name: "scripted", Model: fanOut(n)}, Definitions: defs("worker"), Limits: lim, Store: memstore.New()})
			for b.Loop() {
				benchRun(b, e)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n)/1000, "ms/child")
		})
		b.Run(fmt.Sprintf("temporal/N=%d", n), func(b *testing.B) {
			e, _ := newEngine(b, setup{Model: fanOut(n), Definitions: defs("worker"), Limits: lim})
			for b.Loop() {
				benchRun(b, e)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n)/1000, "ms/child")
		})
	}
}

func benchRun(b *testing.B, e cadre.Engine) {
	id, err := e.Start(context.Background(), "fan out", cadre.StartOptions{})
	if err != nil {
		b.Fatal(err)
	}
	res, err := e.Wait(context.Background(), id)
	if err != nil || res.Answer != "done" {
		b.Fatalf("run: %v, %+v", err, res)
	}
}
