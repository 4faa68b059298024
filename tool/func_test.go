package tool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cadre-ai/cadre"
)

type greetArgs struct {
	Name  string `json:"name"`
	Times int    `json:"times"`
}

func greetSpec() cadre.ToolSpec {
	return cadre.ToolSpec{
		Name:        "greet",
		Description: "Greets someone.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"times":{"type":"integer"}},"required":["name"],"additionalProperties":false}`),
	}
}

func greet(_ context.Context, a greetArgs) (string, error) {
	if a.Times == 0 {
		a.Times = 1
	}
	return strings.Repeat("hello "+a.Name+"\n", a.Times), nil
}

func TestFunc(t *testing.T) {
	g := Func(greetSpec(), greet)
	if cadre.Mutates(g) {
		t.Error("a Func tool mutates without the Mutating option")
	}
	tests := []struct {
		name    string
		args    string
		want    string
		wantErr string
	}{
		{name: "ok", args: `{"name":"Ada","times":2}`, want: "hello Ada\nhello Ada\n"},
		{name: "integer_written_as_float", args: `{"name":"Ada","times":2.0}`, want: "hello Ada\nhello Ada\n"},
		{name: "integer_written_with_exponent", args: `{"name":"Ada","times":2e0}`, want: "hello Ada\nhello Ada\n"},
		{name: "fraction_for_integer", args: `{"name":"Ada","times":2.5}`, wantErr: `invalid arguments for greet: argument "times": expected integer, got number`},
		{name: "schema_mismatch", args: `{"name":1}`, wantErr: `invalid arguments for greet: argument "name": expected string, got number`},
		{name: "missing", args: ``, wantErr: `invalid arguments for greet: missing required argument "name"`},
		{name: "extra", args: `{"name":"x","loud":true}`, wantErr: `invalid arguments for greet: unexpected argument "loud": the tool accepts only name, times`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := g.Call(context.Background(), json.RawMessage(tt.args))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Call error = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Call = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestFuncDecodeFailureAfterSchema(t *testing.T) {
	// The schema allows what T cannot hold: decoding must fail cleanly.
	spec := cadre.ToolSpec{Name: "n", Parameters: json.RawMessage(`{"type":"object"}`)}
	f := Func(spec, func(_ context.Context, a struct{ N int8 }) (string, error) { return "called", nil })
	_, err := f.Call(context.Background(), json.RawMessage(`{"N": 1000}`))
	if err == nil || !strings.HasPrefix(err.Error(), "invalid arguments for n:") {
		t.Fatalf("Call error = %v, want a decoding error naming the tool", err)
	}
}

func TestFuncMutatingAndSummary(t *testing.T) {
	g := Func(greetSpec(), greet, Mutating[greetArgs](), WithSummary(func(a greetArgs) string { return "greet " + a.Name }))
	if !cadre.Mutates(g) {
		t.Error("Mutating option not applied")
	}
	if got := Summarize(g, json.RawMessage(`{"name":"Ada"}`)); got != "greet Ada" {
		t.Errorf("Summarize = %q", got)
	}
	if got := Summarize(g, json.RawMessage(`{"name":1}`)); got != `greet {"name":1}` {
		t.Errorf("Summarize with bad arguments = %q", got)
	}
	if got := Summarize(named("x"), json.RawMessage("{ \"a\" :\n 1 }")); got != `x {"a":1}` {
		t.Errorf("Summarize of a plain tool = %q", got)
	}
}
