package local

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/prompt"
	"github.com/cadre-ai/cadre/tool"
)

// Engine runs agents in this process. It holds each run it starts or
// resumes while the run goes on and, once it has ended, its result until
// keptRuns more runs have ended; what it no longer holds is read from the
// store.
type Engine struct {
	cfg  Config
	defs map[string]*cadre.Definition
	ws   tool.Workspace // where the rules of definitions judge paths

	mu    sync.Mutex
	runs  map[string]*run
	ended []string // the held runs that ended, oldest first
}

// keptRuns is how many ended runs an Engine holds the results of, for
// Wait and Tree.
const keptRuns = 8

// forget, now that r has ended, drops the oldest ended runs beyond
// keptRuns, and the latest events of the ended runs before r: a run's
// events stay for watchers until the next run ends (or, with a store, are
// read from it once the run has ended).
func (e *Engine) forget(r *run) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n := len(e.ended); n > 0 {
		if prev := e.runs[e.ended[n-1]]; prev != nil && prev.over() {
			prev.dropFeed()
		}
	}
	e.ended = append(e.ended, r.id)
	for len(e.ended) > keptRuns {
		id := e.ended[0]
		e.ended = e.ended[1:]
		if old := e.runs[id]; old != nil && old.over() {
			delete(e.runs, id)
		}
	}
}

// New returns an Engine for cfg.
func New(cfg Config) *Engine {
	cfg.Limits = cfg.Limits.WithDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Runner == nil {
		cfg.Runner = directRunner{}
	}
	if cfg.Protocol == "" {
		cfg.Protocol = cadre.ProtocolAuto
	}
	if cfg.Report == "" {
		cfg.Report = cadre.ReportTool
	}
	if cfg.EventBuffer <= 0 {
		cfg.EventBuffer = DefaultEventBuffer
	}
	defs := make(map[string]*cadre.Definition, len(cfg.Definitions))
	for _, d := range cfg.Definitions {
		defs[d.Name] = d
	}
	return &Engine{cfg: cfg, defs: defs, ws: tool.Workspace{Root: cfg.Workspace}, runs: map[string]*run{}}
}

var (
	_ cadre.Engine   = (*Engine)(nil)
	_ cadre.Answerer = (*Engine)(nil)
)

// ErrNoStore is returned by Resume when the engine has no Store.
var ErrNoStore = errors.New("local: the engine has no store, so there is no run to resume")

// NewRunID returns a fresh run ID: the UTC time and a random suffix.
func NewRunID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// Start begins a run of the root agent on task (see cadre.Engine). The run
// goes on until the root finishes, Cancel is called, or the run's timeout
// passes; ctx bounds only the recording of the run.
func (e *Engine) Start(ctx context.Context, task string, opts cadre.StartOptions) (string, error) {
	if e.cfg.Models == nil {
		return "", errors.New("local: Config.Models is nil: the engine needs a ModelSource to call models")
	}
	if strings.TrimSpace(task) == "" {
		return "", errors.New("local: the task is empty: say what the agent should do")
	}
	id := opts.ID
	if id == "" {
		id = NewRunID()
	}
	r, err := e.newRun(id, task)
	if err != nil {
		return "", err
	}
	if s := r.store; s != nil {
		// The lease first: no reader sees the run without an owner.
		if err := r.own(ctx); err != nil {
			r.abandon(err)
			return "", fmt.Errorf("local: run %s: %w", id, err)
		}
		rec := &cadre.RunRecord{ID: id, Task: task, Status: cadre.StatusRunning, Model: e.cfg.RootModel, Started: time.Now().UTC(), Config: e.cfg.Settings}
		if err := s.CreateRun(ctx, rec); err != nil {
			r.abandon(err)
			return "", fmt.Errorf("local: record run %s: %w", id, err)
		}
	}
	r.emit(cadre.Event{Type: cadre.EventRunStarted, Data: cadre.RunStarted{Task: task, Model: e.cfg.RootModel}})
	r.warn()
	root, start, err := r.newRoot()
	if err == nil {
		r.created++
		err = r.create(root, start)
	}
	if err != nil {
		r.failStart(err)
		return "", err
	}
	r.launch(root, nil)
	r.watch()
	return id, nil
}

