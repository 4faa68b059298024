package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model"
	"github.com/cadre-ai/cadre/telemetry"
)

// telemetryConfig is the telemetry: section of the config files. The
// standard OTEL_* variables win over it.
type telemetryConfig struct {
	// Endpoint is the OTLP endpoint's base URL, such as
	// http://localhost:4318 (http/protobuf) or http://localhost:4317
	// (grpc). Telemetry is off unless it or OTEL_EXPORTER_OTLP_ENDPOINT is
	// set.
	Endpoint string `yaml:"endpoint"`
	// Protocol is http/protobuf (the default) or grpc.
	Protocol string `yaml:"protocol"`
	// ServiceName is service.name; the default is cadre.
	ServiceName string `yaml:"serviceName"`
	// CaptureContent puts prompts, replies and tool arguments and results
	// on the spans.
	CaptureContent *bool `yaml:"captureContent"`
}

// mergeTelemetry puts what a config file sets of telemetry and prices over c.
func (c *config) mergeTelemetry(f fileConfig) {
	t := f.Telemetry
	if t.Endpoint != "" {
		c.Telemetry.Endpoint = t.Endpoint
	}
	if t.Protocol != "" {
		c.Telemetry.Protocol = t.Protocol
	}
	if t.ServiceName != "" {
		c.Telemetry.ServiceName = t.ServiceName
	}
	if t.CaptureContent != nil {
		c.Telemetry.CaptureContent = t.CaptureContent
	}
	for k, v := range f.Prices {
		if c.Prices == nil {
			c.Prices = cadre.Prices{}
		}
		c.Prices[k] = v
	}
}

// checkTelemetry checks the telemetry and prices of one config file.
func checkTelemetry(file string, data []byte, fc *fileConfig) error {
	if p := fc.Telemetry.Protocol; p != "" && !oneOf(p, "http/protobuf", "grpc") {
		line, col := findKey(data, "protocol")
		return &ConfigError{File: file, Line: line, Column: col, Msg: fmt.Sprintf("telemetry.protocol: %q is not valid; use http/protobuf or grpc", p)}
	}
	if e := fc.Telemetry.Endpoint; e != "" {
		if u, err := url.Parse(e); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			line, col := findKey(data, "endpoint")
			return &ConfigError{File: file, Line: line, Column: col, Msg: fmt.Sprintf("telemetry.endpoint: %q is not valid; give a URL such as http://localhost:4318", e)}
		}
	}
	for name, p := range fc.Prices {
		if p.Input < 0 || p.CachedInput < 0 || p.Output < 0 {
			line, col := findKey(data, name)
			return &ConfigError{File: file, Line: line, Column: col, Msg: fmt.Sprintf("prices.%s: prices cannot be negative; give what a million tokens cost", name)}
		}
	}
	return nil
}

// prices returns the configured prices, with the named models of the
// configuration priced as the models they name.
func (m *models) prices(ps cadre.Prices) cadre.Prices {
	if len(ps) == 0 {
		return nil
	}
	out := make(cadre.Prices, len(ps)+len(m.cfg.Models))
	for k, v := range ps {
		out[k] = v
	}
	for name := range m.cfg.Models {
		if _, ok := out[name]; ok {
			continue
		}
		if full, err := m.resolve(name); err == nil {
			if p, ok := ps.Price(full); ok {
				out[name] = p
			}
		}
	}
	return out
}

// telemetrySetup is the telemetry of one command: an Observer for the
// engine and the providers to flush before the command returns.
type telemetrySetup struct {
	obs *telemetry.Observer
	tp  *sdktrace.TracerProvider
	mp  *sdkmetric.MeterProvider
	log io.Writer
}

