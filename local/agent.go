package local

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/rule"
)

// errInterrupted is the cause of a model call cancelled for steering.
var errInterrupted = errors.New("interrupted by a steering message")

// agent is one live agent. Its fields are owned by its goroutine unless
// noted.
type agent struct {
	run        *run
	id         cadre.AgentID
	parent     *agent
	depth      int
	definition string
	def        *cadre.Definition
	modelName  string
	model      cadre.Model
	tools      []cadre.Tool // read by children's spawns: never changed after creation
	cfg        loop.Config  // read by children's spawns: never changed after creation
	// rules are the tool rules its calls must pass (its definition's and
	// its ancestors'), callable its tools, guarded by them, by name, and
	// plain the same tools unguarded. Never changed after creation.
	rules    rule.Chain
	callable map[string]cadre.Tool
	plain    map[string]cadre.Tool
	timeout  time.Duration
	mode     string // how its parent asked for it (cadre.AgentInfo.Mode)
	// info is its entry in the run's tree, once registered: the run's
	// infos point to it, and it is guarded by the run's mu (as is over,
	// below).
	info cadre.AgentInfo

	// kinds are what its children have in common, by kind (see kindOf);
	// verdict is what its rules say about starting an agent of the
	// definition verdictOf, once verdictSet (see agentVerdict). Owned by
	// its goroutine.
	kinds     []*kind
	verdict   rule.Verdict
	verdictOf string

	st    *loop.State // state, or the state a replay rebuilt
	state loop.State
	box   mailbox
	first loop.Input // the Start to step first, for a new agent
	// birth, when not nil, is closed once the agent's record and Start
	// are written and its parent is told of it: it was launched before
	// (see spawnStored), and waits for it in awaitBirth before its first
	// step after its Start.
	birth <-chan struct{}
	seq   int64 // the last journaled entry's Seq

	// ctx is the context of the agent's calls: the run's, with the values
	// the Observer adds. callCtx is ctx made cancellable (by cancel) when
	// the agent finishes, for its tool calls, questions and agent
	// creations; it is made with the first of them (see calls). A model
	// call has a context of its own, cancelled by modelCancel.
	ctx     context.Context
	callCtx context.Context
	// storeCtx is ctx without its cancellation, for the agent's journal,
	// once the Observer has given ctx values; until then the run's is.
	storeCtx context.Context
	cancel   context.CancelFunc
	work     sync.WaitGroup

	modelCancel context.CancelCauseFunc
	busy        int                    // model and tool calls in flight
	kids        map[cadre.AgentID]bool // children that have not ended; made by addKid
	// fin is the Finish do returns a pointer to.
	fin      loop.Finish
	activity atomic.Int64 // unix nanos of the last sign of life

	// The flags are together, where they take one word: an agent is one
	// allocation, of at most 2,048 bytes (see TestAgentSize).
	rung       atomic.Bool // the inactivity timer rang (see main)
	started    bool        // made its first model call
	woken      bool        // a finished agent given new work: its Wake is in its mailbox
	verdictSet bool        // verdict is set (see kinds)
	// over is set when it has finished, until it is woken; guarded by the
	// run's mu.
	over bool
}

func (r *run) newAgent(cfg loop.Config, parent *agent, def *cadre.Definition, m cadre.Model, tools []cadre.Tool, rules rule.Chain) *agent {
	callable, plain := r.toolMaps(tools, rules)
	return r.newAgentWith(cfg, parent, def, m, tools, rules, callable, plain)
}

// newAgentWith is newAgent with the agent's tools by name already made by
// toolMaps: agents of the same tools and rules share them.
func (r *run) newAgentWith(cfg loop.Config, parent *agent, def *cadre.Definition, m cadre.Model, tools []cadre.Tool, rules rule.Chain,
	callable, plain map[string]cadre.Tool) *agent {
	a := &agent{
		run: r, id: cfg.ID, parent: parent, depth: cfg.Depth, definition: cfg.Definition, def: def,
		modelName: cfg.Model, model: m, tools: tools, cfg: cfg, rules: rules, callable: callable, plain: plain,
		timeout: cfg.Timeout,
		ctx:     r.ctx,
	}
	a.st = &a.state
	a.box.init()
	return a
}

