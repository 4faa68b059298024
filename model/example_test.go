package model_test

import (
	"fmt"

	"github.com/cadre-ai/cadre/model"
)

func ExampleParseName() {
	p, m, _ := model.ParseName("ollama:llama3.2:3b")
	fmt.Println(p, m)
	_, _, err := model.ParseName("gpt-4o")
	fmt.Println(err)
	// Output:
	// ollama llama3.2:3b
	// model "gpt-4o" has no provider prefix: write it as provider:model, for example openai:gpt-4o (known providers: openai, ollama, anthropic, scripted)
}
