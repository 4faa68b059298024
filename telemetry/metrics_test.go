package telemetry_test

import (
	"context"
	"io"
	"iter"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/model"
	"github.com/cadre-ai/cadre/telemetry"
)

// flaky is a model whose first call fails with a 503 and is tried again
// by model.Stream, as a provider's would be.
type flaky struct {
	next  cadre.Model
	tries atomic.Int64
}

func (f *flaky) Stream(ctx context.Context, req *cadre.Request) iter.Seq2[*cadre.Chunk, error] {
	return model.Stream(ctx, model.Call{
		Provider: "scripted",
		Policy:   model.RetryPolicy{Sleep: func(context.Context, time.Duration) error { return nil }},
		Attempt: func(ctx context.Context, _ *model.Try) (*cadre.Response, error) {
			if f.tries.Add(1) == 1 {
				return nil, &model.ServerError{Status: 503, Header: http.Header{}}
			}
			return cadre.Collect(f.next.Stream(ctx, req), nil)
		},
	})
}

// The metrics of the tree run with one concurrency slot and a depth limit
// of 1: the researcher's spawn is refused, agents queue, one call is
// retried; at the end no agent is counted alive or queued.
func TestMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	o := telemetry.New(telemetry.Config{MeterProvider: mp, Prices: prices, Resolve: resolve})
	e := local.New(local.Config{
		Models:      o.Models(local.OneModel{Name: "scripted", Model: &flaky{next: scriptedModel(t, treeScript)}}),
		RootModel:   "scripted",
		Definitions: definitions(),
		Tools:       []cadre.Tool{broken{}},
		Runner:      o.Runner(runner{}),
		Limits:      cadre.Limits{MaxDepth: 1, MaxConcurrent: 1},
		Prices:      prices,
		Observer:    o,
	})
	res := runTree(t, e)
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			got[m.Name] = m.Data
		}
	}
	sum := func(name string, match func(attribute.Set) bool) float64 {
		var total float64
		switch d := got[name].(type) {
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				if match == nil || match(p.Attributes) {
					total += float64(p.Value)
				}
			}
		case metricdata.Sum[float64]:
			for _, p := range d.DataPoints {
				if match == nil || match(p.Attributes) {
					total += p.Value
				}
			}
		default:
			t.Errorf("metric %s: %T", name, got[name])
		}
		return total
	}
	count := func(name string, match func(attribute.Set) bool) uint64 {
		var n uint64
		switch d := got[name].(type) {
		case metricdata.Histogram[int64]:
			for _, p := range d.DataPoints {
				if match == nil || match(p.Attributes) {
					n += p.Count
				}
			}
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				if match == nil || match(p.Attributes) {
					n += p.Count
				}
			}
		default:
			t.Errorf("metric %s: %T", name, got[name])
		}
		return n
	}
	has := func(k, v string) func(attribute.Set) bool {
		return func(s attribute.Set) bool {
			x, ok := s.Value(attribute.Key(k))
			return ok && x.Emit() == v
		}
	}
	turns := 0
	for _, a := range res.Agents {
		turns += a.Turns
	}
	if n := count("gen_ai.client.operation.duration", nil); n != uint64(turns) {
		t.Errorf("operation.duration has %d calls, the agents made %d", n, turns)
	}
	if n := count("gen_ai.client.token.usage", has("gen_ai.token.type", "input")); n != uint64(turns) {
		t.Errorf("token.usage has %d input records, want %d", n, turns)
	}
	if v := sum("cadre.agents.active", nil); v != 0 {
		t.Errorf("cadre.agents.active is %v after the run, want 0", v)
	}
	// Whether an agent waited for the one slot depends on timing; if any
	// did, none is counted queued once it ran.
	if _, ok := got["cadre.agents.queued"]; ok {
		if v := sum("cadre.agents.queued", nil); v != 0 {
			t.Errorf("cadre.agents.queued is %v after the run, want 0", v)
		}
	}
	if v := sum("cadre.limit.events", has("cadre.limit", "depth")); v != 1 {
		t.Errorf("cadre.limit.events{depth} is %v, want 1", v)
	}
	if v := sum("cadre.model.retries", has("gen_ai.provider.name", "scripted")); v != 1 {
		t.Errorf("cadre.model.retries is %v, want 1", v)
	}
	if v := sum("cadre.cost", nil); v < res.Cost*0.999999 || v > res.Cost*1.000001 || v == 0 {
		t.Errorf("cadre.cost is %v, the run cost %v", v, res.Cost)
	}
}

// cutOnce is a model whose first try breaks after some text and whose
// second answers, from a model with another name than the one asked for.
type cutOnce struct{ tries atomic.Int64 }

func (c *cutOnce) Stream(ctx context.Context, req *cadre.Request) iter.Seq2[*cadre.Chunk, error] {
	return model.Stream(ctx, model.Call{
		Provider: "scripted",
		Policy:   model.RetryPolicy{Sleep: func(context.Context, time.Duration) error { return nil }},
		Attempt: func(ctx context.Context, t *model.Try) (*cadre.Response, error) {
			t.Emit("The answer ")
			if c.tries.Add(1) == 1 {
				return nil, io.ErrUnexpectedEOF
			}
			t.Emit("is 42.")
			return &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: "The answer is 42."},
				Usage: cadre.Usage{InputTokens: 3, OutputTokens: 4}, Model: "scripted-2026-01-02"}, nil
		},
	})
}

// A reply that broke off after its first words and was asked for again
// shows on its chat span as a retry that discarded text, and the span names
// the model that answered.
func TestRetryAfterTextOnSpan(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithIDGenerator(telemetry.IDs()))
	o := telemetry.New(telemetry.Config{TracerProvider: tp})
	e := local.New(local.Config{Models: o.Models(local.OneModel{Name: "scripted", Model: &cutOnce{}}), RootModel: "scripted",
		Observer: o, Runner: o.Runner(runner{})})
	res := runTree(t, e)
	if res.Answer != "The answer is 42." {
		t.Fatalf("answer %q", res.Answer)
	}
	var chats []sdktrace.ReadOnlySpan
	for _, s := range spans.GetSpans().Snapshots() {
		if strings.HasPrefix(s.Name(), "chat ") {
			chats = append(chats, s)
		}
	}
	if len(chats) != 1 {
		t.Fatalf("%d chat spans, want 1", len(chats))
	}
	var retries []map[string]string
	for _, ev := range chats[0].Events() {
		if ev.Name != "retry" {
			continue
		}
		attrs := map[string]string{}
		for _, kv := range ev.Attributes {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		retries = append(retries, attrs)
	}
	if len(retries) != 1 || retries[0]["cadre.text_discarded"] != "true" || retries[0]["cadre.attempt"] != "1" {
		t.Errorf("retry events %v, want one of attempt 1 that discarded text", retries)
	}
	answered := ""
	for _, kv := range chats[0].Attributes() {
		if kv.Key == "gen_ai.response.model" {
			answered = kv.Value.AsString()
		}
	}
	if answered != "scripted-2026-01-02" {
		t.Errorf("gen_ai.response.model = %q, want the model that answered", answered)
	}
}
