//go:build unix

package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alive reports whether the process pid exists and has not been reaped.
func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

func pidOf(t *testing.T, c *Client, name string) int {
	t.Helper()
	p := c.servers[name].proc
	if p == nil {
		t.Fatalf("server %s has no process", name)
	}
	return p.cmd.Process.Pid
}

func TestStdio(t *testing.T) {
	sc := stdioServer(t, "normal")
	sc.Env["DEMO_GREETING"] = "hej"
	sc.Args = []string{"-test.run=^$"} // ignored in server mode; shows args pass
	sc.Dir = t.TempDir()
	c := connect(t, Config{Servers: map[string]ServerConfig{"demo": sc}})
	got, err := tool(t, c, "mcp__demo__echo").Call(context.Background(), json.RawMessage(`{"text":"over stdio"}`))
	if err != nil || got != "echo: over stdio" {
		t.Fatalf("echo: %q, %v", got, err)
	}
	got, err = tool(t, c, "mcp__demo__env").Call(context.Background(), json.RawMessage(`{"name":"DEMO_GREETING"}`))
	wantDir, _ := filepath.EvalSymlinks(sc.Dir)
	if err != nil || !strings.HasPrefix(got, "DEMO_GREETING=hej wd=") || !strings.HasSuffix(got, wantDir) {
		t.Fatalf("env: %q, %v (want the variable and dir %s)", got, err, wantDir)
	}
	if info := c.Servers()[0]; info.Transport != "stdio" || !strings.HasSuffix(info.Target, "-test.run=^$") {
		t.Errorf("info %+v", info)
	}

	pid := pidOf(t, c, "demo")
	if !alive(pid) {
		t.Fatal("the server is not running")
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Error("the server's process is still there after Close")
	}
}

func TestStdioServerExitsMidRun(t *testing.T) {
	c := connect(t, Config{Servers: map[string]ServerConfig{"demo": stdioServer(t, "normal")}})
	_, err := tool(t, c, "mcp__demo__crash").Call(context.Background(), nil)
	if !errors.Is(err, ErrServerStopped) {
		t.Fatalf("error %v, want ErrServerStopped", err)
	}
	for _, want := range []string{`mcp server "demo"`, "exit status 3", "the demo server fell over", "carry on without them"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// Later calls of its other tools say the same.
	_, err = tool(t, c, "mcp__demo__echo").Call(context.Background(), json.RawMessage(`{"text":"x"}`))
	if !errors.Is(err, ErrServerStopped) || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("later call: %v", err)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestStdioServerExitsAtStart(t *testing.T) {
	c := NewClient(Config{Servers: map[string]ServerConfig{"demo": stdioServer(t, "exit")}})
	defer c.Close(context.Background())
	err := c.Connect(context.Background())
	var se *ServerError
	if !errors.As(err, &se) || se.Op != "connect" {
		t.Fatalf("error %T %v", err, err)
	}
	for _, want := range []string{"exited (exit status 2) before it answered", "DEMO_API_KEY is not set", "speaks MCP on stdin and stdout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if !strings.HasPrefix(se.Stderr, "starting the demo server\n") {
		t.Errorf("stderr %q", se.Stderr)
	}
}

func TestStdioConnectTimeout(t *testing.T) {
	c := NewClient(Config{ConnectTimeout: 300 * time.Millisecond, StopTimeout: 100 * time.Millisecond,
		Servers: map[string]ServerConfig{"mute": stdioServer(t, "silent")}})
	defer c.Close(context.Background())
	err := c.Connect(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Fatalf("error %v", err)
	}
	// The process of a server that failed is not left behind.
	if p := c.servers["mute"].proc; p == nil || !p.hasExited(0) {
		t.Error("the silent server's process is still running")
	}
}

// A server that outlives its stdin and ignores SIGTERM is killed.
func TestCloseKillsStubbornServer(t *testing.T) {
	c := connect(t, Config{StopTimeout: 100 * time.Millisecond,
		Servers: map[string]ServerConfig{"mule": stdioServer(t, "stubborn")}})
	if _, err := tool(t, c, "mcp__mule__echo").Call(context.Background(), json.RawMessage(`{"text":"x"}`)); err != nil {
		t.Fatal(err)
	}
	pid := pidOf(t, c, "mule")
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Error("the stubborn server is still there after Close")
	}
	if st := c.servers["mule"].proc.exitStatus(); st != "signal: killed" {
		t.Errorf("exit %s, want killed", st)
	}
}

// When Close's context ends, what is left is killed at once.
func TestCloseContext(t *testing.T) {
	c := connect(t, Config{StopTimeout: time.Hour,
		Servers: map[string]ServerConfig{"mule": stdioServer(t, "stubborn")}})
	pid := pidOf(t, c, "mule")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := c.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close: %v (the server ended with %s)", err, c.servers["mule"].proc.exitStatus())
	}
	if alive(pid) {
		t.Error("the server is still there after Close")
	}
}

func TestStdioBadDir(t *testing.T) {
	sc := stdioServer(t, "normal")
	sc.Dir = filepath.Join(t.TempDir(), "missing")
	c := NewClient(Config{Servers: map[string]ServerConfig{"demo": sc}})
	defer c.Close(context.Background())
	err := c.Connect(context.Background())
	if err == nil || !strings.Contains(err.Error(), "cannot enter the working directory") || !strings.Contains(err.Error(), "cwd of mcpServers.demo") {
		t.Fatalf("error %v", err)
	}
}

// Close during Connect gives up on the servers still starting and stops
// them.
func TestCloseDuringConnect(t *testing.T) {
	sc := stdioServer(t, "silent")
	ready := readyPipe(t, sc)
	c := NewClient(Config{StopTimeout: 100 * time.Millisecond, Servers: map[string]ServerConfig{"mute": sc}})
	connected := make(chan error, 1)
	go func() { connected <- c.Connect(context.Background()) }()
	select {
	case <-ready: // the server runs: Connect waits for its answer
	case err := <-connected:
		t.Fatalf("Connect returned before the server started: %v", err)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-connected; err == nil {
		t.Error("Connect succeeded with a server that never answers")
	}
	if p := c.servers["mute"].proc; p == nil || !p.hasExited(0) {
		t.Error("the server's process is still running")
	}
}

// readyPipe makes the test server of sc say, through a named pipe, when it
// has started; the channel is closed then.
func readyPipe(t *testing.T, sc ServerConfig) <-chan struct{} {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ready")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	// Opened for reading and writing, the pipe has a reader at once, so
	// the server's open does not wait; closing it ends a read in progress.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	sc.Env[readyEnv] = path
	ready := make(chan struct{})
	go func() {
		line, err := bufio.NewReader(f).ReadString('\n')
		if err == nil && line == "ready\n" {
			close(ready)
		}
	}()
	return ready
}
