package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/mcp"
)

// echoServer builds the test MCP server of package mcp into a folder of
// the test: a program speaking MCP on stdin and stdout, with the tools echo
// and lookup, env and chart (read-only).
func echoServer(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "echoserver")
	out, err := exec.Command("go", "build", "-o", path, "github.com/cadre-ai/cadre/mcp/testdata/echoserver").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return path
}

func TestMCPConfig(t *testing.T) {
	var fc fileConfig
	err := parseConfig("c.yaml", []byte(`mcpServers:
  demo:
    command: npx
    args: ["-y", "demo-server"]
    env: {DEMO_KEY: "${DEMO_KEY}"}
    cwd: tools
  web:
    type: http
    url: https://example.com/mcp
    headers: {Authorization: "Bearer ${TOKEN:-none}"}
`), &fc)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]mcpServerConfig{
		"demo": {Command: "npx", Args: []string{"-y", "demo-server"}, Env: map[string]string{"DEMO_KEY": "${DEMO_KEY}"}, Cwd: "tools", file: "c.yaml"},
		"web":  {Type: "http", URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${TOKEN:-none}"}, file: "c.yaml"},
	}
	if diff := cmp.Diff(want, fc.MCPServers, cmp.AllowUnexported(mcpServerConfig{})); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
}

func TestMCPConfigErrors(t *testing.T) {
	checkConfigErrors(t, []configErrorCase{
		{"both", "mcpServers:\n  demo:\n    command: x\n    url: http://h/mcp\n", 4, []string{"mcpServers.demo", "either command", "not both"}},
		{"neither", "model: m\nmcpServers:\n  demo:\n    args: [a]\n", 3, []string{"mcpServers.demo", "command or url is missing"}},
		{"sse", "mcpServers:\n  old:\n    type: sse\n    url: http://h/sse\n", 3, []string{"mcpServers.old", "sse", "not supported", "type http"}},
		{"unknown type", "mcpServers:\n  demo:\n    type: websocket\n    url: ws://h\n", 3, []string{`type "websocket"`, "stdio", "http"}},
		{"stdio with url", "mcpServers:\n  demo:\n    type: stdio\n    url: http://h/mcp\n", 3, []string{"type stdio needs a command"}},
		{"http with command", "mcpServers:\n  demo:\n    type: http\n    command: x\n", 3, []string{"type http needs a url"}},
		{"bad name", "mcpServers:\n  my__server:\n    command: x\n", 2, []string{"mcpServers.my__server", "mcp__NAME__TOOL"}},
		{"headers on command", "mcpServers:\n  demo:\n    command: x\n    headers: {A: b}\n", 4, []string{"headers are for servers reached by url"}},
		{"args on url", "mcpServers:\n  demo:\n    url: http://h/mcp\n    args: [a]\n", 3, []string{"args, env and cwd"}},
		{"bad url", "mcpServers:\n  demo:\n    url: h/mcp\n", 3, []string{`url "h/mcp"`, "http://"}},
		{"unknown key", "mcpServers:\n  demo:\n    command: x\n    argv: [a]\n", 4, []string{"argv"}},
		{"wrong kind", "mcpServers:\n  demo:\n    command: x\n    args: a b\n", 4, []string{"args", "a list"}},
		{"second server", "mcpServers:\n  good:\n    command: x\n  bad:\n    url: http://h/mcp\n    cwd: /tmp\n", 5, []string{"mcpServers.bad"}},
	})
}