// toolMaps returns tools by name, guarded by rules and as they are; nil
// for no tools.
func (r *run) toolMaps(tools []cadre.Tool, rules rule.Chain) (callable, plain map[string]cadre.Tool) {
	if len(tools) == 0 {
		return nil, nil
	}
	callable, plain = make(map[string]cadre.Tool, len(tools)), make(map[string]cadre.Tool, len(tools))
	for _, t := range tools {
		callable[t.Spec().Name] = rule.Guard(t, rules, r.e.ws)
		plain[t.Spec().Name] = t
	}
	return callable, plain
}

// compileRules compiles the rule sets of an agent into the chain its calls
// must pass.
func compileRules(sets []loop.RuleSet) (rule.Chain, error) {
	var chain rule.Chain
	for _, s := range sets {
		c, err := rule.Compile(s.Definition, s.Rules)
		if err != nil {
			return nil, err
		}
		chain = append(chain, c...)
	}
	return chain, nil
}

// emit publishes an event of this agent with payload p.
func (a *agent) emit(p cadre.Payload) {
	ev := cadre.Event{Type: p.EventType(), Agent: a.id, Depth: a.depth, Data: p}
	if a.parent != nil {
		ev.Parent = a.parent.id
	}
	a.run.emit(ev)
}

func (a *agent) touch() { a.activity.Store(time.Now().UnixNano()) }

// ring is the agent's inactivity timer ringing.
func (a *agent) ring() {
	a.rung.Store(true)
	a.box.wake()
}

// main is the agent's owner goroutine. A new agent steps its Start; a
// resumed one carries out the actions its replay left pending.
func (a *agent) main(pending []loop.Action) {
	defer a.run.wg.Done()
	growStack()
	a.touch()
	var fin *loop.Finish
	a.observeStart(a.first == nil)
	if a.first != nil {
		a.emit(cadre.AgentStarted{Definition: a.definition, Model: a.modelName})
		// The Start is in the journal (see run.create), or will be before
		// the agent steps anything else (see spawnStored).
		fin = a.apply([]loop.Input{a.first})
		a.first = nil
		a.awaitBirth()
	} else if !a.woken {
		a.emit(cadre.AgentStarted{Definition: a.definition, Model: a.modelName, Resumed: true})
		fin = a.doAll(pending)
	}
	// The inactivity timer, made with the first call the agent waits for
	// when it has a time limit, and reset after each step; it rings by
	// setting rung and waking the agent as an input does.
	var timer *time.Timer
	for fin == nil {
		if a.timeout > 0 && a.busy > 0 {
			left := a.timeout - time.Since(time.Unix(0, a.activity.Load()))
			if timer == nil {
				timer = time.AfterFunc(left, a.ring)
			} else {
				timer.Reset(left)
			}
		}
		a.box.wait()
		if a.rung.Swap(false) && a.busy > 0 && time.Since(time.Unix(0, a.activity.Load())) >= a.timeout {
			fin = a.step([]loop.Input{loop.Timeout{Limit: a.timeout}})
			if fin != nil {
				break
			}
		}
		ins := a.box.take()
		fin = a.step(ins)
		a.box.giveBack(ins)
	}
	if timer != nil {
		timer.Stop()
	}
	// What the agent started stops with it.
	if a.modelCancel != nil {
		a.modelCancel(nil)
	}
	if a.cancel != nil {
		a.cancel()
	}
	a.endChildren(fin)
	a.work.Wait()
	a.run.ended(a, *fin)
}

// endChildren cancels the children still alive when the agent finishes and
// waits until they have ended, so that no agent outlives its parent.
func (a *agent) endChildren(fin *loop.Finish) {
	if len(a.kids) == 0 {
		return
	}
	reason := fmt.Sprintf("its parent %s ended", a.id)
	if fin.Cancelled {
		reason = fin.Result
	}
	// Its live descendants are those of its children that have not ended:
	// one pass over the run's agents finds them all.
	a.run.cancelBelow(a.id, reason)
	for len(a.kids) > 0 {
		a.box.wait()
		ins := a.box.take()
		for _, in := range ins {
			if ce, ok := in.(loop.ChildEnded); ok {
				delete(a.kids, ce.Child)
			}
		}
		a.box.giveBack(ins)
	}
}

