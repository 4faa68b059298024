package agentdef

import (
	"slices"
	"strings"
	"testing"
)

// The names other agent tools give to cadre's built-in tools map to them,
// each with a note saying so, and no warning.
func TestToolAliases(t *testing.T) {
	src := "---\nname: porter\ndescription: Ported from another tool.\ntools: list_directory, run_terminal_command, Replace_In_File, WebSearch\n---\nDo it.\n"
	def, diags := Parse("porter.md", []byte(src), ParseOptions{Scope: ScopeDir})
	if def == nil {
		t.Fatalf("not loaded: %v", diags)
	}
	if want := []string{ToolListFiles, ToolRunCommand, ToolEditFile, ToolWebSearch}; !slices.Equal(def.Tools, want) {
		t.Errorf("tools %q, want %q", def.Tools, want)
	}
	var notes []string
	for _, d := range diags {
		if d.Severity != SeverityInfo {
			t.Errorf("unexpected %s", d)
			continue
		}
		notes = append(notes, d.Message)
	}
	for _, want := range []string{
		"tools: list_directory is read as cadre's list_files",
		"tools: run_terminal_command is read as cadre's run_command",
		"tools: Replace_In_File is read as cadre's edit_file",
	} {
		if !slices.Contains(notes, want) {
			t.Errorf("no note %q in %q", want, notes)
		}
	}
	if slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "WebSearch") }) {
		t.Errorf("WebSearch is Claude Code's own name, not an alias: %q", notes)
	}
	if _, ok := ToolAlias("bash"); ok {
		t.Error("bash is a dialect name handled by ResolveTool, not an alias")
	}
}

// A file saved with CRLF line ends loads as its author meant: fields
// without \r, and a prompt with plain line ends.
func TestParseCRLF(t *testing.T) {
	src := "---\r\nname: crlf\r\ndescription: A CRLF file.\r\ntools: Read, Grep\r\n---\r\nLine one.\r\nLine two.\r\n"
	def, diags := Parse("crlf.md", []byte(src), ParseOptions{Scope: ScopeDir})
	if def == nil || len(diags) != 0 {
		t.Fatalf("not loaded cleanly: %v", diags)
	}
	if def.Name != "crlf" || def.Description != "A CRLF file." || def.Prompt != "Line one.\nLine two.\n" || !slices.Equal(def.Tools, []string{ToolReadFile, ToolSearchFiles}) {
		t.Errorf("%q %q %q %q", def.Name, def.Description, def.Prompt, def.Tools)
	}
}

// Frontmatter written as a fenced YAML block after a heading is read, with
// a warning; a fenced block that is not an agent's fields is refused,
// naming its line.
func TestParseFencedFrontmatter(t *testing.T) {
	src := "# Code Reviewer\n\n```yaml\nname: code-reviewer\ndescription: Reviews diffs.\ntools: Read, Grep\n```\n\nYou review code.\n"
	def, diags := Parse("reviewer.md", []byte(src), ParseOptions{Scope: ScopeDir})
	if def == nil {
		t.Fatalf("not loaded: %v", diags)
	}
	if def.Name != "code-reviewer" || def.Description != "Reviews diffs." || def.Prompt != "You review code.\n" || !slices.Equal(def.Tools, []string{ToolReadFile, ToolSearchFiles}) {
		t.Errorf("%q %q %q %q", def.Name, def.Description, def.Prompt, def.Tools)
	}
	if len(diags) != 1 || diags[0].Severity != SeverityWarning || diags[0].Line != 3 || !strings.Contains(diags[0].Message, "fenced YAML block (lines 3-7)") {
		t.Errorf("diagnostics %v", diags)
	}
	for src, want := range map[string]string{
		"# Notes\n\n```yaml\nfoo: bar\n```\nText.\n":                   "reviewer.md:3:1: error: no frontmatter: a fenced YAML block was found at line 3, but it does not hold an agent's fields",
		"# Title\n~~~yml\nname: x\ndescription: y\nText\n":             "reviewer.md:2:1: error: no frontmatter: a fenced YAML block opens here but never closes",
		"# Title\nSome text.\n```yaml\nname: x\ndescription: y\n```\n": "reviewer.md: error: no frontmatter:",
	} {
		def, diags := Parse("reviewer.md", []byte(src), ParseOptions{Scope: ScopeDir})
		if def != nil || len(diags) != 1 || !strings.HasPrefix(diags[0].String(), want) {
			t.Errorf("%q: %v, want %q", src, diags, want)
		}
	}
}

// Recovering broken YAML keeps the fields around the break, a nested list
// included, and points at the line that broke.
func TestRecoverKeepsNestedBlocks(t *testing.T) {
	src := "---\nname: helper\ndescription: A helper\ncategory: dev\nrelated:\n  - reviewer\n  - tester\ntools: Read\nmodel: haiku\nnotes: Use this: when things\n---\nBody\n"
	def, diags := Parse("x.md", []byte(src), ParseOptions{Scope: ScopeDir})
	if def == nil {
		t.Fatalf("not loaded: %v", diags)
	}
	if def.Model != "haiku" || def.Extra["category"] != "dev" || !slices.Equal(def.Extra["related"].([]any), []any{"reviewer", "tester"}) {
		t.Errorf("model %q, extra %v", def.Model, def.Extra)
	}
	if len(diags) != 2 || diags[0].Line != 10 || !strings.Contains(diags[0].Message, "not valid YAML") || !strings.Contains(diags[1].Message, "could not read notes") {
		t.Errorf("diagnostics %v", diags)
	}
}
