package cli

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cadre-ai/cadre"
)

// The image of an MCP tool's result reaches a model whose config says it
// takes images, as an image_url part after the tool message; a model of
// a server other than OpenAI's takes text only by default and reads that
// it was not shown the image; events show the text, not the bytes.
func TestMCPMediaE2E(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".cadre", "config.yaml"), fmt.Sprintf(`mcpServers:
  demo:
    command: %q
models:
  eyes:
    model: openai:vision-model
    input: [text, image]
`, echoServer(t)))
	type seen struct {
		tool  string   // the text of the tool message
		after string   // the text of the user message after it
		urls  []string // its image URLs
	}
	var (
		mu  sync.Mutex // the server's handlers write got, the test reads it
		got seen
	)
	srv := newOpenAIServer(t, func(req *chatRequest) chatReply {
		if req.assistantTurns() == 0 {
			return chatReply{Calls: []toolCall{{Name: "mcp__demo__chart", Args: `{}`}}}
		}
		mu.Lock()
		defer mu.Unlock()
		got = seen{}
		for i, m := range req.Messages {
			if m.Role != "tool" {
				continue
			}
			got.tool = contentText(m.Content)
			if i+1 < len(req.Messages) && req.Messages[i+1].Role == "user" {
				next := req.Messages[i+1]
				// The call's id, which the server chose, as ID.
				got.after = strings.ReplaceAll(contentText(next.Content), m.ToolCallID, "ID")
				var parts []struct {
					ImageURL struct {
						URL string `json:"url"`
					} `json:"image_url"`
				}
				_ = json.Unmarshal(next.Content, &parts)
				for _, p := range parts {
					if p.ImageURL.URL != "" {
						got.urls = append(got.urls, p.ImageURL.URL)
					}
				}
			}
		}
		return chatReply{Text: "I looked."}
	})
	env := []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"}
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR a chart" // as the echo server sends it

	for _, tt := range []struct {
		model string
		want  seen
	}{
		{"eyes", seen{
			tool:  "the chart:\n[image: image/png, 24 bytes]\n[audio: audio/wav, 24 bytes: not shown to you, since this model does not take sounds]",
			after: "The images and sounds of the result of mcp__demo__chart (tool call ID), which its text describes:",
			urls:  []string{"data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte(png))},
		}},
		{"openai:test-model", seen{
			tool: "the chart:\n[image: image/png, 24 bytes: not shown to you, since this model does not take images]\n" +
				"[audio: audio/wav, 24 bytes: not shown to you, since this model does not take sounds]",
		}},
	} {
		t.Run(tt.model, func(t *testing.T) {
			res := runBinary(t, dir, env, "run", "--trust-project", "--json", "--store", "none", "--approve", "none", "-m", tt.model, "What does the chart say?")
			if res.code != 0 {
				t.Fatalf("exit %d\nstderr: %s", res.code, res.stderr)
			}
			mu.Lock()
			sent := got
			mu.Unlock()
			if !reflect.DeepEqual(sent, tt.want) {
				t.Errorf("the model was sent\n%#v\nwant\n%#v", sent, tt.want)
			}
			for _, ev := range res.events(t) {
				if ev["type"] != "tool_result" {
					continue
				}
				if c, _ := ev["content"].(string); c != "the chart:\n[image: image/png, 24 bytes]\n[audio: audio/wav, 24 bytes]" {
					t.Errorf("tool_result event content %q", c)
				}
			}
			if strings.Contains(res.stdout, "iVBOR") {
				t.Errorf("the output holds the image's bytes:\n%s", res.stdout)
			}
		})
	}
}

// What a model takes comes from its named model, else from its provider's
// entry, else from the provider's default (nil); [text] is text only.
func TestModelInput(t *testing.T) {
	var fc fileConfig
	err := parseConfig("c.yaml", []byte(`models:
  eyes: {model: "ollama:llava", input: [text, image]}
  ears: {model: eyes, input: [audio, text, audio]}
  inherits: {model: eyes}
  blind: {model: "anthropic:claude-x", input: [text]}
  local: {model: "ollama:llama3"}
providers:
  ollama: {input: [text]}
`), &fc)
	if err != nil {
		t.Fatal(err)
	}
	m := newModels(&config{fileConfig: fc}, func(string) string { return "" })
	for name, want := range map[string][]cadre.MediaKind{
		"eyes":               {cadre.MediaImage},
		"ears":               {cadre.MediaAudio},
		"inherits":           {cadre.MediaImage},
		"blind":              {},
		"local":              {},
		"ollama:qwen":        {},
		"openai:gpt-4o":      nil,
		"anthropic:claude-y": nil,
	} {
		got := m.input(name)
		if !slices.Equal(got, want) || (got == nil) != (want == nil) {
			t.Errorf("%s takes %#v, want %#v", name, got, want)
		}
	}
}
