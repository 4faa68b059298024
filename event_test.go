package cadre

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var eventTime = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.FixedZone("X", 3600))

func TestEventMarshal(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   Event
		want string
	}{
		{
			name: "run event",
			ev:   Event{Type: EventRunStarted, Time: eventTime, Run: "r1", Data: RunStarted{Task: "Summarise <the> README & more", Model: "openai:gpt-4o-mini"}},
			want: `{"type":"run_started","time":"2025-03-14T14:09:26.535897932Z","run":"r1","task":"Summarise \u003cthe\u003e README \u0026 more","model":"openai:gpt-4o-mini"}`,
		},
		{
			name: "root agent, stored",
			ev:   Event{Seq: 7, Type: EventModelResponse, Time: eventTime, Run: "r1", Agent: RootID, Data: ModelResponse{Turn: 2, Usage: Usage{InputTokens: 10, OutputTokens: 5}, ToolCalls: 1}},
			want: `{"seq":7,"type":"model_response","time":"2025-03-14T14:09:26.535897932Z","run":"r1","agent":"root","turn":2,"usage":{"input_tokens":10,"output_tokens":5},"text":"","tool_calls":1}`,
		},
		{
			name: "child with its parent and depth, optional fields set",
			ev: Event{Type: EventAgentSpawned, Time: eventTime, Run: "r1", Agent: "root/sub.2", Parent: RootID, Depth: 1,
				Data: AgentSpawned{Child: "root/sub.2", Definition: "sub", Mode: "parallel", Task: "t", Model: "m", Index: 2, Total: 3}},
			want: `{"type":"agent_spawned","time":"2025-03-14T14:09:26.535897932Z","run":"r1","agent":"root/sub.2","parent":"root","depth":1,"child":"root/sub.2","definition":"sub","mode":"parallel","task":"t","model":"m","index":2,"total":3}`,
		},
		{
			name: "no payload",
			ev:   Event{Type: EventSay, Time: eventTime, Run: "r1"},
			want: `{"type":"say","time":"2025-03-14T14:09:26.535897932Z","run":"r1"}`,
		},
		{
			name: "unknown type",
			ev:   Event{Type: "later", Time: eventTime, Run: "r1", Data: RawPayload{Type: "later", Fields: map[string]json.RawMessage{"b": json.RawMessage(`[1,2]`), "a": json.RawMessage(`{"x":null}`)}}},
			want: `{"type":"later","time":"2025-03-14T14:09:26.535897932Z","run":"r1","a":{"x":null},"b":[1,2]}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("got  %s\nwant %s", b, tc.want)
			}
			var back Event
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			want := tc.ev
			want.Time = want.Time.UTC()
			if d := cmp.Diff(want, back); d != "" {
				t.Errorf("read back (-want +got):\n%s", d)
			}
		})
	}
}

// Every payload type, with every field set, reads back as it was written,
// and writing it again gives the same bytes.
func TestEventRoundTripEveryType(t *testing.T) {
	for _, et := range EventTypes() {
		t.Run(string(et), func(t *testing.T) {
			p := reflect.New(reflect.TypeOf(zeroPayload(et))).Elem()
			fill(p)
			ev := Event{Seq: 3, Type: et, Time: eventTime.UTC(), Run: "r", Agent: "root/a.1", Parent: RootID, Depth: 1, Data: p.Interface().(Payload)}
			b, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			var back Event
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(ev, back); d != "" {
				t.Errorf("read back (-want +got):\n%s", d)
			}
			again, err := json.Marshal(back)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, again) {
				t.Errorf("written again differently:\n%s\n%s", b, again)
			}
		})
	}
}

// fill sets every field of v to a value that is not its zero.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("s " + v.Type().Name())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i))
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(s.Index(i))
		}
		v.Set(s)
	}
}

func TestEventUnmarshal(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want Event
	}{
		{
			name: "fields of a wrong type are kept, not lost",
			in:   `{"type":"tool_called","time":"2025-03-14T14:09:26Z","run":"r","tool":5}`,
			want: Event{Type: EventToolCalled, Time: time.Date(2025, 3, 14, 14, 9, 26, 0, time.UTC), Run: "r",
				Data: RawPayload{Type: EventToolCalled, Fields: map[string]json.RawMessage{"tool": json.RawMessage(`5`)}}},
		},
		{
			name: "unknown fields of a known type are ignored",
			in:   `{"type":"say","time":"2025-03-14T14:09:26Z","run":"r","text":"hi","mood":"good"}`,
			want: Event{Type: EventSay, Time: time.Date(2025, 3, 14, 14, 9, 26, 0, time.UTC), Run: "r", Data: Say{Text: "hi"}},
		},
		{
			name: "written by an older cadre, keys in any order",
			in:   `{"agent":"root","run":"r","seq":2,"text":"x","time":"2025-03-14T14:09:26Z","tool_calls":1,"turn":1,"type":"model_response","usage":{"input_tokens":1,"output_tokens":2}}`,
			want: Event{Seq: 2, Type: EventModelResponse, Time: time.Date(2025, 3, 14, 14, 9, 26, 0, time.UTC), Run: "r", Agent: RootID,
				Data: ModelResponse{Turn: 1, Usage: Usage{InputTokens: 1, OutputTokens: 2}, Text: "x", ToolCalls: 1}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got Event
			if err := json.Unmarshal([]byte(tc.in), &got); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	for _, bad := range []string{`[]`, `{"type":1}`, `{"time":"yesterday"}`, `{"seq":"1"}`, `{`} {
		var ev Event
		if err := json.Unmarshal([]byte(bad), &ev); err == nil {
			t.Errorf("%s read as %+v, want an error", bad, ev)
		}
	}
}

// FuzzEventJSON: no input makes reading an event panic, and an event that
// was read writes and reads back as itself.
func FuzzEventJSON(f *testing.F) {
	for _, s := range []string{
		`{"type":"tool_result","time":"2025-03-14T14:09:26Z","run":"r","agent":"root","call_id":"c","tool":"t","is_error":true,"content":"x"}`,
		`{"seq":1,"type":"run_completed","time":"2025-03-14T14:09:26Z","run":"r","answer":"a","usage":{"input_tokens":1,"output_tokens":2},"agents":1,"findings":[{"agent":"root/a.1","title":"t","content":"c"}]}`,
		`{"type":"events_skipped","time":"2025-03-14T14:09:26Z","run":"r","count":3,"after_seq":1,"to_seq":4}`,
		`{"type":"x","time":"2025-03-14T14:09:26Z","run":"r","y":{"z":[1,"2",null]}}`,
		`{"type":"say","run":"r","text":5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var ev Event
		if json.Unmarshal(b, &ev) != nil {
			return
		}
		out, err := json.Marshal(ev)
		if err != nil {
			return // a time outside what RFC 3339 can write
		}
		var back Event
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%s was read, written as %s, and that cannot be read: %v", b, out, err)
		}
		again, err := json.Marshal(back)
		if err != nil || !bytes.Equal(out, again) {
			t.Fatalf("%s was written as\n%s\nthen as\n%s (%v)", b, out, again, err)
		}
	})
}
