package cli

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzConfig parses arbitrary config files. A file is accepted or refused
// with a *ConfigError that names the file and, when it has one, a line in
// it; never a panic.
func FuzzConfig(f *testing.F) {
	f.Add([]byte("model: openai:gpt-4o-mini\nlimits:\n  maxDepth: 3\n  budgetTokens: -1\n"))
	f.Add([]byte("models:\n  local: {model: ollama:llama3.2, toolCalling: false}\nproviders:\n  openai: {baseURL: http://127.0.0.1:8000/v1, maxAttempts: 4, stallTimeout: 5m}\n"))
	f.Add([]byte("mcpServers:\n  gh:\n    command: npx\n    args: [\"-y\", \"x\"]\n    env: {A: \"${B:-c}\"}\n  docs:\n    url: https://example.com/mcp\n"))
	f.Add([]byte("approve: sometimes\n"))
	f.Add([]byte("limits: [1, 2]\n"))
	f.Add([]byte("agentsDirs: a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var fc fileConfig
		err := parseConfig("config.yaml", data, &fc)
		if err == nil {
			return
		}
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("error %v (%T) is not a *ConfigError", err, err)
		}
		if ce.File != "config.yaml" {
			t.Errorf("error names file %q", ce.File)
		}
		// Lines as YAML counts them: a lone CR breaks a line too.
		lines := bytes.Count(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")), []byte("\n")) + bytes.Count(data, []byte("\r")) - bytes.Count(data, []byte("\r\n")) + 1
		if ce.Line < 0 || ce.Line > lines {
			t.Errorf("error %q points at line %d of a %d-line file", ce.Msg, ce.Line, lines)
		}
	})
}

// A file with Windows line endings is told of at the line an editor shows.
func TestConfigErrorLineCRLF(t *testing.T) {
	var fc fileConfig
	err := parseConfig("config.yaml", []byte("# a comment\r\nmodel: openai:gpt-4o-mini\r\nlimits: 3\r\n"), &fc)
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *ConfigError", err)
	}
	if ce.Line != 3 {
		t.Errorf("got %v, want an error on line 3", err)
	}
}
