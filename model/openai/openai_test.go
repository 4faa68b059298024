package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model"
	"github.com/cadre-ai/cadre/model/modeltest"
	"github.com/cadre-ai/cadre/model/openai"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestConformance(t *testing.T) {
	for _, tt := range []struct{ provider, keyVar string }{{"openai", "OPENAI_API_KEY"}, {"ollama", "OLLAMA_API_KEY"}} {
		t.Run(tt.provider, func(t *testing.T) {
			modeltest.Run(t, modeltest.Harness{
				New: func(o modeltest.Options) cadre.Model {
					return openai.New(openai.Config{BaseURL: o.BaseURL + "/v1", APIKey: o.APIKey, Model: o.Model, Retry: o.Retry, StallTimeout: o.StallTimeout, Provider: tt.provider})
				},
				WriteReply: writeReply,
				WriteError: writeError,
				KeyVar:     tt.keyVar,
			})
		})
	}
}

// sse writes chat completion chunks the way the API streams them.
type sse struct {
	w     http.ResponseWriter
	n     int
	model string // the model the chunks name; gpt-test when empty
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w}
}

func (s *sse) raw(data string) {
	fmt.Fprintf(s.w, "data: %s\n\n", data)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *sse) chunk(choices any, usage any) {
	s.n++
	m := s.model
	if m == "" {
		m = "gpt-test"
	}
	c := map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000,
		"model": m, "choices": choices,
	}
	if usage != nil {
		c["usage"] = usage
	}
	b, _ := json.Marshal(c)
	s.raw(string(b))
}

func (s *sse) delta(delta map[string]any, finish any) {
	s.chunk([]any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}, nil)
}

func writeReply(w http.ResponseWriter, r modeltest.Reply) {
	s := newSSE(w)
	s.model = r.AnsweringModel()
	s.delta(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, t := range r.Text {
		s.delta(map[string]any{"content": t}, nil)
	}
	if r.Invalid != "" {
		s.raw(r.Invalid)
		return
	}
	if r.ErrorEvent != "" {
		s.raw(fmt.Sprintf(`{"error":{"message":%q,"type":"server_error","param":null,"code":null}}`, r.ErrorEvent))
		return
	}
	if r.Cut {
		return
	}
	for i, tc := range r.ToolCalls {
		s.delta(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""},
		}}}, nil)
		for _, a := range tc.Arguments {
			s.delta(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": a},
			}}}, nil)
		}
	}
	finish := "stop"
	switch {
	case r.Truncated:
		finish = "length"
	case len(r.ToolCalls) > 0:
		finish = "tool_calls"
	}
	s.delta(map[string]any{}, finish)
	if !r.NoUsage {
		s.chunk([]any{}, map[string]any{
			"prompt_tokens": r.Usage.InputTokens, "completion_tokens": r.Usage.OutputTokens,
			"total_tokens": r.Usage.Total(),
		})
	}
	s.raw("[DONE]")
}

func writeError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": message, "type": "invalid_request_error", "param": nil, "code": nil,
	}})
	w.Write(b)
}

// capture answers every request with a short reply and keeps the bodies.
func capture(t *testing.T) (*httptest.Server, *[]http.Header, *[][]byte) {
	t.Helper()
	var headers []http.Header
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			t.Errorf("path = %s, want /v1/chat/completions", r.URL.Path)
		}
		b, _ := io.ReadAll(r.Body)
		headers = append(headers, r.Header.Clone())
		bodies = append(bodies, b)
		writeReply(w, modeltest.Reply{Text: []string{"ok"}})
	}))
	t.Cleanup(srv.Close)
	return srv, &headers, &bodies
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, got)
	}
	pretty, _ := json.MarshalIndent(v, "", "  ")
	pretty = append(pretty, '\n')
	path := filepath.Join("testdata", name+".json")
	if *update {
		if err := os.WriteFile(path, pretty, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(pretty)); diff != "" {
		t.Errorf("request body differs from %s (-want +got):\n%s", path, diff)
	}
}

