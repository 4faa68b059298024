package builtin_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/tool"
	"github.com/cadre-ai/cadre/tool/builtin"
)

func Example() {
	dir, err := os.MkdirTemp("", "workspace")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	dir, _ = filepath.EvalSymlinks(dir)

	ws, err := tool.NewWorkspace(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ws.Close()
	reg, err := tool.NewRegistry(builtin.New(ws, builtin.Options{})...)
	if err != nil {
		fmt.Println(err)
		return
	}
	e := &tool.Executor{Tools: reg, Approver: &tool.Approver{Mode: tool.ApproveAll}}
	for _, c := range []cadre.ToolCall{
		{Name: "write_file", Arguments: `{"path": "notes/todo.txt", "content": "buy milk\nwrite tests\n"}`},
		{Name: "edit_file", Arguments: `{"path": "notes/todo.txt", "old_string": "buy milk", "new_string": "buy oat milk"}`},
		{Name: "read_file", Arguments: `{"path": "notes/todo.txt"}`},
		{Name: "search_files", Arguments: `{"pattern": "milk"}`},
		{Name: "list_files", Arguments: `{"pattern": "*.txt"}`},
		{Name: "read_file", Arguments: `{"path": "../secrets.txt"}`},
	} {
		out, _ := e.Run(context.Background(), "root", c)
		fmt.Printf("%s: %s\n", c.Name, strings.TrimSpace(strings.ReplaceAll(out, dir, "$WORKSPACE")))
	}
	// Output:
	// write_file: created notes/todo.txt (21 bytes, 2 lines)
	// edit_file: edited notes/todo.txt: replaced 1 line at line 1 with 1 line
	// read_file: 1	buy oat milk
	//      2	write tests
	// search_files: notes/todo.txt:1: buy oat milk
	// list_files: notes/todo.txt
	// read_file: Error: read_file: path "../secrets.txt" is outside the workspace root $WORKSPACE: it climbs above the root with ".."; use a path inside $WORKSPACE (relative paths start there)
}
