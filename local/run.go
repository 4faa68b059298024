package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/rule"
)

// run is a run in progress, or ended, in this engine.
type run struct {
	e     *Engine
	id    string
	task  string
	store cadre.Store     // the engine's, as the run writes to it; nil for none
	strs  stringCache     // the JSON of long strings its journal entries repeat
	lease *lease          // set before the run does anything, when it has a store
	ctx   context.Context // hard: cancelling it aborts calls at once
	// storeCtx is ctx without its cancellation: what the run writes to its
	// store is written even as the run is aborted.
	storeCtx context.Context
	cancel   context.CancelCauseFunc
	sem      chan struct{}
	wg       sync.WaitGroup // agent goroutines and the run's helpers
	events   *pump
	feed     *feed
	done     chan struct{}
	stop     chan struct{} // closed when the run starts finishing

	mu sync.Mutex
	// agents are the run's agents, live and finished (see agent.over),
	// which a message from their parent may wake (see wake.go).
	agents    map[cadre.AgentID]*agent
	infos     map[cadre.AgentID]*cadre.AgentInfo
	order     []cadre.AgentID
	defs      map[string]*cadre.Definition // the engine's and those created during the run
	defsGen   int                          // changes when defs does
	catalogs  map[int][]loop.CatalogEntry  // catalog(), by defsGen: shared, never changed
	prompts   map[promptKey]string
	created   int
	tasks     map[string]int
	usage     cadre.Usage
	warned    bool
	exhausted bool
	findings  []cadre.Finding
	result    *cadre.Result
	cancelled string
	questions map[cadre.AgentID]*question // the root's question to the user, while it is asked
	failure   string                      // why the run cannot go on here (its store failed, its lease was lost)
	broken    atomic.Pointer[error]       // why the store failed to journal, once it has: nothing more is written
}

// live returns the live agent id, or nil. r.mu is held.
func (r *run) live(id cadre.AgentID) *agent {
	if a := r.agents[id]; a != nil && !a.over {
		return a
	}
	return nil
}

// asleep returns the agent id that has finished, or nil. r.mu is held.
func (r *run) asleep(id cadre.AgentID) *agent {
	if a := r.agents[id]; a != nil && a.over {
		return a
	}
	return nil
}

// newRun makes a run and registers it in the engine, which must not hold
// a run of that ID that is still going on.
func (e *Engine) newRun(id, task string) (*run, error) {
	ctx, cancel := context.WithCancelCause(context.Background())
	r := &run{
		e: e, id: id, task: task, ctx: ctx, cancel: cancel, storeCtx: context.WithoutCancel(ctx),
		sem:       make(chan struct{}, e.cfg.Limits.MaxConcurrent),
		done:      make(chan struct{}),
		stop:      make(chan struct{}),
		agents:    map[cadre.AgentID]*agent{},
		infos:     map[cadre.AgentID]*cadre.AgentInfo{},
		defs:      make(map[string]*cadre.Definition, len(e.defs)),
		tasks:     map[string]int{},
		questions: map[cadre.AgentID]*question{},
	}
	for k, v := range e.defs {
		r.defs[k] = v
	}
	e.mu.Lock()
	if old := e.runs[id]; old != nil && !old.over() {
		e.mu.Unlock()
		cancel(nil)
		return nil, fmt.Errorf("local: run %s is already going on in this engine", id)
	}
	e.runs[id] = r
	e.mu.Unlock()
	if e.cfg.Store != nil {
		r.store = ownedStore{Store: e.cfg.Store, run: r}
	}
	r.feed = newFeed(id, e.cfg.EventBuffer)
	r.events = newPump(r.store, r.feed, e.cfg.Logger)
	return r, nil
}

// abandon releases a run that never started.
func (r *run) abandon(err error) {
	r.events.close()
	r.cancel(err)
	r.e.mu.Lock()
	if r.e.runs[r.id] == r {
		delete(r.e.runs, r.id)
	}
	r.e.mu.Unlock()
	r.disown()
}