// step journals inputs, steps them as the journal gives them back, and
// carries out the actions. It returns the Finish action once the agent is
// done.
func (a *agent) step(ins []loop.Input) *loop.Finish {
	if len(ins) == 0 {
		return nil
	}
	if err := a.journal(ins); err != nil {
		// Without a journal the run cannot be resumed: stop rather than go on
		// with work that could be lost.
		a.run.e.cfg.Logger.Error("journal", "agent", a.id, "err", err)
		a.run.storeFailed(err)
		for _, in := range ins {
			if ce, ok := in.(loop.ChildEnded); ok {
				delete(a.kids, ce.Child)
			}
		}
		fin := a.apply([]loop.Input{loop.Cancel{Reason: "the run's store failed: " + err.Error()}})
		if fin == nil && a.st.Done() {
			// A finished agent given new work whose wake could not be
			// journaled: it never took the work up, and stays as it ended.
			// (Its state takes no Cancel: without this it would wait, and
			// every later input would fail to be journaled again.)
			if f, ok := a.st.Finished(); ok {
				return &f
			}
		}
		return fin
	}
	return a.apply(ins)
}

// apply steps journaled inputs and carries out the actions.
func (a *agent) apply(ins []loop.Input) *loop.Finish {
	a.touch()
	var fin *loop.Finish
	for _, in := range ins {
		switch in := in.(type) {
		case loop.ModelResult:
			a.busy--
			a.modelCancel = nil
		case loop.ToolResults:
			a.busy -= len(in.Results)
		case loop.ChildEnded:
			delete(a.kids, in.Child)
		}
		if fin == nil {
			acts := a.st.Step(in)
			if f := a.run.e.cfg.stepped; f != nil {
				f(a.id, in, acts)
			}
			fin = a.doAll(acts)
		}
	}
	if fin != nil {
		return fin
	}
	if a.busy == 0 && a.st.Started() {
		a.run.setStatus(a, cadre.StatusWaiting)
	}
	return nil
}

func (a *agent) doAll(acts []loop.Action) *loop.Finish {
	for _, act := range acts {
		if fin := a.do(act); fin != nil {
			return fin
		}
	}
	return nil
}

// journal appends inputs to the agent's journal and replaces each one with
// what a replay will read back: the input encoded and decoded again. The
// JSON of an input is not always the input (json.RawMessage is compacted,
// invalid UTF-8 becomes U+FFFD), so the agent steps what a resumed run
// steps, and a replay rebuilds the very state the agent had. An input
// that cannot make the round trip is not journaled, since no replay could
// read it. Without a store nothing is journaled and nothing can be
// replayed: the inputs are left as they are.
func (a *agent) journal(ins []loop.Input) error {
	if a.run.store == nil {
		return nil
	}
	entries, buf, err := a.encode(ins)
	defer giveJournalBuf(buf)
	if err != nil {
		return err
	}
	ctx := a.storeCtx
	if ctx == nil {
		ctx = a.run.storeCtx
	}
	if err := a.run.store.Append(ctx, entries); err != nil {
		return err
	}
	a.seq = entries[len(entries)-1].Seq
	return nil
}

// encode makes the agent's next journal entries of ins, numbered on from
// its last, and replaces each input with what a replay will read back (see
// journal). Inputs taken in one step go in one entry (loop.KindInputs), up
// to maxEntryInputs of them and about maxEntryBytes: a store writes an
// entry as one row, and a parent told of many children at once would
// otherwise cost a row each. The only input of a step keeps an entry of its
// own kind; one too large to share an entry is the only input of one.
// The entries' JSON is in buf, a buffer of journalBufs to give back
// (giveJournalBuf) once the store has them: a Store keeps copies (see
// cadre.Store).
func (a *agent) encode(ins []loop.Input) ([]cadre.JournalEntry, *[]byte, error) {
	entries := make([]cadre.JournalEntry, 0, (len(ins)+maxEntryInputs-1)/maxEntryInputs)
	now := time.Now().UTC()
	seq := a.seq
	buf := journalBufs.Get().(*[]byte)
	b := (*buf)[:0]
	defer func() { *buf = b }()
	for i := 0; i < len(ins); {
		if i+1 == len(ins) { // a lone input
			data, nb, back, err := roundTrip(b, ins[i], &a.run.strs)
			if err != nil {
				return nil, buf, fmt.Errorf("agent %s: %w", a.id, err)
			}
			b, ins[i] = nb, back
			seq++
			entries = append(entries, cadre.JournalEntry{Run: a.run.id, Agent: a.id, Seq: seq, Kind: back.Kind(), Data: data, Time: now})
			break
		}
		start, n := len(b), 0
		b = append(b, `{"inputs":[`...)
		for ; i+n < len(ins) && n < maxEntryInputs && len(b)-start < maxEntryBytes; n++ {
			in := ins[i+n]
			if n > 0 {
				b = append(b, ',')
			}
			b = append(append(append(b, `{"kind":"`...), in.Kind()...), `","data":`...) // a kind is a plain word
			at := len(b)
			data, nb, back, err := roundTrip(b, in, &a.run.strs)
			if err != nil {
				return nil, buf, fmt.Errorf("agent %s: %w", a.id, err)
			}
			if b = nb; len(b) == at { // encoded apart (see roundTrip)
				b = append(b, data...)
			}
			b = append(b, '}')
			ins[i+n] = back
		}
		b = append(b, "]}"...)
		seq++
		entries = append(entries, cadre.JournalEntry{Run: a.run.id, Agent: a.id, Seq: seq, Kind: loop.KindInputs, Data: b[start:len(b):len(b)], Time: now})
		i += n
	}
	return entries, buf, nil
}

