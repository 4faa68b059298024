package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/tool"
)

// ToolRunner runs one tool call of an agent (local.ToolRunner has this
// method).
type ToolRunner interface {
	RunTool(ctx context.Context, agent cadre.AgentID, t cadre.Tool, call cadre.ToolCall) (string, bool)
}

// Runner wraps next so that every tool call makes an execute_tool span
// under the span of the agent making it; a call whose result is an error
// has the status Error and error.type tool_error. A next that also has the
// engine's Approve method (as tool.Executor) keeps it: see local.Approver.
func (o *Observer) Runner(next ToolRunner) ToolRunner {
	if ap, ok := next.(approver); ok {
		return approvingRunner{runner{o: o, next: next}, ap}
	}
	return runner{o: o, next: next}
}

type runner struct {
	o    *Observer
	next ToolRunner
}

func (r runner) RunTool(ctx context.Context, agent cadre.AgentID, t cadre.Tool, call cadre.ToolCall) (string, bool) {
	o := r.o
	attrs := []attribute.KeyValue{
		attrOperation.String(opExecuteTool),
		attrToolName.String(call.Name),
		attrToolCallID.String(call.ID),
		attrToolType.String("function"),
		attrAgentID.String(string(agent)),
	}
	if a := agentOf(ctx); a != nil {
		attrs = append(attrs, attrConversation.String(a.run.id))
	}
	if t != nil && t.Spec().Description != "" {
		attrs = append(attrs, attribute.String("gen_ai.tool.description", t.Spec().Description))
	}
	if o.cfg.CaptureContent {
		attrs = append(attrs, attrToolArgs.String(call.Arguments))
	}
	ctx, span := o.tracer.Start(ctx, "execute_tool "+call.Name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	defer span.End()
	out, isErr := r.next.RunTool(ctx, agent, t, call)
	if o.cfg.CaptureContent {
		span.SetAttributes(attrToolResult.String(out))
	}
	if isErr {
		span.SetAttributes(attrErrorType.String("tool_error"))
		span.SetStatus(codes.Error, clip(out, 500))
	}
	return out, isErr
}

type approvingRunner struct {
	runner
	approver
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// approver is local.Approver.
type approver interface {
	Approve(ctx context.Context, req tool.ApprovalRequest) (ok bool, denial string, err error)
}
