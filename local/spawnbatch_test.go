package local

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/model/scripted"
)

// A reply of more spawns than one batch starts (spawnBatch without a
// store or with one in memory, storeBatch with one on disk, whose children
// are launched while their Starts are written: see spawnStored) starts
// every child once, acknowledges each spawn, and gives each call the
// report of its own child.
func TestSpawnsOfManyBatches(t *testing.T) {
	for _, c := range []struct {
		name  string
		n     int
		store func() cadre.Store
	}{
		{"without a store", 2*spawnBatch + 22, nil},
		{"with a store in memory", 2*spawnBatch + 22, func() cadre.Store { return memstore.New() }},
		// A memstore seen only as a cadre.Store does not say it is in
		// memory: it stands for a store on disk.
		{"with a store on disk", storeAhead*storeBatch + 44, func() cadre.Store { return struct{ cadre.Store }{memstore.New()} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkNoLeaks(t)
			m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
				if req.Agent == cadre.RootID {
					if req.Turn == 1 {
						cs := make([]cadre.ToolCall, c.n)
						for i := range cs {
							cs[i] = tc("s"+strconv.Itoa(i), loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": "unit " + strconv.Itoa(i)})
						}
						return calls(cs...), nil
					}
					return text("all done"), nil
				}
				// The task is in the worker's first message.
				task := req.Messages[0].Content
				i := strings.Index(task, "unit ")
				if i < 0 {
					return nil, fmt.Errorf("%s: no unit in %q", req.Agent, task)
				}
				unit := strings.Fields(task[i+len("unit "):])[0]
				return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "report of unit " + unit + "."})), nil
			})
			m.SetRecordLimit(2 * c.n)
			cfg := Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: defs("worker"),
				Limits: cadre.Limits{MaxAgents: 2000}}
			if c.store != nil {
				cfg.Store = c.store()
			}
			res, err, _ := runTask(t, cfg, "go")
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != cadre.StatusDone || len(res.Agents) != c.n+1 {
				t.Fatalf("status %s with %d agents, want done with %d", res.Status, len(res.Agents), c.n+1)
			}
			for _, a := range res.Agents {
				if a.Status != cadre.StatusDone {
					t.Errorf("%s ended %s: %s", a.ID, a.Status, a.Error)
				}
			}
			reqs := m.RequestsOf(cadre.RootID)
			if len(reqs) != 2 {
				t.Fatalf("the root made %d model calls, want 2", len(reqs))
			}
			results := map[string]string{}
			for _, msg := range reqs[1].Messages {
				if msg.Role == cadre.RoleTool {
					results[msg.ToolCallID] = msg.Content
				}
			}
			if len(results) != c.n {
				t.Fatalf("%d spawn results, want %d", len(results), c.n)
			}
			for i := range c.n {
				want := "report of unit " + strconv.Itoa(i) + "."
				if got := results["s"+strconv.Itoa(i)]; !strings.Contains(got, want) {
					t.Errorf("spawn %d: result %q, want it to hold %q", i, got, want)
				}
			}
		})
	}
}

// The limits are checked for every child of a reply before any of them
// starts: with room for the root's children and no more, a reply of more
// spawns than one batch starts every one of them, and it is their own
// children that are refused, however fast the first ones ask for them.
func TestSpawnLimitsBeforeAnyChildStarts(t *testing.T) {
	checkNoLeaks(t)
	n := 3*spawnBatch + 10
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch {
		case req.Agent == cadre.RootID && req.Turn == 1:
			cs := make([]cadre.ToolCall, n)
			for i := range cs {
				cs[i] = tc("s"+strconv.Itoa(i), loop.ToolSpawnAgent, map[string]string{"agent": "lead", "task": "part " + strconv.Itoa(i)})
			}
			return calls(cs...), nil
		case req.Agent == cadre.RootID:
			return text("all done"), nil
		case req.Turn == 1:
			return calls(tc("w", loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": "a detail of " + string(req.Agent)})), nil
		}
		return calls(tc("r", loop.ToolSendAgentMessage, map[string]string{"text": "done"})), nil
	})
	cfg := Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: defs("lead", "worker"),
		Limits: cadre.Limits{MaxAgents: n + 1, MaxDepth: 3}}
	res, err, _ := runTask(t, cfg, "go")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Agents) != n+1 {
		t.Fatalf("%d agents, want the root and its %d leads", len(res.Agents), n)
	}
	for _, a := range res.Agents[1:] {
		if a.Parent != cadre.RootID {
			t.Errorf("%s was started in place of a lead", a.ID)
		}
	}
	for _, msg := range m.RequestsOf(cadre.RootID)[1].Messages {
		if msg.Role == cadre.RoleTool && strings.Contains(msg.Content, "agent limit") {
			t.Fatalf("a lead was refused: %s", msg.Content)
		}
	}
}
