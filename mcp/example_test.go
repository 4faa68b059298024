package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/mcp"
)

// A client offering the tools of an MCP server as cadre tools. The server
// runs in the same process here; a real configuration names a command,
//
//	mcp.ServerConfig{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything"}}
//
// or a URL.
func ExampleClient() {
	srv := sdk.NewServer(&sdk.Implementation{Name: "weather", Version: "1"}, nil)
	type args struct {
		City string `json:"city"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "forecast", Description: "Tomorrow's weather in a city.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Sunny in " + in.City}}}, nil, nil
		})
	clientEnd, serverEnd := sdk.NewInMemoryTransports()
	session, err := srv.Connect(context.Background(), serverEnd, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	c := mcp.NewClient(mcp.Config{Servers: map[string]mcp.ServerConfig{"weather": {Transport: clientEnd}}})
	defer c.Close(context.Background())
	if err := c.Connect(context.Background()); err != nil {
		log.Fatal(err)
	}
	for _, t := range c.Tools() {
		out, err := t.Call(context.Background(), json.RawMessage(`{"city":"Lyon"}`))
		fmt.Printf("%s (mutates: %v): %s, %v\n", t.Spec().Name, cadre.Mutates(t), out, err)
	}
	// Output:
	// mcp__weather__forecast (mutates: false): Sunny in Lyon, <nil>
}

// A server offering cadre's agents to other MCP clients. Run is where a
// program starts a cadre run (local.Engine) and returns its answer.
func ExampleNewAgentServer() {
	srv := mcp.NewAgentServer(mcp.AgentServerConfig{
		Agents: []*cadre.Definition{{Name: "reviewer", Description: "Reviews Go code."}},
		Run: func(ctx context.Context, agent, task, context string) (string, error) {
			return "reviewed", nil
		},
	})
	fmt.Println(srv.ToolNames())
	// A program would now serve: srv.ServeStdio(ctx, os.Stdin, os.Stdout).
	// Output:
	// [agent_reviewer run_task]
}
