package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/prompt"
)

// Engine runs agents in this process.
type Engine struct {
	cfg  Config
	defs map[string]*cadre.Definition
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
	if cfg.Protocol == "" || cfg.Protocol == cadre.ProtocolAuto {
		cfg.Protocol = cadre.ProtocolTools
	}
	if cfg.Report == "" {
		cfg.Report = cadre.ReportTool
	}
	defs := make(map[string]*cadre.Definition, len(cfg.Definitions))
	for _, d := range cfg.Definitions {
		defs[d.Name] = d
	}
	return &Engine{cfg: cfg, defs: defs}
}

// A Result is how a run ended.
type Result struct {
	RunID  string       `json:"run"`
	Status cadre.Status `json:"status"`
	// Answer is the root's final text.
	Answer   string          `json:"answer"`
	Error    string          `json:"error,omitempty"`
	Usage    cadre.Usage     `json:"usage"`
	Findings []cadre.Finding `json:"findings,omitempty"`
	// BudgetExhausted is set when the token budget stopped agents; Completed
	// and Incomplete then list which agents finished their work.
	BudgetExhausted bool            `json:"budget_exhausted,omitempty"`
	Completed       []cadre.AgentID `json:"completed,omitempty"`
	Incomplete      []cadre.AgentID `json:"incomplete,omitempty"`
	Agents          []AgentInfo     `json:"agents"`
}

// AgentInfo is a snapshot of one agent for the live tree.
type AgentInfo struct {
	ID         cadre.AgentID `json:"id"`
	Parent     cadre.AgentID `json:"parent,omitempty"`
	Depth      int           `json:"depth"`
	Definition string        `json:"definition"`
	Model      string        `json:"model,omitempty"`
	Task       string        `json:"task"`
	Status     cadre.Status  `json:"status"`
	Turns      int           `json:"turns"`
	Usage      cadre.Usage   `json:"usage"`
	Started    time.Time     `json:"started"`
	Ended      time.Time     `json:"ended,omitzero"`
	Result     string        `json:"result,omitempty"`
	Error      string        `json:"error,omitempty"`
	stopped    bool          // stopped by the budget before finishing its work
}

// Run is a run in progress.
type Run struct {
	e      *Engine
	id     string
	task   string
	ctx    context.Context // hard: cancelling it aborts calls at once
	cancel context.CancelCauseFunc
	sem    chan struct{}
	wg     sync.WaitGroup // agent goroutines
	events *pump
	jour   *journal
	done   chan struct{}

	mu        sync.Mutex
	agents    map[cadre.AgentID]*agent
	infos     map[cadre.AgentID]*AgentInfo
	order     []cadre.AgentID
	created   int
	tasks     map[string]int
	usage     cadre.Usage
	warned    bool
	exhausted bool
	findings  []cadre.Finding
	result    *Result
	cancelled string
}

// Start begins a run of the root agent on task. The run goes on until the
// root finishes, ctx is cancelled (calls are aborted at once), Cancel is
// called (agents stop gracefully), or the run's timeout passes.
func (e *Engine) Start(ctx context.Context, task string) (*Run, error) {
	return e.start(ctx, newRunID(), task)
}

// StartID is Start with a run ID chosen by the caller.
func (e *Engine) StartID(ctx context.Context, id, task string) (*Run, error) {
	return e.start(ctx, id, task)
}

func newRunID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

