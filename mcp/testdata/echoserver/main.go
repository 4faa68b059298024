// Command echoserver is a small MCP server speaking on stdin and stdout,
// for tests of programs that use MCP servers. Its tool echo returns its
// text argument prefixed with "echo: "; lookup is the same but annotated
// as read-only; env, read-only too, returns the server's environment, one
// KEY=value a line, sorted, as the get-env tool of the reference
// "everything" server does; chart, read-only, returns a line of text, a
// PNG image (ChartPNG) and a WAV sound (ChartWAV).
package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The bytes of chart's image and sound: the first bytes of a PNG file and
// of a WAV file, and a few more.
const (
	chartPNG = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR a chart"
	chartWAV = "RIFF\x24\x00\x00\x00WAVEfmt  a sound"
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
	mcp.AddTool(s, &mcp.Tool{Name: "chart", Description: "Draw the chart.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "the chart:"},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte(chartPNG)},
				&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte(chartWAV)},
			}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "echoserver:", err)
		os.Exit(1)
	}
}