// .mcp.json adds servers under the config files, which win on a name;
// entries cadre cannot use are kept with the reason.
func TestMCPJSON(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(proj, ".mcp.json"), `{
	"mcpServers": {
		"shared": {"command": "from-json"},
		"jsononly": {"type": "stdio", "command": "node", "args": ["server.js"], "env": {"K": "V"}},
		"remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
		"legacy": {"type": "sse", "url": "https://example.com/sse"}
	}
}
`)
	writeFile(t, filepath.Join(home, ".cadre", "config.yaml"), "mcpServers:\n  shared:\n    command: from-user\n")
	writeFile(t, filepath.Join(proj, ".cadre", "config.yaml"), "mcpServers:\n  projonly:\n    url: http://127.0.0.1:1/mcp\n")
	// A project's servers are used once it is trusted (see TestTrustMCPJSON).
	a := &app{io: IO{Dir: proj, Getenv: func(k string) string { return map[string]string{"HOME": home}[k] }}, trustProject: true}
	cfg, err := a.loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(maps.Keys(cfg.MCPServers))
	if diff := cmp.Diff([]string{"jsononly", "legacy", "projonly", "remote", "shared"}, names); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	if s := cfg.MCPServers["shared"]; s.Command != "from-user" {
		t.Errorf("shared comes from %+v, want the user's config", s)
	}
	if s := cfg.MCPServers["jsononly"]; s.Command != "node" || !slices.Equal(s.Args, []string{"server.js"}) || s.Env["K"] != "V" || s.problem != "" {
		t.Errorf("jsononly %+v", s)
	}
	if s := cfg.MCPServers["remote"]; s.URL != "https://example.com/mcp" || s.Headers["Authorization"] != "Bearer x" || s.problem != "" {
		t.Errorf("remote %+v", s)
	}
	legacy := cfg.MCPServers["legacy"].problem
	if !strings.Contains(legacy, filepath.Join(proj, ".mcp.json")+":6:") || !strings.Contains(legacy, "sse") {
		t.Errorf("legacy's problem %q", legacy)
	}
	if cfg.Files[0] != filepath.Join(proj, ".mcp.json") {
		t.Errorf("files %v", cfg.Files)
	}

	// A file that is not JSON stops commands with the place to fix.
	writeFile(t, filepath.Join(proj, ".mcp.json"), "{\n  \"mcpServers\": {\n    \"x\": {\"command\": [}\n  }\n}\n")
	_, err = a.loadConfig()
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.File != filepath.Join(proj, ".mcp.json") || ce.Line == 0 {
		t.Errorf("error %v", err)
	}
}

func TestExpandVars(t *testing.T) {
	env := map[string]string{"TOKEN": "abc", "EMPTY": ""}
	getenv := func(k string) string { return env[k] }
	tests := []struct{ in, want, err string }{
		{"plain", "plain", ""},
		{"Bearer ${TOKEN}", "Bearer abc", ""},
		{"${TOKEN}-${TOKEN}", "abc-abc", ""},
		{"${MISSING:-fallback}", "fallback", ""},
		{"${EMPTY:-d}", "d", ""},
		{"${TOKEN:-unused}", "abc", ""},
		{"$TOKEN stays", "$TOKEN stays", ""},
		{"${unclosed", "${unclosed", ""},
		{"x ${MISSING} y", "", "${MISSING} is not set"},
	}
	for _, tt := range tests {
		got, err := expandVars(tt.in, getenv)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// mcpProject writes a project whose config has the echo server as demo, a
// server whose command does not exist, and an agent allowed the echo tool.
func mcpProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".cadre", "config.yaml"), fmt.Sprintf(`mcpServers:
  demo:
    command: %q
  broken:
    command: cadre-test-no-such-server
`, echoServer(t)))
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "echoer.md"),
		"---\nname: echoer\ndescription: Echoes text through the demo server.\ntools: mcp__demo__echo\n---\nYou are echoer.\n")
	return dir
}

