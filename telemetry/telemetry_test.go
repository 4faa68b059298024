package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/otlptest"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/model/scripted"
	"github.com/cadre-ai/cadre/telemetry"
)

// treeScript is a run whose tree is root → researcher → helper: the root
// spawns the researcher and calls a tool that fails, the researcher
// spawns the helper, and each reports.
const treeScript = `
root:
  - tool_calls:
      - {id: c1, name: spawn_agent, arguments: {agent: researcher, task: "Find the release date."}}
      - {id: c2, name: broken, arguments: {why: "test"}}
    usage: {input: 1000, output: 100, cached: 400}
  - text: "The release is on 3 March."
    usage: {input: 2000, output: 50}
researcher:
  - tool_calls:
      - {id: r1, name: spawn_agent, arguments: {agent: helper, task: "Look it up in the changelog."}}
    usage: {input: 300, output: 30}
  - tool_calls:
      - {id: r2, name: send_agent_message, arguments: {text: "3 March"}}
    usage: {input: 400, output: 40}
  - text: "Reported."
    usage: {input: 10, output: 1}
helper:
  - tool_calls:
      - {id: h1, name: send_agent_message, arguments: {text: "The changelog says 3 March."}}
    usage: {input: 200, output: 20}
  - text: "ok"
    usage: {input: 10, output: 1}
`

// broken is a tool that always fails.
type broken struct{}

func (broken) Spec() cadre.ToolSpec {
	return cadre.ToolSpec{Name: "broken", Description: "Always fails.", Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (broken) Call(context.Context, json.RawMessage) (string, error) {
	return "", errors.New("the disk is on fire")
}

// runner runs a tool and turns its error into an error result.
type runner struct{}

func (runner) RunTool(ctx context.Context, _ cadre.AgentID, t cadre.Tool, call cadre.ToolCall) (string, bool) {
	out, err := t.Call(ctx, json.RawMessage(call.Arguments))
	if err != nil {
		return "Error: " + err.Error(), true
	}
	return out, false
}

func definitions() []*cadre.Definition {
	var out []*cadre.Definition
	for _, n := range []string{"researcher", "helper"} {
		out = append(out, &cadre.Definition{Name: n, Description: "the " + n, Prompt: "You are the " + n + ".", Visibility: cadre.VisibilityUserFacing})
	}
	return out
}

var prices = cadre.Prices{"scripted": {Input: 2, CachedInput: 1, Output: 10}}

// providers are the SDK providers of a test, exporting to a receiver.
type providers struct {
	tp *sdktrace.TracerProvider
	mp *sdkmetric.MeterProvider
}

func (p providers) shutdown(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.tp.Shutdown(ctx); err != nil {
		t.Errorf("shut the tracer provider down: %v", err)
	}
	if err := p.mp.Shutdown(ctx); err != nil {
		t.Errorf("shut the meter provider down: %v", err)
	}
}

func httpProviders(t *testing.T, url string) providers {
	t.Helper()
	ctx := context.Background()
	te, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(url+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	me, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(url+"/v1/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	return providers{
		tp: sdktrace.NewTracerProvider(sdktrace.WithBatcher(te), sdktrace.WithIDGenerator(telemetry.IDs())),
		mp: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(me))),
	}
}

func grpcProviders(t *testing.T, addr string) providers {
	t.Helper()
	ctx := context.Background()
	te, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(addr), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	me, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(addr), otlpmetricgrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	return providers{
		tp: sdktrace.NewTracerProvider(sdktrace.WithBatcher(te), sdktrace.WithIDGenerator(telemetry.IDs())),
		mp: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(me))),
	}
}

