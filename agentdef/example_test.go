package agentdef_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/cadre-ai/cadre/agentdef"
)

// A Claude Code file: its tool names map to cadre's, an entry with a
// pattern becomes rules (every other command is denied, the pattern
// allowed), and a tool cadre does not have is reported.
func ExampleParse() {
	file := []byte(`---
name: reviewer
description: Reviews diffs for defects.
tools: Read, Grep, Bash(git diff *), NotebookEdit
model: sonnet
---
You review diffs.
`)
	def, diags := agentdef.Parse("reviewer.md", file, agentdef.ParseOptions{})
	fmt.Println(def.Name, def.Tools, def.Model)
	for _, r := range def.Rules {
		fmt.Printf("%s %s %q\n", r.Action, r.Tool, r.Pattern)
	}
	fmt.Printf("%q\n", def.Prompt)
	for _, d := range diags {
		fmt.Println(d.Severity, d.Line, d.Column)
	}
	// Output:
	// reviewer [read_file search_files run_command] sonnet
	// deny run_command ""
	// allow run_command "git diff *"
	// "You review diffs.\n"
	// warning 4 8
}

// A description with ": " in it is not valid YAML; the agent loads anyway,
// with a warning saying how it was read.
func ExampleParse_recovered() {
	file := []byte("---\nname: gdpr\ndescription: Use for privacy questions. Triggers on: 'GDPR', 'CCPA'.\n---\nYou advise on privacy law.\n")
	def, diags := agentdef.Parse("gdpr.md", file, agentdef.ParseOptions{})
	fmt.Println(def.Description)
	fmt.Println(diags[0])
	// Output:
	// Use for privacy questions. Triggers on: 'GDPR', 'CCPA'.
	// gdpr.md:3:14: warning: frontmatter is not valid YAML (mapping value is not allowed in this context); recovered name, description by reading it line by line: quote the description, or write it as a | block, to make the file valid
}

// Load one folder on its own, as cadre agents validate PATH does.
func ExampleLoad() {
	dir, _ := os.MkdirTemp("", "agents")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "helper.md"), []byte("---\nname: helper\ndescription: Helps.\n---\nHelp.\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "notes.md"), []byte("just notes\n"), 0o644)

	cat, diags := agentdef.Load(agentdef.LoadOptions{ExtraDirs: []string{dir}, NoBuiltin: true, NoUser: true, NoProject: true})
	fmt.Println(cat.Names())
	for _, d := range diags {
		fmt.Println(filepath.Base(d.File), d.Severity)
	}
	// Output:
	// [helper]
	// notes.md error
}