func TestMCPList(t *testing.T) {
	dir := mcpProject(t)
	var stdout, stderr bytes.Buffer
	home := t.TempDir()
	code := Main(context.Background(), []string{"mcp", "list", "--trust-project"}, IO{Dir: dir, Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string { return map[string]string{"HOME": home}[k] }})
	if code != 1 {
		t.Errorf("exit %d with a broken server, want 1; stderr %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"broken (stdio: cadre-test-no-such-server; from .cadre/config.yaml)",
		`not available: mcp server "broken": start: command "cadre-test-no-such-server" not found`,
		"demo (stdio: ",
		"mcp__demo__chart   read-only      Draw the chart.",
		"mcp__demo__echo    asks approval  Echo the text back.",
		"mcp__demo__env     read-only      Show the server's environment.",
		"mcp__demo__lookup  read-only      Look the text up.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	stdout.Reset()
	code = Main(context.Background(), []string{"mcp", "list", "--json", "--trust-project"}, IO{Dir: dir, Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string { return map[string]string{"HOME": home}[k] }})
	var got struct {
		Servers []mcpServerInfo `json:"servers"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil || code != 1 || len(got.Servers) != 2 {
		t.Fatalf("exit %d, %v: %s", code, err, stdout.String())
	}
	if s := got.Servers[1]; s.Name != "demo" || s.Error != "" || len(s.Tools) != 4 || s.Tools[3] != (mcpToolInfo{Name: "mcp__demo__lookup", Description: "Look the text up.", ReadOnly: true}) {
		t.Errorf("demo %+v", s)
	}
	if s := got.Servers[0]; s.Name != "broken" || s.Error == "" || len(s.Tools) != 0 {
		t.Errorf("broken %+v", s)
	}

	// No servers: a hint, and success.
	empty := t.TempDir()
	writeFile(t, filepath.Join(empty, ".cadre", "config.yaml"), "model: openai:x\n")
	stdout.Reset()
	code = Main(context.Background(), []string{"mcp", "list"}, IO{Dir: empty, Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string { return map[string]string{"HOME": home}[k] }})
	if code != 0 || !strings.Contains(stdout.String(), "No MCP servers are configured") {
		t.Errorf("exit %d: %s", code, stdout.String())
	}
}

// A child allowed mcp__demo__echo calls it; the server's answer reaches the
// model; the broken server is a warning, not a failure.
func TestMCPE2EChildCallsTool(t *testing.T) {
	dir := mcpProject(t)
	var (
		mu       sync.Mutex
		problems []string
	)
	problem := func(s string) { mu.Lock(); problems = append(problems, s); mu.Unlock() }
	srv := newOpenAIServer(t, func(req *chatRequest) chatReply {
		if strings.HasPrefix(req.system(), "You are echoer.") {
			switch len(req.Messages) {
			case 2:
				if names := req.toolNames(); !slices.Contains(names, "mcp__demo__echo") || slices.Contains(names, "mcp__demo__lookup") || slices.Contains(names, "read_file") {
					problem("echoer's tools: " + strings.Join(names, ","))
				}
				return chatReply{Calls: []toolCall{{Name: "mcp__demo__echo", Args: `{"text":"hello"}`}}}
			case 4:
				last := req.Messages[len(req.Messages)-1]
				return chatReply{Calls: []toolCall{{Name: "send_agent_message", Args: fmt.Sprintf(`{"text":%q}`, "the server said: "+contentText(last.Content))}}}
			default:
				return chatReply{Text: "reported"}
			}
		}
		if len(req.Messages) == 2 {
			if !slices.Contains(req.toolNames(), "mcp__demo__echo") {
				problem("the root lacks the MCP tools: " + strings.Join(req.toolNames(), ","))
			}
			return chatReply{Calls: []toolCall{{Name: "spawn_agent", Args: `{"agent":"echoer","task":"echo hello"}`}}}
		}
		return chatReply{Text: "Answer: " + req.last()}
	})
	env := []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"}

	res := runBinary(t, dir, env, "run", "--trust-project", "--json", "--store", "none", "--approve", "all", "-m", "openai:test-model", "Echo hello through the demo server")
	if res.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", res.code, res.stderr)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if !strings.Contains(res.stderr, `warning: mcp server "broken"`) || !strings.Contains(res.stderr, "goes on without its tools") {
		t.Errorf("stderr lacks the warning about broken:\n%s", res.stderr)
	}
	evs := res.events(t)
	var toolResult string
	for _, ev := range evs {
		if ev["type"] == "tool_result" && ev["tool"] == "mcp__demo__echo" {
			toolResult, _ = ev["content"].(string)
		}
	}
	if toolResult != "echo: hello" {
		t.Errorf("tool result %q", toolResult)
	}
	if last := evs[len(evs)-1]; last["answer"] != "Answer: the server said: echo: hello" {
		t.Errorf("answer %v", last["answer"])
	}

	// With --approve none the call is denied: MCP tools mutate unless
	// they say they only read.
	res = runBinary(t, dir, env, "run", "--trust-project", "--json", "--store", "none", "--approve", "none", "-m", "openai:test-model", "Echo hello through the demo server")
	if res.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", res.code, res.stderr)
	}
	evs = res.events(t)
	if last := evs[len(evs)-1]; !strings.Contains(fmt.Sprint(last["answer"]), "was not run") {
		t.Errorf("answer with --approve none: %v", last["answer"])
	}
}

// cadre mcp serve offers the agents to an MCP client; a call runs the task
// and returns the answer, with nothing but the protocol on stdout.
func TestMCPServe(t *testing.T) {
	dir := mcpProject(t)
	srv := newOpenAIServer(t, func(req *chatRequest) chatReply {
		if strings.HasPrefix(req.system(), "You are echoer.") {
			return chatReply{Text: "echoer got: " + req.firstUser()}
		}
		return chatReply{Text: "root got: " + req.firstUser()}
	})
	c := mcp.NewClient(mcp.Config{Servers: map[string]mcp.ServerConfig{"cadre": {
		Command: cadreBinary(t),
		Args:    []string{"mcp", "serve", "--store", "none", "-m", "openai:test-model"},
		Env:     map[string]string{"HOME": t.TempDir(), "OPENAI_BASE_URL": srv.URL + "/v1", "OPENAI_API_KEY": "k", "CADRE_MODEL": ""},
		Dir:     dir,
	}}})
	defer c.Close(context.Background())
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	tools := map[string]cadre.Tool{}
	for _, tl := range c.Tools() {
		tools[tl.Spec().Name] = tl
	}
	if tools["mcp__cadre__agent_echoer"] == nil || tools["mcp__cadre__run_task"] == nil {
		t.Fatalf("tools %v", tools)
	}
	if d := tools["mcp__cadre__agent_echoer"].Spec().Description; !strings.HasPrefix(d, "Echoes text through the demo server.") {
		t.Errorf("description %q", d)
	}
	got, err := tools["mcp__cadre__agent_echoer"].Call(context.Background(), json.RawMessage(`{"task":"say hi","context":"be brief"}`))
	if err != nil || got != "echoer got: Context:\nbe brief\n\nTask:\nsay hi" {
		t.Errorf("agent_echoer: %q, %v", got, err)
	}
	got, err = tools["mcp__cadre__run_task"].Call(context.Background(), json.RawMessage(`{"task":"plan the week"}`))
	if err != nil || got != "root got: plan the week" {
		t.Errorf("run_task: %q, %v", got, err)
	}
}

// A stdio MCP server gets a minimal environment: the model calls the echo
// server's env tool (read-only, as the reference server's get-env is) and
// sees neither the API key nor variables no one named, but the variables
// the entry gives and passes through.
func TestMCPE2EServerEnvironment(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".cadre", "config.yaml"), fmt.Sprintf(`mcpServers:
  demo:
    command: %q
    env: {NAMED: named-value, NAMED_TOKEN: "${SOURCE_TOKEN}"}
    envPassthrough: [PASS_ME, "PASS_PREFIX_*"]
`, echoServer(t)))
	var (
		mu     sync.Mutex
		result string
	)
	srv := newOpenAIServer(t, func(req *chatRequest) chatReply {
		if len(req.Messages) == 2 {
			return chatReply{Calls: []toolCall{{Name: "mcp__demo__env", Args: `{}`}}}
		}
		mu.Lock()
		result = contentText(req.Messages[len(req.Messages)-1].Content)
		mu.Unlock()
		return chatReply{Text: "done"}
	})
	const key = "sk-parent-key-0123456789"
	res := runBinary(t, dir, []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=" + key,
		"PASS_ME=passed", "PASS_PREFIX_A=a", "NOT_NAMED=hidden-value", "SOURCE_TOKEN=tok-from-env-0123456789", "LANG=C.UTF-8"},
		"run", "--trust-project", "--json", "--store", "none", "--approve", "none", "-m", "openai:test-model", "show the server's environment")
	if res.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", res.code, res.stderr)
	}
	env := strings.Split(result, "\n")
	// The token the entry takes from the environment reaches the server
	// (the model sees it hidden: it is a secret of the configuration).
	for _, want := range []string{"NAMED=named-value", "NAMED_TOKEN=[REDACTED]", "PASS_ME=passed", "PASS_PREFIX_A=a", "LANG=C.UTF-8", "PATH=" + os.Getenv("PATH")} {
		if !slices.Contains(env, want) {
			t.Errorf("the server's environment lacks %s:\n%s", want, result)
		}
	}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "NAMED", "NAMED_TOKEN", "PASS_ME", "PASS_PREFIX_A", "PATH", "HOME", "LANG":
		default:
			t.Errorf("the server got %s, which nothing names", kv)
		}
	}
	if strings.Contains(result, key) || strings.Contains(result, "OPENAI_API_KEY") || strings.Contains(result, "hidden-value") {
		t.Errorf("the server got its parent's secrets:\n%s", result)
	}
}

// cadre mcp list shows the configuration and errors with credentials
// hidden.
func TestMCPListHidesCredentials(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".cadre", "config.yaml"), `mcpServers:
  docs:
    url: http://user:list-password-123@127.0.0.1:1/mcp
    headers: {Authorization: "Bearer ${DOCS_TOKEN}"}
`)
	var stdout, stderr bytes.Buffer
	env := map[string]string{"HOME": t.TempDir(), "DOCS_TOKEN": "docs-token-0123456789"}
	code := Main(context.Background(), []string{"mcp", "list", "--trust-project"}, IO{Dir: dir, Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string { return env[k] }})
	out := stdout.String() + stderr.String()
	if code != 1 || !strings.Contains(out, "docs (http: http://user:[REDACTED]@127.0.0.1:1/mcp") || !strings.Contains(out, "not available") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	if strings.Contains(out, "list-password-123") || strings.Contains(out, "docs-token-0123456789") {
		t.Errorf("the listing shows a credential:\n%s", out)
	}
}

// What a server says (a tool's description, its error) is drawn without
// the control characters that would redraw the terminal: an MCP server's
// description could clear the screen and set the window's title.
func TestMCPListDrawsNoControlCharacters(t *testing.T) {
	var out bytes.Buffer
	printMCPServers(&out, []mcpServerInfo{
		{Name: "evil", Transport: "stdio", Target: "evil-server", File: ".mcp.json",
			Tools: []mcpToolInfo{{Name: "mcp__evil__x", Description: "\x1b[2J\x1b]0;pwned\x07\x1b[31mfake prompt\r"}}},
		{Name: "down", Transport: "http", Target: "https://example.com/mcp", File: ".mcp.json", Error: "refused: \x1b]52;c;Y3VybA==\x07"},
	})
	if s := out.String(); strings.ContainsAny(s, "\x1b\x07\r") {
		t.Errorf("control characters drawn: %q", s)
	}
	if !strings.Contains(out.String(), "fake prompt") {
		t.Errorf("the description's text is missing: %q", out.String())
	}
}

// timeoutSeconds of an mcpServers entry bounds a call of the server's
// tools (10 minutes otherwise); a negative one says what to write.
func TestMCPServerTimeout(t *testing.T) {
	a := &app{io: IO{Dir: t.TempDir(), Stderr: io.Discard, Getenv: func(string) string { return "" }}}
	sc, err := a.mcpServer("slow", mcpServerConfig{Command: "slow-server", TimeoutSeconds: 3600, file: ".cadre/config.yaml"})
	if err != nil || sc.CallTimeout != time.Hour {
		t.Errorf("timeoutSeconds 3600: %v, %v", sc.CallTimeout, err)
	}
	if sc, err := a.mcpServer("plain", mcpServerConfig{Command: "server"}); err != nil || sc.CallTimeout != 0 {
		t.Errorf("no timeoutSeconds: %v, %v", sc.CallTimeout, err)
	}
	for _, n := range []int{-1, 10_000_000_000} {
		if _, err := a.mcpServer("bad", mcpServerConfig{Command: "server", TimeoutSeconds: n, file: ".cadre/config.yaml"}); err == nil || !strings.Contains(err.Error(), "1 to 604800 (the default is 600)") {
			t.Errorf("timeoutSeconds %d: %v", n, err)
		}
	}
}
