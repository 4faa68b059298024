//go:build unix

package builtin_test

import (
	"context"
	"fmt"
	"os"

	"github.com/cadre-ai/cadre/tool"
	"github.com/cadre-ai/cadre/tool/builtin"
)

func ExampleNewRunCommand() {
	ws, err := tool.NewWorkspace(os.TempDir())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ws.Close()
	rc := builtin.NewRunCommand(ws, builtin.Options{MaxCommandOutput: 40})
	// Nobody is asked here: a mutating tool called directly runs. Through
	// a tool.Executor, it would need approval first.
	out, err := rc.Call(context.Background(), []byte(`{"command": "seq 1 100; exit 3"}`))
	fmt.Println(out, err)
	// Output:
	// 1
	// 2
	// 3
	// 4
	// 5
	// 6
	// 7
	// 8
	// 9
	// [… 255 bytes of output left out (292 in all) …]
	// 95
	// 96
	// 97
	// 98
	// 99
	// 100
	//
	// exit code: 3
	//  <nil>
}
