package cadre_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
)

// A Definition's Timeout is timeout_seconds in JSON, a number of seconds,
// as it was when the field was a whole number of seconds.
func TestDefinitionTimeoutJSON(t *testing.T) {
	for _, tt := range []struct {
		timeout time.Duration
		json    string
	}{
		{0, `"timeout_seconds":0`},
		{300 * time.Second, `"timeout_seconds":300`},
		{1500 * time.Millisecond, `"timeout_seconds":1.5`},
		{time.Nanosecond, `"timeout_seconds":0.000000001`},
		{-time.Second, `"timeout_seconds":-1`},
	} {
		t.Run(tt.timeout.String(), func(t *testing.T) {
			temp := 0.2
			d := cadre.Definition{Name: "a", Description: "b", Prompt: "c", Tools: []string{}, Timeout: tt.timeout,
				Temperature: &temp, OutputSchema: json.RawMessage(`{"type":"object"}`), Background: true, Extra: map[string]any{"color": "blue"}}
			b, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tt.json) {
				t.Fatalf("%s does not hold %s", b, tt.json)
			}
			var back cadre.Definition
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(d, back); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// The JSON of a definition written before Timeout was a time.Duration
// reads as it meant.
func TestDefinitionTimeoutJSONOld(t *testing.T) {
	var d cadre.Definition
	old := `{"name":"a","description":"b","prompt":"c","tools":null,"timeout_seconds":120,"visibility":"user-facing"}`
	if err := json.Unmarshal([]byte(old), &d); err != nil {
		t.Fatal(err)
	}
	want := cadre.Definition{Name: "a", Description: "b", Prompt: "c", Timeout: 120 * time.Second, Visibility: cadre.VisibilityUserFacing}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []string{`{"timeout_seconds":"soon"}`, `{"timeout_seconds":true}`} {
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if err := json.Unmarshal([]byte(`{"timeout_seconds":1e300}`), &d); err == nil || !strings.Contains(err.Error(), "timeout_seconds: 1e300 is not a number of seconds") {
		t.Errorf("1e300 seconds: got %v, want an error naming timeout_seconds", err)
	}
}

// Timeouts up to a month survive the JSON round trip to the nanosecond.
func TestDefinitionTimeoutJSONExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2_000 {
		d := cadre.Definition{Timeout: time.Duration(rng.Int64N(int64(30 * 24 * time.Hour)))}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var back cadre.Definition
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back.Timeout != d.Timeout {
			t.Fatalf("%d ns came back as %d ns (%s)", d.Timeout, back.Timeout, b)
		}
	}
}

func TestDefinitionTimeoutOrDefault(t *testing.T) {
	if got := (&cadre.Definition{}).TimeoutOrDefault(); got != cadre.DefaultTimeout {
		t.Errorf("unset: %s, want %s", got, cadre.DefaultTimeout)
	}
	if got := (&cadre.Definition{Timeout: time.Minute}).TimeoutOrDefault(); got != time.Minute {
		t.Errorf("a minute: %s", got)
	}
}
