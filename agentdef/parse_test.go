package agentdef

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
)

func TestParseTolerance(t *testing.T) {
	const want = "You are tolerant.\n"
	for _, tc := range []struct {
		name, file, prompt string
	}{
		{"plain", "---\nname: t\ndescription: d\n---\nYou are tolerant.\n", want},
		{"bom", "\xef\xbb\xbf---\nname: t\ndescription: d\n---\nYou are tolerant.\n", want},
		{"crlf", "---\r\nname: t\r\ndescription: d\r\n---\r\nYou are tolerant.\r\n", "You are tolerant.\n"},
		{"blank_after_open", "---\n\nname: t\ndescription: d\n---\nYou are tolerant.\n", want},
		{"blank_before_open", "\n\n---\nname: t\ndescription: d\n---\nYou are tolerant.\n", want},
		{"indented_block", "\n    ---\n    name: t\n    description: d\n    ---\n    You are tolerant.\n", "    You are tolerant.\n"},
		{"long_close", "---\nname: t\ndescription: d\n--------------------\nYou are tolerant.\n", want},
		{"trailing_spaces_on_delimiters", "--- \nname: t\ndescription: d\n---  \nYou are tolerant.\n", want},
		{"no_final_newline", "---\nname: t\ndescription: d\n---\nYou are tolerant.", "You are tolerant."},
		{"comments", "---\n# who\nname: t # short\ndescription: d\n---\nYou are tolerant.\n", want},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, diags := parseString(t, tc.file, ParseOptions{})
			if d == nil {
				t.Fatalf("rejected:%s", diagLines(diags))
			}
			if d.Name != "t" || d.Description != "d" {
				t.Errorf("name %q description %q", d.Name, d.Description)
			}
			if d.Prompt != tc.prompt {
				t.Errorf("prompt %q, want %q", d.Prompt, tc.prompt)
			}
			if hasDiag(diags, SeverityWarning) || HasErrors(diags) {
				t.Errorf("unexpected diagnostics:%s", diagLines(diags))
			}
		})
	}
}

func TestParseBodyIsVerbatim(t *testing.T) {
	body := "# Role\n\n  Indented line, trailing spaces   \n\n\n```go\nfunc x() {}\n```\n---\nA rule above, and a tab\there.\n\n"
	d, diags := parseString(t, "---\nname: v\ndescription: d\n---\n\n\n"+body, ParseOptions{})
	if d == nil {
		t.Fatalf("rejected:%s", diagLines(diags))
	}
	if d.Prompt != body {
		t.Errorf("prompt changed:\n got %q\nwant %q", d.Prompt, body)
	}
}

func TestParsePositionsOfIndentedFrontmatter(t *testing.T) {
	_, diags := parseString(t, "\n  ---\n  name: p\n  description: d\n  timeoutSeconds: never\n  ---\n  Body.\n", ParseOptions{})
	if len(diags) != 1 || diags[0].Line != 5 || diags[0].Column != 19 {
		t.Errorf("want one error at 5:19 (the value, indentation included):%s", diagLines(diags))
	}
}