// maxEntryInputs and maxEntryBytes bound an entry of several inputs (see
// encode): a spawn of 10,000 children is told in entries of at most 256
// inputs, not one entry of half a megabyte that a store would keep in
// memory whole.
const (
	maxEntryInputs = 256
	maxEntryBytes  = 64 << 10
)

// awaitBirth waits until the agent's record and Start are written and its
// parent told of it, when it was launched before (see spawnStored). Only
// its goroutine calls it.
func (a *agent) awaitBirth() {
	if a.birth != nil {
		<-a.birth
		a.birth = nil
	}
}

func (a *agent) do(act loop.Action) *loop.Finish {
	switch act := act.(type) {
	case loop.CallModel:
		a.callModel(act)
	case loop.CallTools:
		a.callTools(act)
	case loop.Spawn:
		a.spawnAll(act.Children)
	case loop.Deliver:
		a.run.deliver(a, act)
	case loop.Ask:
		a.ask(act)
	case loop.Reply:
		a.run.reply(act)
	case loop.CreateAgent:
		a.createAgent(act)
	case loop.CancelChild:
		a.run.cancelTree(act.Child, "cancelled by its parent "+string(a.id))
	case loop.Interrupt:
		if a.modelCancel != nil {
			a.modelCancel(errInterrupted)
		}
	case loop.Emit:
		a.emit(act.Event)
	case loop.Wait:
		a.run.setStatus(a, cadre.StatusWaiting)
	case loop.Finish:
		a.fin = act
		return &a.fin
	}
	return nil
}

// addKid notes a child that has not ended.
func (a *agent) addKid(id cadre.AgentID) {
	if a.kids == nil {
		a.kids = map[cadre.AgentID]bool{}
	}
	a.kids[id] = true
}

// calls returns the context of the agent's tool calls, questions and agent
// creations, cancelled when it finishes; it is made on first use, in the
// agent's goroutine, before any goroutine that reads it starts.
func (a *agent) calls() context.Context {
	if a.callCtx == nil {
		a.callCtx, a.cancel = context.WithCancel(a.ctx)
	}
	return a.callCtx
}

