package loop

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
)

// Durations are journaled exactly, and journals written when they were
// whole seconds still replay.
func TestJournalDurations(t *testing.T) {
	t.Run("old_start", func(t *testing.T) {
		in, err := Decode("start", []byte(`{"config":{"id":"root","depth":0,"max_depth":3,"definition":"root","system":"s","max_turns":5,"timeout_seconds":300},"task":"t","messages":null}`))
		if err != nil {
			t.Fatal(err)
		}
		if got := in.(Start).Config.Timeout; got != 300*time.Second {
			t.Errorf("timeout %s, want 5m0s", got)
		}
	})
	t.Run("old_timeout", func(t *testing.T) {
		in, err := Decode("timeout", []byte(`{"seconds":30}`))
		if err != nil {
			t.Fatal(err)
		}
		if got := in.(Timeout).Limit; got != 30*time.Second {
			t.Errorf("limit %s, want 30s", got)
		}
	})
	for _, tt := range []struct {
		name string
		in   Input
		json string
	}{
		{"config", Start{Config: Config{ID: "root", Timeout: 1500 * time.Millisecond}}, `"timeout":1500000000`},
		{"config_without_timeout", Start{Config: Config{ID: "root"}}, ``},
		{"timeout", Timeout{Limit: 1500 * time.Millisecond}, `{"limit":1500000000}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if tt.json == "" && strings.Contains(string(b), "timeout") {
				t.Errorf("%s holds a timeout, but none was set", b)
			}
			if !strings.Contains(string(b), tt.json) {
				t.Errorf("%s does not hold %s", b, tt.json)
			}
			back, err := Decode(tt.in.Kind(), b)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.in, back); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []struct{ kind, data string }{
		{"timeout", `{"seconds":1e300}`},
		{"start", `{"config":{"timeout_seconds":-1e300}}`},
	} {
		if _, err := Decode(bad.kind, []byte(bad.data)); err == nil || !strings.Contains(err.Error(), "is not a number of seconds") {
			t.Errorf("%s %s: %v", bad.kind, bad.data, err)
		}
	}
}

// TestDecodeEntry: an entry of several inputs reads back as its inputs in
// order; one of a single kind as that input; and an entry of several that
// is empty, nests another, names an unknown kind or is not JSON is refused,
// saying which input.
func TestDecodeEntry(t *testing.T) {
	ins, err := DecodeEntry(KindInputs, []byte(`{"inputs":[{"kind":"spawned","data":{"ref":"c1","child":"root/w.1"}},{"kind":"child_report","data":{"child":"root/w.1","text":"ok"}},{"kind":"child_ended","data":{"child":"root/w.1","status":"done"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Input{
		Spawned{Ref: "c1", Child: "root/w.1"},
		ChildReport{Child: "root/w.1", Text: "ok"},
		ChildEnded{Child: "root/w.1", Status: cadre.StatusDone},
	}
	if !reflect.DeepEqual(ins, want) {
		t.Errorf("got %#v, want %#v", ins, want)
	}
	one, err := DecodeEntry("child_report", []byte(`{"child":"root/w.1","text":"ok"}`))
	if err != nil || !reflect.DeepEqual(one, want[1:2]) {
		t.Errorf("an entry of one input: %#v, %v", one, err)
	}
	for _, tc := range []struct{ data, want string }{
		{`{"inputs":[]}`, "holds no inputs"},
		{`{}`, "holds no inputs"},
		{`{"inputs":[{"kind":"spawned","data":{"ref":"c1"}},{"kind":"inputs","data":{"inputs":[]}}]}`, "input 2 of 2 is itself an entry of several inputs"},
		{`{"inputs":[{"kind":"spawned","data":{"ref":"c1"}},{"kind":"later","data":{}}]}`, `input 2 of 2: loop: unknown journal entry kind "later"`},
		{`{"inputs":[{"kind":"spawned","data":{"ref":5}}]}`, "input 1 of 1: loop: decode spawned entry"},
		{`[1,2]`, "decode inputs entry"},
	} {
		if _, err := DecodeEntry(KindInputs, []byte(tc.data)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.data, err, tc.want)
		}
	}
}

// A Start that names another agent's configuration is stepped only once a
// journal reader has given it that configuration: one that was not fails the
// agent, telling its parent, rather than run it with no prompt or tools.
func TestStartNamingAConfigurationNotRead(t *testing.T) {
	s := New()
	acts := s.Step(Start{Config: Config{ID: "root/w.2", Parent: "root", Definition: "w"}, Task: "t", ConfigFrom: "root/w.1"})
	var fin *Finish
	reported := false
	for _, a := range acts {
		switch a := a.(type) {
		case Finish:
			fin = &a
		case Deliver:
			reported = a.Report && a.Failed
		case CallModel:
			t.Fatalf("the agent called its model without its configuration: %+v", a)
		}
	}
	if fin == nil || !fin.Failed || !strings.Contains(fin.Result, "root/w.1") || !reported {
		t.Errorf("actions %#v: want a failure naming root/w.1, reported to the parent", acts)
	}
}