// setupTelemetry returns the command's telemetry, or nil when it is off:
// no OTLP endpoint is set, or OTEL_SDK_DISABLED=true.
func (a *app) setupTelemetry(ctx context.Context, cfg *config, ms *models) (*telemetrySetup, error) {
	env := a.io.Getenv
	if strings.EqualFold(strings.TrimSpace(env("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	endpoint, where := env("OTEL_EXPORTER_OTLP_ENDPOINT"), "OTEL_EXPORTER_OTLP_ENDPOINT"
	if endpoint == "" {
		endpoint, where = cfg.Telemetry.Endpoint, "telemetry.endpoint in the config"
	}
	if endpoint == "" {
		return nil, nil
	}
	if u, err := url.Parse(endpoint); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("%s=%q is not an OTLP endpoint; give a URL such as http://localhost:4318", where, endpoint)
	}
	protocol, pwhere := env("OTEL_EXPORTER_OTLP_PROTOCOL"), "OTEL_EXPORTER_OTLP_PROTOCOL"
	if protocol == "" {
		protocol, pwhere = cfg.Telemetry.Protocol, "telemetry.protocol in the config"
	}
	if protocol == "" {
		protocol = "http/protobuf"
	}
	var (
		te  sdktrace.SpanExporter
		me  sdkmetric.Exporter
		err error
	)
	switch protocol {
	case "http/protobuf":
		base := strings.TrimRight(endpoint, "/")
		if te, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(base+"/v1/traces")); err == nil {
			me, err = otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(base+"/v1/metrics"))
		}
	case "grpc":
		if te, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(endpoint)); err == nil {
			me, err = otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpointURL(endpoint))
		}
	default:
		return nil, fmt.Errorf("%s=%q: cadre sends telemetry over http/protobuf or grpc; set one of those", pwhere, protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry to %s: %w", endpoint, err)
	}
	res, err := a.telemetryResource(cfg)
	if err != nil {
		return nil, err
	}
	// Export failures (a collector that is down) are told on stderr, not
	// fatal: the run matters more than its telemetry.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		fmt.Fprintf(a.io.Stderr, "cadre: telemetry: %v\n", err)
	}))
	s := &telemetrySetup{
		tp:  sdktrace.NewTracerProvider(sdktrace.WithBatcher(te), sdktrace.WithResource(res), sdktrace.WithIDGenerator(telemetry.IDs())),
		mp:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(me)), sdkmetric.WithResource(res)),
		log: a.io.Stderr,
	}
	capture := cfg.Telemetry.CaptureContent != nil && *cfg.Telemetry.CaptureContent
	if v := env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"); v != "" {
		capture = strings.EqualFold(strings.TrimSpace(v), "true")
	}
	s.obs = telemetry.New(telemetry.Config{
		TracerProvider: s.tp, MeterProvider: s.mp, CaptureContent: capture, Prices: ms.prices(cfg.Prices),
		Resolve: func(name string) (string, string) {
			full, err := ms.resolve(name)
			if err != nil {
				return "", ""
			}
			prov, id, err := model.ParseName(full)
			if err != nil {
				return "", ""
			}
			return prov, id
		},
	})
	return s, nil
}

// telemetryResource describes this process: service.name from
// OTEL_SERVICE_NAME, the config or "cadre", and the attributes of
// OTEL_RESOURCE_ATTRIBUTES (key=value pairs separated by commas, values
// percent-encoded).
func (a *app) telemetryResource(cfg *config) (*resource.Resource, error) {
	var attrs []attribute.KeyValue
	if ra := strings.TrimSpace(a.io.Getenv("OTEL_RESOURCE_ATTRIBUTES")); ra != "" {
		for _, pair := range strings.Split(ra, ",") {
			k, v, ok := strings.Cut(pair, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %q is not key=value; give pairs such as deployment.environment=prod,team=search", pair)
			}
			if dv, err := url.PathUnescape(strings.TrimSpace(v)); err == nil {
				v = dv
			}
			attrs = append(attrs, attribute.String(k, v))
		}
	}
	name := a.io.Getenv("OTEL_SERVICE_NAME")
	if name == "" {
		name = cfg.Telemetry.ServiceName
	}
	if name == "" {
		for _, kv := range attrs {
			if kv.Key == "service.name" {
				name = kv.Value.AsString()
			}
		}
	}
	if name == "" {
		name = "cadre"
	}
	attrs = append(attrs, attribute.String("service.name", name), attribute.String("telemetry.sdk.language", "go"),
		attribute.String("telemetry.sdk.name", "opentelemetry"))
	return resource.NewSchemaless(attrs...), nil
}

// shutdown sends what is left and stops the providers. It waits at most
// ten seconds: a collector that does not answer does not hold the command.
func (s *telemetrySetup) shutdown() {
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.tp.Shutdown(ctx); err != nil {
		fmt.Fprintf(s.log, "cadre: telemetry: sending the last spans: %v\n", err)
	}
	if err := s.mp.Shutdown(ctx); err != nil {
		fmt.Fprintf(s.log, "cadre: telemetry: sending the last metrics: %v\n", err)
	}
}