// acquire takes a concurrency slot. An agent that has not made its first
// call yet is queued while it waits for one.
func (a *agent) acquire(ctx context.Context, first bool) bool {
	select {
	case a.run.sem <- struct{}{}:
		return true
	default:
	}
	if first {
		a.run.setStatus(a, cadre.StatusQueued)
		a.emit(cadre.AgentQueued{MaxConcurrent: cap(a.run.sem)})
	}
	select {
	case a.run.sem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (a *agent) release() { <-a.run.sem }

func (a *agent) callModel(act loop.CallModel) {
	a.busy++
	ctx, cancel := context.WithCancelCause(a.ctx)
	a.modelCancel = cancel
	c := &modelCall{a: a, act: act, first: !a.started}
	a.started = true
	a.work.Add(1)
	go func() {
		defer a.work.Done()
		defer cancel(nil)
		a.box.put(c.run(ctx))
	}()
}

// A modelCall is one model call of an agent: the request it sends, and the
// reply as its stream gives it. One allocation holds the request, the
// collector of the stream and what it collects.
type modelCall struct {
	a     *agent
	act   loop.CallModel
	first bool // the agent's first model call
	final *cadre.Response
	err   error
	over  bool // the stream has been told to stop
}

// run makes the call and returns its input for the loop.
func (c *modelCall) run(ctx context.Context) loop.ModelResult {
	a := c.a
	if !a.acquire(ctx, c.first) {
		return a.modelAborted(ctx)
	}
	defer a.release()
	a.run.setStatus(a, cadre.StatusRunning)
	if !a.run.allow(a) {
		return loop.ModelResult{BudgetExhausted: true}
	}
	a.touch()
	req := &c.act.Request
	resp, err := c.collect(a.model.Stream(ctx, req))
	if err != nil {
		if ctx.Err() != nil {
			return a.modelAborted(ctx)
		}
		return loop.ModelResult{Err: err.Error()}
	}
	a.run.charge(a, resp.Usage)
	a.emit(cadre.ModelResponse{Turn: req.Turn, Usage: resp.Usage, Text: resp.Message.Content, ToolCalls: len(resp.Message.ToolCalls),
		StopReason: resp.StopReason, Model: resp.Model, Final: c.act.Final, Cost: a.run.e.cost(a.modelName, resp.Usage)})
	return loop.ModelResult{Response: resp}
}

// collect reads the stream of the call's reply as cadre.CollectFunc does,
// showing its text to watchers as it comes.
func (c *modelCall) collect(seq iter.Seq2[*cadre.Chunk, error]) (*cadre.Response, error) {
	seq(c.chunk)
	if c.err != nil {
		return nil, c.err
	}
	if c.final == nil {
		return nil, cadre.ErrIncompleteStream
	}
	return c.final, nil
}

// chunk takes one chunk of the stream.
func (c *modelCall) chunk(ch *cadre.Chunk, err error) bool {
	if c.over {
		// A stream that goes on after it was told to stop: what comes
		// next is not read.
		return false
	}
	if err != nil {
		c.err, c.over = err, true
		return false
	}
	if ch == nil {
		return true
	}
	if ch.Text != "" || ch.Restart {
		a := c.a
		a.touch()
		if ch.Restart {
			// The reply broke off and is asked for again: watchers drop
			// the text they were shown.
			a.emit(cadre.ModelDelta{Restart: true})
		}
		if ch.Text != "" {
			a.emit(cadre.ModelDelta{Text: ch.Text})
		}
	}
	if ch.Response != nil {
		c.final = ch.Response
	}
	return true
}

func (a *agent) modelAborted(ctx context.Context) loop.ModelResult {
	if errors.Is(context.Cause(ctx), errInterrupted) {
		return loop.ModelResult{Interrupted: true}
	}
	cause := context.Cause(ctx)
	if cause == nil {
		cause = ctx.Err()
	}
	return loop.ModelResult{Err: "the call was aborted: " + cause.Error()}
}

// interruptedCall is the result of a call that changes something and was
// in flight when the run stopped: it is not repeated blindly.
const interruptedCall = "Error: this call was in progress when cadre stopped, so it may or may not have taken effect. " +
	"Check its effect before calling it again."

func (a *agent) callTools(act loop.CallTools) {
	a.busy += len(act.Calls)
	byName := a.callable
	ctx := a.calls()
	a.work.Add(1)
	go func() {
		defer a.work.Done()
		if !a.acquire(ctx, false) {
			res := make([]loop.ToolResult, 0, len(act.Calls))
			for _, c := range act.Calls {
				res = append(res, loop.ToolResult{CallID: c.ID, Content: "Error: the tool call was aborted: the agent is stopping.", IsError: true})
			}
			a.box.put(loop.ToolResults{Results: res})
			return
		}
		defer a.release()
		a.run.setStatus(a, cadre.StatusRunning)
		var wg sync.WaitGroup
		for _, c := range act.Calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t := byName[c.Name]
				var res loop.ToolResult
				if act.Resumed && cadre.Mutates(t) {
					res = loop.ToolResult{CallID: c.ID, Content: interruptedCall, IsError: true}
				} else {
					a.emit(cadre.ToolCalled{CallID: c.ID, Tool: c.Name, Arguments: c.Arguments})
					res = a.run.e.runTool(ctx, a.id, a.plain[c.Name], t, a.rules, c)
				}
				a.touch()
				// The event has the text, which describes any media: never
				// their bytes.
				a.emit(cadre.ToolResult{CallID: c.ID, Tool: c.Name, IsError: res.IsError, Content: clip(res.Content, 2000)})
				a.box.put(loop.ToolResults{Results: []loop.ToolResult{res}})
			}()
		}
		wg.Wait()
	}()
}

