package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// chatRequest is the part of an OpenAI chat completions request the tests read.
type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// text returns a message's content whether it was sent as a string or parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func (r *chatRequest) system() string {
	for _, m := range r.Messages {
		if m.Role == "system" || m.Role == "developer" {
			return contentText(m.Content)
		}
	}
	return ""
}

func (r *chatRequest) last() string {
	if len(r.Messages) == 0 {
		return ""
	}
	return contentText(r.Messages[len(r.Messages)-1].Content)
}

func (r *chatRequest) firstUser() string {
	for _, m := range r.Messages {
		if m.Role == "user" {
			return contentText(m.Content)
		}
	}
	return ""
}

func (r *chatRequest) toolNames() []string {
	var out []string
	for _, t := range r.Tools {
		out = append(out, t.Function.Name)
	}
	return out
}

type toolCall struct {
	Name string
	Args string
}

// chatReply is what the fake server answers.
type chatReply struct {
	Text  string
	Calls []toolCall
}

// openaiServer is an OpenAI-compatible server that streams replies in the
// real wire format: text in several chunks, tool-call arguments split across
// chunks, usage in a final chunk.
type openaiServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []chatRequest
}

func newOpenAIServer(t *testing.T, answer func(req *chatRequest) chatReply) *openaiServer {
	t.Helper()
	s := &openaiServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		var req chatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.requests = append(s.requests, req)
		n := len(s.requests)
		s.mu.Unlock()
		rep := answer(&req)
		writeChatStream(w, fmt.Sprintf("chatcmpl-%d", n), req.Model, rep)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *openaiServer) all() []chatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]chatRequest(nil), s.requests...)
}

func writeChatStream(w http.ResponseWriter, id, model string, rep chatReply) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, part := range splitN(rep.Text, 3) {
		send(chunk(map[string]any{"content": part}, nil))
	}
	for i, c := range rep.Calls {
		send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": fmt.Sprintf("call_%s_%d", id, i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil))
		for _, part := range splitN(c.Args, 3) {
			send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": part}}}}, nil))
		}
	}
	finish := "stop"
	if len(rep.Calls) > 0 {
		finish = "tool_calls"
	}
	send(chunk(map[string]any{}, finish))
	send(map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1, "model": model, "choices": []any{},
		"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// splitN cuts s into up to n pieces of similar size (none empty).
func splitN(s string, n int) []string {
	if s == "" {
		return nil
	}
	r := []rune(s)
	size := (len(r) + n - 1) / n
	var out []string
	for len(r) > 0 {
		k := min(size, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// cadreBinary builds the cadre binary once per test process.
func cadreBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "cadre-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "cadre")
		out, err := exec.Command("go", "build", "-race", "-o", binPath, "github.com/cadre-ai/cadre/cmd/cadre").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// cliResult is what one run of the binary produced.
type cliResult struct {
	stdout, stderr string
	code           int
}

func (c cliResult) events(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(c.stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("stdout line is not JSON: %q: %v", sc.Text(), err)
		}
		out = append(out, ev)
	}
	return out
}

// testHomes are the home folders of the tests running the binary, one a
// test: the commands of one test are one user's (whose key marks the runs
// it records, see runmark.go).
var testHomes sync.Map // *testing.T -> string

// testHome is the test's home folder, made on first use.
func testHome(t *testing.T) string {
	if h, ok := testHomes.Load(t); ok {
		return h.(string)
	}
	h := t.TempDir()
	testHomes.Store(t, h)
	t.Cleanup(func() { testHomes.Delete(t) })
	return h
}

func runBinary(t *testing.T, dir string, env []string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(cadreBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"HOME=" + testHome(t), "PATH=" + os.Getenv("PATH")}, env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	cmd.Stdin = io.LimitReader(nil, 0)
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return cliResult{stdout: so.String(), stderr: se.String(), code: code}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMain removes the binary cadreBinary built.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}
