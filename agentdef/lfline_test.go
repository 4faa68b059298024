package agentdef

import (
	"strings"
	"testing"
)

// TestLFPos: the YAML parser ends a line at \n, \r\n or a lone \r; the
// file's lines end at \n only, and diagnostics name those, at the column
// of the file's line.
func TestLFPos(t *testing.T) {
	src := []byte("a\rb\nc\r\nd\r\re\n")
	for yl, want := range map[int][2]int{1: {1, 1}, 2: {1, 3}, 3: {2, 1}, 4: {3, 1}, 5: {3, 3}, 6: {3, 4}, 7: {4, 1}, 9: {4, 1}} {
		if l, c := lfPos(src, yl, 1); l != want[0] || c != want[1] {
			t.Errorf("YAML line %d col 1 is file line %d col %d, want %d col %d", yl, l, c, want[0], want[1])
		}
	}
	if l, c := lfPos([]byte("a\nb\n"), 2, 2); l != 2 || c != 2 {
		t.Errorf("without carriage returns, line 2 col 2 became %d col %d", l, c)
	}
}

// A SKILL.md's diagnostics count lines as the file does too: the value
// that breaks the YAML is on line 2 of a 5-line file.
func TestSkillLoneCRLine(t *testing.T) {
	src := "---\nname: a\r\r\r\rdescription: [\n---\nbody\n"
	_, diags := ParseSkill("SKILL.md", []byte(src))
	if len(diags) == 0 {
		t.Fatal("a skill with unclosed YAML parsed")
	}
	lines := strings.Count(src, "\n")
	for _, d := range diags {
		if d.Line < 1 || d.Line > lines {
			t.Errorf("diagnostic %s points at line %d of a %d-line file", d, d.Line, lines)
		}
	}
}

// The places of a permission's rules, read from the parsed value, count
// lines as the file does too: the rule "bash: maybe" is on line 3 of the
// file, though the parser, which ends lines at lone carriage returns too,
// sees it on line 5 of the frontmatter.
func TestPermissionLoneCRLine(t *testing.T) {
	src := "---\nname: a\rdescription: d\r\rpermission:\n  bash: maybe\n---\nbody\n"
	_, diags := Parse("a.md", []byte(src), ParseOptions{Scope: ScopeDir})
	var found bool
	for _, d := range diags {
		if strings.Contains(d.Message, "maybe") {
			found = true
			if d.Line != 3 || d.Column != 3 {
				t.Errorf("the diagnostic of the rule is at %d:%d, want 3:3: %s", d.Line, d.Column, d)
			}
		}
	}
	if !found {
		t.Fatalf("no diagnostic names the rule's action: %v", diags)
	}
}