// ask puts the agent's question to its caller: the parent's mailbox, or
// the user for the root.
func (a *agent) ask(act loop.Ask) {
	if act.Onboarding {
		a.emit(cadre.OnboardQuestion{Question: act.Question})
	} else {
		a.emit(cadre.Question{Question: act.Question})
	}
	if a.parent != nil {
		a.parent.box.put(loop.ChildQuestion{Child: a.id, Question: act.Question})
		return
	}
	askUser := a.run.e.cfg.AskUser
	if askUser == nil {
		a.box.put(loop.Answer{Err: "there is no one to ask: the run has no terminal for questions."})
		return
	}
	// The question is pending until AskUser returns or Engine.Answer
	// answers it, whichever comes first.
	ctx, cancel := context.WithCancel(a.calls())
	q := &question{cancel: cancel}
	a.run.mu.Lock()
	a.run.questions[a.id] = q
	a.run.mu.Unlock()
	a.work.Add(1)
	go func() {
		defer a.work.Done()
		defer cancel()
		text, err := askUser(ctx, a.id, act.Question)
		a.run.mu.Lock()
		delete(a.run.questions, a.id)
		if q.answered {
			text, err = q.text, nil
		}
		a.run.mu.Unlock()
		if err != nil {
			a.box.put(loop.Answer{Err: err.Error()})
			return
		}
		a.emit(cadre.Answer{Question: act.Question, Answer: text, From: "user"})
		a.box.put(loop.Answer{Text: text})
	}()
}

// reply delivers a parent's answer to its child's question.
func (r *run) reply(act loop.Reply) {
	r.mu.Lock()
	target := r.live(act.To)
	r.mu.Unlock()
	if target == nil {
		return // the child has ended; its question no longer matters
	}
	target.box.put(loop.Answer{Text: act.Text})
}

// createAgent approves, saves and registers a definition an agent wrote.
func (a *agent) createAgent(act loop.CreateAgent) {
	r := a.run
	create := r.e.cfg.CreateAgent
	ctx := a.calls()
	a.work.Add(1)
	go func() {
		defer a.work.Done()
		def := act.Definition
		if r.definition(def.Name) != nil {
			a.box.put(loop.AgentCreated{Ref: act.Ref, Err: fmt.Sprintf("an agent named %q already exists in this run", def.Name)})
			return
		}
		if create == nil {
			a.box.put(loop.AgentCreated{Ref: act.Ref, Err: "this run does not allow creating agents"})
			return
		}
		def = a.creatorGrants(def)
		file, err := create(ctx, a.id, &def)
		if err != nil {
			a.box.put(loop.AgentCreated{Ref: act.Ref, Err: err.Error()})
			return
		}
		def.File = file
		r.mu.Lock()
		if _, dup := r.defs[def.Name]; dup {
			r.mu.Unlock()
			a.box.put(loop.AgentCreated{Ref: act.Ref, Err: fmt.Sprintf("an agent named %q already exists in this run", def.Name)})
			return
		}
		r.defs[def.Name] = &def
		r.defsGen++
		r.mu.Unlock()
		a.box.put(loop.AgentCreated{Ref: act.Ref, Definition: &def, File: file})
	}()
}

// creatorGrants writes into a definition the agent created what the agent
// itself may use: its tools, for a definition that names none (which would
// otherwise get those of whoever starts it, in this run or in a later one
// that loads its file), and the rules the agent's calls must pass, each
// set of the chain its own group (named definition/group), so that every
// one must still allow a call. An agent never gives the agents it writes
// more than it has.
func (a *agent) creatorGrants(def cadre.Definition) cadre.Definition {
	if def.Tools == nil {
		def.Tools = a.cfg.CreatableTools()
	}
	def.Rules = slices.Clone(def.Rules)
	for _, set := range a.cfg.Rules {
		for _, r := range set.Rules {
			r.Group = set.Definition + "/" + r.Group
			def.Rules = append(def.Rules, r)
		}
	}
	return def
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return strings.TrimSpace(s[:cut]) + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// agentStack is about the stack an agent's goroutine needs to step a model
// reply with tool calls. A goroutine starts with less, and would grow its
// stack where it first needs more, deep in the loop, where the copy has
// eight frames or more to adjust; main grows it at once instead, while it
// holds two. (On BenchmarkDelegation this saves about 1 µs of CPU per
// agent.)
const agentStack = 6 << 10

// growStack makes the calling goroutine's stack hold at least agentStack
// more bytes.
//
//go:noinline
func growStack() {
	var b [agentStack]byte
	keepStack(b[:])
}

//go:noinline
func keepStack([]byte) {}