// failStart records a run whose root could not be created.
func (r *run) failStart(err error) {
	r.emit(cadre.NewEvent(cadre.RunFailed{Status: cadre.StatusFailed, Error: err.Error()}))
	if s := r.store; s != nil {
		rec := &cadre.RunRecord{ID: r.id, Task: r.task, Status: cadre.StatusFailed, Model: r.e.cfg.RootModel, Error: err.Error(),
			Started: time.Now().UTC(), Ended: time.Now().UTC(), Config: r.e.cfg.Settings}
		if uerr := s.UpdateRun(context.Background(), rec); uerr != nil {
			r.e.cfg.Logger.Warn("store run record", "run", r.id, "err", uerr)
		}
	}
	r.abandon(err)
}

// watch applies the run's time limit.
func (r *run) watch() {
	t := r.e.cfg.Limits.Timeout
	if t <= 0 {
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		timer := time.NewTimer(t)
		defer timer.Stop()
		select {
		case <-timer.C:
			r.cancelAll(fmt.Sprintf("the run's time limit of %s passed", t))
		case <-r.stop:
		}
	}()
}

// cancelRun stops the whole run gracefully: every agent is cancelled after
// its descendants, and the run ends as cancelled.
func (r *run) cancelRun(reason string) {
	if reason == "" {
		reason = "cancelled by the user"
	}
	r.cancelAll(reason)
}

// abort stops the run at once: calls in flight are aborted.
func (r *run) abort(reason string) {
	if reason == "" {
		reason = "aborted"
	}
	r.cancelAll(reason)
	r.cancel(errors.New(reason))
}

