package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cadre-ai/cadre"
)

func TestListAndCall(t *testing.T) {
	c := connect(t, Config{Servers: map[string]ServerConfig{"demo": inMemory(t, newTestServer())}})
	var names []string
	for _, tl := range c.Tools() {
		names = append(names, tl.Spec().Name)
	}
	want := []string{"mcp__demo__crash", "mcp__demo__echo", "mcp__demo__env", "mcp__demo__environ", "mcp__demo__fail", "mcp__demo__get_weather",
		"mcp__demo__mixed", "mcp__demo__slow", "mcp__demo__structured", "mcp__demo__write"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("tool names (-want +got):\n%s", diff)
	}

	echo := tool(t, c, "mcp__demo__echo")
	spec := echo.Spec()
	if spec.Description != "Echo the text back." {
		t.Errorf("description %q", spec.Description)
	}
	var schema struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type        string `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(spec.Parameters, &schema); err != nil {
		t.Fatalf("parameters %s: %v", spec.Parameters, err)
	}
	if schema.Type != "object" || schema.Properties["text"].Type != "string" || schema.Properties["text"].Description != "the text to echo" ||
		!slices.Equal(schema.Required, []string{"text"}) {
		t.Errorf("parameters %s", spec.Parameters)
	}
	if echo.Server() != "demo" || echo.RemoteName() != "echo" {
		t.Errorf("server %q, remote name %q", echo.Server(), echo.RemoteName())
	}

	got, err := echo.Call(context.Background(), json.RawMessage(`{"text":"hello"}`))
	if err != nil || got != "echo: hello" {
		t.Fatalf("echo: %q, %v", got, err)
	}
	// A name the model API would refuse is rewritten; the call uses the
	// server's own name.
	if got, err := tool(t, c, "mcp__demo__get_weather").Call(context.Background(), nil); err != nil || got != "sunny" {
		t.Fatalf("get.weather: %q, %v", got, err)
	}
	if got, err := tool(t, c, "mcp__demo__structured").Call(context.Background(), json.RawMessage(`{}`)); err != nil || got != `{"temp":21}` {
		t.Fatalf("structured: %q, %v", got, err)
	}
}

// The calls of one reply run at the same time over one session: every
// call of a tool that answers only once all of them have come in gets its
// own answer. Were the calls made one after the other, the first would
// give up waiting for the others (after half a minute: a bound for when
// the test fails, never reached when it passes) and fail.
func TestConcurrentCalls(t *testing.T) {
	const n = 32
	srv := newTestServer()
	var (
		mu      sync.Mutex
		arrived int
		all     = make(chan struct{})
		gaveUp  = make(chan struct{})
	)
	sdk.AddTool(srv, &sdk.Tool{Name: "gather", Description: "Answers once all the calls have come in."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in textArgs) (*sdk.CallToolResult, any, error) {
			mu.Lock()
			if arrived++; arrived == n {
				close(all)
			}
			mu.Unlock()
			select {
			case <-all:
			case <-gaveUp:
				return nil, nil, errors.New("an earlier call gave up waiting for the others")
			case <-time.After(30 * time.Second):
				mu.Lock()
				defer mu.Unlock()
				select {
				case <-gaveUp:
				default:
					close(gaveUp)
				}
				return nil, nil, fmt.Errorf("only %d of the %d calls came while this one waited", arrived, n)
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "gathered: " + in.Text}}}, nil, nil
		})
	c := connect(t, Config{Servers: map[string]ServerConfig{"demo": inMemory(t, srv)}})
	gather := tool(t, c, "mcp__demo__gather")
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			want := fmt.Sprintf("gathered: call %d", i)
			got, err := gather.Call(context.Background(), json.RawMessage(fmt.Sprintf(`{"text":"call %d"}`, i)))
			if err != nil || got != want {
				errs <- fmt.Errorf("call %d: %q, %v", i, got, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestReadOnlyAnnotation(t *testing.T) {
	c := connect(t, Config{Servers: map[string]ServerConfig{"demo": inMemory(t, newTestServer())}})
	for name, want := range map[string]bool{"mcp__demo__echo": false, "mcp__demo__write": true, "mcp__demo__fail": true} {
		if got := cadre.Mutates(tool(t, c, name)); got != want {
			t.Errorf("%s mutates: %v, want %v", name, got, want)
		}
	}
}

func TestErrorResult(t *testing.T) {
	c := connect(t, Config{Servers: map[string]ServerConfig{"demo": inMemory(t, newTestServer())}})
	_, err := tool(t, c, "mcp__demo__fail").Call(context.Background(), json.RawMessage(`{"text":"42"}`))
	var te *ToolError
	if !errors.As(err, &te) || te.Tool != "mcp__demo__fail" || !strings.Contains(err.Error(), "no such record: 42") {
		t.Fatalf("error %T %v", err, err)
	}
	// Arguments the server's schema refuses are an error result too.
	_, err = tool(t, c, "mcp__demo__echo").Call(context.Background(), json.RawMessage(`{"text":3}`))
	if err == nil {
		t.Fatal("a call with arguments of the wrong type succeeded")
	}
}

func TestContentKinds(t *testing.T) {
	c := connect(t, Config{Servers: map[string]ServerConfig{"demo": inMemory(t, newTestServer())}})
	got, err := tool(t, c, "mcp__demo__mixed").Call(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"a chart:",
		"[image: image/png, 12 KB; not passed on: its bytes are not a PNG, JPEG, GIF or WebP image]",
		"[audio: audio/wav, 900 bytes; not passed on: its bytes are not WAV or MP3 audio]",
		"[resource link: file:///tmp/report.csv (report), text/csv]",
		"[resource file:///notes.txt]\nthe notes",
		"[resource file:///blob.bin: unknown type, 2.5 MB]",
	}, "\n")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

// One server failing does not keep the others from being used.
func TestCommandNotFound(t *testing.T) {
	c := NewClient(Config{Servers: map[string]ServerConfig{
		"demo":   inMemory(t, newTestServer()),
		"broken": {Command: "cadre-test-no-such-command"},
	}})
	defer c.Close(context.Background())
	err := c.Connect(context.Background())
	var se *ServerError
	if !errors.As(err, &se) || se.Server != "broken" || se.Op != "start" {
		t.Fatalf("error %T %v", err, err)
	}
	for _, want := range []string{`mcp server "broken"`, `command "cadre-test-no-such-command" not found`, "mcpServers.broken"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if len(c.Tools()) == 0 {
		t.Error("the working server's tools are missing")
	}
	infos := c.Servers()
	if len(infos) != 2 || infos[0].Name != "broken" || infos[0].Err == nil || infos[0].Tools != nil || infos[1].Err != nil {
		t.Errorf("servers %+v", infos)
	}
}

func TestHTTP(t *testing.T) {
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return newTestServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good" {
			http.Error(w, "invalid token", http.StatusUnauthorized)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	defer srv.Close()

	c := connect(t, Config{Servers: map[string]ServerConfig{
		"web": {URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer good"}},
	}})
	got, err := tool(t, c, "mcp__web__echo").Call(context.Background(), json.RawMessage(`{"text":"over http"}`))
	if err != nil || got != "echo: over http" {
		t.Fatalf("echo: %q, %v", got, err)
	}
	if info := c.Servers()[0]; info.Transport != "http" || info.Target != "http: "+srv.URL {
		t.Errorf("info %+v", info)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := tool(t, c, "mcp__web__echo").Call(context.Background(), json.RawMessage(`{"text":"x"}`)); !errors.Is(err, ErrClosed) {
		t.Errorf("call after Close: %v", err)
	}

	bad := NewClient(Config{Servers: map[string]ServerConfig{
		"web": {URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer bad"}},
	}})
	defer bad.Close(context.Background())
	err = bad.Connect(context.Background())
	for _, want := range []string{`mcp server "web"`, "HTTP 401", "invalid token", "headers of mcpServers.web"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

func TestHTTPUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c := NewClient(Config{Servers: map[string]ServerConfig{"gone": {URL: url}}})
	defer c.Close(context.Background())
	err := c.Connect(context.Background())
	if err == nil || !strings.Contains(err.Error(), `mcp server "gone"`) || !strings.Contains(err.Error(), "that the server is up") {
		t.Fatalf("error %v", err)
	}
}

// Close aborts a call in flight and returns without waiting for it.
func TestCloseAbortsCall(t *testing.T) {
	srv := newTestServer()
	started := make(chan struct{})
	sdk.AddTool(srv, &sdk.Tool{Name: "hold", Description: "Says it started, then waits until it is cancelled."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			close(started)
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	c := connect(t, Config{Servers: map[string]ServerConfig{"demo": inMemory(t, srv)}})
	hold := tool(t, c, "mcp__demo__hold")
	done := make(chan error, 1)
	go func() {
		_, err := hold.Call(context.Background(), nil)
		done <- err
	}()
	<-started // the call is in flight: the server is working on it
	// Were the call not aborted, Close would wait for it until its context
	// ended (a bound for when the test fails, never reached when it passes).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Errorf("call in flight ended with %v", err)
	}
}

// A call whose context ends returns the context's error, and the server
// carries on serving.
func TestCallCancelled(t *testing.T) {
	c := connect(t, Config{Servers: map[string]ServerConfig{"demo": inMemory(t, newTestServer())}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := tool(t, c, "mcp__demo__slow").Call(ctx, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v", err)
	}
	if got, err := tool(t, c, "mcp__demo__echo").Call(context.Background(), json.RawMessage(`{"text":"still here"}`)); err != nil || got != "echo: still here" {
		t.Fatalf("echo after a cancelled call: %q, %v", got, err)
	}
}

func TestConnectTwice(t *testing.T) {
	c := connect(t, Config{Servers: map[string]ServerConfig{"demo": inMemory(t, newTestServer())}})
	if err := c.Connect(context.Background()); err == nil {
		t.Fatal("a second Connect succeeded")
	}
}

func TestNoCommandNoURL(t *testing.T) {
	c := NewClient(Config{Servers: map[string]ServerConfig{"empty": {}}})
	defer c.Close(context.Background())
	err := c.Connect(context.Background())
	if err == nil || !strings.Contains(err.Error(), "give mcpServers.empty a command or a url") {
		t.Fatalf("error %v", err)
	}
}

func TestSummary(t *testing.T) {
	c := connect(t, Config{Servers: map[string]ServerConfig{"demo": inMemory(t, newTestServer())}})
	got := tool(t, c, "mcp__demo__write").Summary(json.RawMessage(`{ "text" : "x" }`))
	if got != `write (MCP server demo) {"text":"x"}` {
		t.Errorf("summary %q", got)
	}
}

func TestLongResultIsCut(t *testing.T) {
	tests := []struct {
		name, text string
		max        int
		want       string
	}{
		{"short", "abc", 9, "echo: abc"},
		{"at a rune", "ééé", 9, "echo: é\n[… the result was cut: it has 12 bytes, of which the first 8 are shown]"},
		{"at a line", "ab\ncdefghij", 14, "echo: ab\n[… the result was cut: it has 17 bytes, of which the first 8 are shown]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := connect(t, Config{MaxResultBytes: tt.max, Servers: map[string]ServerConfig{"demo": inMemory(t, newTestServer())}})
			args, _ := json.Marshal(map[string]string{"text": tt.text})
			got, err := tool(t, c, "mcp__demo__echo").Call(context.Background(), args)
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v\nwant %q", got, err, tt.want)
			}
		})
	}
}

// A server that redirects away from its configured origin is not followed
// there: the request and the configured headers (a token) would go with
// it. Within the origin, a redirect is followed and keeps the headers.
func TestHTTPRedirectKeepsHeadersAtHome(t *testing.T) {
	var leaked atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		http.Error(w, "not here", http.StatusNotFound)
	}))
	defer other.Close()
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1) // another origin
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return newTestServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, otherURL+"/collect", http.StatusTemporaryRedirect)
		case "/moved":
			http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
		default:
			if r.Header.Get("Authorization") != "Bearer good" {
				http.Error(w, "invalid token", http.StatusUnauthorized)
				return
			}
			handler.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close) // after the clients, which connect() closes in its cleanup

	away := NewClient(Config{Servers: map[string]ServerConfig{
		"web": {URL: srv.URL + "/away", Headers: map[string]string{"Authorization": "Bearer good"}},
	}})
	defer away.Close(context.Background())
	err := away.Connect(context.Background())
	if err == nil || !strings.Contains(err.Error(), "away from its configured url") {
		t.Errorf("connect through a redirect to another origin: %v", err)
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("the other origin got the token %d times", n)
	}

	c := connect(t, Config{Servers: map[string]ServerConfig{
		"web": {URL: srv.URL + "/moved", Headers: map[string]string{"Authorization": "Bearer good"}},
	}})
	if got, err := tool(t, c, "mcp__web__echo").Call(context.Background(), json.RawMessage(`{"text":"moved"}`)); err != nil || got != "echo: moved" {
		t.Fatalf("echo through a redirect within the origin: %q, %v", got, err)
	}
}

// The headers go to the configured origin alone, whatever the client does
// with redirects (a Config.HTTPClient may follow any).
func TestHeaderTransportOrigin(t *testing.T) {
	var got []string
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = append(got, r.URL.String()+" "+r.Header.Get("Authorization"))
		return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
	})
	tr := &headerTransport{base: base, headers: map[string]string{"Authorization": "Bearer t"}, origin: "https://mcp.example.com:443"}
	for _, u := range []string{"https://mcp.example.com/mcp", "https://MCP.example.com:443/x", "http://mcp.example.com/mcp", "https://mcp.example.com:8443/mcp", "https://evil.example/mcp"} {
		req, _ := http.NewRequest("POST", u, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	want := []string{"https://mcp.example.com/mcp Bearer t", "https://MCP.example.com:443/x Bearer t", "http://mcp.example.com/mcp ", "https://mcp.example.com:8443/mcp ", "https://evil.example/mcp "}
	if !slices.Equal(got, want) {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