func conversation() *cadre.Request {
	temp := 0.2
	return &cadre.Request{
		Agent:  "root/researcher.1",
		Turn:   3,
		System: "You are a researcher.",
		Messages: []cadre.Message{
			{Role: cadre.RoleUser, Content: "Find the notes."},
			{Role: cadre.RoleAssistant, Content: "Looking.", ToolCalls: []cadre.ToolCall{
				{ID: "call_1", Name: "read_file", Arguments: `{"path":"notes.md"}`},
				{ID: "call_2", Name: "list_files", Arguments: ``},
			}},
			{Role: cadre.RoleTool, ToolCallID: "call_1", ToolName: "read_file", Content: "no such file", IsError: true},
			{Role: cadre.RoleTool, ToolCallID: "call_2", ToolName: "list_files", Content: "a.md\nb.md"},
			{Role: cadre.RoleAssistant, ToolCalls: []cadre.ToolCall{{ID: "call_3", Name: "read_file", Arguments: `{"path": broken`}}},
			{Role: cadre.RoleTool, ToolCallID: "call_3", ToolName: "read_file", Content: "Error: arguments are not valid JSON", IsError: true},
		},
		Tools: []cadre.ToolSpec{
			{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "list_files", Description: "List files."},
		},
		MaxTokens:   1000,
		Temperature: &temp,
	}
}

func TestRequestBody(t *testing.T) {
	tests := []struct {
		name     string
		provider string
		key      string
		req      *cadre.Request
	}{
		{"conversation", "openai", "sk-test", conversation()},
		{"no_tools", "openai", "sk-test", &cadre.Request{Messages: []cadre.Message{{Role: cadre.RoleUser, Content: "hi"}}}},
		{"ollama_no_key", "ollama", "", &cadre.Request{System: "Be brief.", Messages: []cadre.Message{{Role: cadre.RoleUser, Content: "hi"}}, MaxTokens: 50}},
		// A server other than OpenAI's is taken to be text only by default.
		{"media_text_only", "ollama", "", mediaConversation()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, headers, bodies := capture(t)
			p := openai.New(openai.Config{BaseURL: srv.URL + "/v1/", APIKey: tt.key, Model: "gpt-test", Provider: tt.provider})
			if _, err := cadre.Collect(p.Stream(context.Background(), tt.req), nil); err != nil {
				t.Fatal(err)
			}
			if len(*bodies) != 1 {
				t.Fatalf("server saw %d requests, want 1", len(*bodies))
			}
			golden(t, "request_"+tt.name, (*bodies)[0])
			auth := (*headers)[0].Get("Authorization")
			wantAuth := ""
			if tt.key != "" {
				wantAuth = "Bearer " + tt.key
			}
			if auth != wantAuth {
				t.Errorf("Authorization = %q, want %q", auth, wantAuth)
			}
		})
	}
}

