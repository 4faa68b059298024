package anthropic_test

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
	"github.com/cadre-ai/cadre/model/anthropic"
	"github.com/cadre-ai/cadre/model/modeltest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestConformance(t *testing.T) {
	modeltest.Run(t, modeltest.Harness{
		New: func(o modeltest.Options) cadre.Model {
			return anthropic.New(anthropic.Config{BaseURL: o.BaseURL, APIKey: o.APIKey, Model: o.Model, Retry: o.Retry, StallTimeout: o.StallTimeout})
		},
		WriteReply: writeReply,
		WriteError: writeError,
		KeyVar:     "ANTHROPIC_API_KEY",
	})
}

// sse writes Messages API stream events.
type sse struct{ w http.ResponseWriter }

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w}
}

func (s *sse) event(typ string, data map[string]any) {
	data["type"] = typ
	b, _ := json.Marshal(data)
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", typ, b)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// invalid writes a content_block_delta event whose data is data, unless
// data is empty.
func (s *sse) invalid(data string) {
	if data == "" {
		return
	}
	fmt.Fprintf(s.w, "event: content_block_delta\ndata: %s\n\n", data)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

func writeReply(w http.ResponseWriter, r modeltest.Reply) {
	s := newSSE(w)
	msg := map[string]any{
		"id": "msg_1", "type": "message", "role": "assistant", "content": []any{}, "model": r.AnsweringModel(),
		"stop_reason": nil, "stop_sequence": nil,
	}
	if !r.NoUsage {
		msg["usage"] = map[string]any{"input_tokens": r.Usage.InputTokens, "output_tokens": 1}
	}
	s.event("message_start", map[string]any{"message": msg})
	s.event("ping", map[string]any{})
	idx := 0
	if len(r.Text) > 0 {
		s.event("content_block_start", map[string]any{"index": idx, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, t := range r.Text {
			s.event("content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "text_delta", "text": t}})
		}
		if r.Cut || r.Invalid != "" {
			s.invalid(r.Invalid)
			return
		}
		if r.ErrorEvent == "" {
			s.event("content_block_stop", map[string]any{"index": idx})
			idx++
		}
	}
	if r.Invalid != "" {
		s.invalid(r.Invalid)
		return
	}
	if r.ErrorEvent != "" {
		s.event("error", map[string]any{"error": map[string]any{"type": "overloaded_error", "message": r.ErrorEvent}})
		return
	}
	if r.Cut {
		return
	}
	for _, tc := range r.ToolCalls {
		s.event("content_block_start", map[string]any{"index": idx, "content_block": map[string]any{
			"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": map[string]any{},
		}})
		for _, a := range tc.Arguments {
			s.event("content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": a}})
		}
		s.event("content_block_stop", map[string]any{"index": idx})
		idx++
	}
	stop := "end_turn"
	switch {
	case r.Truncated:
		stop = "max_tokens"
	case len(r.ToolCalls) > 0:
		stop = "tool_use"
	}
	delta := map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}}
	if !r.NoUsage {
		delta["usage"] = map[string]any{"output_tokens": r.Usage.OutputTokens}
	}
	s.event("message_delta", delta)
	s.event("message_stop", map[string]any{})
}

func errorType(status int) string {
	switch status {
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	case 500:
		return "api_error"
	}
	return "invalid_request_error"
}

func writeError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", "req_test")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": errorType(status), "message": message}})
	w.Write(b)
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
	return &cadre.Request{
		Agent:  "root/researcher.1",
		Turn:   3,
		System: "You are a researcher.",
		Messages: []cadre.Message{
			{Role: cadre.RoleUser, Content: "Find the notes."},
			{Role: cadre.RoleAssistant, Content: "Looking.", ToolCalls: []cadre.ToolCall{
				{ID: "toolu_1", Name: "read_file", Arguments: `{"path":"notes.md"}`},
				{ID: "toolu_2", Name: "list_files", Arguments: ``},
			}},
			{Role: cadre.RoleTool, ToolCallID: "toolu_1", ToolName: "read_file", Content: "no such file", IsError: true},
			{Role: cadre.RoleTool, ToolCallID: "toolu_2", ToolName: "list_files", Content: "a.md\nb.md"},
			{Role: cadre.RoleUser, Content: "<system_message origin=\"root/helper.1\">done</system_message>"},
			{Role: cadre.RoleAssistant, ToolCalls: []cadre.ToolCall{{ID: "toolu_3", Name: "read_file", Arguments: `{"path": broken`}}},
			{Role: cadre.RoleTool, ToolCallID: "toolu_3", ToolName: "read_file", Content: "Error: arguments are not valid JSON", IsError: true},
		},
		Tools: []cadre.ToolSpec{
			{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)},
			{Name: "list_files"},
		},
	}
}

