package mcp

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverModeEnv makes the test binary act as a stdio MCP server instead of
// running tests; its value chooses how the server behaves.
const serverModeEnv = "CADRE_MCP_TEST_SERVER"

// readyEnv, when set, names a pipe the test server writes "ready" to once
// it runs.
const readyEnv = "CADRE_MCP_TEST_READY"

func TestMain(m *testing.M) {
	if mode := os.Getenv(serverModeEnv); mode != "" {
		os.Exit(serveTestServer(mode))
	}
	os.Exit(m.Run())
}

// serveTestServer runs the test server over stdin and stdout. Modes:
//
//	normal    the tools of newTestServer
//	exit      writes to stderr and exits with status 2 before answering
//	leak      the same, with the value of DEMO_TOKEN on stderr
//	silent    reads stdin and never answers
//	stubborn  like normal, but ignores SIGTERM and SIGPIPE and outlives
//	          its stdin
func serveTestServer(mode string) int {
	if path := os.Getenv(readyEnv); path != "" {
		if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			_, _ = f.WriteString("ready\n")
			f.Close()
		}
	}
	switch mode {
	case "exit":
		fmt.Fprintln(os.Stderr, "starting the demo server")
		fmt.Fprintln(os.Stderr, "fatal: DEMO_API_KEY is not set")
		return 2
	case "leak":
		fmt.Fprintln(os.Stderr, "fatal: the token "+os.Getenv("DEMO_TOKEN")+" was refused")
		return 2
	case "silent":
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	case "stubborn":
		signal.Ignore(syscall.SIGTERM, syscall.SIGPIPE)
	}
	err := newTestServer().Run(context.Background(), &sdk.StdioTransport{})
	if mode == "stubborn" {
		time.Sleep(time.Hour)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

type textArgs struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type envArgs struct {
	Name string `json:"name"`
}

// newTestServer is an MCP server with a tool of each kind the tests need.
func newTestServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "demo", Version: "1"}, nil)
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo the text back.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *sdk.CallToolRequest, in textArgs) (*sdk.CallToolResult, any, error) {
			return text("echo: " + in.Text), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "write", Description: "Write the text somewhere."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in textArgs) (*sdk.CallToolResult, any, error) {
			return text("wrote " + in.Text), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in textArgs) (*sdk.CallToolResult, any, error) {
			return nil, nil, fmt.Errorf("no such record: %s", in.Text)
		})
	sdk.AddTool(s, &sdk.Tool{Name: "get.weather", Description: "A name with a dot."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			return text("sunny"), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "mixed", Description: "Content of every kind."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			size := int64(5)
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "a chart:"},
				&sdk.ImageContent{MIMEType: "image/png", Data: make([]byte, 12_000)},
				&sdk.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 900)},
				&sdk.ResourceLink{URI: "file:///tmp/report.csv", Name: "report", MIMEType: "text/csv", Size: &size},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "the notes"}},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///blob.bin", Blob: make([]byte, 2_500_000)}},
			}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "structured", Description: "Structured output only."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{}, StructuredContent: map[string]any{"temp": 21}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "env", Description: "Reports a variable of its environment and its working directory."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in envArgs) (*sdk.CallToolResult, any, error) {
			wd, _ := os.Getwd()
			return text(in.Name + "=" + os.Getenv(in.Name) + " wd=" + wd), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "environ", Description: "Reports its whole environment, one KEY=value a line.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			env := os.Environ()
			slices.Sort(env)
			return text(strings.Join(env, "\n")), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "slow", Description: "Waits until it is cancelled."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Ends the server's process."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "panic: the demo server fell over")
			os.Exit(3)
			return nil, nil, nil
		})
	return s
}

// inMemory connects srv to the other end of an in-memory transport and
// returns the config of a server reached through it.
func inMemory(t *testing.T, srv *sdk.Server) ServerConfig {
	t.Helper()
	ct, st := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	return ServerConfig{Transport: ct}
}

// stdioServer is the config of the test binary run as a server in mode.
func stdioServer(t *testing.T, mode string) ServerConfig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return ServerConfig{Command: exe, Env: map[string]string{serverModeEnv: mode}}
}

// connect connects a Client to servers, fails the test on any error, and
// closes the Client at the end of the test.
func connect(t *testing.T, cfg Config) *Client {
	t.Helper()
	c := NewClient(cfg)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c
}

// tool finds the tool of that name.
func tool(t *testing.T, c *Client, name string) *Tool {
	t.Helper()
	var names []string
	for _, s := range c.Servers() {
		for _, tl := range s.Tools {
			if tl.Spec().Name == name {
				return tl
			}
			names = append(names, tl.Spec().Name)
		}
	}
	t.Fatalf("no tool %s among %s", name, strings.Join(names, ", "))
	return nil
}
