package tool_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/tool"
)

func ExampleFunc() {
	type args struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	add := tool.Func(cadre.ToolSpec{
		Name:        "add",
		Description: "Adds two integers.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`),
	}, func(_ context.Context, x args) (string, error) {
		return fmt.Sprint(x.A + x.B), nil
	})

	out, err := add.Call(context.Background(), json.RawMessage(`{"a": 2, "b": 40}`))
	fmt.Println(out, err)
	_, err = add.Call(context.Background(), json.RawMessage(`{"a": "2"}`))
	fmt.Println(err)
	// Output:
	// 42 <nil>
	// invalid arguments for add: missing required argument "b"; argument "a": expected integer, got string
}

func ExampleExecutor() {
	type noArgs struct{}
	deploy := tool.Func(cadre.ToolSpec{Name: "deploy", Parameters: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, noArgs) (string, error) { return "deployed", nil },
		tool.Mutating[noArgs]())
	reg, _ := tool.NewRegistry(deploy)

	// No one to ask: mutating calls are denied, with a hint for the user.
	e := &tool.Executor{Tools: reg, Approver: &tool.Approver{Mode: tool.ApproveAsk}}
	fmt.Println(e.Run(context.Background(), "root", cadre.ToolCall{Name: "deploy"}))

	e.Approver = &tool.Approver{Mode: tool.ApproveAll}
	fmt.Println(e.Run(context.Background(), "root", cadre.ToolCall{Name: "deploy"}))
	fmt.Println(e.Run(context.Background(), "root", cadre.ToolCall{Name: "deplo"}))
	// Output:
	// Error: deploy was not run: it needs the user's approval and there is no terminal to ask on. Tell the user to run cadre with --approve=all to allow writes and commands, or approve them interactively on a terminal. true
	// deployed false
	// Error: unknown tool "deplo". The tools are: deploy. Call one of those by its exact name. true
}