// mediaConversation has tool results with images and a sound.
func mediaConversation() *cadre.Request {
	png := cadre.Media{Kind: cadre.MediaImage, MIMEType: "image/png", Data: []byte("\x89PNG\r\n\x1a\nchart")}
	wav := cadre.Media{Kind: cadre.MediaAudio, MIMEType: "audio/wav", Data: []byte("RIFF\x00\x00\x00\x00WAVEsound")}
	svg := cadre.Media{Kind: cadre.MediaImage, MIMEType: "image/svg+xml", Data: []byte("<svg/>")}
	return &cadre.Request{
		Messages: []cadre.Message{
			{Role: cadre.RoleUser, Content: "What does the chart say?"},
			{Role: cadre.RoleAssistant, ToolCalls: []cadre.ToolCall{
				{ID: "toolu_1", Name: "mcp__plot__chart", Arguments: `{}`},
				{ID: "toolu_2", Name: "mcp__plot__legend", Arguments: `{}`},
			}},
			{Role: cadre.RoleTool, ToolCallID: "toolu_1", ToolName: "mcp__plot__chart", Content: "the chart:\n" + png.Placeholder() + "\n" + wav.Placeholder(), Media: []cadre.Media{png, wav}},
			{Role: cadre.RoleTool, ToolCallID: "toolu_2", ToolName: "mcp__plot__legend", Content: svg.Placeholder(), Media: []cadre.Media{svg}},
		},
	}
}

func TestRequestBody(t *testing.T) {
	tests := []struct {
		name string
		cfg  anthropic.Config
		req  *cadre.Request
	}{
		{"conversation", anthropic.Config{APIKey: "sk-ant-test", Model: "claude-test"}, conversation()},
		{"no_tools_max_tokens", anthropic.Config{APIKey: "sk-ant-test", Model: "claude-test", MaxTokens: 2048}, &cadre.Request{Messages: []cadre.Message{{Role: cadre.RoleUser, Content: "hi"}}}},
		{"request_max_tokens", anthropic.Config{APIKey: "sk-ant-test", Model: "claude-test"}, &cadre.Request{System: "Be brief.", Messages: []cadre.Message{{Role: cadre.RoleUser, Content: ""}}, MaxTokens: 100}},
		// The image goes in the tool_result block; the sound and the SVG,
		// which the API does not take, are described.
		{"media", anthropic.Config{APIKey: "sk-ant-test", Model: "claude-test"}, mediaConversation()},
		// A model set up to take text only reads what it does not see.
		{"media_text_only", anthropic.Config{APIKey: "sk-ant-test", Model: "claude-test", Input: []cadre.MediaKind{}}, mediaConversation()},
		// An image past the request's media limit is described.
		{"media_limit", anthropic.Config{APIKey: "sk-ant-test", Model: "claude-test", MediaLimit: model.MediaLimit{MaxBytes: 10}}, mediaConversation()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var bodies [][]byte
			var headers []http.Header
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/messages" {
					t.Errorf("path = %s, want /v1/messages", r.URL.Path)
				}
				b, _ := io.ReadAll(r.Body)
				bodies = append(bodies, b)
				headers = append(headers, r.Header.Clone())
				writeReply(w, modeltest.Reply{Text: []string{"ok"}})
			}))
			defer srv.Close()
			tt.cfg.BaseURL = srv.URL + "/v1" // a trailing /v1 is tolerated
			p := anthropic.New(tt.cfg)
			if _, err := cadre.Collect(p.Stream(context.Background(), tt.req), nil); err != nil {
				t.Fatal(err)
			}
			if len(bodies) != 1 {
				t.Fatalf("server saw %d requests, want 1", len(bodies))
			}
			golden(t, "request_"+tt.name, bodies[0])
			if got := headers[0].Get("X-Api-Key"); got != tt.cfg.APIKey {
				t.Errorf("x-api-key = %q, want %q", got, tt.cfg.APIKey)
			}
			if headers[0].Get("Anthropic-Version") == "" {
				t.Error("no anthropic-version header")
			}
		})
	}
}

func TestEnvironmentIgnored(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-from-env")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "tok-from-env")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	var h http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h = r.Header.Clone()
		writeError(w, 401, "no key")
	}))
	defer srv.Close()
	p := anthropic.New(anthropic.Config{BaseURL: srv.URL, Model: "claude-test"})
	_, err := cadre.Collect(p.Stream(context.Background(), &cadre.Request{Messages: []cadre.Message{{Role: cadre.RoleUser, Content: "hi"}}}), nil)
	var me *cadre.ModelError
	if !errors.As(err, &me) || !strings.Contains(me.Hint, "set ANTHROPIC_API_KEY") {
		t.Errorf("error = %v, want a 401 whose hint says to set ANTHROPIC_API_KEY", err)
	}
	if h.Get("X-Api-Key") != "" || h.Get("Authorization") != "" {
		t.Errorf("credentials from the environment were sent: %v", h)
	}
}