func (e *Engine) start(ctx context.Context, id, task string) (*Run, error) {
	if e.cfg.Models == nil {
		return nil, errors.New("local: Config.Models is nil: the engine needs a ModelSource to call models")
	}
	if strings.TrimSpace(task) == "" {
		return nil, errors.New("local: the task is empty: say what the agent should do")
	}
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	r := &Run{
		e: e, id: id, task: task, ctx: rctx, cancel: cancel,
		sem:    make(chan struct{}, e.cfg.Limits.MaxConcurrent),
		done:   make(chan struct{}),
		agents: map[cadre.AgentID]*agent{},
		infos:  map[cadre.AgentID]*AgentInfo{},
		tasks:  map[string]int{},
	}
	r.events = newPump(e.cfg.Store, e.cfg.Handlers, e.cfg.Logger)
	r.jour = newJournal(e.cfg.Store)
	if s := e.cfg.Store; s != nil {
		rec := &cadre.RunRecord{ID: id, Task: task, Status: cadre.StatusRunning, Model: e.cfg.RootModel, Started: time.Now().UTC()}
		if err := s.CreateRun(ctx, rec); err != nil {
			r.events.close()
			r.jour.close()
			cancel(err)
			return nil, fmt.Errorf("local: record run %s: %w", id, err)
		}
	}
	r.emit(cadre.Event{Type: cadre.EventRunStarted, Data: map[string]any{"task": task, "model": e.cfg.RootModel}})
	root, err := r.newRoot()
	if err != nil {
		r.events.close()
		r.jour.close()
		cancel(err)
		return nil, err
	}
	r.launch(root)
	go r.watch(ctx)
	if t := e.cfg.Limits.Timeout; t > 0 {
		timer := time.AfterFunc(t, func() { r.cancelAll(fmt.Sprintf("the run's time limit of %s passed", t)) })
		go func() { <-r.done; timer.Stop() }()
	}
	return r, nil
}

// watch aborts the run when the caller's context ends.
func (r *Run) watch(ctx context.Context) {
	select {
	case <-ctx.Done():
		r.cancel(context.Cause(ctx))
		r.cancelAll("interrupted")
	case <-r.done:
	}
}

// ID is the run's ID.
func (r *Run) ID() string { return r.id }

// Done is closed when the run has ended and every goroutine has exited.
func (r *Run) Done() <-chan struct{} { return r.done }

// Wait blocks until the run ends and returns its result. The error is set
// when the run did not complete (failed, cancelled, timed out).
func (r *Run) Wait() (*Result, error) {
	<-r.done
	res := r.result
	if res.Status != cadre.StatusDone {
		return res, &RunError{Run: r.id, Status: res.Status, Reason: res.Error}
	}
	return res, nil
}

// RunError says why a run did not complete.
type RunError struct {
	Run    string
	Status cadre.Status
	Reason string
}

func (e *RunError) Error() string {
	return fmt.Sprintf("run %s %s: %s", e.Run, e.Status, e.Reason)
}

// Cancel stops the whole run gracefully: every agent is cancelled, deepest
// first, and the run ends as cancelled.
func (r *Run) Cancel(reason string) {
	if reason == "" {
		reason = "cancelled by the user"
	}
	r.cancelAll(reason)
}

// Abort stops the run at once: calls in flight are aborted.
func (r *Run) Abort() {
	r.cancel(errors.New("aborted"))
	r.cancelAll("aborted")
}

// CancelAgent cancels an agent and all its descendants (deepest first).
func (r *Run) CancelAgent(id cadre.AgentID, reason string) error {
	r.mu.Lock()
	_, ok := r.agents[id]
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("cancel %s: no live agent with that id in run %s", id, r.id)
	}
	if reason == "" {
		reason = "cancelled by the user"
	}
	r.cancelTree(id, reason)
	return nil
}

func (r *Run) cancelAll(reason string) {
	r.mu.Lock()
	if r.cancelled == "" {
		r.cancelled = reason
	}
	r.mu.Unlock()
	r.cancelTree(cadre.RootID, reason)
}

// cancelTree posts Cancel to id's live descendants, deepest first, then to id.
func (r *Run) cancelTree(id cadre.AgentID, reason string) {
	r.mu.Lock()
	var targets []*agent
	for aid, a := range r.agents {
		if aid == id || id.IsAncestorOf(aid) {
			targets = append(targets, a)
		}
	}
	r.mu.Unlock()
	sort.Slice(targets, func(i, j int) bool {
		if targets[i].depth != targets[j].depth {
			return targets[i].depth > targets[j].depth
		}
		return targets[i].id < targets[j].id
	})
	for _, a := range targets {
		a.box.put(loop.Cancel{Reason: reason})
	}
}

// Tree returns a snapshot of every agent of the run, in creation order.
func (r *Run) Tree() []AgentInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]AgentInfo, 0, len(r.order))
	for _, id := range r.order {
		out = append(out, *r.infos[id])
	}
	return out
}

// Usage is the tokens used so far by the whole tree.
func (r *Run) Usage() cadre.Usage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.usage
}

// emit publishes an event for the run.
func (r *Run) emit(ev cadre.Event) {
	ev.Run = r.id
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	r.events.publish(ev)
}