func TestParseDialects(t *testing.T) {
	two := 0.2
	for _, tc := range []struct {
		name string
		file string
		opts ParseOptions
		want func(d *cadre.Definition)
	}{
		{"claude_code", `---
name: reviewer
description: Reviews diffs.
tools: Read, Grep, Glob, Bash(git diff *), Bash(git log *), Agent(linter, tester), mcp__github__get_pr
disallowedTools: Write, MultiEdit
model: sonnet
maxTurns: 12
color: blue
permissionMode: default
skills: [go-style]
effort: high
memory: project
background: true
---
Review.
`, ParseOptions{MCPServers: []string{"github"}}, func(d *cadre.Definition) {
			d.Tools = []string{"read_file", "search_files", "list_files", "run_command",
				"spawn_agent", "start_background_agent", "list_agents", "cancel_agent", "wait_agent", "answer_agent",
				"mcp__github__get_pr"}
			where := "agent.md:4:8"
			d.Rules = []cadre.ToolRule{
				{Tool: "run_command", Action: cadre.PermissionDeny, Source: "tools: Bash(git diff *), Bash(git log *)", Where: where, Group: "tools"},
				{Tool: "run_command", Pattern: "git diff *", Syntax: cadre.SyntaxCommand, Action: cadre.PermissionAllow, Source: "tools: Bash(git diff *)", Where: where, Group: "tools"},
				{Tool: "run_command", Pattern: "git log *", Syntax: cadre.SyntaxCommand, Action: cadre.PermissionAllow, Source: "tools: Bash(git log *)", Where: where, Group: "tools"},
				{Tool: "agents", Action: cadre.PermissionDeny, Source: "tools: Agent(linter, tester)", Where: where, Group: "tools"},
				{Tool: "agents", Pattern: "linter", Syntax: cadre.SyntaxName, Action: cadre.PermissionAllow, Source: "tools: Agent(linter, tester)", Where: where, Group: "tools"},
				{Tool: "agents", Pattern: "tester", Syntax: cadre.SyntaxName, Action: cadre.PermissionAllow, Source: "tools: Agent(linter, tester)", Where: where, Group: "tools"},
			}
			d.DisallowedTools = []string{"write_file", "edit_file"}
			d.Model = "sonnet"
			d.MaxTurns = 12
			d.Background = true
			d.Extra = map[string]any{
				"color": "blue", "permissionMode": "default", "skills": []any{"go-style"}, "effort": "high",
				"memory": "project",
			}
		}},
		{"opencode", `---
description: Plans work without touching files.
mode: subagent
model: anthropic/claude-sonnet-4-5
temperature: 0.2
steps: 8
hidden: true
tools:
  write: false
  edit: false
  bash: true
permission:
  bash:
    "git *": allow
---
Plan.
`, ParseOptions{}, func(d *cadre.Definition) {
			d.Name = "agent"
			d.Model = "anthropic/claude-sonnet-4-5"
			d.Temperature = &two
			d.MaxTurns = 8
			d.DisallowedTools = []string{"write_file", "edit_file"}
			d.Rules = []cadre.ToolRule{{Tool: "run_command", Pattern: "git *", Syntax: cadre.SyntaxWildcard, Action: cadre.PermissionAllow,
				Source: `permission: bash: "git *": allow`, Where: "agent.md:14:5", Group: "permission"}}
			d.Extra = map[string]any{"mode": "subagent", "hidden": true, "permission": map[string]any{"bash": map[string]any{"git *": "allow"}}}
		}},
		{"opencode_primary_is_internal", "---\ndescription: A primary agent.\nmode: primary\n---\nHi.\n", ParseOptions{}, func(d *cadre.Definition) {
			d.Name = "agent"
			d.Visibility = cadre.VisibilityInternal
			d.Extra = map[string]any{"mode": "primary"}
		}},
		{"netclaw", `---
name: summarizer
description: Summarize documents and content concisely
tools: [file_read, web_fetch, shell_execute]
modelRole: Fallback
timeoutSeconds: 60
visibility: UserFacing
emitStructuredFindings: false
---
Summarize.
`, ParseOptions{}, func(d *cadre.Definition) {
			d.Name = "summarizer"
			d.Tools = []string{"read_file", "web_fetch", "run_command"}
			d.ModelRole = "fallback"
			d.Timeout = 60 * time.Second
		}},
		{"llm_do", `---
name: pitch_evaluator
description: Evaluates pitch decks.
model: anthropic:claude-haiku-4-5
toolsets:
  - filesystem
compatible_models: ["anthropic:*"]
---
Evaluate.
`, ParseOptions{}, func(d *cadre.Definition) {
			d.Name = "pitch_evaluator"
			d.Model = "anthropic:claude-haiku-4-5"
			d.Extra = map[string]any{"toolsets": []any{"filesystem"}, "compatible_models": []any{"anthropic:*"}}
		}},
		{"cadre", `---
name: auditor
description: Audits a module and reports findings as JSON.
tools: "*"
report: tag
protocol: text
onboarding: required
maxQuestions: 2
askCaller: true
say: true
maxDepth: 2
outputSchema:
  type: object
  required: [findings]
  properties:
    findings: {type: array}
---
Audit.
`, ParseOptions{}, func(d *cadre.Definition) {
			d.Name = "auditor"
			d.Report = cadre.ReportTag
			d.Protocol = cadre.ProtocolText
			d.Onboarding = cadre.OnboardingRequired
			d.MaxQuestions = 2
			d.AskCaller = true
			d.Say = true
			d.MaxDepth = 2
			d.OutputSchema = json.RawMessage(`{"properties":{"findings":{"type":"array"}},"required":["findings"],"type":"object"}`)
		}},
		{"onboarding_false_and_schema_string", "---\nname: o\ndescription: d\nonboarding: false\noutputSchema: '{\"type\": \"string\"}'\n---\nx\n", ParseOptions{}, func(d *cadre.Definition) {
			d.Name = "o"
			d.Onboarding = cadre.OnboardingOff
			d.OutputSchema = json.RawMessage(`{"type":"string"}`)
		}},
		{"empty_tools_means_none", "---\nname: e\ndescription: d\ntools: []\n---\nx\n", ParseOptions{}, func(d *cadre.Definition) {
			d.Name = "e"
			d.Tools = []string{}
		}},
		{"disallow_everything", "---\nname: e\ndescription: d\ndisallowedTools: '*'\n---\nx\n", ParseOptions{}, func(d *cadre.Definition) {
			d.Name = "e"
			d.Tools = []string{}
		}},
		{"bare_entry_drops_patterns", "---\nname: e\ndescription: d\ntools: Bash(git *), Bash, Task(a), Task\n---\nx\n", ParseOptions{}, func(d *cadre.Definition) {
			d.Name = "e"
			d.Tools = append([]string{"run_command"}, TaskTools()...)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, diags := parseString(t, tc.file, tc.opts)
			if got == nil || len(diags) != 0 {
				t.Fatalf("want a clean load:%s", diagLines(diags))
			}
			want := &cadre.Definition{
				Description: got.Description, Prompt: got.Prompt, File: "agent.md",
				Timeout: cadre.DefaultTimeout, Visibility: cadre.VisibilityUserFacing,
				Report: cadre.ReportTool, Protocol: cadre.ProtocolAuto, Onboarding: cadre.OnboardingOptional,
				MaxQuestions: cadre.DefaultMaxQuestions, Name: got.Name,
			}
			tc.want(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("definition (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseBadValues(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       []string
	}{
		{"timeout_text", "timeoutSeconds: soon", []string{"timeoutSeconds", `"soon"`, "whole number of seconds"}},
		{"timeout_zero", "timeoutSeconds: 0", []string{"timeoutSeconds: 0 is not valid"}},
		{"timeout_fraction", "timeoutSeconds: 1.5", []string{"timeoutSeconds: 1.5"}},
		{"model_role", "modelRole: Turbo", []string{"modelRole", "main, fallback or compaction"}},
		{"visibility_list", "visibility: [a]", []string{"visibility: a list"}},
		{"emit_findings", "emitStructuredFindings: maybe", []string{"emitStructuredFindings", "true or false"}},
		{"max_turns", "maxTurns: -3", []string{"maxTurns"}},
		{"steps", "steps: many", []string{"steps"}},
		{"max_depth_zero", "maxDepth: 0", []string{"maxDepth", "leave Task and Agent out"}},
		{"temperature", "temperature: 7", []string{"temperature", "0 to 2"}},
		{"report", "report: email", []string{"report", "tool", "tag"}},
		{"protocol", "protocol: smoke", []string{"protocol", "tools, text or auto"}},
		{"onboarding", "onboarding: sometimes", []string{"onboarding", "false, optional or required"}},
		{"max_questions", "maxQuestions: lots", []string{"maxQuestions"}},
		{"output_schema_list", "outputSchema: [1]", []string{"outputSchema", "JSON Schema"}},
		{"output_schema_bad_json", "outputSchema: '{nope'", []string{"outputSchema", "JSON Schema"}},
		{"output_schema_type", "outputSchema: {type: 3}", []string{"outputSchema: type"}},
		{"mode", "mode: sideways", []string{"mode", "primary, subagent or all"}},
		{"tools_mapping_value", "tools: {read: maybe}", []string{"tools: read", "true or false"}},
		{"tools_nested_list", "tools: [[Read]]", []string{"tools", "list tool names"}},
		{"model_mapping", "model: {a: b}", []string{"model", "write it as text"}},
		{"description_list", "description: [a, b]", []string{"description", "write it as text"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := "---\nname: bad\ndescription: Has a bad value.\n" + tc.line + "\n---\nPrompt.\n"
			if strings.HasPrefix(tc.line, "description:") {
				file = "---\nname: bad\n" + tc.line + "\n---\nPrompt.\n"
			}
			d, diags := parseString(t, file, ParseOptions{})
			if d != nil {
				t.Errorf("loaded %+v", d)
			}
			if !hasDiag(diags, SeverityError, tc.want...) {
				t.Errorf("want an error with %q:%s", tc.want, diagLines(diags))
			}
			for _, dg := range diags {
				if dg.Severity == SeverityError && dg.Line == 0 {
					t.Errorf("a bad value error must point at a line: %s", dg)
				}
			}
		})
	}
}

func TestParseNames(t *testing.T) {
	for _, tc := range []struct {
		name, value, want string
		warn              bool
	}{
		{"kebab", "code-analyst", "code-analyst", false},
		{"snake_and_dots", "pitch_eval.v2", "pitch_eval.v2", false},
		{"unicode", "réviseur", "réviseur", false},
		{"display_name", "Python Security Expert", "python-security-expert", true},
		{"slash", "Python DevOps/CI-CD Expert", "python-devops-ci-cd-expert", true},
		{"number", "2024", "2024", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, diags := parseString(t, "---\nname: "+tc.value+"\ndescription: d\n---\nx\n", ParseOptions{})
			if d == nil {
				t.Fatalf("rejected:%s", diagLines(diags))
			}
			if d.Name != tc.want {
				t.Errorf("name %q, want %q", d.Name, tc.want)
			}
			if got := hasDiag(diags, SeverityWarning, "is not an agent name", tc.want); got != tc.warn {
				t.Errorf("warning = %v, want %v:%s", got, tc.warn, diagLines(diags))
			}
			if tc.warn && d.Extra["displayName"] != tc.value {
				t.Errorf("displayName = %v, want %q", d.Extra["displayName"], tc.value)
			}
		})
	}
	t.Run("punctuation_only", func(t *testing.T) {
		d, diags := parseString(t, "---\nname: '!!!'\ndescription: d\n---\nx\n", ParseOptions{})
		if d != nil || !hasDiag(diags, SeverityError, "name") {
			t.Errorf("want an error:%s", diagLines(diags))
		}
	})
}

func TestParseToolResolution(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tools   string
		mcp     []string
		want    []string
		warning []string
	}{
		{"claude_names", "Read, Grep, Glob, LS, Write, Edit, MultiEdit, Bash, WebFetch", nil,
			[]string{"read_file", "search_files", "list_files", "write_file", "edit_file", "run_command", "web_fetch"}, nil},
		{"cadre_names", "read_file, run_command", nil, []string{"read_file", "run_command"}, nil},
		{"yaml_list", "[Read, 'Bash(npm test)']", nil, []string{"read_file", "run_command"}, nil},
		{"single_name", "Read", nil, []string{"read_file"}, nil},
		{"star", "'*'", nil, nil, nil},
		{"unknown", "Read, NotebookEdit, LSP", nil, []string{"read_file"}, []string{"NotebookEdit, LSP are not tools"}},
		{"mcp_configured", "mcp__github__search, mcp__github", []string{"github"}, []string{"mcp__github__search", "mcp__github"}, nil},
		{"mcp_not_configured", "Read, mcp__context7__docs, mcp__magic__build", []string{"github"}, []string{"read_file"},
			[]string{"mcp__context7__docs, mcp__magic__build are tools of the MCP servers context7, magic"}},
		{"only_unknown", "NotebookEdit", nil, []string{}, []string{"left with no tools"}},
		{"unbalanced", "Bash(git", nil, []string{}, []string{"Bash(git is not a tool"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, diags := parseString(t, "---\nname: t\ndescription: d\ntools: "+tc.tools+"\n---\nx\n", ParseOptions{MCPServers: tc.mcp})
			if d == nil {
				t.Fatalf("rejected:%s", diagLines(diags))
			}
			if diff := cmp.Diff(tc.want, d.Tools); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if tc.warning == nil && len(diags) != 0 {
				t.Errorf("unexpected diagnostics:%s", diagLines(diags))
			}
			if tc.warning != nil && !hasDiag(diags, SeverityWarning, tc.warning...) {
				t.Errorf("want a warning with %q:%s", tc.warning, diagLines(diags))
			}
		})
	}
}

func TestSplitToolList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"Read, Grep,Glob", []string{"Read", "Grep", "Glob"}},
		{"Bash(git *), Agent(a, b, c), Read", []string{"Bash(git *)", "Agent(a, b, c)", "Read"}},
		{" , Read ,, ", []string{"Read"}},
		{"Bash(a(b, c), d), e", []string{"Bash(a(b, c), d)", "e"}},
		{"x), y", []string{"x)", "y"}},
		{"", nil},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, SplitToolList(tc.in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseRecovery(t *testing.T) {
	for _, tc := range []struct {
		name, frontmatter string
		want              func(*cadre.Definition)
		dropped           string
	}{
		{"colon_in_description", "name: a\ndescription: Use it. Triggers on: 'x', 'y'.\ntools: Read, Grep\nmodel: opus\n", func(d *cadre.Definition) {
			d.Description = "Use it. Triggers on: 'x', 'y'."
			d.Tools = []string{"read_file", "search_files"}
			d.Model = "opus"
		}, ""},
		{"dialogue_at_column_0", "name: a\ndescription: Use it when reviewing. Examples:\nContext: a PR is open\nuser: review it\nassistant: I will use a\ncolor: red\ntimeoutSeconds: 30\n", func(d *cadre.Definition) {
			d.Description = "Use it when reviewing. Examples:\nContext: a PR is open\nuser: review it\nassistant: I will use a"
			d.Timeout = 30 * time.Second
			d.Extra = map[string]any{"color": "red"}
		}, ""},
		{"starts_with_stars", "name: a\ndescription: **Bold** claims: many\n", func(d *cadre.Definition) {
			d.Description = "**Bold** claims: many"
		}, ""},
		{"escaped_newlines", `name: a
description: First line.\n\nExamples: <example>one</example>
  continued here
`, func(d *cadre.Definition) {
			d.Description = "First line.\n\nExamples: <example>one</example>\ncontinued here"
		}, ""},
		{"quoted_with_inner_quotes", `name: "a"
description: "Say "hi": loudly"
`, func(d *cadre.Definition) {
			d.Description = `Say "hi": loudly`
		}, ""},
		{"tools_list_lines", "name: a\ndescription: x: y\ntools:\n  - Read\n  - 'Grep'\n", func(d *cadre.Definition) {
			d.Description = "x: y"
			d.Tools = []string{"read_file", "search_files"}
		}, ""},
		{"block_scalar_kept", "name: a\ndescription: |\n  Line one.\n  Line two: yes.\ntools: [Read, \n", func(d *cadre.Definition) {
			d.Description = "Line one.\nLine two: yes."
			d.Tools = []string{"read_file"}
		}, ""},
		{"dropped_field", "name: a\ndescription: x: y\ntimeoutSeconds: [\n", func(d *cadre.Definition) {
			d.Description = "x: y"
		}, "timeoutSeconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, diags := parseString(t, "---\n"+tc.frontmatter+"---\nPrompt.\n", ParseOptions{})
			if got == nil {
				t.Fatalf("rejected:%s", diagLines(diags))
			}
			if !hasDiag(diags, SeverityWarning, "not valid YAML", "recovered") {
				t.Errorf("want a recovery warning:%s", diagLines(diags))
			}
			if tc.dropped != "" && !hasDiag(diags, SeverityWarning, "could not read "+tc.dropped) {
				t.Errorf("want a warning about %s:%s", tc.dropped, diagLines(diags))
			}
			want := *got
			want.Name, want.Tools, want.Model, want.Timeout, want.Extra = "a", nil, "", cadre.DefaultTimeout, nil
			tc.want(&want)
			if diff := cmp.Diff(&want, got); diff != "" {
				t.Errorf("definition (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseUnknownFields(t *testing.T) {
	d, diags := parseString(t, agent("u", "category: ops", "tool: Read", "timeout_seconds: 5", "Tools: Grep"), ParseOptions{})
	if d == nil {
		t.Fatalf("rejected:%s", diagLines(diags))
	}
	for _, want := range []string{"tool: did you mean tools", "timeout_seconds: did you mean timeoutSeconds", "Tools: did you mean tools"} {
		if !hasDiag(diags, SeverityWarning, "unknown field "+want) {
			t.Errorf("want a warning %q:%s", want, diagLines(diags))
		}
	}
	if hasDiag(diags, SeverityWarning, "category") {
		t.Errorf("category is ordinary metadata:%s", diagLines(diags))
	}
	if d.Extra["category"] != "ops" || d.Tools != nil {
		t.Errorf("extra %v tools %v", d.Extra, d.Tools)
	}
}

func TestParseModelInfo(t *testing.T) {
	for _, tc := range []struct {
		model string
		info  bool
	}{{"sonnet", false}, {"inherit", false}, {"claude-sonnet-4-20250514", false}, {"openai/gpt-4o", false},
		{"ollama:llama3.2", false}, {"fast", false}, {"fable", true}} {
		t.Run(tc.model, func(t *testing.T) {
			d, diags := parseString(t, agent("m", "model: "+tc.model), ParseOptions{Models: []string{"fast"}})
			if d == nil || d.Model != tc.model {
				t.Fatalf("model not kept:%s", diagLines(diags))
			}
			if got := hasDiag(diags, SeverityInfo, "parent's model"); got != tc.info {
				t.Errorf("info = %v, want %v:%s", got, tc.info, diagLines(diags))
			}
		})
	}
}

func TestParseDisabledAndIndexFiles(t *testing.T) {
	d, diags := parseString(t, "---\ndescription: Off.\nmode: subagent\ndisable: true\n---\nx\n", ParseOptions{})
	if d != nil || HasErrors(diags) || !hasDiag(diags, SeverityInfo, "disabled") {
		t.Errorf("want no definition and an info line:%s", diagLines(diags))
	}
	d, diags = Parse("agents/readme.md", []byte("# Agents\n"), ParseOptions{})
	if d != nil || len(diags) != 1 || diags[0].Severity != SeverityInfo {
		t.Errorf("want one info line for a README:%s", diagLines(diags))
	}
	d, diags = Parse("agents/readme-writer.md", []byte("# Agents\n"), ParseOptions{})
	if d != nil || !HasErrors(diags) {
		t.Errorf("an agent named like a README is still an agent file:%s", diagLines(diags))
	}
}

func TestParseRepeatedKeyInRecovery(t *testing.T) {
	d, diags := parseString(t, "---\nname: first\nname: second\ndescription: d\n---\nx\n", ParseOptions{})
	if d == nil || d.Name != "first" {
		t.Fatalf("want the first name:%s", diagLines(diags))
	}
	if !hasDiag(diags, SeverityWarning, "already defined") {
		t.Errorf("want the parser's reason in the warning:%s", diagLines(diags))
	}
}

func TestDiagnosticString(t *testing.T) {
	for _, tc := range []struct {
		d    Diagnostic
		want string
	}{
		{Diagnostic{File: "a.md", Line: 3, Column: 14, Severity: SeverityWarning, Message: "m"}, "a.md:3:14: warning: m"},
		{Diagnostic{File: "a.md", Line: 3, Severity: SeverityError, Message: "m"}, "a.md:3:1: error: m"},
		{Diagnostic{File: "a.md", Severity: SeverityInfo, Message: "m"}, "a.md: info: m"},
	} {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
	ds := []Diagnostic{{File: "b", Line: 1}, {File: "a", Line: 9}, {File: "a", Line: 2, Message: "x"}, {File: "a", Line: 2, Message: "y"}}
	SortDiagnostics(ds)
	got := []string{ds[0].File + ds[0].Message, ds[1].File + ds[1].Message, ds[2].File, ds[3].File}
	if diff := cmp.Diff([]string{"ax", "ay", "a", "b"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// OpenCode's tools map and permission field, and Claude Code's
// disallowedTools: what an agent may not do must survive the translation.
func TestParseToolRestrictions(t *testing.T) {
	for _, tc := range []struct {
		name        string
		frontmatter string
		strict      bool
		tools       []string // nil: the parent's
		disallowed  []string
		warning     []string // fragments of the one warning expected; nil: no diagnostics
		rejected    bool
	}{
		{"map_denies", "tools:\n  bash: false\n  write: false\n  read: true", false, nil, []string{"write_file", "run_command"}, nil, false},
		{"map_star_false_is_allowlist", "tools:\n  \"*\": false\n  read: true\n  grep: true\n  bash: false", false,
			[]string{"read_file", "search_files"}, nil, nil, false},
		{"map_star_false_alone_is_none", "tools:\n  \"*\": false", false, []string{}, nil, nil, false},
		{"map_allowlist_unknown", "tools:\n  \"*\": false\n  read: true\n  context7: true", false,
			[]string{"read_file"}, nil, []string{"tools: context7 is not a tool", "loads without it"}, false},
		{"map_allowlist_unknown_strict", "tools:\n  \"*\": false\n  read: true\n  context7: true", true, nil, nil, nil, true},
		{"map_denying_foreign_tool_is_silent", "tools:\n  lsp: false\n  notebookedit: false", false, nil, nil, nil, false},
		{"map_deny_pattern", "tools:\n  \"web*\": false", false, nil, []string{"web_fetch", "web_search", "mcp__web*"}, nil, false},
		{"map_deny_pattern_of_no_server", "tools:\n  \"web*\": false\n  \"mymcp_*\": false", false, nil, []string{"mcp__mymcp_*", "web_fetch", "web_search", "mcp__web*"},
			[]string{"tools: mymcp_* matches none of cadre's tools", "nothing to take away"}, false},
		{"disallowed_pattern_of_dialect_names", "disallowedTools: \"Bash*\"", false, nil, []string{"run_command", "mcp__Bash*"}, nil, false},
		{"disallowed_pattern_matching_nothing", "disallowedTools: \"Bassh*\"", false, nil, []string{"mcp__Bassh*"},
			[]string{"disallowedTools: Bassh* matches none of cadre's tools", "nothing to take away"}, false},
		{"map_deny_misspelt", "tools:\n  bassh: false", false, nil, nil, []string{"tools: bassh is not a tool cadre knows, so there is nothing to take away"}, false},
		{"permission_deny", "permission:\n  edit: deny\n  bash: deny\n  webfetch: ask", false, nil, []string{"write_file", "edit_file", "run_command"}, nil, false},
		{"permission_star_deny", "permission:\n  \"*\": deny\n  read: allow\n  glob: allow\n  bash: ask\n  edit: deny", false,
			[]string{"read_file", "list_files", "run_command"}, []string{"write_file", "edit_file"}, nil, false},
		{"permission_patterns_left_alone", "permission:\n  bash:\n    \"*\": deny\n    \"git *\": allow", false, nil, nil, nil, false},
		{"permission_narrows_tools", "tools: Read, Grep, Bash(git *)\npermission:\n  \"*\": deny\n  read: allow\n  glob: allow", false,
			[]string{"read_file"}, nil, nil, false},
		{"disallowed_misspelt", "disallowedTools: Bassh, Write", false, nil, []string{"write_file"},
			[]string{"disallowedTools: Bassh is not a tool cadre knows, so there is nothing to take away"}, false},
		{"disallowed_foreign_is_silent", "disallowedTools: NotebookEdit, LSP, Edit", false, nil, []string{"edit_file"}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, diags := parseString(t, "---\nname: r\ndescription: d\n"+tc.frontmatter+"\n---\nx\n", ParseOptions{Strict: tc.strict})
			if tc.rejected {
				if d != nil || !hasDiag(diags, SeverityError, "strict") {
					t.Errorf("want a strict rejection:%s", diagLines(diags))
				}
				return
			}
			if d == nil {
				t.Fatalf("rejected:%s", diagLines(diags))
			}
			if diff := cmp.Diff(tc.tools, d.Tools); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.disallowed, d.DisallowedTools); diff != "" {
				t.Errorf("disallowed (-want +got):\n%s", diff)
			}
			if tc.warning == nil && len(diags) != 0 {
				t.Errorf("unexpected diagnostics:%s", diagLines(diags))
			}
			if tc.warning != nil && (len(diags) != 1 || !hasDiag(diags, SeverityWarning, tc.warning...)) {
				t.Errorf("want one warning with %q:%s", tc.warning, diagLines(diags))
			}
		})
	}
}

// Without a name field, an OpenCode file is named after the file; a file
// of another dialect is not.
func TestParseNameFromFile(t *testing.T) {
	for _, tc := range []struct {
		name, path, frontmatter string
		opts                    ParseOptions
		want                    string // "" when rejected for a missing name
	}{
		{"mode", "agents/reviewer.md", "mode: subagent", ParseOptions{}, "reviewer"},
		{"tools_map", "reviewer.md", "tools:\n  write: false", ParseOptions{}, "reviewer"},
		{"permission", "reviewer.md", "permission:\n  edit: deny", ParseOptions{}, "reviewer"},
		{"temperature", "reviewer.md", "temperature: 0.1", ParseOptions{}, "reviewer"},
		{"steps", "reviewer.md", "steps: 5", ParseOptions{}, "reviewer"},
		{"opencode_folder", "reviewer.md", "model: anthropic/claude-haiku-4-5", ParseOptions{NameFromFile: true}, "reviewer"},
		{"display_file_name", "Code Reviewer.md", "mode: subagent", ParseOptions{}, "code-reviewer"},
		{"claude_code", "reviewer.md", "tools: Read", ParseOptions{}, ""},
		{"llm_do", "reviewer.agent", "temperature: 0.1", ParseOptions{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, diags := Parse(tc.path, []byte("---\ndescription: Reviews.\n"+tc.frontmatter+"\n---\nReview.\n"), tc.opts)
			if tc.want == "" {
				if d != nil || !hasDiag(diags, SeverityError, "missing name") {
					t.Errorf("want a missing name error:%s", diagLines(diags))
				}
				return
			}
			if d == nil || d.Name != tc.want {
				t.Errorf("want %s:%s", tc.want, diagLines(diags))
			}
		})
	}
}

// Claude Code's permissionMode: plan takes away every tool that writes or
// runs; the modes that would approve more are not honoured, and say so;
// hooks, which cadre does not run, are reported, since one that blocks
// calls would block nothing.
func TestPermissionModeAndHooks(t *testing.T) {
	for _, tt := range []struct {
		name, field string
		deny        []string
		diag        string
		sev         Severity
	}{
		{"plan", "permissionMode: plan", []string{"write_file", "edit_file", "run_command", "agent_create", "mcp__*"}, "no tool that writes files", SeverityInfo},
		{"accept_edits", "permissionMode: acceptEdits", nil, "acceptEdits is not honoured", SeverityWarning},
		{"bypass", "permissionMode: bypassPermissions", nil, "bypassPermissions is not honoured", SeverityWarning},
		{"unknown", "permissionMode: yolo", nil, "not a mode cadre knows", SeverityWarning},
		{"hooks", "hooks:\n  PreToolUse:\n    - matcher: Bash", nil, "hooks are not run by cadre", SeverityWarning},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := "---\nname: planner\ndescription: Plans.\n" + tt.field + "\n---\nPlan.\n"
			d, diags := Parse("planner.md", []byte(src), ParseOptions{})
			if d == nil {
				t.Fatalf("not loaded: %v", diags)
			}
			if !slices.Equal(d.DisallowedTools, tt.deny) {
				t.Errorf("disallowed %q, want %q", d.DisallowedTools, tt.deny)
			}
			if len(diags) != 1 || diags[0].Severity != tt.sev || !strings.Contains(diags[0].Message, tt.diag) {
				t.Errorf("diagnostics %v, want one %s containing %q", diags, tt.sev, tt.diag)
			}
		})
	}
}

// An agent file whose anchors each repeat the one before ten times stands
// for billions of values in a few hundred bytes: decoding it exhausted
// the memory of cadre (a cloned repository's file crashed every run). Its
// frontmatter is refused as YAML, at its first alias, before it is
// decoded, and read line by line as malformed frontmatter is.
func TestAliasBombIsRefused(t *testing.T) {
	var b strings.Builder
	b.WriteString("---\nname: bomb\ndescription: d\nl0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	b.WriteString("---\nYou explode.\n")
	d, diags := parseString(t, b.String(), ParseOptions{})
	if !hasDiag(diags, SeverityWarning, "more than 100000 values", "aliases") {
		t.Fatalf("want the YAML refused:%s", diagLines(diags))
	}
	for _, g := range diags {
		if strings.Contains(g.Message, "100000") && g.Line != 5 {
			t.Errorf("told on line %d, want 5 (the first alias)", g.Line)
		}
	}
	if d == nil || d.Name != "bomb" {
		t.Errorf("the name was not read line by line: %+v", d)
	}
}
