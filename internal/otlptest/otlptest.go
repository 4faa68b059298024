// Package otlptest receives OpenTelemetry data in tests: OTLP over HTTP
// (protobuf) and over gRPC, decoded from the real wire format into spans
// that are easy to check. It is for tests only.
package otlptest

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Span is one span as a Receiver decoded it from OTLP: IDs in hex, the
// parent empty for a root span.
type Span struct {
	Name     string
	Trace    string
	ID       string
	Parent   string
	Kind     tracepb.Span_SpanKind
	Status   tracepb.Status_StatusCode
	Attrs    map[string]any
	Resource map[string]any
}

// Receiver keeps what OTLP exporters send it: the spans, and the names of
// the metrics.
type Receiver struct {
	mu      sync.Mutex
	spans   []Span
	metrics map[string]bool
}

// NewReceiver returns an empty Receiver.
func NewReceiver() *Receiver { return &Receiver{metrics: map[string]bool{}} }

func (r *Receiver) addTraces(req *coltrace.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		res := attrMap(rs.GetResource().GetAttributes())
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, Span{Name: s.Name, Trace: hex.EncodeToString(s.TraceId), ID: hex.EncodeToString(s.SpanId),
					Parent: hex.EncodeToString(s.ParentSpanId), Kind: s.Kind, Status: s.GetStatus().GetCode(), Attrs: attrMap(s.Attributes), Resource: res})
			}
		}
	}
}

func (r *Receiver) addMetrics(req *colmetrics.ExportMetricsServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				r.metrics[m.Name] = true
			}
		}
	}
}

// Got returns the spans received so far, in order, and the names of the
// metrics.
func (r *Receiver) Got() ([]Span, map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ms := make(map[string]bool, len(r.metrics))
	for k, v := range r.metrics {
		ms[k] = v
	}
	return append([]Span(nil), r.spans...), ms
}

func attrMap(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = anyValue(kv.Value)
	}
	return m
}

func anyValue(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.Values {
			out = append(out, anyValue(e))
		}
		return out
	}
	return nil
}

// HTTP serves OTLP over HTTP (protobuf) on /v1/traces and
// /v1/metrics, and returns its base URL.
func HTTP(t *testing.T, r *Receiver) string {
	t.Helper()
	read := func(w http.ResponseWriter, req *http.Request, m proto.Message) bool {
		if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
			http.Error(w, "content type "+ct, http.StatusUnsupportedMediaType)
			return false
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return false
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if err == nil {
			err = proto.Unmarshal(b, m)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return false
		}
		return true
	}
	reply := func(w http.ResponseWriter, m proto.Message) {
		b, _ := proto.Marshal(m)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(b)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		var m coltrace.ExportTraceServiceRequest
		if read(w, req, &m) {
			r.addTraces(&m)
			reply(w, &coltrace.ExportTraceServiceResponse{})
		}
	})
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, req *http.Request) {
		var m colmetrics.ExportMetricsServiceRequest
		if read(w, req, &m) {
			r.addMetrics(&m)
			reply(w, &colmetrics.ExportMetricsServiceResponse{})
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

type grpcTraces struct {
	coltrace.UnimplementedTraceServiceServer
	r *Receiver
}

func (g grpcTraces) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	g.r.addTraces(req)
	return &coltrace.ExportTraceServiceResponse{}, nil
}

type grpcMetrics struct {
	colmetrics.UnimplementedMetricsServiceServer
	r *Receiver
}

func (g grpcMetrics) Export(_ context.Context, req *colmetrics.ExportMetricsServiceRequest) (*colmetrics.ExportMetricsServiceResponse, error) {
	g.r.addMetrics(req)
	return &colmetrics.ExportMetricsServiceResponse{}, nil
}

// GRPC serves OTLP over gRPC on a loopback port and returns its
// address (host:port).
func GRPC(t *testing.T, r *Receiver) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	coltrace.RegisterTraceServiceServer(s, grpcTraces{r: r})
	colmetrics.RegisterMetricsServiceServer(s, grpcMetrics{r: r})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(l)
	}()
	t.Cleanup(func() {
		s.Stop()
		<-done
	})
	return l.Addr().String()
}
