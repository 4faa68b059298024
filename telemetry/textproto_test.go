package telemetry_test

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/telemetry"
)

// A child asked for by a <spawn_agents> block hangs under a span of the
// block, named for it, under the span of the agent that wrote it.
func TestTextBlockSpawnsUnderItsBlock(t *testing.T) {
	m := scriptedModel(t, `
root:
  - text: '<spawn_agents mode="parallel"><agent task="count the apples" /><agent task="count the pears" /></spawn_agents>'
  - text: "<response>12 fruit</response>"
"*":
  - text: "<response>6</response>"
    repeat: true
`)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithIDGenerator(telemetry.IDs()))
	o := telemetry.New(telemetry.Config{TracerProvider: tp})
	e := local.New(local.Config{Models: o.Models(local.OneModel{Name: "scripted", Model: m}), RootModel: "scripted",
		Protocol: cadre.ProtocolText, Observer: o, Runner: o.Runner(runner{})})
	res := runTree(t, e)
	if len(res.Agents) != 3 {
		t.Fatalf("%d agents, want the root and two children", len(res.Agents))
	}
	byID := map[string]sdktrace.ReadOnlySpan{}
	agents := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans.GetSpans().Snapshots() {
		byID[s.SpanContext().SpanID().String()] = s
		attrs := map[string]string{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		if attrs["gen_ai.operation.name"] == "invoke_agent" {
			agents[attrs["gen_ai.agent.id"]] = s
		}
	}
	for _, a := range res.Agents[1:] {
		s := agents[string(a.ID)]
		if s == nil {
			t.Fatalf("no span for %s", a.ID)
		}
		block := byID[s.Parent().SpanID().String()]
		if block == nil || block.Name() != "execute_tool spawn_agents" {
			t.Fatalf("%s's parent span is %v, want the execute_tool spawn_agents span of its block", a.ID, block)
		}
		var callID string
		for _, kv := range block.Attributes() {
			if kv.Key == "gen_ai.tool.call.id" {
				callID = kv.Value.AsString()
			}
		}
		if callID == "" || block.Parent().SpanID() != agents["root"].SpanContext().SpanID() {
			t.Errorf("the block span of %s: call id %q, parent %s (the root's span is %s)", a.ID, callID, block.Parent().SpanID(), agents["root"].SpanContext().SpanID())
		}
	}
}
