package cadre

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Stores write an event with its MarshalJSON, skipping the check
// json.Marshal makes of a Marshaler's output: the bytes must be the ones
// json.Marshal writes, for every payload type and for text that needs
// escaping.
func TestEventMarshalJSONIsWhatJSONWrites(t *testing.T) {
	texts := []string{"plain", "<b>&amp;</b>", "line\u2028sep\u2029", "bad \xff byte", "quote \" back \\ tab \t nul \x00"}
	for _, et := range EventTypes() {
		for _, text := range texts {
			p := reflect.New(reflect.TypeOf(zeroPayload(et))).Elem()
			fillText(p, text)
			ev := Event{Seq: 3, Type: et, Time: eventTime, Run: "r " + text, Agent: AgentID("root/a.1" + text), Parent: RootID, Depth: 1,
				Data: p.Interface().(Payload)}
			direct, err := ev.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			viaJSON, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			if string(direct) != string(viaJSON) {
				t.Errorf("%s with %q: MarshalJSON wrote\n%s\njson.Marshal\n%s", et, text, direct, viaJSON)
			}
		}
	}
}

// fillText is fill with every string set to text.
func fillText(v reflect.Value, text string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(text)
	case reflect.Struct:
		for i := range v.NumField() {
			fillText(v.Field(i), text)
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fillText(s.Index(i), text)
		}
		v.Set(s)
	default:
		fill(v)
	}
}
