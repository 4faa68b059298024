package agentdef

import (
	"strings"
	"testing"
)

// A SKILL.md of any bytes gives a skill or diagnostics naming the file,
// never a panic; a skill has a valid name, a description and instructions.
func FuzzParseSkill(f *testing.F) {
	for _, s := range []string{
		"---\nname: pdf\ndescription: Fill PDF forms.\nallowed-tools: Read, Bash(python *)\n---\nUse fill.py.\n",
		"---\r\nname: x\r\ndescription: y\r\nallowed-tools: [a, b]\r\n---\r\nbody\r\n",
		"---\nname: Bad Name\ndescription: x\n---\nb\n",
		"---\nname: a\ndescription: it says: two colons\n---\nb\n",
		"# Title\n```yaml\nname: a\ndescription: b\n```\nbody\n",
		"---\nname: a\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sk, diags := ParseSkill("x/SKILL.md", data)
		for _, d := range diags {
			if d.File != "x/SKILL.md" || strings.TrimSpace(d.Message) == "" {
				t.Fatalf("a diagnostic without its file or reason: %+v", d)
			}
		}
		if sk == nil {
			if !HasErrors(diags) {
				t.Fatalf("no skill and no error: %v", diags)
			}
			return
		}
		if !skillName.MatchString(sk.Name) || sk.Description == "" || strings.TrimSpace(sk.Body) == "" || strings.Contains(sk.Body, "\r\n") {
			t.Fatalf("a skill that should have been refused: %+v", sk)
		}
	})
}