func serve(t *testing.T, body string) *anthropic.Provider {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return anthropic.New(anthropic.Config{BaseURL: srv.URL, Model: "m", Retry: model.RetryPolicy{MaxAttempts: 1}})
}

func TestStreamDetails(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    *cadre.Response
		wantErr string
		wantIs  error
	}{
		{
			name: "cache tokens count as input; tool without deltas keeps its start input",
			body: `event: message_start
data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"m","usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":100,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_9","name":"now","input":{"tz":"UTC"}}}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":7}}

event: message_stop
data: {"type":"message_stop"}

`,
			want: &cadre.Response{
				Message:    cadre.Message{Role: cadre.RoleAssistant, ToolCalls: []cadre.ToolCall{{ID: "toolu_9", Name: "now", Arguments: `{"tz":"UTC"}`}}},
				Usage:      cadre.Usage{InputTokens: 115, OutputTokens: 7, CachedInputTokens: 100},
				StopReason: "tool_use",
				Model:      "m",
			},
		},
		{
			name: "input_json_delta pieces after text; usage in message_delta replaces message_start's",
			body: `event: message_start
data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"m","usage":{"input_tokens":0,"output_tokens":0}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Checking."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"read_file","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"th\": \"a.md\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_2","name":"list_files","input":{}}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":321,"cache_read_input_tokens":9,"output_tokens":45}}

event: message_stop
data: {"type":"message_stop"}

`,
			want: &cadre.Response{
				Message: cadre.Message{Role: cadre.RoleAssistant, Content: "Checking.", ToolCalls: []cadre.ToolCall{
					{ID: "toolu_1", Name: "read_file", Arguments: `{"path": "a.md"}`},
					{ID: "toolu_2", Name: "list_files", Arguments: `{}`},
				}},
				Usage:      cadre.Usage{InputTokens: 330, OutputTokens: 45, CachedInputTokens: 9},
				StopReason: "tool_use",
				Model:      "m",
			},
		},
		{
			name: "max_tokens keeps the text",
			body: `event: message_start
data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"m","usage":{"input_tokens":8,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"First, we"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":3}}

event: message_stop
data: {"type":"message_stop"}

`,
			want: &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: "First, we"}, Usage: cadre.Usage{InputTokens: 8, OutputTokens: 3}, StopReason: "max_tokens", Model: "m"},
		},
		{
			name: "max_tokens before anything",
			body: `event: message_start
data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"m","usage":{"input_tokens":8,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think at length"}}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":1024}}

event: message_stop
data: {"type":"message_stop"}

`,
			wantErr: `stop_reason "max_tokens"`, wantIs: model.ErrMaxTokens,
		},
		{
			name: "no usage anywhere: estimated",
			body: `event: message_start
data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"m"}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Twenty bytes of text"}}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn"}}

event: message_stop
data: {"type":"message_stop"}

`,
			want: &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: "Twenty bytes of text"}, Usage: cadre.Usage{InputTokens: 1, OutputTokens: 5}, StopReason: "end_turn", Model: "m"},
		},
		{
			name: "event that is not JSON",
			body: `event: message_start
data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"m","usage":{"input_tokens":1,"output_tokens":1}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_del

`,
			wantErr: "not valid JSON", wantIs: model.ErrInvalidReply,
		},
		{
			name: "delta for a block that never started",
			body: `event: message_start
data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"m","usage":{"input_tokens":1,"output_tokens":1}}}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"orphan"}}

`,
			wantErr: "never started", wantIs: cadre.ErrIncompleteStream,
		},
		{
			name: "error event",
			body: `event: message_start
data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"m","usage":{"input_tokens":1,"output_tokens":1}}}

event: error
data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}

`,
			wantErr: "Overloaded",
		},
		{
			name: "no message_stop",
			body: `event: message_start
data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"m","usage":{"input_tokens":1,"output_tokens":1}}}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}

`,
			wantErr: "message_stop",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := cadre.Collect(serve(t, tt.body).Stream(context.Background(), &cadre.Request{}), nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
					t.Errorf("error %v does not wrap %v", err, tt.wantIs)
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

func TestErrorEvents(t *testing.T) {
	const start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"
	const text = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Half\"}}\n\n"
	errEvent := func(typ, msg string) string {
		return fmt.Sprintf("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":%q,\"message\":%q}}\n\n", typ, msg)
	}
	tests := []struct {
		name         string
		first        string // the first answer; later ones succeed
		wantOK       bool
		wantRequests int
		wantStatus   int
		wantHint     string
		wantIs       error
	}{
		{"overloaded before text is retried", start + errEvent("overloaded_error", "Overloaded"), true, 2, 0, "", nil},
		{"rate limited before text is retried", start + errEvent("rate_limit_error", "Slow down"), true, 2, 0, "", nil},
		{"overloaded after text is retried", start + text + errEvent("overloaded_error", "Overloaded"), true, 2, 0, "", nil},
		{"invalid request after text is an error", start + text + errEvent("invalid_request_error", "bad block"), false, 1, 400, "rejected", cadre.ErrIncompleteStream},
		{"invalid request is not retried", start + errEvent("invalid_request_error", "prompt is too long"), false, 1, 400, "rejected the request", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n++
				if n == 1 {
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, tt.first)
					return
				}
				writeReply(w, modeltest.Reply{Text: []string{"fine"}, Usage: cadre.Usage{InputTokens: 2, OutputTokens: 1}})
			}))
			defer srv.Close()
			p := anthropic.New(anthropic.Config{BaseURL: srv.URL, Model: "m", Retry: model.RetryPolicy{Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}})
			resp, err := cadre.Collect(p.Stream(context.Background(), &cadre.Request{}), nil)
			if n != tt.wantRequests {
				t.Errorf("server saw %d requests, want %d", n, tt.wantRequests)
			}
			if tt.wantOK {
				if err != nil || resp.Message.Content != "fine" {
					t.Errorf("got %+v, %v; want the second reply", resp, err)
				}
				return
			}
			var me *cadre.ModelError
			if !errors.As(err, &me) {
				t.Fatalf("error = %v, want a *cadre.ModelError", err)
			}
			if me.Status != tt.wantStatus || !strings.Contains(me.Hint, tt.wantHint) {
				t.Errorf("got status %d hint %q, want %d and a hint containing %q", me.Status, me.Hint, tt.wantStatus, tt.wantHint)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v does not wrap %v", err, tt.wantIs)
			}
		})
	}
}

