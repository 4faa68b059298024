package telemetry

import (
	"cmp"
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/cadre-ai/cadre"
)

// ScopeName is the instrumentation scope of cadre's tracer and meter.
const ScopeName = "github.com/cadre-ai/cadre/telemetry"

// SemconvVersion is the version of the OpenTelemetry semantic conventions
// the spans and metrics follow.
const SemconvVersion = "1.41.0"

// Config configures an Observer. The zero value uses the global
// providers of package otel, captures no content and knows no prices.
type Config struct {
	// TracerProvider makes the spans; nil means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metrics; nil means otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// CaptureContent puts prompts, replies, system prompts, tool arguments
	// and tool results on the spans. They may hold anything an agent read,
	// secrets included: leave it off unless the trace backend may see them.
	CaptureContent bool
	// Resolve names the provider and the model, as the provider knows it,
	// of a model as the engine names it ("openai:gpt-4o", or a name from
	// the configuration), for gen_ai.provider.name ("openai", "anthropic",
	// …) and gen_ai.request.model. Nil, or empty answers, split the name
	// at its colon; a name without one has the provider "cadre".
	Resolve func(name string) (provider, model string)
	// Prices put cadre.cost on the spans and the cadre.cost metric.
	Prices cadre.Prices
}

// An Observer makes the spans and metrics of the engine's runs. It is a
// local.Observer; Models and Runner wrap the engine's model source and
// tool runner for the chat and execute_tool spans.
type Observer struct {
	cfg    Config
	tracer trace.Tracer
	m      instruments

	runs sync.Map // run ID → *runState, while the run goes on
}

// New returns an Observer configured by cfg.
func New(cfg Config) *Observer {
	tp, mp := cfg.TracerProvider, cfg.MeterProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	schema := "https://opentelemetry.io/schemas/" + SemconvVersion
	return &Observer{
		cfg:    cfg,
		tracer: tp.Tracer(ScopeName, trace.WithSchemaURL(schema)),
		m:      newInstruments(mp.Meter(ScopeName, metric.WithSchemaURL(schema))),
	}
}

// runState is what the Observer holds of one run while it goes on.
type runState struct {
	id string

	mu     sync.Mutex
	agents map[cadre.AgentID]*agentState
	spawns map[cadre.AgentID]trace.Span // the calls that started children, until the child ends
	// tools names the tool of each call a reply asked for, by agent and
	// call ID, so that the span of a call that starts a child is named for
	// its tool.
	tools map[string]string
}

// agentState is one agent of a run, from its start to its end.
type agentState struct {
	run      *runState
	id       cadre.AgentID
	model    string
	provider string
	span     trace.Span
	queued   atomic.Bool // waiting for its first concurrency slot

	mu    sync.Mutex
	usage cadre.Usage // of its model calls so far
}

type agentKey struct{}

// agentOf returns the agent whose context ctx is, or nil.
func agentOf(ctx context.Context) *agentState {
	a, _ := ctx.Value(agentKey{}).(*agentState)
	return a
}

func (o *Observer) run(id string) *runState {
	if r, ok := o.runs.Load(id); ok {
		return r.(*runState)
	}
	r, _ := o.runs.LoadOrStore(id, &runState{id: id, agents: map[cadre.AgentID]*agentState{}, spawns: map[cadre.AgentID]trace.Span{}, tools: map[string]string{}})
	return r.(*runState)
}

// resolve returns the provider and the provider's name of a model.
func (o *Observer) resolve(name string) (provider, model string) {
	if f := o.cfg.Resolve; f != nil {
		provider, model = f(name)
	}
	p, m, ok := strings.Cut(name, ":")
	if !ok {
		p, m = "", name
	}
	if provider == "" {
		provider = cmp.Or(p, "cadre")
	}
	if model == "" {
		model = m
	}
	return provider, model
}