// newRoot creates the root agent.
func (r *Run) newRoot() (*agent, error) {
	e := r.e
	lim := e.cfg.Limits
	name := e.cfg.RootModel
	m, err := e.cfg.Models.Open(name)
	if err != nil {
		return nil, fmt.Errorf("open model %q: %w", name, err)
	}
	tools := e.cfg.Tools
	def := e.cfg.RootDefinition
	definition := "root"
	if def != nil {
		definition = def.Name
		tools = filterTools(tools, def)
	}
	delegate := lim.MaxDepth > 0 && len(e.userFacing()) > 0
	protocol := e.cfg.Protocol
	var system string
	if def != nil {
		system = prompt.Child(prompt.ChildParams{Def: def, Soul: e.cfg.Soul, Identity: e.cfg.Identity, Defs: e.userFacing(), CanDelegate: delegate, Protocol: protocol, Depth: 0, MaxDepth: lim.MaxDepth})
		if e.cfg.Guidance != "" {
			system += "\n\n" + e.cfg.Guidance
		}
	} else {
		system = prompt.Root(prompt.RootParams{Soul: e.cfg.Soul, Identity: e.cfg.Identity, Guidance: e.cfg.Guidance, Defs: e.userFacing(), Protocol: protocol, CanDelegate: delegate, Depth: 0, MaxDepth: lim.MaxDepth})
	}
	a := r.newAgent(cadre.RootID, nil, definition, def, name, m, tools, delegate)
	cfg := loop.Config{
		ID: cadre.RootID, Depth: 0, MaxDepth: lim.MaxDepth, Definition: definition, System: system,
		Tools: specs(tools), Delegate: delegate, Catalog: e.catalog(), Protocol: protocol,
		MaxTurns: lim.MaxTurns, Say: e.cfg.Say,
	}
	if def != nil && def.MaxTurns > 0 {
		cfg.MaxTurns = def.MaxTurns
	}
	r.register(a, r.task)
	a.first = loop.Start{Config: cfg, Task: r.task, Messages: []cadre.Message{{Role: cadre.RoleUser, Content: r.task}}}
	return a, nil
}

func (e *Engine) userFacing() []*cadre.Definition {
	var out []*cadre.Definition
	for _, d := range e.cfg.Definitions {
		if d.UserFacing() {
			out = append(out, d)
		}
	}
	return out
}

func (e *Engine) catalog() []loop.CatalogEntry {
	out := make([]loop.CatalogEntry, 0, len(e.cfg.Definitions))
	for _, d := range e.cfg.Definitions {
		out = append(out, loop.CatalogEntry{Name: d.Name, Internal: !d.UserFacing(), OnboardingRequired: d.Onboarding == cadre.OnboardingRequired})
	}
	return out
}

func specs(tools []cadre.Tool) []cadre.ToolSpec {
	out := make([]cadre.ToolSpec, 0, len(tools))
	for _, t := range tools {
		out = append(out, t.Spec())
	}
	return out
}