// mediaConversation has two tool results with images and sounds, then an
// inbox message, then a third result with an image.
func mediaConversation() *cadre.Request {
	png := cadre.Media{Kind: cadre.MediaImage, MIMEType: "image/png", Data: []byte("\x89PNG\r\n\x1a\nchart")}
	wav := cadre.Media{Kind: cadre.MediaAudio, MIMEType: "audio/wav", Data: []byte("RIFF\x00\x00\x00\x00WAVEsound")}
	mp3 := cadre.Media{Kind: cadre.MediaAudio, MIMEType: "audio/mpeg", Data: []byte("ID3\x04tune")}
	ogg := cadre.Media{Kind: cadre.MediaAudio, MIMEType: "audio/ogg", Data: []byte("OggSnoise")}
	jpeg := cadre.Media{Kind: cadre.MediaImage, MIMEType: "image/jpeg", Data: []byte("\xff\xd8\xffphoto")}
	return &cadre.Request{
		Messages: []cadre.Message{
			{Role: cadre.RoleUser, Content: "What does the chart say?"},
			{Role: cadre.RoleAssistant, ToolCalls: []cadre.ToolCall{
				{ID: "call_1", Name: "mcp__plot__chart", Arguments: `{}`},
				{ID: "call_2", Name: "read_file", Arguments: `{"path":"a.md"}`},
				{ID: "call_3", Name: "mcp__plot__tunes", Arguments: `{}`},
			}},
			{Role: cadre.RoleTool, ToolCallID: "call_1", ToolName: "mcp__plot__chart", Content: "the chart:\n" + png.Placeholder() + "\n" + wav.Placeholder(), Media: []cadre.Media{png, wav}},
			{Role: cadre.RoleTool, ToolCallID: "call_2", ToolName: "read_file", Content: "# A"},
			{Role: cadre.RoleTool, ToolCallID: "call_3", ToolName: "mcp__plot__tunes", Content: mp3.Placeholder() + "\n" + ogg.Placeholder(), Media: []cadre.Media{mp3, ogg}},
			{Role: cadre.RoleUser, Content: "<system_message>a note</system_message>"},
			{Role: cadre.RoleAssistant, ToolCalls: []cadre.ToolCall{{ID: "call_4", Name: "mcp__cam__snap", Arguments: `{}`}}},
			{Role: cadre.RoleTool, ToolCallID: "call_4", ToolName: "mcp__cam__snap", Content: jpeg.Placeholder(), Media: []cadre.Media{jpeg}},
		},
	}
}

// The images and sounds of tool results follow the tool messages of their
// reply in one user message, for a model that takes them; OpenAI's own
// API is taken to take images, and no sound unless Config.Input says so.
func TestRequestMedia(t *testing.T) {
	for _, tt := range []struct {
		name  string
		input []cadre.MediaKind
		limit model.MediaLimit
	}{
		{"openai_default", nil, model.MediaLimit{}},
		{"images_and_sounds", []cadre.MediaKind{cadre.MediaImage, cadre.MediaAudio}, model.MediaLimit{}},
		// The two latest items are sent; the chart's image and sound are
		// described instead.
		{"limit", []cadre.MediaKind{cadre.MediaImage, cadre.MediaAudio}, model.MediaLimit{MaxItems: 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, _, bodies := capture(t)
			// The client reaches the test server for api.openai.com.
			hc := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
				r.URL.Scheme, r.URL.Host = "http", srv.Listener.Addr().String()
				return http.DefaultTransport.RoundTrip(r)
			})}
			p := openai.New(openai.Config{APIKey: "sk-test", Model: "gpt-test", HTTPClient: hc, Input: tt.input, MediaLimit: tt.limit})
			if _, err := cadre.Collect(p.Stream(context.Background(), mediaConversation()), nil); err != nil {
				t.Fatal(err)
			}
			if len(*bodies) != 1 {
				t.Fatalf("server saw %d requests, want 1", len(*bodies))
			}
			golden(t, "request_media_"+tt.name, (*bodies)[0])
		})
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestEnvironmentIgnored(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/unused")
	srv, headers, _ := capture(t)
	p := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "m", Provider: "ollama"})
	if _, err := cadre.Collect(p.Stream(context.Background(), &cadre.Request{Messages: []cadre.Message{{Role: cadre.RoleUser, Content: "hi"}}}), nil); err != nil {
		t.Fatal(err)
	}
	h := (*headers)[0]
	if h.Get("Authorization") != "" || h.Get("OpenAI-Organization") != "" {
		t.Errorf("headers from the environment were sent: %v", h)
	}
}

// stream serves a fixed SSE body.
func stream(t *testing.T, body string) *openai.Provider {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "m", Retry: model.RetryPolicy{MaxAttempts: 1}})
}

