package local

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
)

// roundTrip skips decoding only the inputs that decode to themselves: for
// every input, with valid and invalid UTF-8 and HTML characters, what it
// returns is what loop.Decode reads from the JSON.
func TestRoundTripMatchesDecode(t *testing.T) {
	texts := []string{"", "plain", "<b>&amp;</b> \u2028 é", "bad \xff\xfe byte", "\x00 nul"}
	var inputs []loop.Input
	for _, s := range texts {
		inputs = append(inputs,
			loop.Spawned{Ref: s, Child: cadre.AgentID(s), Err: s},
			loop.ChildReport{Child: "root/w.1", Text: s, Failed: true, Cancelled: true, Incomplete: true},
			loop.ChildEnded{Child: cadre.AgentID(s), Status: cadre.Status(s), Error: s},
			loop.ChildQuestion{Child: "root/w.1", Question: s},
			loop.Answer{Text: s, Err: s},
			loop.InboxMessage{From: cadre.AgentID(s), Text: s, Steering: true, FollowUp: true},
			loop.Cancel{Reason: s},
			loop.Timeout{Limit: 1500 * time.Millisecond},
			loop.Timeout{},
			loop.ToolResults{Results: []loop.ToolResult{{CallID: "c", Content: s}}},
			loop.ModelResult{Response: &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: s}}},
		)
	}
	for _, in := range inputs {
		data, got, err := roundTrip(in)
		if err != nil {
			t.Fatalf("%#v: %v", in, err)
		}
		enc, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != string(enc) {
			t.Errorf("%#v: journaled %s, want %s", in, data, enc)
		}
		want, err := loop.Decode(in.Kind(), enc)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("roundTrip(%#v) = %#v, but a replay reads %#v", in, got, want)
		}
	}
}
