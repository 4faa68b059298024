package agentdef_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/cadre-ai/cadre/agentdef"
)

// FuzzParse feeds arbitrary files to the parser, frontmatter and YAML
// recovery included. It must never panic, every diagnostic must point into
// the file, and an accepted file must have a name.
func FuzzParse(f *testing.F) {
	md, _ := filepath.Glob("testdata/golden/*.md")
	agent, _ := filepath.Glob("testdata/golden/*.agent")
	for _, s := range append(md, agent...) {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("---\nname: a\ndescription: b\ntools: Read, Bash(git *)\n---\nbody"))
	f.Add([]byte("---\nname: a\ndescription: it: has: colons\ncategory: x\nrelated:\n  - one\n---\nbody"))
	f.Add([]byte("# Title\n\n```yaml\nname: a\ndescription: b\n```\nbody"))
	f.Add([]byte("---\r\nname: a\r\ndescription: b\r\n---\r\nbody\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		def, diags := agentdef.Parse("fuzz.md", data, agentdef.ParseOptions{NameFromFile: true})
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, d := range diags {
			if d.Line < 0 || d.Line > lines {
				t.Errorf("diagnostic %v points at line %d of a %d-line file", d, d.Line, lines)
			}
			if d.Message == "" {
				t.Errorf("diagnostic without a message: %+v", d)
			}
		}
		if def != nil && def.Name == "" {
			t.Errorf("accepted a definition without a name")
		}
		if def == nil && !agentdef.HasErrors(diags) && len(diags) == 0 {
			// A file that is not an agent (no frontmatter) may be skipped
			// silently; that is fine, but it must not be half-accepted.
			return
		}
	})
}