func TestToolCallAssembly(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []cadre.ToolCall
	}{
		{
			name: "interleaved by index",
			body: `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c0","function":{"name":"a","arguments":"{\"x\""}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c1","function":{"name":"b","arguments":"{\"y\":"}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}},{"index":1,"function":{"arguments":"2}"}}]}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: [DONE]

`,
			want: []cadre.ToolCall{{ID: "c0", Name: "a", Arguments: `{"x":1}`}, {ID: "c1", Name: "b", Arguments: `{"y":2}`}},
		},
		{
			name: "no index, whole calls",
			body: `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"c0","function":{"name":"a","arguments":"{}"}},{"id":"c1","function":{"name":"b","arguments":"{\"k\":true}"}}]}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

`,
			want: []cadre.ToolCall{{ID: "c0", Name: "a", Arguments: `{}`}, {ID: "c1", Name: "b", Arguments: `{"k":true}`}},
		},
		{
			name: "invalid JSON passed through",
			body: `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c0","function":{"name":"a","arguments":"{\"path\": oops"}}]}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

`,
			want: []cadre.ToolCall{{ID: "c0", Name: "a", Arguments: `{"path": oops`}},
		},
		{
			name: "first piece without id and with empty arguments",
			body: `data: {"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"type":"function","function":{"name":"read_file","arguments":""}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a.md\"}"}}]}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

`,
			want: []cadre.ToolCall{{ID: "call_0", Name: "read_file", Arguments: `{"path":"a.md"}`}},
		},
		{
			name: "id arrives after the first piece",
			body: `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"a","arguments":""}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"late_id","function":{"arguments":"{}"}}]}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

`,
			want: []cadre.ToolCall{{ID: "late_id", Name: "a", Arguments: `{}`}},
		},
		{
			name: "id and name repeated in every piece",
			body: `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"a","arguments":"{\"k\""}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"a","arguments":":1}"}}]}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

`,
			want: []cadre.ToolCall{{ID: "c0", Name: "a", Arguments: `{"k":1}`}},
		},
		{
			name: "three calls interleaved, indexes out of order",
			body: `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"id":"c2","function":{"name":"z","arguments":"{\"n\":"}},{"index":0,"id":"c0","function":{"name":"x","arguments":""}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c1","function":{"name":"y","arguments":"{}"}},{"index":2,"function":{"arguments":"3}"}},{"index":0,"function":{"arguments":"{\"n\":1}"}}]}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

`,
			want: []cadre.ToolCall{{ID: "c2", Name: "z", Arguments: `{"n":3}`}, {ID: "c0", Name: "x", Arguments: `{"n":1}`}, {ID: "c1", Name: "y", Arguments: `{}`}},
		},
		{
			name: "every call numbered 0, told apart by id",
			body: `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c0","function":{"name":"a","arguments":"{\"n\":"}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"b","arguments":"{\"n\":"}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"2}"}}]}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

`,
			want: []cadre.ToolCall{{ID: "c0", Name: "a", Arguments: `{"n":1}`}, {ID: "c1", Name: "b", Arguments: `{"n":2}`}},
		},
		{
			name: "no index and no id, whole calls",
			body: `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"read_file","arguments":"{\"path\":\"a\"}"}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"read_file","arguments":"{\"path\":\"b\"}"}},{"function":{"name":"list_files","arguments":"{}"}}]}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

`,
			want: []cadre.ToolCall{{ID: "call_0", Name: "read_file", Arguments: `{"path":"a"}`}, {ID: "call_1", Name: "read_file", Arguments: `{"path":"b"}`}, {ID: "call_2", Name: "list_files", Arguments: `{}`}},
		},
		{
			name: "empty arguments and missing id",
			body: `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"now"}}]}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

`,
			want: []cadre.ToolCall{{ID: "call_0", Name: "now", Arguments: `{}`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := cadre.Collect(stream(t, tt.body).Stream(context.Background(), &cadre.Request{}), nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, resp.Message.ToolCalls); diff != "" {
				t.Errorf("tool calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUsage(t *testing.T) {
	req := &cadre.Request{Messages: []cadre.Message{{Role: cadre.RoleUser, Content: strings.Repeat("q", 40)}}}
	const text = `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Twenty bytes of text"}}]}

`
	tests := []struct {
		name string
		end  string
		want cadre.Usage
	}{
		{
			name: "separate last chunk, as with include_usage",
			end: `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}

data: {"choices":[],"usage":{"prompt_tokens":31,"completion_tokens":5,"total_tokens":36}}

data: [DONE]

`,
			want: cadre.Usage{InputTokens: 31, OutputTokens: 5},
		},
		{
			name: "in the finishing chunk",
			end: `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":4,"total_tokens":16}}

data: [DONE]

`,
			want: cadre.Usage{InputTokens: 12, OutputTokens: 4},
		},
		{
			name: "running totals, the last one wins",
			end: `data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":1}}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":6}}

`,
			want: cadre.Usage{InputTokens: 12, OutputTokens: 6},
		},
		{
			name: "cached prompt tokens are counted apart",
			end: `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1200,"completion_tokens":4,"total_tokens":1204,"prompt_tokens_details":{"cached_tokens":1024}}}

data: [DONE]

`,
			want: cadre.Usage{InputTokens: 1200, OutputTokens: 4, CachedInputTokens: 1024},
		},
		{
			name: "never sent: estimated",
			end: `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

data: [DONE]

`,
			want: cadre.Usage{InputTokens: 10, OutputTokens: 5},
		},
		{
			name: "zeros: estimated",
			end: `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

data: {"choices":[],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}

`,
			want: cadre.Usage{InputTokens: 10, OutputTokens: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := cadre.Collect(stream(t, text+tt.end).Stream(context.Background(), req), nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, resp.Usage); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIncludeUsageRequested(t *testing.T) {
	srv, _, bodies := capture(t)
	p := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "m", Provider: "ollama"})
	if _, err := cadre.Collect(p.Stream(context.Background(), &cadre.Request{Messages: []cadre.Message{{Role: cadre.RoleUser, Content: "hi"}}}), nil); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Stream        bool `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.Unmarshal((*bodies)[0], &body); err != nil {
		t.Fatal(err)
	}
	if !body.Stream || !body.StreamOptions.IncludeUsage {
		t.Errorf("request body %s does not ask for a stream with usage", (*bodies)[0])
	}
}

func TestFinishReason(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    *cadre.Response
		wantErr string
		wantIs  error
	}{
		{
			name: "length keeps the text",
			body: `data: {"choices":[{"index":0,"delta":{"content":"The list goes on and"}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":9,"completion_tokens":5}}

`,
			want: &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: "The list goes on and"}, Usage: cadre.Usage{InputTokens: 9, OutputTokens: 5}, StopReason: "length"},
		},
		{
			name: "length inside a tool call passes the broken arguments on",
			body: `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c0","function":{"name":"write_file","arguments":"{\"text\": \"once upon"}}]}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":9,"completion_tokens":5}}

`,
			want: &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, ToolCalls: []cadre.ToolCall{{ID: "c0", Name: "write_file", Arguments: `{"text": "once upon`}}}, Usage: cadre.Usage{InputTokens: 9, OutputTokens: 5}, StopReason: "length"},
		},
		{
			name: "length before anything",
			body: `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":9,"completion_tokens":500}}

`,
			wantErr: `finish_reason "length"`, wantIs: model.ErrMaxTokens,
		},
		{
			name: "refusal is the reply's text",
			body: `data: {"choices":[{"index":0,"delta":{"refusal":"I can't help with that."}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":6}}

`,
			want: &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: "I can't help with that."}, Usage: cadre.Usage{InputTokens: 9, OutputTokens: 6}, StopReason: "stop"},
		},
		{
			name: "other choices are ignored",
			body: `data: {"choices":[{"index":1,"delta":{"content":"second choice"}},{"index":0,"delta":{"content":"first"}}]}

data: {"choices":[{"index":1,"delta":{},"finish_reason":"stop"}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":1}}

`,
			want: &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: "first"}, Usage: cadre.Usage{InputTokens: 9, OutputTokens: 1}, StopReason: "stop"},
		},
		{
			name: "no finish_reason before the end",
			body: `data: {"choices":[{"index":0,"delta":{"content":"all of it?"}}]}

data: [DONE]

`,
			wantErr: "without a finish_reason", wantIs: cadre.ErrIncompleteStream,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := cadre.Collect(stream(t, tt.body).Stream(context.Background(), &cadre.Request{}), nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, tt.wantIs) {
					t.Fatalf("got %+v, %v; want an error containing %q that wraps %v", resp, err, tt.wantErr, tt.wantIs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, resp); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMalformedStream(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		w.Header().Set("Content-Type", "text/event-stream")
		if n == 1 {
			io.WriteString(w, "data: {\"choices\": [oops\n\n")
			return
		}
		writeReply(w, modeltest.Reply{Text: []string{"fine"}})
	}))
	defer srv.Close()
	noWait := func(ctx context.Context, _ time.Duration) error { return ctx.Err() }

	p := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "m", Retry: model.RetryPolicy{MaxAttempts: 1}})
	_, err := cadre.Collect(p.Stream(context.Background(), &cadre.Request{}), nil)
	if !errors.Is(err, model.ErrInvalidReply) || !strings.Contains(err.Error(), "not valid JSON") || !strings.HasPrefix(err.Error(), "openai: ") {
		t.Errorf("error = %v, want one naming the provider and saying an event is not valid JSON", err)
	}

	n = 0
	p = openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "m", Retry: model.RetryPolicy{MaxAttempts: 2, Sleep: noWait}})
	resp, err := cadre.Collect(p.Stream(context.Background(), &cadre.Request{}), nil)
	if err != nil || resp.Message.Content != "fine" || n != 2 {
		t.Errorf("got %+v, %v after %d requests; want the second reply after 2", resp, err, n)
	}
}