// live returns the run of that ID this engine holds, or nil.
func (e *Engine) live(id string) *run {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.runs[id]
}

// unknown is the error for a run the engine does not hold: ErrNotRunning
// when its store has it, else a wrapped cadre.ErrNotFound.
func (e *Engine) unknown(ctx context.Context, id string) error {
	if s := e.cfg.Store; s != nil {
		rec, err := s.GetRun(ctx, id)
		switch {
		case err == nil && rec.Status.Terminal():
			return fmt.Errorf("run %s has ended (%s): %w", id, rec.Status, cadre.ErrNotRunning)
		case err == nil:
			return fmt.Errorf("run %s is not going on in this process (resume it if its process stopped): %w", id, cadre.ErrNotRunning)
		case !errors.Is(err, cadre.ErrNotFound):
			return fmt.Errorf("run %s: %w", id, err)
		}
	}
	return fmt.Errorf("local: there is no run %s in this engine or its store: %w", id, cadre.ErrNotFound)
}

// Wait blocks until the run has ended, or ctx has, and returns its result;
// the error is a *cadre.RunError when the run did not complete. A run the
// engine does not hold is read from the store when it has ended there.
func (e *Engine) Wait(ctx context.Context, id string) (*cadre.Result, error) {
	r := e.live(id)
	if r == nil {
		return e.storedResult(ctx, id)
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	res := r.result
	if res.Status != cadre.StatusDone {
		return res, &cadre.RunError{Run: id, Status: res.Status, Reason: res.Error}
	}
	return res, nil
}

// storedResult rebuilds the result of an ended run from the store.
func (e *Engine) storedResult(ctx context.Context, id string) (*cadre.Result, error) {
	s := e.cfg.Store
	if s == nil {
		return nil, e.unknown(ctx, id)
	}
	rec, err := s.GetRun(ctx, id)
	if err != nil || !rec.Status.Terminal() {
		return nil, e.unknown(ctx, id)
	}
	tree, err := e.storedTree(ctx, id)
	if err != nil {
		return nil, err
	}
	res := &cadre.Result{RunID: id, Status: rec.Status, Answer: rec.Answer, Error: rec.Error, Usage: rec.Usage, Agents: tree.Agents,
		Cost: tree.Cost}
	evs, err := s.Events(ctx, id, 0)
	if err != nil {
		return nil, fmt.Errorf("run %s: read its events: %w", id, err)
	}
	for _, ev := range evs {
		if f, ok := ev.Data.(cadre.FindingReported); ok {
			res.Findings = append(res.Findings, cadre.Finding{Agent: ev.Agent, Title: f.Title, Content: f.Content})
		}
	}
	if res.Status != cadre.StatusDone {
		return res, &cadre.RunError{Run: id, Status: res.Status, Reason: res.Error}
	}
	return res, nil
}

// Cancel stops the run, or an agent and its subtree (see cadre.Engine).
// Each agent ends after its own descendants have ended.
func (e *Engine) Cancel(ctx context.Context, id string, opts cadre.CancelOptions) error {
	r := e.live(id)
	if r == nil {
		return e.unknown(ctx, id)
	}
	if opts.Abort && opts.Agent != "" {
		return fmt.Errorf("cancel %s in run %s: Abort stops a whole run; leave Agent empty, or cancel the agent without Abort", opts.Agent, id)
	}
	select {
	case <-r.stop:
		return fmt.Errorf("run %s is ending already: %w", id, cadre.ErrNotRunning)
	default:
	}
	switch {
	case opts.Abort:
		r.abort(opts.Reason)
	case opts.Agent != "":
		return r.cancelAgent(opts.Agent, opts.Reason)
	default:
		r.cancelRun(opts.Reason)
	}
	return nil
}

// Tree returns a snapshot of the run's agents, from the store for a run the
// engine does not hold.
func (e *Engine) Tree(ctx context.Context, id string) (*cadre.Tree, error) {
	if r := e.live(id); r != nil {
		return r.tree(), nil
	}
	return e.storedTree(ctx, id)
}

func (e *Engine) storedTree(ctx context.Context, id string) (*cadre.Tree, error) {
	s := e.cfg.Store
	if s == nil {
		return nil, e.unknown(ctx, id)
	}
	recs, err := s.ListAgents(ctx, id)
	if err != nil {
		if errors.Is(err, cadre.ErrNotFound) {
			return nil, e.unknown(ctx, id)
		}
		return nil, fmt.Errorf("run %s: list its agents: %w", id, err)
	}
	t := &cadre.Tree{Run: id, Agents: make([]cadre.AgentInfo, 0, len(recs))}
	slices.SortStableFunc(recs, func(a, b *cadre.AgentRecord) int {
		return cmp.Or(cmp.Compare(a.Depth, b.Depth), a.Started.Compare(b.Started))
	})
	for _, a := range recs {
		t.Usage = t.Usage.Add(a.Usage)
		t.Agents = append(t.Agents, cadre.AgentInfo{ID: a.ID, Parent: a.Parent, Depth: a.Depth, Definition: a.Definition, Model: a.Model,
			Task: a.Task, Status: a.Status, Turns: a.Turns, Usage: a.Usage, Started: a.Started, Ended: a.Ended, Result: a.Result, Error: a.Error,
			Cost: e.cost(a.Model, a.Usage)})
	}
	t.Cost = treeCost(t.Agents)
	return t, nil
}

// Events returns the run's events (see cadre.Engine): from the first this
// engine published for it (run_started, or run_resumed), then live ones,
// until the run's last. The engine keeps the latest Config.EventBuffer
// events; a watcher further behind is sent an EventSkipped in place of the
// ones it missed. For a run that has ended, when there is a store, and for
// a run the engine does not hold, the sequence is the events the store
// kept, and ends there. Without a store, the events of a run that ended are
// kept until another run ends.
func (e *Engine) Events(ctx context.Context, id string) iter.Seq2[cadre.Event, error] {
	r := e.live(id)
	if r != nil {
		if f := r.watchable(); f != nil {
			return f.watch(ctx)
		}
	}
	return func(yield func(cadre.Event, error) bool) {
		s := e.cfg.Store
		if s == nil && r != nil {
			yield(cadre.Event{}, fmt.Errorf("run %s has ended and its events are no longer kept: the engine has no store: %w", id, cadre.ErrNotRunning))
			return
		}
		if s == nil {
			yield(cadre.Event{}, e.unknown(ctx, id))
			return
		}
		evs, err := s.Events(ctx, id, 0)
		if err != nil {
			if errors.Is(err, cadre.ErrNotFound) {
				err = e.unknown(ctx, id)
			}
			yield(cadre.Event{}, err)
			return
		}
		for _, ev := range evs {
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// Answer answers the question the agent put to the user (a root agent's
// ask_caller), while Config.AskUser is asking it: the first answer, the
// one AskUser returns or this one, is the agent's. AskUser's context is
// cancelled when this one comes first. A program whose only way to answer
// is Answer sets AskUser to AwaitAnswer.
func (e *Engine) Answer(ctx context.Context, id string, agent cadre.AgentID, text string) error {
	r := e.live(id)
	if r == nil {
		return e.unknown(ctx, id)
	}
	return r.answer(agent, text)
}

// AwaitAnswer is a Config.AskUser that leaves every question to
// Engine.Answer: it waits until the question is answered or the agent
// stops.
func AwaitAnswer(ctx context.Context, _ cadre.AgentID, _ string) (string, error) {
	<-ctx.Done()
	return "", context.Cause(ctx)
}

// protocolFor resolves how an agent of def on the named model delegates:
// the run's protocol when it is forced, else the definition's, else the
// model's ability.
func (e *Engine) protocolFor(def *cadre.Definition, model string) cadre.Protocol {
	if p := e.cfg.Protocol; p == cadre.ProtocolText || p == cadre.ProtocolTools {
		return p
	}
	if def != nil && (def.Protocol == cadre.ProtocolText || def.Protocol == cadre.ProtocolTools) {
		return def.Protocol
	}
	if tc, ok := e.cfg.Models.(ToolCaller); ok && !tc.ToolCalling(model) {
		return cadre.ProtocolText
	}
	return cadre.ProtocolTools
}

// newRoot builds the root agent and its Start input.
func (r *run) newRoot() (*agent, loop.Start, error) {
	e := r.e
	lim := e.cfg.Limits
	lim.MaxDepth = max(lim.MaxDepth, 0) // NoSubagents: none below the root
	name := e.cfg.RootModel
	m, err := e.cfg.Models.Open(name)
	if err != nil {
		return nil, loop.Start{}, fmt.Errorf("open model %q: %w", name, err)
	}
	tools := e.cfg.Tools
	def := e.cfg.RootDefinition
	definition := "root"
	if def != nil {
		definition = def.Name
		tools = filterTools(tools, def)
	}
	sets := ruleSets(def, nil)
	rules, err := compileRules(sets)
	if err != nil {
		return nil, loop.Start{}, err
	}
	userFacing := r.userFacingFor(rules)
	protocol := e.protocolFor(def, name)
	delegation := delegationFor(def, nil)
	// On the text protocol an agent may delegate to general subagents even
	// when there is no definition to name, and only by <spawn_agents>
	// blocks, which run tasks: agent_onboard alone does not let it.
	starts := loop.StartsAgents(delegation)
	if protocol == cadre.ProtocolText {
		starts = loop.RunsTasks(delegation)
	}
	delegate := lim.MaxDepth > 0 && starts &&
		(len(userFacing) > 0 || protocol == cadre.ProtocolText && rules.AllowsAgent(""))
	var system string
	if def != nil {
		system = prompt.Child(prompt.ChildParams{Def: def, Soul: e.cfg.Soul, Identity: e.cfg.Identity, Defs: userFacing,
			CanDelegate: delegate, Protocol: protocol, Depth: 0, MaxDepth: lim.MaxDepth, AskCaller: def.AskCaller})
		if e.cfg.Guidance != "" {
			system += "\n\n" + e.cfg.Guidance
		}
	} else {
		system = prompt.Root(prompt.RootParams{Soul: e.cfg.Soul, Identity: e.cfg.Identity, Guidance: e.cfg.Guidance, Defs: userFacing,
			Protocol: protocol, CanDelegate: delegate, Depth: 0, MaxDepth: lim.MaxDepth})
	}
	cfg := loop.Config{
		ID: cadre.RootID, Depth: 0, MaxDepth: lim.MaxDepth, Definition: definition, Model: name, System: system,
		Tools: specs(tools), Delegate: delegate, Delegation: delegation, Rules: sets, Catalog: r.catalog(), Protocol: protocol,
		MaxTurns: lim.MaxTurns, Say: e.cfg.Say, Withheld: withheld(e.cfg.Tools, tools),
	}
	if def != nil {
		if def.MaxTurns > 0 {
			cfg.MaxTurns = def.MaxTurns
		}
		cfg.AskCaller = def.AskCaller
		cfg.MaxQuestions = e.maxQuestions(def)
		cfg.Temperature = def.Temperature
	}
	a := r.newAgent(cfg, nil, def, m, tools, rules)
	start := loop.Start{Config: cfg, Task: r.task, Messages: []cadre.Message{{Role: cadre.RoleUser, Content: r.task}}}
	return a, start, nil
}
