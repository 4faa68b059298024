package local

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
)

// A Planner builds agents as this engine builds them, for an engine that
// runs them elsewhere (package temporal): the root's and each child's
// configuration, system prompt and first messages, and the tools an agent
// may call, guarded by its rules. It keeps no run: the run-wide limits
// (agent count, repeated tasks, tokens, concurrency) are the caller's to
// hold. A Planner is safe for concurrent use.
type Planner struct {
	mu sync.Mutex
	r  *run
}

// NewPlanner returns a Planner for cfg, which it reads as New does.
// Definitions created during a run (agent_create) are not known to it.
func NewPlanner(cfg Config) *Planner {
	e := New(cfg)
	r := &run{
		e: e, ctx: context.Background(), cancel: func(error) {},
		agents: map[cadre.AgentID]*agent{}, infos: map[cadre.AgentID]*cadre.AgentInfo{},
		defs: make(map[string]*cadre.Definition, len(e.defs)), tasks: map[string]int{}, questions: map[cadre.AgentID]*question{},
	}
	for k, v := range e.defs {
		r.defs[k] = v
	}
	return &Planner{r: r}
}

// begin gives the planner's run a fresh feed that collects what one call
// emits; end returns what it collected.
func (p *Planner) begin() *feed {
	f := newFeed("", 1<<12)
	p.r.feed = f
	p.r.events = newPump(nil, f, slog.New(slog.DiscardHandler))
	return f
}

func (p *Planner) end(f *feed) []cadre.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.ring)
}

// Root returns the root agent's Start for a run of task.
func (p *Planner) Root(task string) (loop.Start, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.r.task = task
	f := p.begin()
	defer p.end(f)
	_, start, err := p.r.newRoot()
	return start, err
}

// parent rebuilds, from its configuration, the parent agent a child is
// built from.
func (p *Planner) parent(cfg loop.Config) (*agent, error) {
	rules, err := compileRules(cfg.Rules)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", cfg.ID, err)
	}
	var tools []cadre.Tool
	for _, t := range p.r.e.cfg.Tools {
		if slices.ContainsFunc(cfg.Tools, func(s cadre.ToolSpec) bool { return s.Name == t.Spec().Name }) {
			tools = append(tools, t)
		}
	}
	var def *cadre.Definition
	if d, ok := p.r.defs[cfg.Definition]; ok {
		def = d
	}
	return p.r.newAgent(cfg, nil, def, nil, tools, rules), nil
}

// Child builds the child that spec asks for, of the agent whose
// configuration is parent: its Start, or why it may not start (in words
// for the parent's model). events are what building it told (warnings
// about models that could not be used), as the parent's events. The
// caller has checked the run-wide limits.
func (p *Planner) Child(ctx context.Context, parent loop.Config, spec loop.ChildSpec) (start loop.Start, refused string, events []cadre.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.begin()
	defer func() { events = p.end(f) }()
	pa, err := p.parent(parent)
	if err != nil {
		return loop.Start{}, "the subagent cannot be started: " + err.Error(), nil
	}
	pa.ctx = ctx
	var def *cadre.Definition
	if spec.Definition != "" {
		if def = p.r.defs[spec.Definition]; def == nil {
			return loop.Start{}, fmt.Sprintf("there is no subagent named %q", spec.Definition), nil
		}
	}
	if spec.Onboarding && def == nil {
		return loop.Start{}, "onboarding needs a subagent definition", nil
	}
	if def != nil && !def.UserFacing() {
		return loop.Start{}, internalRefusal(spec.Definition), nil
	}
	if msg := p.r.mayStart(pa, spec); msg != "" {
		return loop.Start{}, msg, nil
	}
	_, start, refused = p.r.newChild(pa, spec, def)
	return start, refused, nil
}

// Model opens the named model as the engine's ModelSource does.
func (p *Planner) Model(name string) (cadre.Model, error) {
	return p.r.e.cfg.Models.Open(name)
}

// RunTool runs one tool call of the agent whose configuration is cfg, as
// the local engine does: the tool must be one the agent has, guarded by the
// rules the agent must pass. A call that changes something and was in
// flight when its worker stopped (resumed) is not repeated: it is answered
// with an error telling the model to check its effect. The result holds
// the media of a cadre.MediaTool's result.
func (p *Planner) RunTool(ctx context.Context, cfg loop.Config, call cadre.ToolCall, resumed bool) loop.ToolResult {
	fail := func(msg string) loop.ToolResult { return loop.ToolResult{CallID: call.ID, Content: msg, IsError: true} }
	rules, err := compileRules(cfg.Rules)
	if err != nil {
		return fail(fmt.Sprintf("Error: the rules of agent %s do not compile: %v", cfg.ID, err))
	}
	var t cadre.Tool
	for _, c := range p.r.e.cfg.Tools {
		if c.Spec().Name == call.Name && slices.ContainsFunc(cfg.Tools, func(s cadre.ToolSpec) bool { return s.Name == call.Name }) {
			t = c
		}
	}
	if t == nil {
		return fail(fmt.Sprintf("Error: there is no tool named %q for this agent.", call.Name))
	}
	if resumed && cadre.Mutates(t) {
		return fail(interruptedCall)
	}
	return p.r.e.runTool(ctx, cfg.ID, t, nil, rules, call)
}