func TestStreamErrorEvents(t *testing.T) {
	tests := []struct {
		name       string
		event      string
		wantStatus int
		want       []string
		wantNot    []string
	}{
		{"OpenAI shape", `{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`, 0, []string{"The server had an error", "reported an error while streaming"}, []string{"{", "could not reach"}},
		{"HTTP status in code", `{"error":{"message":"upstream unavailable","code":502}}`, 502, []string{"upstream unavailable", "kept failing"}, []string{"{"}},
		{"bare string", `{"error":"model crashed"}`, 0, []string{"model crashed"}, []string{"{"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := stream(t, "data: "+tt.event+"\n\n")
			_, err := cadre.Collect(p.Stream(context.Background(), &cadre.Request{}), nil)
			var me *cadre.ModelError
			if !errors.As(err, &me) {
				t.Fatalf("error = %v, want a *cadre.ModelError", err)
			}
			if me.Status != tt.wantStatus {
				t.Errorf("Status = %d, want %d", me.Status, tt.wantStatus)
			}
			for _, w := range tt.want {
				if !strings.Contains(me.Error(), w) {
					t.Errorf("error %q lacks %q", me, w)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(me.Error(), w) {
					t.Errorf("error %q contains %q", me, w)
				}
			}
		})
	}
}

func TestNotJSONErrorBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "404 page not found", http.StatusNotFound)
	}))
	defer srv.Close()
	p := openai.New(openai.Config{BaseURL: srv.URL, Model: "qwen3", Provider: "openai"})
	_, err := cadre.Collect(p.Stream(context.Background(), &cadre.Request{}), nil)
	var me *cadre.ModelError
	if !errors.As(err, &me) || me.Status != 404 || !strings.Contains(me.Error(), "404 page not found") || !strings.Contains(me.Hint, "/v1") {
		t.Errorf("error = %v, want a 404 quoting the server's text and hinting at /v1 in the base URL", err)
	}
}

