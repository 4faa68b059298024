package memstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/memstore"
)

func Example() {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()

	start := time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)
	if err := s.CreateRun(ctx, &cadre.RunRecord{ID: "run-1", Task: "Summarise the README", Status: cadre.StatusRunning, Started: start}); err != nil {
		fmt.Println(err)
		return
	}
	events := []cadre.Event{
		{Type: cadre.EventRunStarted, Run: "run-1", Time: start},
		{Type: cadre.EventAgentStarted, Run: "run-1", Agent: cadre.RootID, Time: start, Data: cadre.AgentStarted{Definition: "default", Model: "openai:gpt-4o-mini"}},
	}
	if err := s.AppendEvents(ctx, events); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("assigned:", events[0].Seq, events[1].Seq)

	later, _ := s.Events(ctx, "run-1", 1)
	for _, e := range later {
		started, _ := e.Data.(cadre.AgentStarted)
		fmt.Printf("%d %s %s model=%s (%T)\n", e.Seq, e.Type, e.Agent, started.Model, e.Data)
	}
	// Output:
	// assigned: 1 2
	// 2 agent_started root model=openai:gpt-4o-mini (cadre.AgentStarted)
}
