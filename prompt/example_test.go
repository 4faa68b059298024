package prompt_test

import (
	"fmt"

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