func TestStreamErrorEvent(t *testing.T) {
	p := stream(t, `data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}

data: {"error":{"message":"model overloaded","type":"server_error"}}

`)
	_, err := cadre.Collect(p.Stream(context.Background(), &cadre.Request{}), nil)
	if !errors.Is(err, cadre.ErrIncompleteStream) || !strings.Contains(err.Error(), "model overloaded") {
		t.Errorf("error = %v, want an incomplete stream naming the server's message", err)
	}
}

func TestHints(t *testing.T) {
	tests := []struct {
		name, provider, key string
		status              int
		want                string
	}{
		{"openai no key", "openai", "", 401, "set OPENAI_API_KEY"},
		{"openai bad key", "openai", "sk-x", 401, "check OPENAI_API_KEY"},
		{"openai forbidden", "openai", "sk-x", 403, "check OPENAI_API_KEY"},
		{"openai model", "openai", "sk-x", 404, `check the model name "gpt-test"`},
		{"ollama model", "ollama", "", 404, "ollama pull gpt-test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				writeError(w, tt.status, "nope")
			}))
			defer srv.Close()
			p := openai.New(openai.Config{BaseURL: srv.URL, APIKey: tt.key, Model: "gpt-test", Provider: tt.provider})
			_, err := cadre.Collect(p.Stream(context.Background(), &cadre.Request{}), nil)
			var me *cadre.ModelError
			if !errors.As(err, &me) {
				t.Fatalf("error %v is not a *cadre.ModelError", err)
			}
			if !strings.Contains(me.Hint, tt.want) || me.Provider != tt.provider {
				t.Errorf("got provider %q hint %q, want provider %q and a hint containing %q", me.Provider, me.Hint, tt.provider, tt.want)
			}
			if !strings.Contains(me.Error(), "nope") {
				t.Errorf("error %q lacks the server's message", me.Error())
			}
		})
	}
}