// filterTools applies a definition's allowlist and denylist to the tools an
// agent could have; it never adds a tool.
func filterTools(from []cadre.Tool, def *cadre.Definition) []cadre.Tool {
	if def == nil {
		return from
	}
	var out []cadre.Tool
	for _, t := range from {
		name := t.Spec().Name
		if def.Tools != nil && !slices.Contains(def.Tools, name) {
			continue
		}
		if slices.Contains(def.DisallowedTools, name) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// mayDelegate reports whether a definition's allowlist lets it start
// subagents.
func mayDelegate(def *cadre.Definition, parent bool) bool {
	if def == nil || def.Tools == nil {
		return parent
	}
	return slices.Contains(def.Tools, loop.ToolSpawnAgent) || slices.Contains(def.Tools, loop.ToolStartBackground)
}

func (r *Run) register(a *agent, task string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.agents[a.id] = a
	r.order = append(r.order, a.id)
	r.created++
	parent := cadre.AgentID("")
	if a.parent != nil {
		parent = a.parent.id
	}
	r.infos[a.id] = &AgentInfo{ID: a.id, Parent: parent, Depth: a.depth, Definition: a.definition, Model: a.modelName, Task: task, Status: cadre.StatusQueued, Started: time.Now()}
}

func (r *Run) launch(a *agent) {
	r.wg.Add(1)
	go a.main()
	if s := r.e.cfg.Store; s != nil {
		r.putAgent(a)
	}
}

// putAgent writes the agent's record.
func (r *Run) putAgent(a *agent) {
	s := r.e.cfg.Store
	if s == nil {
		return
	}
	r.mu.Lock()
	in := *r.infos[a.id]
	r.mu.Unlock()
	rec := &cadre.AgentRecord{Run: r.id, ID: in.ID, Parent: in.Parent, Depth: in.Depth, Definition: in.Definition, Model: in.Model,
		Task: in.Task, Status: in.Status, Turns: in.Turns, Usage: in.Usage, Started: in.Started.UTC(), Result: in.Result, Error: in.Error}
	if !in.Ended.IsZero() {
		rec.Ended = in.Ended.UTC()
	}
	if err := s.PutAgent(context.WithoutCancel(r.ctx), rec); err != nil {
		r.e.cfg.Logger.Warn("store agent record", "run", r.id, "agent", a.id, "err", err)
	}
}

func (r *Run) setStatus(a *agent, st cadre.Status) {
	r.mu.Lock()
	in := r.infos[a.id]
	changed := in.Status != st
	in.Status = st
	r.mu.Unlock()
	if changed && (st == cadre.StatusRunning || st == cadre.StatusWaiting) {
		r.putAgent(a)
	}
}

// spawn creates a child for spec, or says why it may not exist.
func (r *Run) spawn(parent *agent, spec loop.ChildSpec) string {
	e := r.e
	lim := e.cfg.Limits
	var def *cadre.Definition
	if spec.Definition != "" {
		def = e.defs[spec.Definition]
		if def == nil {
			return fmt.Sprintf("there is no subagent named %q", spec.Definition)
		}
	}
	norm := strings.ToLower(strings.TrimSpace(spec.Task))
	r.mu.Lock()
	if r.created >= lim.MaxAgents {
		r.mu.Unlock()
		parent.emit(cadre.EventAgentLimit, map[string]any{"max_agents": lim.MaxAgents, "task": spec.Task})
		return fmt.Sprintf("agent limit reached: this run has already created %d agents, the most it allows (maxAgents %d). Finish the work with the agents you have, or do it yourself.", lim.MaxAgents, lim.MaxAgents)
	}
	if r.tasks[norm] >= cadre.DefaultCycleRepeats {
		n := r.tasks[norm]
		r.mu.Unlock()
		parent.emit(cadre.EventCycleDetected, map[string]any{"task": spec.Task, "count": n + 1})
		return fmt.Sprintf("cycle detected: this same task was already delegated %d times in this run. Do not delegate it again; work with the results you have.", n)
	}
	r.tasks[norm]++
	r.mu.Unlock()

	name, warning := e.cfg.Models.Choose(def, parent.modelName)
	if warning != "" {
		parent.emit(cadre.EventWarning, map[string]any{"message": warning, "child": string(spec.ID)})
	}
	m, err := e.cfg.Models.Open(name)
	if err != nil {
		return fmt.Sprintf("cannot open model %q for the subagent: %v", name, err)
	}
	depth := parent.depth + 1
	maxDepth := lim.MaxDepth
	if def != nil && def.MaxDepth > 0 && depth+def.MaxDepth < maxDepth {
		maxDepth = depth + def.MaxDepth
	}
	delegate := depth < maxDepth && mayDelegate(def, parent.delegate) && len(e.userFacing()) > 0
	tools := filterTools(parent.tools, def)
	protocol := parent.protocol
	if def != nil && (def.Protocol == cadre.ProtocolText || def.Protocol == cadre.ProtocolTools) {
		protocol = def.Protocol
	}
	report := e.cfg.Report
	if def != nil && def.Report != "" {
		report = def.Report
	}
	var system string
	if def != nil {
		system = prompt.Child(prompt.ChildParams{Def: def, Soul: e.cfg.Soul, Identity: e.cfg.Identity, Defs: e.userFacing(),
			CanDelegate: delegate, Protocol: protocol, Depth: depth, MaxDepth: maxDepth, AskCaller: def.AskCaller})
	} else {
		system = prompt.SubAgent(prompt.SubAgentParams{Soul: e.cfg.Soul, Identity: e.cfg.Identity, Task: spec.Task, Depth: depth, MaxDepth: maxDepth, Defs: e.userFacing()})
	}
	definition := spec.Definition
	if definition == "" {
		definition = "sub"
	}
	a := r.newAgent(spec.ID, parent, definition, def, name, m, tools, delegate)
	a.protocol = protocol
	cfg := loop.Config{
		ID: spec.ID, Parent: parent.id, Depth: depth, MaxDepth: maxDepth, Definition: definition, System: system,
		Tools: specs(tools), Delegate: delegate, Catalog: e.catalog(), Report: report, Protocol: protocol,
		MaxTurns: lim.MaxTurns,
	}
	if def != nil {
		if def.MaxTurns > 0 {
			cfg.MaxTurns = def.MaxTurns
		}
		cfg.Temperature = def.Temperature
		a.timeout = def.Timeout()
	}
	msgs := append([]cadre.Message(nil), spec.Messages...)
	msgs = append(msgs, cadre.Message{Role: cadre.RoleUser, Content: prompt.UserMessage(spec.Task, spec.Context)})
	a.first = loop.Start{Config: cfg, Task: spec.Task, Messages: msgs}
	r.register(a, spec.Task)
	mode := spec.Mode
	data := map[string]any{"child": string(spec.ID), "definition": definition, "mode": mode, "task": spec.Task, "model": name}
	if spec.Total > 0 {
		data["index"], data["total"] = spec.Index, spec.Total
	}
	if spec.Name != "" {
		data["name"] = spec.Name
	}
	a.emit(cadre.EventAgentSpawned, data)
	r.launch(a)
	return ""
}

// deliver routes a message an agent sent.
func (r *Run) deliver(from *agent, d loop.Deliver) {
	if d.Report {
		if from.parent == nil {
			return
		}
		if from.def != nil && from.def.EmitStructuredFindings && !d.Failed && len([]rune(d.Text)) >= 30 {
			content := d.Text
			if rs := []rune(content); len(rs) > 1800 {
				content = string(rs[:1800])
			}
			f := cadre.Finding{Agent: from.id, Title: "subagent:" + from.def.Name, Content: content}
			r.mu.Lock()
			r.findings = append(r.findings, f)
			r.mu.Unlock()
			from.emit(cadre.EventFinding, map[string]any{"title": f.Title, "content": f.Content})
		}
		r.mu.Lock()
		if in := r.infos[from.id]; in != nil {
			in.Result = d.Text
		}
		r.mu.Unlock()
		from.parent.box.put(loop.ChildReport{Child: from.id, Text: d.Text, Failed: d.Failed, Cancelled: d.Cancelled})
		return
	}
	r.mu.Lock()
	target := r.agents[d.To]
	r.mu.Unlock()
	if target == nil {
		from.box.put(loop.InboxMessage{Text: fmt.Sprintf("Your message to %s was not delivered: there is no running agent with that id.", d.To)})
		return
	}
	target.box.put(loop.InboxMessage{From: from.id, Text: d.Text, Steering: d.Steering, FollowUp: d.FollowUp})
}

// ended is called by an agent's goroutine when it has finished.
func (r *Run) ended(a *agent, fin loop.Finish) {
	r.mu.Lock()
	delete(r.agents, a.id)
	in := r.infos[a.id]
	in.Ended = time.Now()
	switch {
	case fin.Cancelled:
		in.Status = cadre.StatusCancelled
		in.Error = fin.Result
	case fin.Failed:
		in.Status = cadre.StatusFailed
		in.Error = fin.Result
	default:
		in.Status = cadre.StatusDone
		if in.Result == "" || a.parent == nil {
			in.Result = fin.Result
		}
	}
	in.stopped = fin.BudgetExhausted
	status := in.Status
	r.mu.Unlock()
	r.putAgent(a)
	switch status {
	case cadre.StatusCancelled:
		a.emit(cadre.EventAgentCancelled, map[string]any{"reason": fin.Result})
	case cadre.StatusFailed:
		a.emit(cadre.EventAgentFailed, map[string]any{"error": fin.Result})
	default:
		data := map[string]any{"result": fin.Result}
		if fin.BudgetExhausted {
			data["budget_exhausted"] = true
		}
		a.emit(cadre.EventAgentCompleted, data)
	}
	if a.parent != nil {
		a.parent.box.put(loop.ChildEnded{Child: a.id, Status: status})
		return
	}
	// The root has ended: the run is over once every goroutine has exited.
	go r.finish(fin)
}

func (r *Run) finish(fin loop.Finish) {
	// Agents still alive (only possible after cancellation) are stopped.
	r.cancelTree(cadre.RootID, "the run ended")
	r.wg.Wait()
	r.mu.Lock()
	res := &Result{RunID: r.id, Answer: fin.Result, Usage: r.usage, Findings: r.findings, BudgetExhausted: r.exhausted}
	for _, id := range r.order {
		in := r.infos[id]
		res.Agents = append(res.Agents, *in)
		if r.exhausted {
			if in.Status == cadre.StatusDone && !in.stopped {
				res.Completed = append(res.Completed, id)
			} else {
				res.Incomplete = append(res.Incomplete, id)
			}
		}
	}
	cancelled := r.cancelled
	r.mu.Unlock()
	switch {
	case fin.Cancelled:
		res.Status, res.Error, res.Answer = cadre.StatusCancelled, cancelled, ""
		if res.Error == "" {
			res.Error = fin.Result
		}
	case fin.Failed:
		res.Status, res.Error, res.Answer = cadre.StatusFailed, fin.Result, ""
	default:
		res.Status = cadre.StatusDone
	}
	r.result = res
	if res.Status == cadre.StatusDone {
		data := map[string]any{"answer": res.Answer, "usage": res.Usage, "agents": len(res.Agents)}
		if res.BudgetExhausted {
			data["budget_exhausted"] = true
			data["completed"], data["incomplete"] = res.Completed, res.Incomplete
		}
		if len(res.Findings) > 0 {
			data["findings"] = res.Findings
		}
		r.emit(cadre.Event{Type: cadre.EventRunCompleted, Data: data})
	} else {
		r.emit(cadre.Event{Type: cadre.EventRunFailed, Data: map[string]any{"status": res.Status, "error": res.Error, "usage": res.Usage}})
	}
	r.jour.close()
	r.events.close()
	if s := r.e.cfg.Store; s != nil {
		rec := &cadre.RunRecord{ID: r.id, Task: r.task, Status: res.Status, Model: r.e.cfg.RootModel, Usage: res.Usage,
			Answer: res.Answer, Error: res.Error, Agents: len(res.Agents), Ended: time.Now().UTC()}
		if len(res.Agents) > 0 {
			rec.Started = res.Agents[0].Started.UTC()
		}
		if err := s.UpdateRun(context.WithoutCancel(r.ctx), rec); err != nil {
			r.e.cfg.Logger.Warn("store run record", "run", r.id, "err", err)
		}
	}
	r.cancel(errors.New("run ended"))
	close(r.done)
}

// charge adds a model call's usage and applies the budget. It reports
// whether the budget allows another call.
func (r *Run) charge(a *agent, u cadre.Usage) {
	budget := r.e.cfg.Limits.BudgetTokens
	r.mu.Lock()
	r.usage = r.usage.Add(u)
	in := r.infos[a.id]
	in.Usage = in.Usage.Add(u)
	in.Turns++
	used := r.usage.Total()
	warn := budget > 0 && !r.warned && used*5 >= budget*4
	if warn {
		r.warned = true
	}
	r.mu.Unlock()
	if warn {
		a.emit(cadre.EventBudgetWarning, map[string]any{"used": used, "budget": budget})
	}
}

// allow reports whether the token budget allows a new model call.
func (r *Run) allow(a *agent) bool {
	budget := r.e.cfg.Limits.BudgetTokens
	if budget <= 0 {
		return true
	}
	r.mu.Lock()
	used := r.usage.Total()
	ok := used < budget
	first := !ok && !r.exhausted
	if !ok {
		r.exhausted = true
	}
	r.mu.Unlock()
	if first {
		a.emit(cadre.EventBudgetExhausted, map[string]any{"used": used, "budget": budget})
	}
	return ok
}

func marshalInput(in loop.Input) json.RawMessage {
	b, err := json.Marshal(in)
	if err != nil {
		// Inputs are plain data; this cannot happen short of a programming error.
		panic(fmt.Sprintf("local: marshal %s input: %v", in.Kind(), err))
	}
	return b
}