func scriptedModel(t testing.TB, script string) cadre.Model {
	t.Helper()
	s, err := scripted.Parse([]byte(script), "tree.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m, err := scripted.New(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// engine returns an engine whose runs o observes.
func engine(o *telemetry.Observer, m cadre.Model, s cadre.Store) *local.Engine {
	return local.New(local.Config{
		Models:      o.Models(local.OneModel{Name: "scripted", Model: m}),
		RootModel:   "scripted",
		Definitions: definitions(),
		Tools:       []cadre.Tool{broken{}},
		Runner:      o.Runner(runner{}),
		Store:       s,
		Prices:      prices,
		Observer:    o,
	})
}

func runTree(t *testing.T, e *local.Engine) *cadre.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id, err := e.Start(ctx, "When is the release?", cadre.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// byOp returns the spans of an operation, by gen_ai.agent.id (invoke_agent,
// chat) or gen_ai.tool.call.id (execute_tool).
func byOp(spans []otlptest.Span, op string) map[string][]otlptest.Span {
	out := map[string][]otlptest.Span{}
	for _, s := range spans {
		if s.Attrs["gen_ai.operation.name"] != op {
			continue
		}
		key := s.Attrs["gen_ai.agent.id"]
		if op == "execute_tool" {
			key = s.Attrs["gen_ai.tool.call.id"]
		}
		k, _ := key.(string)
		out[k] = append(out[k], s)
	}
	return out
}

// checkTree checks that spans are the trace of res, the tree run.
func checkTree(t *testing.T, res *cadre.Result, spans []otlptest.Span) {
	t.Helper()
	trace := telemetry.TraceID(res.RunID).String()
	ids := map[string]otlptest.Span{}
	for _, s := range spans {
		if s.Trace != trace {
			t.Errorf("span %s is in trace %s, not the run's %s", s.Name, s.Trace, trace)
		}
		if s.Attrs["gen_ai.conversation.id"] != res.RunID && s.Attrs["gen_ai.operation.name"] != nil {
			t.Errorf("span %s has gen_ai.conversation.id %v, not the run %s", s.Name, s.Attrs["gen_ai.conversation.id"], res.RunID)
		}
		ids[s.ID] = s
	}
	agents := byOp(spans, "invoke_agent")
	tools := byOp(spans, "execute_tool")
	chats := byOp(spans, "chat")
	if len(agents) != len(res.Agents) {
		t.Fatalf("invoke_agent spans for %d agents, want one for each of %d: %v", len(agents), len(res.Agents), agents)
	}
	// The parent of each agent's span is the span of the call that
	// started it, whose parent is the span of the agent that made it.
	spawnCall := map[cadre.AgentID]string{"root/researcher.1": "c1", "root/researcher.1/helper.1": "r1"}
	for _, a := range res.Agents {
		ss := agents[string(a.ID)]
		if len(ss) != 1 {
			t.Fatalf("agent %s has %d invoke_agent spans, want 1", a.ID, len(ss))
		}
		s := ss[0]
		if s.ID != telemetry.AgentSpanID(res.RunID, a.ID).String() {
			t.Errorf("agent %s's span ID is %s, not the one derived from the run and agent", a.ID, s.ID)
		}
		if s.Attrs["gen_ai.agent.name"] != a.Definition || s.Attrs["gen_ai.request.model"] != "scripted" || s.Attrs["gen_ai.provider.name"] != "scripted" {
			t.Errorf("agent %s's span has attributes %v", a.ID, s.Attrs)
		}
		if s.Attrs["gen_ai.usage.input_tokens"] != a.Usage.InputTokens || s.Attrs["gen_ai.usage.output_tokens"] != a.Usage.OutputTokens {
			t.Errorf("agent %s's span counts tokens %v/%v, the agent %+v", a.ID, s.Attrs["gen_ai.usage.input_tokens"], s.Attrs["gen_ai.usage.output_tokens"], a.Usage)
		}
		if a.Cost == 0 || s.Attrs["cadre.cost"] != a.Cost {
			t.Errorf("agent %s cost %v, its span says %v", a.ID, a.Cost, s.Attrs["cadre.cost"])
		}
		if a.Parent == "" {
			if s.Parent != "" {
				t.Errorf("the root's span has a parent %s", s.Parent)
			}
			continue
		}
		call := spawnCall[a.ID]
		ts := tools[call]
		if len(ts) != 1 {
			t.Fatalf("the call %s that started %s has %d spans, want 1", call, a.ID, len(ts))
		}
		if s.Parent != ts[0].ID {
			t.Errorf("%s's span has parent %s, not the span of the call %s that started it (%s)", a.ID, s.Parent, call, ts[0].ID)
		}
		if ts[0].Name != "execute_tool spawn_agent" || ts[0].Attrs["gen_ai.tool.name"] != "spawn_agent" {
			t.Errorf("the call that started %s: span %q, attributes %v", a.ID, ts[0].Name, ts[0].Attrs)
		}
		if want := agents[string(a.Parent)][0].ID; ts[0].Parent != want {
			t.Errorf("the call that started %s has parent %s, not its parent %s's span %s", a.ID, ts[0].Parent, a.Parent, want)
		}
	}
	// Each model call is a chat span under its agent.
	for _, a := range res.Agents {
		cs := chats[string(a.ID)]
		if len(cs) != a.Turns {
			t.Errorf("agent %s made %d model calls, %d chat spans", a.ID, a.Turns, len(cs))
		}
		for _, c := range cs {
			if c.Parent != agents[string(a.ID)][0].ID {
				t.Errorf("a chat span of %s has parent %s, not the agent's span", a.ID, c.Parent)
			}
			if c.Kind != tracepb.Span_SPAN_KIND_CLIENT || c.Name != "chat scripted" || c.Attrs["gen_ai.response.model"] != "scripted" {
				t.Errorf("chat span of %s: %s kind %v attributes %v", a.ID, c.Name, c.Kind, c.Attrs)
			}
		}
	}
	rootChats := chats["root"]
	var sawCached bool
	for _, c := range rootChats {
		if c.Attrs["gen_ai.usage.cache_read.input_tokens"] == int64(400) {
			sawCached = true
			// 600 input at 2, 400 cached at 1, 100 output at 10, per million.
			if want := (600*2 + 400*1 + 100*10) / 1e6; c.Attrs["cadre.cost"] != want {
				t.Errorf("the root's first call cost %v, want %v", c.Attrs["cadre.cost"], want)
			}
		}
	}
	if !sawCached {
		t.Errorf("no chat span of the root reports the 400 cached input tokens: %v", rootChats)
	}
	// The failed tool call is an error.
	fail := tools["c2"]
	if len(fail) != 1 {
		t.Fatalf("the broken tool call has %d spans, want 1", len(fail))
	}
	if f := fail[0]; f.Status != tracepb.Status_STATUS_CODE_ERROR || f.Attrs["error.type"] != "tool_error" || f.Attrs["gen_ai.tool.name"] != "broken" ||
		f.Parent != agents["root"][0].ID {
		t.Errorf("the broken tool call's span: status %v, attributes %v, parent %s", f.Status, f.Attrs, f.Parent)
	}
	for _, s := range spans {
		if s.Parent != "" {
			if _, ok := ids[s.Parent]; !ok {
				t.Errorf("span %s has parent %s, which is not in the trace", s.Name, s.Parent)
			}
		}
	}
}

func contentAttrs(spans []otlptest.Span) []string {
	var out []string
	for _, s := range spans {
		for _, k := range []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"} {
			if _, ok := s.Attrs[k]; ok {
				out = append(out, s.Name+": "+k)
			}
		}
	}
	return out
}

func TestTreeOverHTTP(t *testing.T) {
	rec := otlptest.NewReceiver()
	p := httpProviders(t, otlptest.HTTP(t, rec))
	o := telemetry.New(telemetry.Config{TracerProvider: p.tp, MeterProvider: p.mp, Prices: prices, Resolve: resolve})
	res := runTree(t, engine(o, scriptedModel(t, treeScript), nil))
	if res.Status != cadre.StatusDone {
		t.Fatalf("run %s: %s", res.Status, res.Error)
	}
	p.shutdown(t)
	spans, metrics := rec.Got()
	checkTree(t, res, spans)
	if got := contentAttrs(spans); len(got) > 0 {
		t.Errorf("content captured without being asked for: %v", got)
	}
	for _, m := range []string{"gen_ai.client.token.usage", "gen_ai.client.operation.duration", "cadre.agents.active", "cadre.cost"} {
		if !metrics[m] {
			t.Errorf("metric %s was not exported; got %v", m, metrics)
		}
	}
	want := res.Agents[0].Cost + res.Agents[1].Cost + res.Agents[2].Cost
	if res.Cost != want || res.Cost == 0 {
		t.Errorf("the run cost %v, its agents %v", res.Cost, want)
	}
}

func TestTreeOverGRPCWithContent(t *testing.T) {
	rec := otlptest.NewReceiver()
	p := grpcProviders(t, otlptest.GRPC(t, rec))
	o := telemetry.New(telemetry.Config{TracerProvider: p.tp, MeterProvider: p.mp, Prices: prices, Resolve: resolve, CaptureContent: true})
	res := runTree(t, engine(o, scriptedModel(t, treeScript), nil))
	p.shutdown(t)
	spans, metrics := rec.Got()
	checkTree(t, res, spans)
	if !metrics["gen_ai.client.token.usage"] {
		t.Errorf("gen_ai.client.token.usage was not exported over gRPC: %v", metrics)
	}
	var in, out, sys, args bool
	for _, s := range spans {
		if v, ok := s.Attrs["gen_ai.input.messages"].(string); ok && strings.Contains(v, "When is the release?") && s.Attrs["gen_ai.agent.id"] == "root" {
			in = true
			var msgs []map[string]any
			if err := json.Unmarshal([]byte(v), &msgs); err != nil || len(msgs) == 0 || msgs[0]["parts"] == nil {
				t.Errorf("gen_ai.input.messages is not a list of messages with parts: %s (%v)", v, err)
			}
		}
		if v, ok := s.Attrs["gen_ai.output.messages"].(string); ok && strings.Contains(v, "3 March") {
			out = true
		}
		if _, ok := s.Attrs["gen_ai.system_instructions"]; ok {
			sys = true
		}
		if v, ok := s.Attrs["gen_ai.tool.call.arguments"].(string); ok && strings.Contains(v, "test") {
			args = true
		}
	}
	if !in || !out || !sys || !args {
		t.Errorf("content asked for but missing: input %v, output %v, system %v, tool arguments %v", in, out, sys, args)
	}
}

func resolve(name string) (string, string) {
	if name == "scripted" {
		return "scripted", "scripted"
	}
	return "", ""
}