func TestOllamaNotRunning(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	p := openai.New(openai.Config{BaseURL: url + "/v1", Model: "llama3.2", Provider: "ollama", Retry: model.RetryPolicy{MaxAttempts: 2, Sleep: func(context.Context, time.Duration) error { return nil }}})
	_, err := cadre.Collect(p.Stream(context.Background(), &cadre.Request{}), nil)
	var me *cadre.ModelError
	if !errors.As(err, &me) || !strings.Contains(me.Hint, "ollama serve") || !strings.Contains(me.Error(), "2 attempts") {
		t.Errorf("error = %v, want one saying 2 attempts with a hint to start Ollama", err)
	}
}

func TestBadToolSchema(t *testing.T) {
	p := openai.New(openai.Config{BaseURL: "http://127.0.0.1:1", Model: "m"})
	_, err := cadre.Collect(p.Stream(context.Background(), &cadre.Request{Tools: []cadre.ToolSpec{{Name: "t", Parameters: json.RawMessage(`[1]`)}}}), nil)
	if err == nil || !strings.Contains(err.Error(), `tool "t"`) {
		t.Errorf("error = %v, want one naming the tool", err)
	}
}

// A request that sent images and that the server refuses as invalid says
// how to have them described instead; one that sent none does not.
func TestRefusedMediaHint(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"Invalid content type. image_url is only supported by certain models.","type":"invalid_request_error","param":"messages.[4].content.[1].type","code":null}}`)
	}))
	t.Cleanup(srv.Close)
	p := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "text-only", Input: []cadre.MediaKind{cadre.MediaImage}, Retry: model.RetryPolicy{MaxAttempts: 1}})
	_, err := cadre.Collect(p.Stream(context.Background(), mediaConversation()), nil)
	if err == nil || !strings.Contains(err.Error(), `the request sent 2 images or sounds from tool results: if model "text-only" takes text only, give it input: [text]`) {
		t.Errorf("error %v does not say how to have the images described", err)
	}
	_, err = cadre.Collect(p.Stream(context.Background(), &cadre.Request{Messages: []cadre.Message{{Role: cadre.RoleUser, Content: "hi"}}}), nil)
	if err == nil || strings.Contains(err.Error(), "input: [text]") {
		t.Errorf("error %v: want the server's refusal without the hint about images", err)
	}
}
