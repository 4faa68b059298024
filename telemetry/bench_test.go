package telemetry_test

// BenchmarkAgentOverhead measures what telemetry adds to each agent of a
// run whose model costs nothing: the root spawns 100 workers at once, each
// makes one tool call and reports. "off" gives the engine no Observer and
// wraps nothing (what the CLI does without an endpoint); "on" records every
// span and metric with the SDK and hands the spans to an exporter that
// drops them, so the figure is the instrumentation's own cost, not the
// network's. It prints ns/agent, B/agent and allocs/agent and judges no
// timing. It runs where getrusage does (unix).

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/cputime"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/model/scripted"
	"github.com/cadre-ai/cadre/telemetry"
)

const benchWorkers = 100

// echo is a tool that answers at once.
type echo struct{}

func (echo) Spec() cadre.ToolSpec {
	return cadre.ToolSpec{Name: "echo", Description: "Echoes.", Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (echo) Call(_ context.Context, args json.RawMessage) (string, error) { return string(args), nil }

func benchModel() cadre.Model {
	spawn := &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant}, Usage: cadre.Usage{InputTokens: 100, OutputTokens: 10}}
	for i := range benchWorkers {
		args, _ := json.Marshal(map[string]string{"agent": "worker", "task": fmt.Sprintf("unit %d", i)})
		spawn.Message.ToolCalls = append(spawn.Message.ToolCalls, cadre.ToolCall{ID: fmt.Sprintf("s%d", i), Name: "spawn_agent", Arguments: string(args)})
	}
	tool := &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, ToolCalls: []cadre.ToolCall{{ID: "e1", Name: "echo", Arguments: `{}`}}},
		Usage: cadre.Usage{InputTokens: 50, OutputTokens: 5}}
	report := &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, ToolCalls: []cadre.ToolCall{{ID: "r1", Name: "send_agent_message", Arguments: `{"text":"done"}`}}},
		Usage: cadre.Usage{InputTokens: 60, OutputTokens: 5}}
	final := &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: "done"}, Usage: cadre.Usage{InputTokens: 10, OutputTokens: 1}}
	return scripted.Func(func(_ context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent == cadre.RootID {
			if req.Turn == 1 {
				return spawn, nil
			}
			return final, nil
		}
		switch req.Turn {
		case 1:
			return tool, nil
		case 2:
			return report, nil
		}
		return final, nil
	})
}

func BenchmarkAgentOverhead(b *testing.B) {
	defs := []*cadre.Definition{{Name: "worker", Description: "Works.", Prompt: "You work.", Visibility: cadre.VisibilityUserFacing}}
	limits := cadre.Limits{MaxConcurrent: 1 << 20, MaxAgents: 1 << 20, BudgetTokens: -1, MaxDepth: 2}
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			cfg := local.Config{
				Models: local.OneModel{Name: "scripted", Model: benchModel()}, RootModel: "scripted",
				Definitions: defs, Tools: []cadre.Tool{echo{}}, Runner: runner{}, Limits: limits,
			}
			if on {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()), sdktrace.WithIDGenerator(telemetry.IDs()))
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				defer tp.Shutdown(context.Background())
				defer mp.Shutdown(context.Background())
				o := telemetry.New(telemetry.Config{TracerProvider: tp, MeterProvider: mp, Prices: prices})
				cfg.Observer, cfg.Models, cfg.Runner = o, o.Models(cfg.Models), o.Runner(cfg.Runner)
			}
			e := local.New(cfg)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cputime.Process()
			for b.Loop() {
				id, err := e.Start(ctx, "do the units", cadre.StartOptions{})
				if err != nil {
					b.Fatal(err)
				}
				res, err := e.Wait(ctx, id)
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Agents) != benchWorkers+1 {
					b.Fatalf("%d agents, want %d", len(res.Agents), benchWorkers+1)
				}
			}
			b.StopTimer()
			cpu := (cputime.Process() - cpu0).Nanoseconds()
			per := float64(b.N * (benchWorkers + 1))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/agent")
			b.ReportMetric(float64(cpu)/1e3/per, "cpu-µs/agent")
		})
	}
}
