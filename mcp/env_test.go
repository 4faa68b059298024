package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre/redact"
)

func TestServerEnv(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the default variables are those of Unix here")
	}
	environ := []string{
		"PATH=/usr/bin:/bin", "HOME=/home/u", "USER=u", "LANG=C.UTF-8", "LC_ALL=C", "TMPDIR=/tmp/u",
		"OPENAI_API_KEY=sk-parent", "AWS_PROFILE=dev", "AWS_REGION=eu", "GITHUB_TOKEN=ghp_x",
		"SHELL=() { :; }; echo pwned", "TERM=xterm", "NOEQUALS", "=odd",
	}
	tests := []struct {
		name string
		sc   ServerConfig
		want []string
	}{
		{"defaults", ServerConfig{}, []string{"PATH=/usr/bin:/bin", "HOME=/home/u", "USER=u", "LANG=C.UTF-8", "LC_ALL=C", "TMPDIR=/tmp/u", "TERM=xterm"}},
		{"env wins and is added", ServerConfig{Env: map[string]string{"HOME": "/srv", "GITHUB_PERSONAL_ACCESS_TOKEN": "t", "B": "2"}},
			[]string{"PATH=/usr/bin:/bin", "USER=u", "LANG=C.UTF-8", "LC_ALL=C", "TMPDIR=/tmp/u", "TERM=xterm", "B=2", "GITHUB_PERSONAL_ACCESS_TOKEN=t", "HOME=/srv"}},
		{"passthrough names and prefixes", ServerConfig{EnvPassthrough: []string{"AWS_*", "GITHUB_TOKEN", "MISSING"}},
			[]string{"PATH=/usr/bin:/bin", "HOME=/home/u", "USER=u", "LANG=C.UTF-8", "LC_ALL=C", "TMPDIR=/tmp/u", "AWS_PROFILE=dev", "AWS_REGION=eu", "GITHUB_TOKEN=ghp_x", "TERM=xterm"}},
		{"everything", ServerConfig{EnvPassthrough: []string{"*"}},
			[]string{"PATH=/usr/bin:/bin", "HOME=/home/u", "USER=u", "LANG=C.UTF-8", "LC_ALL=C", "TMPDIR=/tmp/u", "OPENAI_API_KEY=sk-parent", "AWS_PROFILE=dev", "AWS_REGION=eu", "GITHUB_TOKEN=ghp_x", "SHELL=() { :; }; echo pwned", "TERM=xterm"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := serverEnv(environ, tt.sc)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("environment (-want +got):\n%s", diff)
			}
		})
	}
	if got := serverEnv(nil, ServerConfig{}); got == nil {
		t.Error("an empty environment must be empty, not nil (which exec reads as the whole environment)")
	}
}

// A stdio server gets the minimal environment: not the API keys of its
// parent, but the variables its entry names.
func TestStdioMinimalEnvironment(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the default variables are those of Unix here")
	}
	t.Setenv("OPENAI_API_KEY", "sk-parent-secret-1")
	t.Setenv("CADRE_TEST_PASS_ONE", "passed")
	t.Setenv("CADRE_TEST_OTHER", "not passed")
	t.Setenv("HOME", "/home/tester")
	sc := stdioServer(t, "normal")
	sc.Env["NAMED"] = "named value"
	sc.EnvPassthrough = []string{"CADRE_TEST_PASS_*"}
	c := connect(t, Config{Servers: map[string]ServerConfig{"demo": sc}})
	got, err := tool(t, c, "mcp__demo__environ").Call(context.Background(), json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(got, "\n")
	for _, want := range []string{"NAMED=named value", "CADRE_TEST_PASS_ONE=passed", "HOME=/home/tester", serverModeEnv + "=normal"} {
		if !slices.Contains(env, want) {
			t.Errorf("the server lacks %s; its environment:\n%s", want, got)
		}
	}
	allowed := append(DefaultEnv(), "NAMED", "CADRE_TEST_PASS_*", serverModeEnv)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !envMatch(allowed, k) {
			t.Errorf("the server got %s, which nothing names", kv)
		}
	}
	if strings.Contains(got, "sk-parent-secret-1") || strings.Contains(got, "not passed") {
		t.Errorf("the server got its parent's secrets:\n%s", got)
	}

	// With Config.Environ, the variables come from there.
	sc2 := stdioServer(t, "normal")
	sc2.EnvPassthrough = []string{"ONLY_HERE"}
	c2 := connect(t, Config{Servers: map[string]ServerConfig{"demo": sc2}, Environ: []string{"ONLY_HERE=1", "PATH=/nowhere"}})
	got, err = tool(t, c2, "mcp__demo__environ").Call(context.Background(), json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "CADRE_MCP_TEST_SERVER=normal\nONLY_HERE=1\nPATH=/nowhere"; got != want {
		t.Errorf("environment %q, want %q", got, want)
	}
}

// The Redactor hides secrets in what tools return and in servers' errors.
func TestRedaction(t *testing.T) {
	const secret = "tok-0123456789-secret"
	r := redact.New(secret)
	c := connect(t, Config{Redactor: r, Servers: map[string]ServerConfig{"demo": inMemory(t, newTestServer())}})
	got, err := tool(t, c, "mcp__demo__echo").Call(context.Background(), json.RawMessage(`{"text":"the key is `+secret+`"}`))
	if err != nil || got != "echo: the key is [REDACTED]" {
		t.Errorf("echo: %q, %v", got, err)
	}
	_, err = tool(t, c, "mcp__demo__fail").Call(context.Background(), json.RawMessage(`{"text":"`+secret+`"}`))
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("fail: %v", err)
	}

	if runtime.GOOS == "windows" {
		return
	}
	sc := stdioServer(t, "leak")
	sc.Env["DEMO_TOKEN"] = secret
	bad := NewClient(Config{Redactor: r, Servers: map[string]ServerConfig{
		"leaky":  sc,
		"remote": {URL: "http://user:url-password@127.0.0.1:1/mcp"},
	}})
	defer bad.Close(context.Background())
	err = bad.Connect(context.Background())
	var se *ServerError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "was refused") {
		t.Fatalf("error %v", err)
	}
	for _, s := range bad.Servers() {
		for what, text := range map[string]string{"target": s.Target, "error": s.Err.Error()} {
			if strings.Contains(text, secret) || strings.Contains(text, "url-password") {
				t.Errorf("%s: the %s shows a secret: %s", s.Name, what, text)
			}
		}
	}
	if strings.Contains(se.Stderr, secret) {
		t.Errorf("Stderr shows the secret: %s", se.Stderr)
	}
}
