// Package telemetry turns the runs of cadre's local engine into
// OpenTelemetry traces and metrics that follow the GenAI semantic
// conventions, as of semantic conventions v1.41.0 (GenAI spans, agent
// spans and metrics, still at Development status). cadre is a new
// instrumentation, so it emits these latest conventions and no older ones.
//
// # Traces
//
// A run is one trace, and the trace is the agent tree:
//
//	invoke_agent root                      gen_ai.agent.id=root
//	├── chat gpt-4o                        one per model call
//	├── execute_tool read_file             one per tool call (MCP tools too)
//	└── execute_tool spawn_agent           the call that asked for a child
//	    └── invoke_agent researcher        gen_ai.agent.id=root/researcher.1
//	        └── chat …
//
// A child asked for by a <spawn_agents> text block hangs under an
// execute_tool span named for the block (gen_ai.tool.name spawn_agents,
// gen_ai.tool.call.id spawn.N). Every span carries gen_ai.conversation.id,
// the run's ID. Failed calls and agents have the status Error and
// error.type; token counts and cadre.cost (at the configured prices) are
// on the chat and invoke_agent spans. A chat span's gen_ai.response.model
// is the model the server said answered, which may differ from the one
// asked for. Each time a call is tried again its chat span gets a retry
// event (cadre.attempt, cadre.wait, exception.message), whose
// cadre.text_discarded says the reply had started streaming and was
// thrown away.
//
// # Resumed runs
//
// The trace ID is derived from the run's ID, and the IDs of the
// invoke_agent spans and of the spans of the calls that started children
// from the run and agent IDs, which the journal keeps. A resumed run, in
// another process, so makes spans in the same trace under the same
// parents, and a run that crashed and resumed reads as one trace. This
// needs the tracer provider to take its IDs from IDs (the CLI's does):
//
//	sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(telemetry.IDs()), …)
//
// With another ID generator spans still nest within a process, but a
// resumed run's spans start a trace of their own.
//
// # Content
//
// Prompts, replies, system prompts, tool arguments and tool results are on
// the spans (gen_ai.input.messages, gen_ai.output.messages,
// gen_ai.system_instructions, gen_ai.tool.call.arguments,
// gen_ai.tool.call.result) only when Config.CaptureContent is set; the CLI
// sets it when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.
//
// # Metrics
//
// gen_ai.client.operation.duration (s) and gen_ai.client.token.usage
// ({token}, by gen_ai.token.type input or output) are histograms of the
// model calls. cadre's own: cadre.agents.active and cadre.agents.queued
// (up-down counters of the agents alive and of those waiting for their
// first concurrency slot), cadre.limit.events (refused spawns and budget
// warnings, by cadre.limit), cadre.model.retries (by gen_ai.provider.name)
// and cadre.cost (what model calls cost at the configured prices).
//
// # Use
//
// An Observer is given to the engine (local.Config.Observer), and wraps
// its model source and tool runner (Models, Runner); it uses the
// TracerProvider and MeterProvider of its Config, which the caller owns,
// flushes and shuts down. When telemetry is off, give the engine none of
// these: nothing is wrapped and nothing is paid on the hot path. Every
// method is safe for concurrent use.
package telemetry
