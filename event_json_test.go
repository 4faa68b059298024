package cadre

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// Every payload type written without encoding/json is written as
// encoding/json writes it: with every field zero (omitempty), set to text
// that needs escaping, and set to random numbers, large and small.
func TestPayloadFieldsWriteWhatJSONWrites(t *testing.T) {
	texts := []string{"", "plain", "<b>&amp;</b>", "line\u2028sep", "bad \xff byte", "quote \" back \\ tab \t nul \x00 \x7f"}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, et := range EventTypes() {
		typ := reflect.TypeOf(zeroPayload(et))
		fs, ok := payloadFields[typ]
		if !ok {
			continue
		}
		for i := range 200 {
			p := reflect.New(typ).Elem()
			if i > 0 {
				randomFill(rng, p, texts)
			}
			want, err := json.Marshal(p.Interface())
			got, ok := appendFields([]byte("{"), p, fs)
			if (err == nil) != ok {
				t.Fatalf("%s %#v: written=%v, json.Marshal error %v", et, p.Interface(), ok, err)
			}
			if !ok {
				continue
			}
			if len(got) > 1 {
				got = append(got[:1], got[2:]...)
			}
			got = append(got, '}')
			if string(got) != string(want) {
				t.Fatalf("%s %#v:\nwritten %s\njson    %s", et, p.Interface(), got, want)
			}
		}
	}
	// The payloads of every agent's life are written without encoding/json.
	for _, p := range []Payload{AgentStarted{}, AgentSpawned{}, ModelResponse{}, MessageSent{}, AgentCompleted{},
		AgentReported{}, ToolCalled{}, ToolResult{}, AgentFailed{}} {
		if _, ok := payloadFields[reflect.TypeOf(p)]; !ok {
			t.Errorf("%T has no field writers: a field of a type they do not handle sends it through encoding/json", p)
		}
	}
}

func randomFill(rng *rand.Rand, v reflect.Value, texts []string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(texts[rng.IntN(len(texts))])
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Int, reflect.Int64:
		switch rng.IntN(3) {
		case 0:
		case 1:
			v.SetInt(rng.Int64N(100))
		default:
			v.SetInt(rng.Int64() - math.MaxInt64/2)
		}
	case reflect.Float64:
		floats := []float64{0, 0.25, 1e-7, 3e21, -1.5, math.Inf(1), math.NaN()}
		if rng.IntN(2) == 0 {
			v.SetFloat(floats[rng.IntN(len(floats))])
		} else {
			v.SetFloat(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20)))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				randomFill(rng, v.Field(i), texts)
			}
		}
	}
}

// Fields encoding/json writes by a method of theirs, or by a rule of its
// own, are left to it.
func TestFieldWritersLeaveOut(t *testing.T) {
	type text string
	for _, v := range []any{
		struct {
			T time.Time `json:"t"`
		}{},
		struct {
			N json.Number `json:"n"`
		}{},
		struct {
			D string `json:"-,"`
		}{},
		struct {
			S []string `json:"s"`
		}{},
		struct {
			M textMarshal `json:"m"`
		}{},
	} {
		if _, ok := fieldWriters(reflect.TypeOf(v)); ok {
			t.Errorf("%T: written by field writers, want it left to encoding/json", v)
		}
	}
	if _, ok := fieldWriters(reflect.TypeFor[struct {
		A text `json:"a"`
		B int  `json:"-"`
	}]()); !ok {
		t.Error("a struct of a string type and a field left out has no field writers")
	}
}

type textMarshal string

func (t textMarshal) MarshalText() ([]byte, error) { return []byte("x" + t), nil }