// parentContext returns ctx with the span context of the span with ID id
// of the run as parent: the live span when this process has it, else the
// span's derived IDs (one a process before a resume made).
func parentContext(ctx context.Context, run string, live trace.Span, id trace.SpanID) context.Context {
	if live != nil {
		return trace.ContextWithSpan(ctx, live)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: TraceID(run), SpanID: id, TraceFlags: trace.FlagsSampled, Remote: true})
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// StartAgent starts the agent's invoke_agent span and returns ctx with it
// (see local.Observer). A resumed agent's span has the ID and start its
// span had before the resume.
func (o *Observer) StartAgent(ctx context.Context, run string, info cadre.AgentInfo, resumed bool) context.Context {
	r := o.run(run)
	provider, model := o.resolve(info.Model)
	a := &agentState{run: r, id: info.ID, model: model, provider: provider}
	start := time.Now()
	if resumed && !info.Started.IsZero() {
		start = info.Started
	}
	name := info.Definition
	if name == "" {
		name = "agent"
	}
	attrs := []attribute.KeyValue{
		attrOperation.String(opInvokeAgent),
		attrProvider.String(a.provider),
		attrAgentName.String(name),
		attrAgentID.String(string(info.ID)),
		attrConversation.String(run),
		attrRequestModel.String(model),
	}
	if resumed {
		attrs = append(attrs, attribute.Bool("cadre.resumed", true))
	}
	if o.cfg.CaptureContent && info.Task != "" {
		attrs = append(attrs, attrInput.String(messagesJSON([]cadre.Message{{Role: cadre.RoleUser, Content: info.Task}})))
	}

	pctx := ctx
	if info.Parent != "" {
		r.mu.Lock()
		spawn := r.spawns[info.ID]
		r.mu.Unlock()
		if spawn == nil && resumed {
			// The call that started the child never ended in the process
			// that made it: make its span again, with its IDs.
			spawn = o.startSpawn(r, info.Parent, info.ID, "", "", start)
		}
		pctx = parentContext(ctx, run, spawn, spawnSpanID(run, info.ID))
	}
	wctx := withIDs(pctx, TraceID(run), AgentSpanID(run, info.ID))
	_, span := o.tracer.Start(wctx, "invoke_agent "+name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	a.span = span
	r.mu.Lock()
	r.agents[info.ID] = a
	r.mu.Unlock()
	o.m.active.Add(context.Background(), 1)
	return context.WithValue(trace.ContextWithSpan(ctx, span), agentKey{}, a)
}

// startSpawn starts the execute_tool span of the call of parent that
// started child.
func (o *Observer) startSpawn(r *runState, parent, child cadre.AgentID, callID, mode string, at time.Time) trace.Span {
	r.mu.Lock()
	var live trace.Span
	if p := r.agents[parent]; p != nil {
		live = p.span
	}
	tool := ""
	if callID != "" {
		tool = r.tools[string(parent)+"\x00"+callID]
	}
	r.mu.Unlock()
	if tool == "" {
		tool = spawnTool(callID, mode)
	}
	attrs := []attribute.KeyValue{
		attrOperation.String(opExecuteTool),
		attrToolName.String(tool),
		attrToolType.String("function"),
		attrConversation.String(r.id),
		attrAgentID.String(string(parent)),
		attribute.String("cadre.child", string(child)),
	}
	if callID != "" {
		attrs = append(attrs, attrToolCallID.String(callID))
	}
	if mode != "" {
		attrs = append(attrs, attribute.String("cadre.spawn.mode", mode))
	}
	ctx := parentContext(context.Background(), r.id, live, AgentSpanID(r.id, parent))
	_, span := o.tracer.Start(withIDs(ctx, TraceID(r.id), spawnSpanID(r.id, child)), "execute_tool "+tool,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	r.mu.Lock()
	r.spawns[child] = span
	r.mu.Unlock()
	return span
}

// spawnTool names the tool that started a child when the reply that asked
// for it was not seen (a resumed run): from how it was asked for.
func spawnTool(callID, mode string) string {
	switch {
	case strings.HasPrefix(callID, "spawn."), mode == "parallel", mode == "sequential":
		return "spawn_agents"
	case mode == "background":
		return "start_background_agent"
	case mode == "onboard":
		return "agent_onboard"
	}
	return "spawn_agent"
}

// Event turns the run's events into span ends and metrics (see
// local.Observer).
func (o *Observer) Event(ev cadre.Event) {
	switch d := ev.Data.(type) {
	case cadre.AgentSpawned:
		o.startSpawn(o.run(ev.Run), ev.Parent, ev.Agent, d.CallID, d.Mode, ev.Time)
	case cadre.AgentQueued:
		if a := o.agent(ev.Run, ev.Agent); a != nil && !a.queued.Swap(true) {
			o.m.queued.Add(context.Background(), 1)
		}
	case cadre.ModelResponse:
		if a := o.agent(ev.Run, ev.Agent); a != nil {
			a.mu.Lock()
			a.usage = a.usage.Add(d.Usage)
			a.mu.Unlock()
		}
	case cadre.AgentCompleted:
		o.endAgent(ev, cadre.StatusDone, "", d.Cost)
	case cadre.AgentFailed:
		o.endAgent(ev, cadre.StatusFailed, d.Error, d.Cost)
	case cadre.AgentCancelled:
		o.endAgent(ev, cadre.StatusCancelled, d.Reason, d.Cost)
	case cadre.DepthLimit:
		o.limit("depth")
	case cadre.AgentLimit:
		o.limit("agents")
	case cadre.CycleDetected:
		o.limit("cycle")
	case cadre.BudgetWarning:
		o.limit("budget_warning")
	case cadre.BudgetExhausted:
		o.limit("budget_exhausted")
	case cadre.RunCompleted, cadre.RunFailed:
		o.endRun(ev)
	}
}

func (o *Observer) limit(kind string) {
	o.m.limits.Add(context.Background(), 1, metric.WithAttributes(attribute.String("cadre.limit", kind)))
}

func (o *Observer) agent(run string, id cadre.AgentID) *agentState {
	v, ok := o.runs.Load(run)
	if !ok {
		return nil
	}
	r := v.(*runState)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.agents[id]
}

// dequeue notes that a queued agent got its concurrency slot.
func (o *Observer) dequeue(a *agentState) {
	if a.queued.Swap(false) {
		o.m.queued.Add(context.Background(), -1)
	}
}

// endAgent ends the agent's invoke_agent span, and the span of the call
// that started it.
func (o *Observer) endAgent(ev cadre.Event, st cadre.Status, reason string, cost float64) {
	a := o.agent(ev.Run, ev.Agent)
	if a == nil {
		return
	}
	r := a.run
	r.mu.Lock()
	delete(r.agents, a.id)
	spawn := r.spawns[a.id]
	delete(r.spawns, a.id)
	r.mu.Unlock()
	a.mu.Lock()
	usage := a.usage
	a.mu.Unlock()
	o.dequeue(a)
	o.m.active.Add(context.Background(), -1)
	a.span.SetAttributes(usageAttrs(usage)...)
	a.span.SetAttributes(attribute.String("cadre.agent.status", string(st)))
	if cost != 0 {
		a.span.SetAttributes(attrCost.Float64(cost))
	}
	switch st {
	case cadre.StatusFailed:
		a.span.SetAttributes(attrErrorType.String("agent_failed"))
		a.span.SetStatus(codes.Error, reason)
	case cadre.StatusCancelled:
		a.span.SetAttributes(attribute.String("cadre.cancel.reason", reason))
	}
	a.span.End(trace.WithTimestamp(ev.Time))
	if spawn != nil {
		if st == cadre.StatusFailed {
			spawn.SetAttributes(attrErrorType.String("agent_failed"))
			spawn.SetStatus(codes.Error, reason)
		}
		spawn.End(trace.WithTimestamp(ev.Time))
	}
}

// endRun ends what is left of the run's spans and forgets the run.
func (o *Observer) endRun(ev cadre.Event) {
	v, ok := o.runs.LoadAndDelete(ev.Run)
	if !ok {
		return
	}
	r := v.(*runState)
	r.mu.Lock()
	agents, spawns := r.agents, r.spawns
	r.agents, r.spawns = map[cadre.AgentID]*agentState{}, map[cadre.AgentID]trace.Span{}
	r.mu.Unlock()
	for _, a := range agents {
		o.dequeue(a)
		o.m.active.Add(context.Background(), -1)
		a.span.End(trace.WithTimestamp(ev.Time))
	}
	for _, s := range spawns {
		s.End(trace.WithTimestamp(ev.Time))
	}
}

func usageAttrs(u cadre.Usage) []attribute.KeyValue {
	attrs := []attribute.KeyValue{attrInputTokens.Int64(u.InputTokens), attrOutputTokens.Int64(u.OutputTokens)}
	if u.CachedInputTokens > 0 {
		attrs = append(attrs, attrCacheRead.Int64(u.CachedInputTokens))
	}
	return attrs
}
