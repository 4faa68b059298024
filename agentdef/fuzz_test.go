package agentdef

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse: it must not panic, and what it
// returns must be consistent.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		agent("seed", "tools: Read, Bash(git *), Agent(a, b)"),
		"---\nname: a\ndescription: x: y\ntools: [Read,\n---\nbody\n",
		"\xef\xbb\xbf---\r\nname: a\r\n---\r\n",
		"    ---\n    name: a\n    description: b\n    ---\n    c\n",
		"---\n{a: [\n---\n",
		"---\na: &x [*x]\n---\n",
		"---\ndescription: |\n  text\nmode: primary\ntools: {read: false}\n---\nx",
		"---\n---\n",
		"no frontmatter",
		"",
	} {
		f.Add([]byte(s))
	}
	if files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.md")); err == nil {
		for _, p := range files {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		def, diags := Parse("fuzz.md", data, ParseOptions{MCPServers: []string{"s"}})
		for _, d := range diags {
			if d.File != "fuzz.md" || d.Message == "" || d.Line < 0 || d.Column < 0 {
				t.Fatalf("malformed diagnostic %+v", d)
			}
		}
		if def == nil {
			if len(diags) == 0 {
				t.Fatal("rejected without a diagnostic")
			}
			return
		}
		if HasErrors(diags) {
			t.Fatalf("a definition with errors:%s", diagLines(diags))
		}
		if !validName(def.Name) || def.Description == "" || strings.TrimSpace(def.Prompt) == "" {
			t.Fatalf("incomplete definition %+v", def)
		}
		// The prompt is the end of the file, byte for byte, and does not
		// start with a blank line.
		if !bytes.HasSuffix(data, []byte(def.Prompt)) || strings.HasPrefix(def.Prompt, "\n") || strings.HasPrefix(def.Prompt, "\r\n") {
			t.Fatalf("prompt %q is not the body of %q", def.Prompt, data)
		}
		// Parsing is a function of its input.
		again, diags2 := Parse("fuzz.md", data, ParseOptions{MCPServers: []string{"s"}})
		if !reflect.DeepEqual(def, again) || !reflect.DeepEqual(diags, diags2) {
			t.Fatal("a second Parse of the same bytes gave a different result")
		}
	})
}
