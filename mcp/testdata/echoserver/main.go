// Command echoserver is a small MCP server speaking on stdin and stdout,
// for tests of programs that use MCP servers. Its tool echo returns its
// text argument prefixed with "echo: "; lookup is the same but annotated
// as read-only; env, read-only too, returns the server's environment, one
// KEY=value a line, sorted, as the get-env tool of the reference
// "everything" server does.
package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type args struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "echoserver", Version: "1"}, nil)
	echo := func(ctx context.Context, _ *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back."}, echo)
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "Look the text up.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, echo)
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Show the server's environment.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			env := os.Environ()
			slices.Sort(env)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(env, "\n")}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "echoserver:", err)
		os.Exit(1)
	}
}
