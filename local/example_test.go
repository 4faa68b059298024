package local_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/agentdef"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/model/scripted"
	"github.com/cadre-ai/cadre/tool"
	"github.com/cadre-ai/cadre/tool/builtin"
)

// A program that runs a root agent with one subagent. The model here is
// scripted so the example runs offline; a real program opens a provider
// instead, for example
//
//	openai.New(openai.Config{APIKey: os.Getenv("OPENAI_API_KEY"), Model: "gpt-4o-mini"})
func Example() {
	model, err := scripted.Parse([]byte(`
root:
  - tool_calls:
      - name: spawn_agent
        arguments: {agent: researcher, task: "Find the release date."}
  - text: "The release is on 3 March."
researcher:
  - tool_calls:
      - name: send_agent_message
        arguments: {text: "3 March"}
  - text: "Reported."
`), "example")
	if err != nil {
		log.Fatal(err)
	}
	m, err := scripted.New(model)
	if err != nil {
		log.Fatal(err)
	}

	// Subagents are usually read from markdown files with agentdef.Load.
	def, diags := agentdef.Parse("researcher.md", []byte("---\nname: researcher\ndescription: Finds facts.\ntools: Read, Grep\n---\nYou find facts.\n"), agentdef.ParseOptions{})
	if def == nil {
		log.Fatal(diags)
	}
	ws, err := tool.NewWorkspace(os.TempDir())
	if err != nil {
		log.Fatal(err)
	}
	defer ws.Close()

	eng := local.New(local.Config{
		Models:      local.OneModel{Name: "scripted:example", Model: m},
		RootModel:   "scripted:example",
		Definitions: []*cadre.Definition{def},
		Tools:       builtin.New(ws, builtin.Options{}),
		Runner:      &tool.Executor{Approver: &tool.Approver{Mode: tool.ApproveNone}},
	})
	ctx := context.Background()
	run, err := eng.Start(ctx, "When is the release?", cadre.StartOptions{})
	if err != nil {
		log.Fatal(err)
	}
	res, err := eng.Wait(ctx, run)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Answer)
	for _, a := range res.Agents {
		fmt.Println(a.ID, a.Status, a.Result)
	}
	// Output:
	// The release is on 3 March.
	// root done The release is on 3 March.
	// root/researcher.1 done 3 March
}
