package tool

import (
	"context"
	"encoding/json"

	"github.com/cadre-ai/cadre"
)

// fakeTool is a tool whose behaviour is a function field.
type fakeTool struct {
	spec    cadre.ToolSpec
	mutates bool
	call    func(ctx context.Context, args json.RawMessage) (string, error)
}

func (f *fakeTool) Spec() cadre.ToolSpec { return f.spec }
func (f *fakeTool) Mutates() bool        { return f.mutates }
func (f *fakeTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	if f.call == nil {
		return "ok", nil
	}
	return f.call(ctx, args)
}

func named(name string) *fakeTool {
	return &fakeTool{spec: cadre.ToolSpec{Name: name, Description: "the " + name + " tool", Parameters: json.RawMessage(`{"type":"object"}`)}}
}
