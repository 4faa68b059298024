package local

import (
	"context"

	"github.com/cadre-ai/cadre"
)

// An Observer watches the agents of the engine's runs from inside: package
// telemetry's Observer is one, and turns what it sees into traces and
// metrics. Its methods are called from many goroutines at once and must
// return quickly; they cannot change what the engine does, except for the
// values StartAgent adds to an agent's context.
type Observer interface {
	// StartAgent is called as an agent's goroutine starts, for a new agent
	// and again for each agent a resume carries on (resumed is then set and
	// agent.Started is when the agent first started). It returns the
	// context the agent's model and tool calls are made in: ctx, or ctx
	// with values added.
	StartAgent(ctx context.Context, run string, agent cadre.AgentInfo, resumed bool) context.Context
	// Event is called with each event of a run as the engine publishes it,
	// before the store or any watcher has it. The events of one agent come
	// in the order they happened.
	Event(ev cadre.Event)
}

// observeStart gives the engine's Observer the agent as its goroutine
// starts, and keeps the context it returns for the agent's calls. It is
// called from the agent's goroutine before it makes any call.
func (a *agent) observeStart(resumed bool) {
	o := a.run.e.cfg.Observer
	if o == nil {
		return
	}
	a.run.mu.Lock()
	info := *a.run.infos[a.id]
	a.run.mu.Unlock()
	a.ctx = o.StartAgent(a.ctx, a.run.id, info, resumed)
	a.storeCtx = context.WithoutCancel(a.ctx)
}

// cost is what u costs on the named model at the configured prices, zero
// when the model has none.
func (e *Engine) cost(model string, u cadre.Usage) float64 {
	c, _ := e.cfg.Prices.Cost(model, u)
	return c
}

// treeCost adds up the cost of agents.
func treeCost(agents []cadre.AgentInfo) float64 {
	var c float64
	for _, a := range agents {
		c += a.Cost
	}
	return c
}
