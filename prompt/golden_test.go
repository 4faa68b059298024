package prompt

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name.golden, or rewrites the file when
// the test runs with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `go test ./prompt -update` to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s\nIf the change is deliberate, run `go test ./prompt -update`.", path, diff)
	}
}

// catalog is a small catalogue, out of order, with an internal agent and a
// nil entry.
func catalog() []*cadre.Definition {
	return []*cadre.Definition{
		{
			Name:        "summarizer",
			Description: "Summarize documents and content concisely.",
			Prompt:      "You summarize.",
			Tools:       []string{},
		},
		nil,
		{
			Name:        "research-assistant",
			Description: "Deep web research with search and citation.\nUse it for questions that need two or more sources.",
			Prompt:      "You are a research assistant.",
			Tools:       []string{"web_fetch", "read_file"},
			Timeout:     120 * time.Second,
		},
		{
			Name:        "indexer",
			Description: "Internal: rebuilds the search index.",
			Visibility:  cadre.VisibilityInternal,
		},
		{
			Name:        "code-analyst",
			Description: "Analyze code, run commands, and review files.",
			Prompt:      "You are a code analyst.",
		},
	}
}

func TestGolden(t *testing.T) {
	analyst := &cadre.Definition{
		Name:        "code-analyst",
		Description: "Analyze code.",
		Prompt:      "You are a code analyst.\n\nDo not modify files unless asked.\n",
		Report:      cadre.ReportTool,
	}
	tagged := &cadre.Definition{
		Name:   "reviewer",
		Prompt: "You review changes.",
		Report: cadre.ReportTag,
	}
	tests := []struct {
		name string
		got  string
	}{
		{"discovery", Discovery(catalog())},
		{"capabilities", Capabilities(catalog(), 1, 3)},
		{"capabilities_no_defs", Capabilities(nil, 0, 2)},
		{"subagent", SubAgent(SubAgentParams{
			Soul: "Warm, precise, a little dry.", Identity: "You are Ada, the team's assistant.",
			Task: "Summarize recent breakthroughs in quantum error correction", Depth: 1, MaxDepth: 3, Defs: catalog(),
		})},
		{"subagent_at_limit", SubAgent(SubAgentParams{Task: "List top quantum computing companies", Depth: 3, MaxDepth: 3, Defs: catalog()})},
		{"subagent_report_tool", SubAgent(SubAgentParams{Task: "Check the build", Depth: 2, MaxDepth: 2, Report: cadre.ReportTool})},
		{"root_tools", Root(RootParams{
			Soul: "Warm, precise, a little dry.", Identity: "You are Ada.",
			Guidance: "# AGENTS.md\n\nRun `make test` before you commit.\n",
			Defs:     catalog(), Protocol: cadre.ProtocolTools, CanDelegate: true, MaxDepth: 3,
		})},
		{"root_text", Root(RootParams{Defs: catalog(), Protocol: cadre.ProtocolText, CanDelegate: true, MaxDepth: 2})},
		{"root_alone", Root(RootParams{Defs: catalog(), Protocol: cadre.ProtocolTools})},
		{"child_tool", Child(ChildParams{Def: analyst, Defs: catalog(), CanDelegate: true, Protocol: cadre.ProtocolTools, Depth: 1, MaxDepth: 3})},
		{"child_tag_ask", Child(ChildParams{Def: tagged, Soul: "Calm.", Identity: "Reviewer.", Depth: 2, MaxDepth: 3, AskCaller: true})},
		{"child_text", Child(ChildParams{Def: analyst, Defs: catalog(), CanDelegate: true, Protocol: cadre.ProtocolText, Depth: 1, MaxDepth: 3})},
		{"synthesis", Synthesis("Give me an overview of quantum computing today.", []Result{
			{Task: "Research quantum computing", Status: StatusCompleted, Output: "Quantum computing uses qubits for computation.\n\n- superposition\n- entanglement\n"},
			{Task: "Compare A & B <details>", Status: StatusFailed, Output: "timeout after 30s"},
			{Task: `List "top" companies`, Status: StatusCancelled, Output: "Error: Cancelled"},
			{Task: "Summarize", Status: StatusCompleted, Output: "  "},
		})},
		{"onboarding", Onboarding("I will ask you to migrate the billing service to the new queue.", 3)},
		{"onboarded_task", OnboardedTask([]QA{
			{Question: "Which queue: SQS or NATS?", Answer: "NATS."},
			{Question: " Must the old consumer keep running? ", Answer: "Yes, for one release.\n"},
		}, "Migrate the billing service to the new queue.", "Repo: billing, branch main.")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { golden(t, tt.name, tt.got) })
	}
}
