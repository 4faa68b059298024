package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cadre-ai/cadre"
)

// The Temporal settings come from the flags, over the environment, over
// the config files, over the defaults.
func TestTemporalSettingsPrecedence(t *testing.T) {
	env := map[string]string{}
	a := &app{io: IO{Getenv: func(k string) string { return env[k] }}}
	cfg := &config{}
	if got := a.temporalSettings(cfg, &temporalFlags{}); got.Address != "127.0.0.1:7233" || got.Namespace != "default" || got.TaskQueue != "cadre" {
		t.Errorf("defaults: %+v", got)
	}
	cfg.merge(fileConfig{Engine: "temporal", Temporal: temporalConfig{Address: "file:7233", Namespace: "filens", TaskQueue: "fileq"}})
	if got := a.temporalSettings(cfg, &temporalFlags{}); got.Address != "file:7233" || got.Namespace != "filens" || got.TaskQueue != "fileq" {
		t.Errorf("from the config: %+v", got)
	}
	env["TEMPORAL_ADDRESS"], env["TEMPORAL_NAMESPACE"] = "env:7233", "envns"
	if got := a.temporalSettings(cfg, &temporalFlags{}); got.Address != "env:7233" || got.Namespace != "envns" || got.TaskQueue != "fileq" {
		t.Errorf("from the environment: %+v", got)
	}
	f := &temporalFlags{tc: temporalConfig{Address: "flag:7233", TaskQueue: "flagq"}, tls: true}
	got := a.temporalSettings(cfg, f)
	if got.Address != "flag:7233" || got.Namespace != "envns" || got.TaskQueue != "flagq" || got.TLS == nil || !*got.TLS {
		t.Errorf("from the flags: %+v", got)
	}
	if name, err := engineName(cfg, &temporalFlags{}); err != nil || name != "temporal" {
		t.Errorf("engine from the config: %q, %v", name, err)
	}
	if name, err := engineName(cfg, &temporalFlags{engine: "local"}); err != nil || name != "local" {
		t.Errorf("engine from the flag: %q, %v", name, err)
	}
	if _, err := engineName(cfg, &temporalFlags{engine: "cloud"}); err == nil || !strings.Contains(err.Error(), "local or temporal") {
		t.Errorf("an unknown engine: %v", err)
	}
}

// A run started on Temporal is marked so in its record, and resume says
// it needs none.
func TestTemporalRunNeedsNoResume(t *testing.T) {
	settings := markTemporal(json.RawMessage(`{"model":"openai:gpt-4o-mini"}`))
	rec := &cadre.RunRecord{ID: "r1", Config: settings}
	if !isTemporalRun(rec) {
		t.Fatalf("a run with settings %s is not seen as a Temporal run", settings)
	}
	if isTemporalRun(&cadre.RunRecord{ID: "r2", Config: json.RawMessage(`{"model":"x"}`)}) || isTemporalRun(&cadre.RunRecord{ID: "r3"}) {
		t.Error("a local run is seen as a Temporal run")
	}
	var m map[string]any
	if err := json.Unmarshal(settings, &m); err != nil || m["model"] != "openai:gpt-4o-mini" {
		t.Errorf("marking lost the settings: %s", settings)
	}
	if err := errTemporalResume("r1"); !strings.Contains(err.Error(), "nothing needs resuming") {
		t.Errorf("resume of a Temporal run says %v", err)
	}
}
