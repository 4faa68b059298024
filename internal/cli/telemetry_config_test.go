package cli

import (
	"strings"
	"testing"
)

func TestTelemetryConfigChecked(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"protocol", "telemetry:\n  endpoint: http://localhost:4318\n  protocol: http/json\n", "cfg.yaml:3:3: telemetry.protocol: \"http/json\" is not valid; use http/protobuf or grpc"},
		{"endpoint", "telemetry:\n  endpoint: localhost:4318\n", "cfg.yaml:2:3: telemetry.endpoint: \"localhost:4318\" is not valid"},
		{"negative price", "prices:\n  gpt-4o: {input: -1, output: 10}\n", "cfg.yaml:2:3: prices.gpt-4o: prices cannot be negative"},
		{"unknown key", "telemetry:\n  endpoint: http://localhost:4318\n  headers: x\n", "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fc fileConfig
			err := parseConfig("cfg.yaml", []byte(tt.yaml), &fc)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	var fc fileConfig
	if err := parseConfig("cfg.yaml", []byte("telemetry:\n  endpoint: http://localhost:4317\n  protocol: grpc\n  captureContent: true\nprices:\n  fast: {input: 1, cachedInput: 0.5, output: 2}\n"), &fc); err != nil {
		t.Fatal(err)
	}
	var c config
	c.merge(fc)
	if c.Telemetry.Protocol != "grpc" || c.Telemetry.CaptureContent == nil || !*c.Telemetry.CaptureContent || c.Prices["fast"].CachedInput != 0.5 {
		t.Errorf("merged %+v, prices %+v", c.Telemetry, c.Prices)
	}
}
