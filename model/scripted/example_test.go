package scripted_test

import (
	"context"
	"fmt"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model/scripted"
)

func Example() {
	s, err := scripted.Parse([]byte(`
root:
  - text: "Asking the researcher."
    tool_calls:
      - name: spawn_agent
        arguments: {agent: researcher, task: "Find the date."}
  - text: "It is 3 March."
researcher:
  - text: "3 March."
`), "example.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := scripted.New(s)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range []*cadre.Request{
		{Agent: "root", Turn: 1},
		{Agent: "root/researcher.1", Turn: 1},
		{Agent: "root", Turn: 2},
	} {
		resp, err := cadre.Collect(m.Stream(context.Background(), r), nil)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s: %s", r.Agent, resp.Message.Content)
		for _, tc := range resp.Message.ToolCalls {
			fmt.Printf(" [%s %s]", tc.Name, tc.Arguments)
		}
		fmt.Println()
	}
	fmt.Println(m.TotalCalls(), "calls")
	// Output:
	// root: Asking the researcher. [spawn_agent {"agent":"researcher","task":"Find the date."}]
	// root/researcher.1: 3 March.
	// root: It is 3 March.
	// 3 calls
}

func ExampleFunc() {
	m := scripted.Func(func(ctx context.Context, r *cadre.Request) (*cadre.Response, error) {
		return &cadre.Response{Message: cadre.Message{Content: fmt.Sprintf("turn %d of %s", r.Turn, r.Agent)}}, nil
	})
	resp, _ := cadre.Collect(m.Stream(context.Background(), &cadre.Request{Agent: "root", Turn: 4}), nil)
	fmt.Println(resp.Message.Content)
	// Output: turn 4 of root
}