// cancelAgent cancels an agent and all its descendants; each agent ends
// after its own descendants have ended.
func (r *run) cancelAgent(id cadre.AgentID, reason string) error {
	r.mu.Lock()
	ok := r.live(id) != nil
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

// storeFailed stops the run when its store can no longer keep the journal:
// going on would do work that could not be resumed. Nothing more of the
// run is written (see ownedStore): what its journal holds is a whole
// prefix of what happened, and a journaled cancel would make a resumed
// run end cancelled. Its record still says running, so the run shows as
// interrupted, and Resume carries it on once the store works again.
func (r *run) storeFailed(err error) {
	r.broken.CompareAndSwap(nil, &err)
	r.fail(fmt.Sprintf("the run's store failed: %v. What the run did until then is recorded: once the store can be written again, "+
		"resume it (cadre resume %s) to carry it on from there", err, r.id))
}

// fail stops a run that cannot go on in this process: its agents are
// cancelled, and the run ends as failed with the first reason given. Only
// the first call cancels: when the store fails, every agent's next write
// fails and calls fail, and each cancelling the whole tree again would
// cost the run's size squared. An agent that starts after the first call
// stops too: its parent is cancelled and cancels it as it ends, and with
// a failed store its own first write fails.
func (r *run) fail(reason string) {
	r.mu.Lock()
	first := r.failure == ""
	if first {
		r.failure = reason
	}
	r.mu.Unlock()
	if first {
		r.cancelAll(reason)
	}
}

func (r *run) cancelAll(reason string) {
	r.mu.Lock()
	if r.cancelled == "" {
		r.cancelled = reason
	}
	r.mu.Unlock()
	r.cancelTree(cadre.RootID, reason)
}

// cancelTree cancels id and its live descendants. The target is told
// first, so it stops before it can react to anything its descendants do;
// each agent then ends only after its children have ended, so descendants
// end first and none outlives its parent.
func (r *run) cancelTree(id cadre.AgentID, reason string) {
	r.cancelAgents(id, true, reason)
}

// cancelBelow cancels the live descendants of id as cancelTree does, but
// not id itself.
func (r *run) cancelBelow(id cadre.AgentID, reason string) {
	r.cancelAgents(id, false, reason)
}

// cancelAgents cancels id's live descendants, and id when self is set:
// shallower agents first.
func (r *run) cancelAgents(id cadre.AgentID, self bool, reason string) {
	r.mu.Lock()
	var targets []*agent
	for aid, a := range r.agents {
		if !a.over && (self && aid == id || id.IsAncestorOf(aid)) {
			targets = append(targets, a)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(targets, func(a, b *agent) int {
		if a.depth != b.depth {
			return a.depth - b.depth
		}
		return strings.Compare(string(a.id), string(b.id))
	})
	for _, a := range targets {
		a.box.put(loop.Cancel{Reason: reason})
	}
}

// tree returns a snapshot of every agent of the run, in creation order.
func (r *run) tree() *cadre.Tree {
	r.mu.Lock()
	defer r.mu.Unlock()
	if res := r.result; res != nil {
		return &cadre.Tree{Run: r.id, Usage: res.Usage, Cost: res.Cost, Agents: slices.Clone(res.Agents)}
	}
	t := &cadre.Tree{Run: r.id, Usage: r.usage, Agents: make([]cadre.AgentInfo, 0, len(r.order))}
	for _, id := range r.order {
		t.Agents = append(t.Agents, *r.infos[id])
	}
	t.Cost = treeCost(t.Agents)
	return t
}

// A question is an agent's question to the user while it is asked. Its
// fields are guarded by the run's mu.
type question struct {
	answered bool
	text     string // the answer given through Engine.Answer
	cancel   context.CancelFunc
}

// answer gives the answer to the agent's pending question to the user.
func (r *run) answer(agent cadre.AgentID, text string) error {
	r.mu.Lock()
	q := r.questions[agent]
	if q == nil || q.answered {
		r.mu.Unlock()
		return fmt.Errorf("answer %s in run %s: %w", agent, r.id, cadre.ErrNoQuestion)
	}
	q.answered, q.text = true, text
	r.mu.Unlock()
	q.cancel()
	return nil
}

// emit publishes an event for the run.
func (r *run) emit(ev cadre.Event) {
	ev.Run = r.id
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if o := r.e.cfg.Observer; o != nil {
		o.Event(ev)
	}
	r.events.publish(ev)
}

// warn publishes the engine's warnings, as the run starts or resumes.
func (r *run) warn() {
	for _, w := range r.e.cfg.Warnings {
		r.emit(cadre.Event{Type: cadre.EventWarning, Agent: cadre.RootID, Data: cadre.Warning{Message: w}})
	}
}

// userFacing returns the definitions models may see, sorted by name.
func (r *run) userFacing() []*cadre.Definition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.userFacingLocked()
}

func (r *run) userFacingLocked() []*cadre.Definition {
	var out []*cadre.Definition
	for _, d := range r.defs {
		if d.UserFacing() {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b *cadre.Definition) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// userFacingFor returns the user-facing definitions rules let an agent
// start (with or without approval): the ones its prompt offers.
func (r *run) userFacingFor(rules rule.Chain) []*cadre.Definition {
	all := r.userFacing()
	if len(rules) == 0 {
		return all
	}
	return slices.DeleteFunc(all, func(d *cadre.Definition) bool { return !rules.AllowsAgent(d.Name) })
}

func (r *run) definition(name string) *cadre.Definition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.defs[name]
}

// maxQuestions is the question limit of agents of def.
func (e *Engine) maxQuestions(def *cadre.Definition) int {
	if def != nil && def.MaxQuestions > 0 {
		return def.MaxQuestions
	}
	return e.cfg.Limits.MaxQuestions
}

// offered returns, from one state of the run's definitions, the
// user-facing ones rules let an agent start (see userFacingFor) and the
// catalogue (see catalog).
func (r *run) offered(rules rule.Chain) ([]*cadre.Definition, []loop.CatalogEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	all := r.userFacingLocked()
	if len(rules) > 0 {
		all = slices.DeleteFunc(all, func(d *cadre.Definition) bool { return !rules.AllowsAgent(d.Name) })
	}
	return all, r.catalogLocked()
}

func (r *run) catalog() []loop.CatalogEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.catalogLocked()
}

func (r *run) catalogLocked() []loop.CatalogEntry {
	if c, ok := r.catalogs[r.defsGen]; ok {
		return c
	}
	out := make([]loop.CatalogEntry, 0, len(r.defs))
	for _, d := range r.defs {
		out = append(out, loop.CatalogEntry{
			Name: d.Name, Internal: !d.UserFacing(), OnboardingRequired: d.Onboarding == cadre.OnboardingRequired,
			NoOnboarding: d.Onboarding == cadre.OnboardingOff, AskCaller: d.AskCaller, MaxQuestions: r.e.maxQuestions(d),
			Background: d.Background,
		})
	}
	slices.SortFunc(out, func(a, b loop.CatalogEntry) int { return strings.Compare(a.Name, b.Name) })
	// One generation is kept: children made after a definition was
	// created get the new catalogue.
	r.catalogs = map[int][]loop.CatalogEntry{r.defsGen: out}
	return out
}

// reserveAt is the fewest agents to come at once for which the run's
// tables are made larger ahead of them.
const reserveAt = 256

// reserve makes room in the run's tables for n more agents at once, when
// there are many, so that they do not grow a step at a time as each is
// added.
func (r *run) reserve(n int) {
	if n < reserveAt {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	want := len(r.infos) + n
	r.agents = grown(r.agents, want)
	r.infos = grown(r.infos, want)
	r.tasks = grown(r.tasks, len(r.tasks)+n)
	r.order = slices.Grow(r.order, n)
}

// grown returns m, or a copy of it made for size entries when m holds far
// fewer than that.
func grown[K comparable, V any](m map[K]V, size int) map[K]V {
	if len(m)*2 >= size {
		return m // it grows as it would anyway
	}
	out := make(map[K]V, size)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// register adds an agent to the run's tables.
func (r *run) register(a *agent, task string, status cadre.Status) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a.over = false
	r.agents[a.id] = a
	if _, ok := r.infos[a.id]; !ok {
		r.order = append(r.order, a.id)
	}
	var parent cadre.AgentID
	if a.parent != nil {
		parent = a.parent.id
	}
	a.info = cadre.AgentInfo{ID: a.id, Parent: parent, Depth: a.depth, Definition: a.definition, Model: a.modelName,
		Task: task, Status: status, Started: time.Now(), Mode: a.mode}
	r.infos[a.id] = &a.info
}

// create registers a new agent and makes its Start durable: the agent's
// record and its first journal entry are written before anyone learns of
// it, so a resumed run finds every agent its parents know. The agent starts
// from its Start as the journal gives it back, as a resumed one does.
func (r *run) create(a *agent, start loop.Start) error {
	a.first = start
	return r.createFirst(a, nil)
}

// createFirst is create for an agent whose first input is its Start; k is
// its kind, for a child (see encodeStart).
func (r *run) createFirst(a *agent, k *kind) error {
	if r.e.cfg.Store == nil {
		r.register(a, a.first.(loop.Start).Task, cadre.StatusQueued)
		return nil
	}
	rec, entries, buf, whole, err := r.encodeStart(a, k)
	if err != nil {
		return err
	}
	err = r.store.(ownedStore).AppendAgent(r.storeCtx, rec, entries)
	giveJournalBuf(buf)
	if err != nil {
		r.unregister(a)
		return fmt.Errorf("journal the start of %s: %w", a.id, err)
	}
	if whole {
		k.offer(a)
	}
	return nil
}

// encodeStart registers a new agent and encodes its record and Start, for
// the store: the agent then starts from its Start as the journal will give
// it back, and numbers its entries on from it. The entry's JSON is in buf,
// to give back (giveJournalBuf) once the store has it. An agent whose Start
// cannot be journaled is unregistered.
//
// A child of kind k (nil for the root) whose kind has a template (see
// kind) is journaled with a Start that takes its configuration from the
// template's (loop.Start.ConfigFrom): a few hundred bytes instead of
// kilobytes of system prompt, tools and rules. whole reports that the
// Start holds all of its configuration, and so may be a template once
// written.
func (r *run) encodeStart(a *agent, k *kind) (rec *cadre.AgentRecord, entries []cadre.JournalEntry, buf *[]byte, whole bool, err error) {
	r.register(a, a.first.(loop.Start).Task, cadre.StatusQueued)
	t := k.templateOf()
	ins := []loop.Input{a.first}
	if t != nil {
		s := a.first.(loop.Start)
		ins[0] = loop.Start{Config: loop.Config{ID: s.Config.ID, Parent: s.Config.Parent, Definition: s.Config.Definition},
			Task: s.Task, Messages: s.Messages, ConfigFrom: t.id}
	}
	entries, buf, err = a.encode(ins)
	if err != nil {
		giveJournalBuf(buf)
		r.unregister(a)
		return nil, nil, nil, false, fmt.Errorf("journal the start of %s: %w", a.id, err)
	}
	a.seq = entries[len(entries)-1].Seq
	a.first = ins[0] // the Start as boxed for encode
	start := ins[0].(loop.Start)
	if t != nil {
		// As a replay reads it: the template's configuration as read back
		// (boxed once more).
		start = start.WithConfigOf(t.cfg)
		a.first = start
	}
	a.cfg, a.timeout = start.Config, start.Config.Timeout
	return r.record(a), entries, buf, k != nil && t == nil, nil
}

// unregister takes out of the run's live agents one whose Start could not
// be journaled.
func (r *run) unregister(a *agent) {
	r.mu.Lock()
	delete(r.agents, a.id)
	r.mu.Unlock()
}

// launch starts an agent's goroutine. pending are actions to carry out
// before it reads its mailbox (after a resume).
func (r *run) launch(a *agent, pending []loop.Action) {
	r.wg.Add(1)
	go a.main(pending)
}

// putAgent writes the agent's record.
func (r *run) putAgent(a *agent) {
	s := r.store
	if s == nil {
		return
	}
	a.awaitBirth() // the record written at its birth must not come last
	if err := s.PutAgent(context.Background(), r.record(a)); err != nil {
		r.e.cfg.Logger.Warn("store agent record", "run", r.id, "agent", a.id, "err", err)
	}
}

// setStatus changes an agent's status in the live tree; the store's record
// follows at the agent's next state change worth keeping.
func (r *run) setStatus(a *agent, st cadre.Status) {
	r.mu.Lock()
	in := r.infos[a.id]
	changed := in.Status != st && !in.Status.Terminal()
	if changed {
		in.Status = st
	}
	r.mu.Unlock()
	if changed && st == cadre.StatusWaiting {
		r.putAgent(a)
	}
}

// deliver routes a message an agent sent.
func (r *run) deliver(from *agent, d loop.Deliver) {
	if d.Report {
		if from.parent == nil {
			return
		}
		r.recordReport(from, d)
		from.parent.box.put(loop.ChildReport{Child: from.id, Text: d.Text, Failed: d.Failed, Cancelled: d.Cancelled, Incomplete: d.Incomplete, Round: d.Round})
		return
	}
	if d.Wake {
		r.wake(from, d)
		return
	}
	r.mu.Lock()
	target := r.live(d.To)
	r.mu.Unlock()
	if target == nil {
		from.box.put(loop.InboxMessage{Text: fmt.Sprintf("Your message to %s was not delivered: there is no running agent with that id.", d.To)})
		return
	}
	// Only its parent may interrupt an agent's turn (the loop asks for no
	// more; this holds whatever a Deliver says).
	target.box.put(loop.InboxMessage{From: from.id, Text: d.Text, Steering: d.Steering && target.parent == from, FollowUp: d.FollowUp})
}

// recordReport keeps a child's report in the tree and turns it into a
// finding when its definition asks for that.
func (r *run) recordReport(from *agent, d loop.Deliver) {
	if f, ok := finding(from, d); ok {
		r.mu.Lock()
		r.findings = append(r.findings, f)
		r.mu.Unlock()
		from.emit(cadre.FindingReported{Title: f.Title, Content: f.Content})
	}
	r.mu.Lock()
	if in := r.infos[from.id]; in != nil {
		in.Result = d.Text
	}
	r.mu.Unlock()
}

// finding is the finding a report makes: a successful report of 30
// characters or more of a definition with emitStructuredFindings, cut to
// 1800 characters.
func finding(from *agent, d loop.Deliver) (cadre.Finding, bool) {
	if from.def == nil || !from.def.EmitStructuredFindings || d.Failed || len([]rune(d.Text)) < 30 {
		return cadre.Finding{}, false
	}
	content := d.Text
	if rs := []rune(content); len(rs) > 1800 {
		content = string(rs[:1800])
	}
	return cadre.Finding{Agent: from.id, Title: "subagent:" + from.def.Name, Content: content}, true
}

// ended is called by an agent's goroutine when it has finished and all its
// children have ended.
func (r *run) ended(a *agent, fin loop.Finish) {
	r.mu.Lock()
	a.over = true
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
	in.Stopped = fin.BudgetExhausted
	status, cost := in.Status, in.Cost
	r.mu.Unlock()
	switch status {
	case cadre.StatusCancelled:
		a.emit(cadre.AgentCancelled{Reason: fin.Result, Cost: cost})
	case cadre.StatusFailed:
		a.emit(cadre.AgentFailed{Error: fin.Result, Cost: cost})
	default:
		a.emit(cadre.AgentCompleted{Result: fin.Result, BudgetExhausted: fin.BudgetExhausted, Cost: cost})
	}
	if a.parent != nil {
		ce := loop.ChildEnded{Child: a.id, Status: status}
		if status != cadre.StatusDone {
			ce.Error = fin.Result
		}
		a.parent.box.put(ce)
		// The record follows, off the parent's way: the journal, not the
		// record, is what a resumed run goes by, and the run's end waits
		// for this goroutine.
		r.putAgent(a)
		return
	}
	r.putAgent(a)
	// The root has ended: the run is over once every goroutine has exited.
	go r.finish(fin)
}

func (r *run) finish(fin loop.Finish) {
	close(r.stop)
	r.wg.Wait()
	r.mu.Lock()
	res := &cadre.Result{RunID: r.id, Answer: fin.Result, Usage: r.usage, Findings: r.findings, BudgetExhausted: r.exhausted,
		Agents: make([]cadre.AgentInfo, 0, len(r.order))}
	for _, id := range r.order {
		in := r.infos[id]
		res.Agents = append(res.Agents, *in)
		if r.exhausted {
			if in.Status == cadre.StatusDone && !in.Stopped {
				res.Completed = append(res.Completed, id)
			} else {
				res.Incomplete = append(res.Incomplete, id)
			}
		}
	}
	res.Cost = treeCost(res.Agents)
	cancelled, failure := r.cancelled, r.failure
	r.mu.Unlock()
	switch {
	case failure != "":
		// The agents were cancelled because of it.
		res.Status, res.Error, res.Answer = cadre.StatusFailed, failure, ""
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
	r.mu.Lock()
	r.result = res
	r.mu.Unlock()
	if res.Status == cadre.StatusDone {
		data := cadre.RunCompleted{Answer: res.Answer, Usage: res.Usage, Agents: len(res.Agents), Findings: res.Findings, Cost: res.Cost}
		if res.BudgetExhausted {
			data.BudgetExhausted, data.Completed, data.Incomplete = true, res.Completed, res.Incomplete
		}
		r.emit(cadre.NewEvent(data))
	} else {
		r.emit(cadre.NewEvent(cadre.RunFailed{Status: res.Status, Error: res.Error, Usage: res.Usage, Cost: res.Cost}))
	}
	r.events.close()
	if s := r.store; s != nil && r.broken.Load() == nil {
		rec := &cadre.RunRecord{ID: r.id, Task: r.task, Status: res.Status, Model: r.e.cfg.RootModel, Usage: res.Usage,
			Answer: res.Answer, Error: res.Error, Agents: len(res.Agents), Ended: time.Now().UTC(), Config: r.e.cfg.Settings}
		if len(res.Agents) > 0 {
			rec.Started = res.Agents[0].Started.UTC()
		}
		if old, err := s.GetRun(context.Background(), r.id); err == nil {
			rec.Started = old.Started
			if rec.Config == nil {
				rec.Config = old.Config
			}
		}
		if err := s.UpdateRun(context.Background(), rec); err != nil {
			r.e.cfg.Logger.Warn("store run record", "run", r.id, "err", err)
		}
	}
	// Released after the record says the run ended, so that no reader sees
	// it unfinished and unowned.
	r.disown()
	r.cancel(errors.New("run ended"))
	// What only agents used goes; the result stays, and is the tree. With
	// a store, the run's events are there for watchers that come later;
	// those already watching keep the feed they read.
	r.mu.Lock()
	r.defs, r.prompts, r.tasks, r.infos, r.order, r.catalogs = nil, nil, nil, nil, nil, nil
	r.agents = nil
	r.mu.Unlock()
	r.strs.m.Clear()
	r.strs.size.Store(0)
	if r.e.cfg.Store != nil {
		r.dropFeed()
	}
	// Forgotten before done closes, so that whoever Wait returns to sees
	// the engine already holding what it will hold.
	r.e.forget(r)
	close(r.done)
}

// dropFeed lets go of the run's latest events, once it has ended; watchers
// already reading them keep them until they are done.
func (r *run) dropFeed() {
	r.mu.Lock()
	r.feed = nil
	r.mu.Unlock()
	r.events.feed = nil // the pump is closed: nothing publishes any more
}

// watchable returns the feed of the run's events, or nil once the run has
// ended and its events are to be read from the store.
func (r *run) watchable() *feed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.feed
}

// over reports whether the run has ended.
func (r *run) over() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// charge adds a model call's usage and warns once at 80% of the budget.
func (r *run) charge(a *agent, u cadre.Usage) {
	budget := r.e.cfg.Limits.BudgetTokens
	r.mu.Lock()
	r.usage = r.usage.Add(u)
	in := r.infos[a.id]
	in.Usage = in.Usage.Add(u)
	in.Cost = r.e.cost(in.Model, in.Usage)
	in.Turns++
	used := r.usage.Total()
	warn := budget > 0 && !r.warned && used*5 >= budget*4
	if warn {
		r.warned = true
	}
	r.mu.Unlock()
	if warn {
		a.emit(cadre.BudgetWarning{Used: used, Budget: budget, Percent: used * 100 / budget})
	}
}

// allow reports whether the token budget allows a new model call.
func (r *run) allow(a *agent) bool {
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
		a.emit(cadre.BudgetExhausted{Used: used, Budget: budget})
	}
	return ok
}

// roundTrip encodes an input for the journal and decodes it as a replay
// will; c keeps the JSON of long strings for the run. It writes the JSON
// at the end of b when it can, and returns the JSON (then the end of the
// returned buffer) and the buffer. The error says which input could not
// make the trip and why.
func roundTrip(b []byte, in loop.Input, c *stringCache) (json.RawMessage, []byte, loop.Input, error) {
	back, same := asReadBack(in)
	if same {
		start := len(b)
		if out, ok := appendInput(b, back, c); ok {
			return out[start:len(out):len(out)], out, back, nil
		}
	}
	data, back, err := marshalBack(in, back, same)
	return data, b, back, err
}

// marshalBack is roundTrip by encoding/json.
func marshalBack(in, back loop.Input, same bool) (json.RawMessage, loop.Input, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return nil, nil, fmt.Errorf("the %s input cannot be journaled: %w", in.Kind(), err)
	}
	if same {
		return b, back, nil
	}
	back, err = loop.Decode(in.Kind(), b)
	if err != nil {
		return nil, nil, fmt.Errorf("the %s input cannot be read back from the journal: %w", in.Kind(), err)
	}
	return b, back, nil
}
