package prompt_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/prompt"
)

func ExampleUserMessage() {
	fmt.Printf("%q\n", prompt.UserMessage("Summarize main.go", ""))
	fmt.Printf("%q\n", prompt.UserMessage("Summarize main.go", "  The repo is a CLI.\n"))
	// Output:
	// "Summarize main.go"
	// "Context:\nThe repo is a CLI.\n\nTask:\nSummarize main.go"
}

func ExampleSystemMessage() {
	fmt.Println(prompt.SystemMessage("root/researcher.1", "Found 3 sources."))
	// Output:
	// <system_message origin="root/researcher.1">Found 3 sources.</system_message>
}

func ExampleOnboardedTask() {
	fmt.Println(prompt.OnboardedTask([]prompt.QA{{Question: "Which branch?", Answer: "main"}}, "Fix the build.", ""))
	// Output:
	// Onboarding:
	// Q: Which branch?
	// A: main
	//
	// Fix the build.
}

func ExampleSynthesis() {
	fmt.Println(prompt.Synthesis("Compare the two databases.", []prompt.Result{
		{Task: "Benchmark A & B", Status: prompt.StatusCompleted, Output: "A is 2x faster."},
		{Task: "Check licences", Status: prompt.StatusFailed, Output: "timeout after 30s"},
	}))
	// Output:
	// <sub_agent_results>
	// <result task="Benchmark A &amp; B" status="completed">
	// A is 2x faster.
	// </result>
	// <result task="Check licences" status="failed">
	// Error: timeout after 30s
	// </result>
	// </sub_agent_results>
	//
	// The original request:
	// <original_request>
	// Compare the two databases.
	// </original_request>
	//
	// Based on these sub-agent results, write one coherent response to the original request that integrates all findings. Where a sub-agent failed or was cancelled, say what is missing and fill the gap yourself if you can. Do not mention the sub-agents unless it helps the reader.
}

func ExampleDiscovery() {
	block := prompt.Discovery([]*cadre.Definition{
		{Name: "summarizer", Description: "Summarize documents concisely.", Tools: []string{"read_file"}, Timeout: 60 * time.Second},
		{Name: "indexer", Description: "Rebuilds the index.", Visibility: cadre.VisibilityInternal},
	})
	head, _, _ := strings.Cut(block, "## How to delegate")
	fmt.Print(head)
	// Output:
	// [available-subagents — use spawn_agent to delegate]
	//
	// ## summarizer
	// Summarize documents concisely.
	// Tools: read_file
	// Timeout: 60s
}