func TestOverloadedEventIsRetried(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		if n == 1 {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
			return
		}
		writeReply(w, modeltest.Reply{Text: []string{"fine"}})
	}))
	defer srv.Close()
	p := anthropic.New(anthropic.Config{BaseURL: srv.URL, Model: "m", Retry: model.RetryPolicy{Sleep: func(ctx context.Context, _ time.Duration) error { return nil }}})
	resp, err := cadre.Collect(p.Stream(context.Background(), &cadre.Request{}), nil)
	if err != nil || resp.Message.Content != "fine" || n != 2 {
		t.Errorf("got %v, %v after %d requests; want the second reply", resp, err, n)
	}
}

func TestHints(t *testing.T) {
	tests := []struct {
		status int
		key    string
		want   string
	}{
		{401, "", "set ANTHROPIC_API_KEY"},
		{401, "k", "check ANTHROPIC_API_KEY"},
		{403, "k", "check ANTHROPIC_API_KEY"},
		{404, "k", `check the model name "claude-nope"`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d key=%q", tt.status, tt.key), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				writeError(w, tt.status, "nope")
			}))
			defer srv.Close()
			p := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: tt.key, Model: "claude-nope"})
			_, err := cadre.Collect(p.Stream(context.Background(), &cadre.Request{}), nil)
			var me *cadre.ModelError
			if !errors.As(err, &me) || !strings.Contains(me.Hint, tt.want) || me.Status != tt.status {
				t.Errorf("error = %v, want status %d and a hint containing %q", err, tt.status, tt.want)
			}
		})
	}
}

// A request that sent an image and that the API refuses as invalid says
// how to have images described instead; one that sent none does not.
func TestRefusedMediaHint(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0.tool_result.content.1: image input is not supported for this model"}}`)
	}))
	t.Cleanup(srv.Close)
	p := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: "sk-ant-test", Model: "claude-text", Retry: model.RetryPolicy{MaxAttempts: 1}})
	_, err := cadre.Collect(p.Stream(context.Background(), mediaConversation()), nil)
	if err == nil || !strings.Contains(err.Error(), `the request sent an image or sound from tool results: if model "claude-text" takes text only, give it input: [text]`) {
		t.Errorf("error %v does not say how to have the image described", err)
	}
	_, err = cadre.Collect(p.Stream(context.Background(), &cadre.Request{Messages: []cadre.Message{{Role: cadre.RoleUser, Content: "hi"}}}), nil)
	if err == nil || strings.Contains(err.Error(), "input: [text]") {
		t.Errorf("error %v: want the API's refusal without the hint about images", err)
	}
}
