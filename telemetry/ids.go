package telemetry

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"

	"go.opentelemetry.io/otel/trace"

	"github.com/cadre-ai/cadre"
)

// TraceID is the ID of the trace of run: derived from the run's ID, so
// that every process that works on the run, a resumed one included, writes
// to the same trace.
func TraceID(run string) trace.TraceID {
	sum := sha256.Sum256([]byte("cadre trace\x00" + run))
	var id trace.TraceID
	copy(id[:], sum[:])
	if !id.IsValid() {
		id[15] = 1
	}
	return id
}

// AgentSpanID is the ID of the invoke_agent span of an agent of run.
func AgentSpanID(run string, agent cadre.AgentID) trace.SpanID {
	return spanID(run, "agent", string(agent))
}

// spawnSpanID is the ID of the execute_tool span of the call that started
// child.
func spawnSpanID(run string, child cadre.AgentID) trace.SpanID {
	return spanID(run, "spawn", string(child))
}

func spanID(run, kind, key string) trace.SpanID {
	sum := sha256.Sum256([]byte("cadre span\x00" + run + "\x00" + kind + "\x00" + key))
	var id trace.SpanID
	copy(id[:], sum[:])
	if !id.IsValid() {
		id[7] = 1
	}
	return id
}

// IDGenerator gives spans their IDs: the derived ones of the spans this
// package asks for by ID, random ones for the others. It has the methods
// of the SDK's sdktrace.IDGenerator, to pass to sdktrace.WithIDGenerator.
type IDGenerator struct{}

// IDs returns the ID generator that gives a run's spans the IDs a resumed
// run finds again (see the package documentation).
func IDs() IDGenerator { return IDGenerator{} }

// wanted is the IDs asked for the next span started with a context.
type wanted struct {
	trace trace.TraceID
	span  trace.SpanID
}

type wantedKey struct{}

// withIDs asks, through ctx, for the span started with it to have these
// IDs (the trace ID only applies to a span without a parent).
func withIDs(ctx context.Context, t trace.TraceID, s trace.SpanID) context.Context {
	return context.WithValue(ctx, wantedKey{}, wanted{trace: t, span: s})
}

// NewIDs returns the IDs of a new span without a parent.
func (IDGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if w, ok := ctx.Value(wantedKey{}).(wanted); ok {
		return w.trace, w.span
	}
	var t trace.TraceID
	for !t.IsValid() {
		binary.NativeEndian.PutUint64(t[:8], rand.Uint64())
		binary.NativeEndian.PutUint64(t[8:], rand.Uint64())
	}
	return t, randomSpanID()
}

// NewSpanID returns the ID of a new span in the trace tid.
func (IDGenerator) NewSpanID(ctx context.Context, tid trace.TraceID) trace.SpanID {
	if w, ok := ctx.Value(wantedKey{}).(wanted); ok {
		return w.span
	}
	return randomSpanID()
}

func randomSpanID() trace.SpanID {
	var s trace.SpanID
	for !s.IsValid() {
		binary.NativeEndian.PutUint64(s[:], rand.Uint64())
	}
	return s
}
