package telemetry

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// The attributes of the GenAI semantic conventions, and cadre's own.
const (
	attrOperation    = attribute.Key("gen_ai.operation.name")
	attrProvider     = attribute.Key("gen_ai.provider.name")
	attrRequestModel = attribute.Key("gen_ai.request.model")
	attrResponseMdl  = attribute.Key("gen_ai.response.model")
	attrMaxTokens    = attribute.Key("gen_ai.request.max_tokens")
	attrTemperature  = attribute.Key("gen_ai.request.temperature")
	attrFinish       = attribute.Key("gen_ai.response.finish_reasons")
	attrInputTokens  = attribute.Key("gen_ai.usage.input_tokens")
	attrOutputTokens = attribute.Key("gen_ai.usage.output_tokens")
	attrCacheRead    = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	attrAgentName    = attribute.Key("gen_ai.agent.name")
	attrAgentID      = attribute.Key("gen_ai.agent.id")
	attrConversation = attribute.Key("gen_ai.conversation.id")
	attrToolName     = attribute.Key("gen_ai.tool.name")
	attrToolCallID   = attribute.Key("gen_ai.tool.call.id")
	attrToolType     = attribute.Key("gen_ai.tool.type")
	attrToolArgs     = attribute.Key("gen_ai.tool.call.arguments")
	attrToolResult   = attribute.Key("gen_ai.tool.call.result")
	attrTokenType    = attribute.Key("gen_ai.token.type")
	attrInput        = attribute.Key("gen_ai.input.messages")
	attrOutput       = attribute.Key("gen_ai.output.messages")
	attrSystem       = attribute.Key("gen_ai.system_instructions")
	attrErrorType    = attribute.Key("error.type")
	attrCost         = attribute.Key("cadre.cost")
	attrTurn         = attribute.Key("cadre.turn")
)

// The values of gen_ai.operation.name.
const (
	opChat        = "chat"
	opInvokeAgent = "invoke_agent"
	opExecuteTool = "execute_tool"
)

// instruments are the Observer's metrics.
type instruments struct {
	duration metric.Float64Histogram
	tokens   metric.Int64Histogram
	active   metric.Int64UpDownCounter
	queued   metric.Int64UpDownCounter
	limits   metric.Int64Counter
	retries  metric.Int64Counter
	cost     metric.Float64Counter
}

// newInstruments makes the metrics. A meter that cannot make one gives a
// no-op instrument with its error, so a failure costs the metric, never
// the run.
func newInstruments(m metric.Meter) instruments {
	var in instruments
	in.duration, _ = m.Float64Histogram("gen_ai.client.operation.duration",
		metric.WithDescription("GenAI operation duration."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92))
	in.tokens, _ = m.Int64Histogram("gen_ai.client.token.usage",
		metric.WithDescription("Number of input and output tokens used."), metric.WithUnit("{token}"),
		metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864))
	in.active, _ = m.Int64UpDownCounter("cadre.agents.active",
		metric.WithDescription("Agents alive: started and not yet ended."), metric.WithUnit("{agent}"))
	in.queued, _ = m.Int64UpDownCounter("cadre.agents.queued",
		metric.WithDescription("Agents waiting for their first concurrency slot."), metric.WithUnit("{agent}"))
	in.limits, _ = m.Int64Counter("cadre.limit.events",
		metric.WithDescription("Limits reached: refused spawns (depth, agents, cycle) and token budget warnings and exhaustion."), metric.WithUnit("{event}"))
	in.retries, _ = m.Int64Counter("cadre.model.retries",
		metric.WithDescription("Model calls tried again after a failure."), metric.WithUnit("{retry}"))
	in.cost, _ = m.Float64Counter("cadre.cost",
		metric.WithDescription("What model calls cost at the configured prices."), metric.WithUnit("{currency}"))
	var nm noop.Meter
	if in.duration == nil {
		in.duration, _ = nm.Float64Histogram("")
	}
	if in.tokens == nil {
		in.tokens, _ = nm.Int64Histogram("")
	}
	if in.active == nil {
		in.active, _ = nm.Int64UpDownCounter("")
	}
	if in.queued == nil {
		in.queued, _ = nm.Int64UpDownCounter("")
	}
	if in.limits == nil {
		in.limits, _ = nm.Int64Counter("")
	}
	if in.retries == nil {
		in.retries, _ = nm.Int64Counter("")
	}
	if in.cost == nil {
		in.cost, _ = nm.Float64Counter("")
	}
	return in
}
