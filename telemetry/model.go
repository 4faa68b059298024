package telemetry

import (
	"context"
	"errors"
	"iter"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model"
)

// ModelSource chooses and opens models: the engine's source of models
// (local.ModelSource has these methods).
type ModelSource interface {
	Choose(def *cadre.Definition, parent string) (name, warning string)
	Open(name string) (cadre.Model, error)
}

// Models wraps src so that every model it opens makes a chat span per
// call, under the span of the agent making it, and records the call's
// duration and tokens. A src that says which models call tools (has
// ToolCalling, as local.ToolCaller) keeps saying it.
func (o *Observer) Models(src ModelSource) ModelSource {
	if tc, ok := src.(toolCaller); ok {
		return toolCallingModels{models{o: o, src: src}, tc}
	}
	return models{o: o, src: src}
}

type toolCaller interface {
	ToolCalling(name string) bool
}

type models struct {
	o   *Observer
	src ModelSource
}

func (m models) Choose(def *cadre.Definition, parent string) (string, string) {
	return m.src.Choose(def, parent)
}

func (m models) Open(name string) (cadre.Model, error) {
	inner, err := m.src.Open(name)
	if err != nil {
		return nil, err
	}
	provider, model := m.o.resolve(name)
	return &tracedModel{o: m.o, inner: inner, name: name, provider: provider, model: model}, nil
}

type toolCallingModels struct {
	models
	tc toolCaller
}

func (m toolCallingModels) ToolCalling(name string) bool { return m.tc.ToolCalling(name) }

// tracedModel is a model whose calls make chat spans.
type tracedModel struct {
	o        *Observer
	inner    cadre.Model
	name     string // as the engine names it
	provider string
	model    string // as the provider names it
}

var _ cadre.Model = (*tracedModel)(nil)

func (m *tracedModel) Stream(ctx context.Context, req *cadre.Request) iter.Seq2[*cadre.Chunk, error] {
	return func(yield func(*cadre.Chunk, error) bool) {
		o := m.o
		reqModel := m.model
		a := agentOf(ctx)
		if a != nil {
			o.dequeue(a)
		}
		attrs := []attribute.KeyValue{
			attrOperation.String(opChat),
			attrProvider.String(m.provider),
			attrRequestModel.String(reqModel),
		}
		if a != nil {
			attrs = append(attrs, attrConversation.String(a.run.id))
		}
		if req.Agent != "" {
			attrs = append(attrs, attrAgentID.String(string(req.Agent)))
		}
		if req.Turn > 0 {
			attrs = append(attrs, attrTurn.Int(req.Turn))
		}
		if req.MaxTokens > 0 {
			attrs = append(attrs, attrMaxTokens.Int(req.MaxTokens))
		}
		if req.Temperature != nil {
			attrs = append(attrs, attrTemperature.Float64(*req.Temperature))
		}
		if o.cfg.CaptureContent {
			attrs = append(attrs, attrInput.String(messagesJSON(req.Messages)))
			if req.System != "" {
				attrs = append(attrs, attrSystem.String(systemJSON(req.System)))
			}
		}
		ctx, span := o.tracer.Start(ctx, "chat "+reqModel, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
		// restarted: the stream said its text so far is void, ahead of the
		// retry that follows (both on this goroutine, which reads the
		// stream).
		restarted := false
		ctx = model.WithRetryTrace(ctx, &model.RetryTrace{Retry: func(provider string, attempt int, wait time.Duration, err error) {
			span.AddEvent("retry", trace.WithAttributes(attribute.Int("cadre.attempt", attempt), attribute.Float64("cadre.wait", wait.Seconds()),
				attribute.Bool("cadre.text_discarded", restarted), attribute.String("exception.message", err.Error())))
			restarted = false
			o.m.retries.Add(context.Background(), 1, metric.WithAttributes(attrProvider.String(m.provider)))
		}})
		began := time.Now()
		var (
			final  *cadre.Response
			failed error
		)
		defer func() {
			mattrs := []attribute.KeyValue{attrOperation.String(opChat), attrProvider.String(m.provider), attrRequestModel.String(reqModel)}
			switch {
			case failed != nil:
				et := errorType(failed)
				span.SetAttributes(attrErrorType.String(et))
				span.SetStatus(codes.Error, failed.Error())
				mattrs = append(mattrs, attrErrorType.String(et))
			case final == nil:
				// The reader stopped before the end: the engine was
				// interrupted or gave up.
				span.SetAttributes(attrErrorType.String("cancelled"))
				span.SetStatus(codes.Error, "the call was abandoned before the reply ended")
				mattrs = append(mattrs, attrErrorType.String("cancelled"))
			default:
				m.finish(span, final, reqModel)
				mattrs = append(mattrs, attrResponseMdl.String(responseModel(final, reqModel)))
				set := metric.WithAttributes(append(mattrs, attrTokenType.String("input"))...)
				o.m.tokens.Record(context.Background(), final.Usage.InputTokens, set)
				set = metric.WithAttributes(append(mattrs, attrTokenType.String("output"))...)
				o.m.tokens.Record(context.Background(), final.Usage.OutputTokens, set)
				if c, ok := o.cfg.Prices.Cost(m.name, final.Usage); ok {
					span.SetAttributes(attrCost.Float64(c))
					o.m.cost.Add(context.Background(), c, metric.WithAttributes(attrRequestModel.String(reqModel)))
				}
			}
			o.m.duration.Record(context.Background(), time.Since(began).Seconds(), metric.WithAttributes(mattrs...))
			span.End()
		}()
		for c, err := range m.inner.Stream(ctx, req) {
			if err != nil {
				failed = err
				yield(nil, err)
				return
			}
			if c != nil && c.Restart {
				restarted = true
			}
			if c != nil && c.Response != nil {
				final = c.Response
				if a != nil {
					a.run.noteCalls(a.id, final.Message.ToolCalls)
				}
			}
			if !yield(c, nil) {
				return
			}
		}
	}
}

// finish puts a reply's attributes on its span.
func (m *tracedModel) finish(span trace.Span, r *cadre.Response, reqModel string) {
	span.SetAttributes(attrResponseMdl.String(responseModel(r, reqModel)))
	span.SetAttributes(usageAttrs(r.Usage)...)
	if r.StopReason != "" {
		span.SetAttributes(attrFinish.StringSlice([]string{r.StopReason}))
	}
	if m.o.cfg.CaptureContent {
		span.SetAttributes(attrOutput.String(outputJSON(r.Message, r.StopReason)))
	}
}

// responseModel is the model that answered r, as its server named it, or
// the model asked for when the server did not say.
func responseModel(r *cadre.Response, reqModel string) string {
	if r.Model != "" {
		return r.Model
	}
	return reqModel
}

// noteCalls remembers the tools of the calls a reply of agent asks for.
func (r *runState) noteCalls(agent cadre.AgentID, calls []cadre.ToolCall) {
	if len(calls) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range calls {
		r.tools[string(agent)+"\x00"+c.ID] = c.Name
	}
}

// errorType is the error.type of a failed model call: the HTTP status the
// server answered with, "cancelled", or "_OTHER".
func errorType(err error) string {
	var me *cadre.ModelError
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "cancelled"
	case errors.As(err, &me) && me.Status != 0:
		return strconv.Itoa(me.Status)
	case errors.Is(err, cadre.ErrIncompleteStream):
		return "incomplete_stream"
	}
	return "_OTHER"
}
