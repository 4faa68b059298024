package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

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
	// Error: deploy was not run: it needs the user's approval and there is no terminal to ask on (--approve=ask without a terminal). Do not try it again in this run; carry on without it, or say in your answer what you would have done. To allow writes and commands, the user can run cadre with --approve=all, or run it on a terminal and answer y when asked. true
	// deployed false
	// Error: unknown tool "deplo". The tools are: deploy. Call one of those by its exact name. true
}

func ExampleWorkspace_Resolve() {
	dir, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "root")
	_ = os.MkdirAll(filepath.Join(root, "src"), 0o755)
	_ = os.Symlink(os.TempDir(), filepath.Join(root, "tmp")) // leads outside

	ws, err := tool.NewWorkspace(root)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ws.Close()
	for _, p := range []string{"src/main.go", "../etc/passwd", "/etc/passwd", "tmp/x"} {
		real, err := ws.Resolve(p)
		switch {
		case errors.Is(err, tool.ErrOutsideWorkspace):
			fmt.Printf("%s: refused\n", p)
		case err != nil:
			fmt.Printf("%s: %v\n", p, err)
		default:
			fmt.Printf("%s: %s\n", p, ws.Rel(real))
		}
	}
	// Output:
	// src/main.go: src/main.go
	// ../etc/passwd: refused
	// /etc/passwd: refused
	// tmp/x: refused
}

func ExampleWorkspace_OpenFile() {
	dir, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "root")
	_ = os.MkdirAll(filepath.Join(root, "docs"), 0o755)
	_ = os.WriteFile(filepath.Join(root, "docs", "notes.txt"), []byte("hello\n"), 0o644)
	_ = os.Symlink("docs", filepath.Join(root, "latest"))    // stays inside
	_ = os.Symlink(os.TempDir(), filepath.Join(root, "tmp")) // leads outside

	ws, err := tool.NewWorkspace(root)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ws.Close()
	for _, p := range []string{"latest/notes.txt", "tmp/x"} {
		// Resolved and opened in one step: a directory swapped for a link
		// meanwhile cannot lead outside.
		f, rel, err := ws.OpenFile(p, os.O_RDONLY, 0)
		if err != nil {
			fmt.Printf("%s: refused: %v\n", p, errors.Is(err, tool.ErrOutsideWorkspace))
			continue
		}
		b, _ := io.ReadAll(f)
		f.Close()
		fmt.Printf("%s: %s holds %q\n", p, rel, b)
	}
	// Output:
	// latest/notes.txt: docs/notes.txt holds "hello\n"
	// tmp/x: refused: true
}

func ExampleApprover() {
	// What a terminal prompt would do; here every command is refused.
	a := &tool.Approver{Mode: tool.ApproveAsk, Prompt: func(_ context.Context, req tool.ApprovalRequest) (bool, error) {
		fmt.Printf("%s wants to %s\n", req.Agent, req.Summary)
		return !strings.HasPrefix(req.Summary, "run:"), nil
	}}
	for _, s := range []string{"write notes.md", "run: rm -rf build"} {
		ok, denial, err := a.Approve(context.Background(), tool.ApprovalRequest{Agent: "root", Tool: "x", Summary: s})
		fmt.Println(ok, denial, err)
	}
	// Output:
	// root wants to write notes.md
	// true  <nil>
	// root wants to run: rm -rf build
	// false x was not run: the user declined this call when asked. Do not repeat it; take another approach, or ask for guidance. <nil>
}
