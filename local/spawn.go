package local

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/prompt"
	"github.com/cadre-ai/cadre/rule"
	"github.com/cadre-ai/cadre/tool"
)

// A birth is one child of a Spawn action on its way to being started.
type birth struct {
	spec  loop.ChildSpec
	child *agent // its Start is its first input (agent.first)
	err   string // why the child may not exist, for the parent's model
	// With a store, the child's record and Start entry, encoded before it
	// is launched and written behind it (see spawnStored); buf holds the
	// entry's JSON until then.
	rec     *cadre.AgentRecord
	entries []cadre.JournalEntry
	buf     *[]byte
	kind    *kind // the child's
	whole   bool  // its Start holds all of its configuration (see run.encodeStart)
}

// spawnWriters is the most children of one Spawn action whose records and
// Starts are written to the store at once.
const spawnWriters = 64

// spawnBatch is how many children of a Spawn action are started together,
// and storeBatch how many with a store are acknowledged together;
// storeAhead is how many batches a parent launches before the first of
// them is written and acknowledged.
const (
	spawnBatch = 64
	storeBatch = 4 * spawnWriters
	storeAhead = 4
)

// spawnAll starts the children of a Spawn action. Limits are checked in
// order, for every child before any starts, so that a child's own
// children never take the place of a sibling its parent asked for in the
// same reply. Then, a batch at a time, the children are created (with a
// store that keeps everything in memory, their records and Starts are
// written: see run.create), acknowledged and launched, in order; with any
// other store, see spawnStored. A child that already exists (after a
// resume) is acknowledged, not created again.
func (a *agent) spawnAll(specs []loop.ChildSpec) {
	r := a.run
	r.reserve(len(specs))
	if a.kids == nil && len(specs) > 1 {
		a.kids = make(map[cadre.AgentID]bool, len(specs))
	}
	births := make([]birth, len(specs))
	for i, spec := range specs {
		births[i] = r.prepare(a, spec)
	}
	if s := r.e.cfg.Store; s != nil && !inMemory(s) {
		a.spawnStored(births)
		return
	}
	acks := make([]loop.Input, 0, min(spawnBatch, len(births)))
	for i := 0; i < len(births); i += spawnBatch {
		batch := births[i:min(i+spawnBatch, len(births))]
		for j := range batch {
			b := &batch[j]
			if b.child == nil {
				continue
			}
			if err := r.createFirst(b.child, b.kind); err != nil {
				r.unborn(b, err)
				continue
			}
			r.born(b.child, b.spec)
		}
		acks = a.acknowledge(batch, acks[:0])
		for j := range batch {
			if c := batch[j].child; c != nil {
				r.launch(c, nil)
			}
			batch[j] = birth{}
		}
	}
}

// spawnStored starts the children of births with a store. Each child is
// launched as soon as its Start is encoded, and its record and Start are
// written behind it, spawnWriters at once (the store groups them): its
// first model call, which changes nothing a replay would miss, overlaps
// the write. Each child is still durable before anything it does is
// recorded or reaches its parent, and before its parent learns of it: a
// batch's children are acknowledged to the parent, in order, once the
// batch is written, and until then each waits before its first step after
// its Start (see agent.birth). Should a write fail, the run's store has
// failed (see run.storeFailed): the run stops, as when any journal write
// fails, and a resumed run starts the child again from its parent's
// journal, which never recorded it. The parent launches at most
// storeAhead batches before the first of them is acknowledged.
func (a *agent) spawnStored(births []birth) {
	r := a.run
	type batch struct {
		births  []birth
		left    atomic.Int64  // its children still to write
		written chan struct{} // closed once they are all written
		told    chan struct{} // closed once they are acknowledged
	}
	batches := make([]batch, (len(births)+storeBatch-1)/storeBatch)
	for k := range batches {
		b := &batches[k]
		b.births = births[k*storeBatch : min((k+1)*storeBatch, len(births))]
		b.written, b.told = make(chan struct{}), make(chan struct{})
	}
	writers := 0
	todo := make(chan int, len(births)) // indexes in births
	defer close(todo)
	write := func(i int) {
		r.writeBirth(&births[i])
		if b := &batches[i/storeBatch]; b.left.Add(-1) == 0 {
			close(b.written)
		}
	}
	acks := make([]loop.Input, 0, min(storeBatch, len(births)))
	tell := func(b *batch) {
		<-b.written
		acks = a.acknowledge(b.births, acks[:0])
		close(b.told)
		clear(b.births)
	}
	told := 0
	for k := range batches {
		for told < k && (k-told >= storeAhead || closed(batches[told].written)) {
			tell(&batches[told])
			told++
		}
		b := &batches[k]
		for i := range b.births {
			if bi := &b.births[i]; bi.child != nil && r.begin(bi) {
				b.left.Add(1)
			}
		}
		if b.left.Load() == 0 {
			close(b.written)
		}
		for i := range b.births {
			bi := &b.births[i]
			c := bi.child
			if c == nil {
				continue
			}
			c.birth = b.told
			r.born(c, bi.spec)
			r.launch(c, nil)
			at := k*storeBatch + i
			if len(births) == 1 {
				write(at) // one child: no writer is needed
				continue
			}
			if writers < spawnWriters {
				writers++
				go func() {
					for i := range todo {
						write(i)
					}
				}()
			}
			todo <- at
			if i%32 == 31 {
				// Tell what is written: the children told wait no more.
				for told < k && closed(batches[told].written) {
					tell(&batches[told])
					told++
				}
			}
		}
	}
	for ; told < len(batches); told++ {
		tell(&batches[told])
	}
}

// inMemory reports whether a store keeps everything in memory, so that
// its writes take no time worth overlapping with anything (package
// memstore's does).
func inMemory(s cadre.Store) bool {
	m, ok := s.(interface{ InMemory() bool })
	return ok && m.InMemory()
}

// closed reports whether c is closed.
func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// begin registers the child of b and encodes its record and Start, to be
// written behind it (see spawnStored). When the Start cannot be journaled
// the child is not started, and b says why.
func (r *run) begin(b *birth) bool {
	var err error
	if b.rec, b.entries, b.buf, b.whole, err = r.encodeStart(b.child, b.kind); err != nil {
		r.unborn(b, err)
		return false
	}
	return true
}

// unborn gives back the place in the agent count of the child of b, which
// could not be started, and says why in b.
func (r *run) unborn(b *birth, err error) {
	r.mu.Lock()
	r.created--
	r.mu.Unlock()
	b.child, b.err = nil, "the subagent could not be started: "+err.Error()
}

// writeBirth writes the record and Start begin encoded for b; when they
// cannot be written the run's store has failed.
func (r *run) writeBirth(b *birth) {
	err := r.store.(ownedStore).AppendAgent(r.storeCtx, b.rec, b.entries)
	giveJournalBuf(b.buf)
	b.rec, b.entries, b.buf = nil, nil, nil
	if err != nil {
		r.storeFailed(fmt.Errorf("journal the start of %s: %w", b.spec.ID, err))
		return
	}
	if b.whole {
		b.kind.offer(b.child)
	}
}

// acknowledge tells the parent of the children of births, in order, with
// acks, which has room for them, and returns acks.
func (a *agent) acknowledge(births []birth, acks []loop.Input) []loop.Input {
	for i := range births {
		b := &births[i]
		if b.err == "" {
			a.addKid(b.spec.ID)
		}
		acks = append(acks, loop.Spawned{Ref: b.spec.Ref, Child: b.spec.ID, Err: b.err})
	}
	a.box.putAll(acks)
	clear(acks)
	return acks
}

// prepare checks the run-wide limits for spec and builds the child. It
// reserves the child's place in the agent count. Unless a rule asks for
// approval, the run's tables are read and the limits checked in one
// section under the run's lock.
func (r *run) prepare(parent *agent, spec loop.ChildSpec) birth {
	lim := r.e.cfg.Limits
	b := birth{spec: spec}
	v := parent.agentVerdict(spec.Definition)
	norm := loop.TaskKey(spec.Task)
	r.mu.Lock()
	exists := r.live(spec.ID) != nil
	info, known := r.infos[spec.ID]
	if exists || known && info.Status.Terminal() {
		r.mu.Unlock()
		return b
	}
	var def *cadre.Definition
	if spec.Definition != "" {
		def = r.defs[spec.Definition]
	}
	gen := r.defsGen
	switch {
	case spec.Definition != "" && def == nil:
		b.err = fmt.Sprintf("there is no subagent named %q", spec.Definition)
	case spec.Onboarding && def == nil:
		b.err = "onboarding needs a subagent definition"
	case def != nil && !def.UserFacing():
		b.err = internalRefusal(spec.Definition)
	case v.Action == cadre.PermissionDeny:
		b.err = v.Reason
	}
	if b.err != "" {
		r.mu.Unlock()
		return b
	}
	if v.Action != cadre.PermissionAllow {
		r.mu.Unlock()
		if msg := r.approveStart(parent, spec, v); msg != "" {
			b.err = msg
			return b
		}
		r.mu.Lock()
	}
	if r.created >= lim.MaxAgents {
		r.mu.Unlock()
		parent.emit(cadre.AgentLimit{MaxAgents: lim.MaxAgents, Task: spec.Task})
		b.err = fmt.Sprintf("agent limit reached: this run has already created %d agents, the most it allows (maxAgents %d). Finish the work with the agents you have, or do it yourself.", lim.MaxAgents, lim.MaxAgents)
		return b
	}
	if !spec.Onboarding && r.tasks[norm] >= cadre.DefaultCycleRepeats {
		n := r.tasks[norm]
		r.mu.Unlock()
		parent.emit(cadre.CycleDetected{Task: spec.Task, Count: n + 1})
		b.err = fmt.Sprintf("cycle detected: this same task was already delegated %d times in this run. Do not delegate it again; work with the results you have.", n)
		return b
	}
	if !spec.Onboarding {
		r.tasks[norm]++
	}
	r.created++
	r.mu.Unlock()

	child, start, k, msg := r.build(parent, spec, def, gen)
	if msg != "" {
		r.mu.Lock()
		r.created--
		r.mu.Unlock()
		b.err = msg
		return b
	}
	child.first = start
	b.child, b.kind = child, k
	return b
}

// internalRefusal is why an agent of an internal definition was not
// started: every child is asked for by its parent's model, and internal
// definitions are for the engine's own use (a run's root).
func internalRefusal(name string) string {
	return fmt.Sprintf("%q is an internal agent and cannot be started by a model: start one of the agents you were told of", name)
}

// born announces a new child.
func (r *run) born(a *agent, spec loop.ChildSpec) {
	data := cadre.AgentSpawned{Child: spec.ID, Definition: a.definition, Mode: spec.Mode, Task: spec.Task, Model: a.modelName, Name: spec.Name,
		CallID: spec.Ref}
	if spec.Total > 0 {
		data.Index, data.Total = spec.Index, spec.Total
	}
	a.emit(data)
}

// newChild builds a child agent and its Start input.
func (r *run) newChild(parent *agent, spec loop.ChildSpec, def *cadre.Definition) (*agent, loop.Start, string) {
	r.mu.Lock()
	gen := r.defsGen
	r.mu.Unlock()
	a, start, _, msg := r.build(parent, spec, def, gen)
	return a, start, msg
}

// build builds a child agent and its Start input; gen is the generation of
// the run's definitions the child was asked for under.
func (r *run) build(parent *agent, spec loop.ChildSpec, def *cadre.Definition, gen int) (*agent, loop.Start, *kind, string) {
	e := r.e
	var (
		name string
		m    cadre.Model
		err  error
	)
	if spec.Model != "" {
		// The caller's choice comes first, when it names a model cadre knows.
		if m, err = e.cfg.Models.Open(spec.Model); err == nil {
			name = spec.Model
		} else {
			parent.emit(cadre.Warning{Child: spec.ID,
				Message: fmt.Sprintf("%s asked for the model %q for %s, which cannot be used (%v); the agent's own choice applies", parent.id, spec.Model, spec.ID, err)})
		}
	}
	if m == nil {
		var warning string
		name, warning = e.cfg.Models.Choose(def, parent.modelName)
		if warning != "" {
			parent.emit(cadre.Warning{Message: warning, Child: spec.ID})
		}
		if m, err = e.cfg.Models.Open(name); err != nil {
			return nil, loop.Start{}, nil, fmt.Sprintf("cannot open model %q for the subagent: %v", name, err)
		}
	}
	k := parent.kindOf(kindKey{def: def, model: name, gen: gen, onboarding: spec.Onboarding})
	if k.err != "" {
		return nil, loop.Start{}, nil, k.err
	}
	cfg := k.cfg
	cfg.ID, cfg.Parent, cfg.Definition = spec.ID, parent.id, spec.Definition
	if cfg.Definition == "" {
		cfg.Definition = "sub"
	}
	var first string
	switch {
	case spec.Onboarding:
		first = prompt.Onboarding(spec.Context, cfg.MaxQuestions)
	case def == nil:
		cfg.System = prompt.SubAgent(prompt.SubAgentParams{Soul: e.cfg.Soul, Identity: e.cfg.Identity, Task: spec.Task,
			Depth: cfg.Depth, MaxDepth: cfg.MaxDepth, Defs: k.userFacing})
	}
	if first == "" {
		first = spec.First
	}
	if first == "" {
		first = prompt.UserMessage(spec.Task, spec.Context)
	}
	msgs := make([]cadre.Message, len(spec.Messages)+1)
	copy(msgs, spec.Messages)
	msgs[len(spec.Messages)] = cadre.Message{Role: cadre.RoleUser, Content: first}
	a := r.newAgentWith(cfg, parent, def, m, k.tools, k.rules, k.callable, k.plain)
	a.mode = spec.Mode
	return a, loop.Start{Config: cfg, Task: spec.Task, Messages: msgs}, k, ""
}

// A kindKey is what a child's kind depends on besides its parent.
type kindKey struct {
	def        *cadre.Definition // nil for a general subagent
	model      string
	gen        int // the generation of the run's definitions
	onboarding bool
}

// A kind is what every child of one parent with the same kindKey has in
// common: its configuration but for its ID and parent (and, for a general
// subagent, its system prompt, which holds its task), its rules and its
// tools. It depends on nothing else: the parent's configuration, tools and
// rules and the engine's never change. Read-only once made.
type kind struct {
	key        kindKey
	cfg        loop.Config
	rules      rule.Chain
	tools      []cadre.Tool
	userFacing []*cadre.Definition
	// callable and plain are the children's tools by name, guarded by
	// their rules and not (see agent): shared, never changed.
	callable, plain map[string]cadre.Tool
	err             string // why no child of this kind can be started
	// template is a child of this kind whose Start was written with all
	// of its configuration and is durable, once there is one: the Starts
	// of the children after it take their configuration from its
	// (loop.Start.ConfigFrom). A general subagent's kind has none: its
	// system prompt holds its task.
	template atomic.Pointer[template]
}

// A template is a child whose configuration its siblings' Starts name
// (see kind): its ID, and its configuration as its Start reads back.
type template struct {
	id  cadre.AgentID
	cfg loop.Config
}

// templateOf returns the kind's template, or nil (as for a nil kind).
func (k *kind) templateOf() *template {
	if k == nil {
		return nil
	}
	return k.template.Load()
}

// offer makes a, a child of the kind whose Start holds all of its
// configuration and is durable, the kind's template if it has none.
func (k *kind) offer(a *agent) {
	if k.key.def != nil && k.template.Load() == nil {
		k.template.CompareAndSwap(nil, &template{id: a.id, cfg: a.cfg})
	}
}

// kindsKept is the most kinds an agent keeps for its children.
const kindsKept = 8

// kindOf returns the kind of the agent's children with key k, made on
// first use. It is called by the agent's own goroutine (or with the
// Planner's lock held), which alone reads and writes a.kinds.
func (a *agent) kindOf(key kindKey) *kind {
	for _, k := range a.kinds {
		if k.key == key {
			return k
		}
	}
	k := a.run.newKind(a, key)
	if len(a.kinds) == kindsKept {
		// The oldest goes: most agents start children of a kind or two.
		a.kinds = append(a.kinds[:0], a.kinds[1:]...)
	}
	a.kinds = append(a.kinds, k)
	return k
}

// newKind works out the kind key of parent's children.
func (r *run) newKind(parent *agent, key kindKey) *kind {
	e := r.e
	lim := e.cfg.Limits
	def, name := key.def, key.model
	k := &kind{key: key}
	depth := parent.depth + 1
	// A definition's maxDepth bounds its whole subtree.
	maxDepth := min(lim.MaxDepth, parent.cfg.MaxDepth)
	if def != nil && def.MaxDepth > 0 && depth+def.MaxDepth < maxDepth {
		maxDepth = depth + def.MaxDepth
	}
	// The child's calls must pass its own rules and all of its parent's.
	sets := ruleSets(def, parent.cfg.Rules)
	rules, err := compileRules(sets)
	if err != nil {
		k.err = fmt.Sprintf("the subagent cannot be started: %v", err)
		return k
	}
	userFacing, catalog := r.offered(rules)
	protocol := e.protocolFor(def, name)
	if def == nil && e.cfg.Protocol != cadre.ProtocolTools {
		// A general subagent exists only on the text protocol.
		protocol = cadre.ProtocolText
	}
	delegation := delegationFor(def, parent.cfg.Delegation)
	// On the text protocol an agent delegates by <spawn_agents> blocks
	// only, which run tasks: a tool that starts agents but runs no task
	// (agent_onboard) does not let it.
	starts := loop.StartsAgents(delegation)
	if protocol == cadre.ProtocolText {
		starts = loop.RunsTasks(delegation)
	}
	delegate := depth < maxDepth && parent.cfg.Delegate && starts && !key.onboarding &&
		(len(userFacing) > 0 || protocol == cadre.ProtocolText && rules.AllowsAgent(""))
	tools := filterTools(parent.tools, def)
	report := e.cfg.Report
	if def != nil && def.Report != "" {
		report = def.Report
	}
	cfg := loop.Config{
		Depth: depth, MaxDepth: maxDepth, Model: name,
		Tools: specs(tools), Delegate: delegate, Delegation: delegation, Rules: sets, Catalog: catalog, Report: report, Protocol: protocol,
		MaxTurns: lim.MaxTurns, Withheld: withheld(e.cfg.Tools, tools),
		EndOnReport: !e.cfg.TurnAfterReport && (def == nil || !def.TurnAfterReport),
	}
	switch {
	case key.onboarding:
		cfg.Mode = loop.ModeOnboarding
		cfg.System = def.Prompt
		cfg.MaxQuestions = e.maxQuestions(def)
		cfg.Protocol = cadre.ProtocolTools
	case def != nil:
		cfg.System = r.childPrompt(prompt.ChildParams{Def: def, Soul: e.cfg.Soul, Identity: e.cfg.Identity, Defs: userFacing,
			CanDelegate: delegate, Protocol: protocol, Depth: depth, MaxDepth: maxDepth, AskCaller: def.AskCaller, Report: report}, key.gen)
	}
	if def != nil {
		if def.MaxTurns > 0 {
			cfg.MaxTurns = def.MaxTurns
		}
		cfg.Temperature = def.Temperature
		cfg.Timeout = def.TimeoutOrDefault()
		if !key.onboarding {
			cfg.AskCaller = def.AskCaller
			cfg.MaxQuestions = e.maxQuestions(def)
			cfg.OutputSchema = def.OutputSchema
		}
	}
	k.cfg, k.rules, k.tools, k.userFacing = cfg, rules, tools, userFacing
	k.callable, k.plain = r.toolMaps(tools, rules)
	return k
}

func specs(tools []cadre.Tool) []cadre.ToolSpec {
	out := make([]cadre.ToolSpec, 0, len(tools))
	for _, t := range tools {
		out = append(out, t.Spec())
	}
	return out
}

// filterTools applies a definition's allowlist and denylist to the tools an
// agent could have; it never adds a tool. An entry of either names the
// tools rule.NameMatches says it does: mcp__github and mcp__github__* every
// tool of the MCP server github.
func filterTools(from []cadre.Tool, def *cadre.Definition) []cadre.Tool {
	if def == nil {
		return from
	}
	var out []cadre.Tool
	for _, t := range from {
		name := t.Spec().Name
		if def.Tools != nil && !namedIn(def.Tools, name) {
			continue
		}
		if namedIn(def.DisallowedTools, name) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// namedIn reports whether an entry of list names the tool.
func namedIn(list []string, tool string) bool {
	return slices.ContainsFunc(list, func(e string) bool { return rule.NameMatches(e, tool) })
}

// delegationFor returns the delegation tools an agent of def may use, given
// those of its parent (nil: every one): the parent's, narrowed by the
// definition's allowlist and denylist. Nil means every one.
func delegationFor(def *cadre.Definition, parent []string) []string {
	if def == nil || def.Tools == nil && len(def.DisallowedTools) == 0 {
		// Nothing narrows the parent's: the same list, which no one
		// changes.
		return parent
	}
	all := loop.DelegationTools()
	out := parent
	if out == nil {
		out = all
	}
	out = slices.DeleteFunc(slices.Clone(out), func(t string) bool {
		return def.Tools != nil && !namedIn(def.Tools, t) || namedIn(def.DisallowedTools, t)
	})
	if parent == nil && len(out) == len(all) {
		return nil
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// ruleSets returns the rules an agent of def must pass: its definition's
// first, then those its parent must pass.
func ruleSets(def *cadre.Definition, parent []loop.RuleSet) []loop.RuleSet {
	if def == nil || len(def.Rules) == 0 {
		return parent
	}
	return append([]loop.RuleSet{{Definition: def.Name, Rules: def.Rules}}, parent...)
}

// mayStart checks the rules of the parent's definition (and its
// ancestors') about the agent spec would start, and asks for approval
// when one says so. It returns why the agent may not start, or "".
func (r *run) mayStart(parent *agent, spec loop.ChildSpec) string {
	v := parent.agentVerdict(spec.Definition)
	switch v.Action {
	case cadre.PermissionAllow:
		return ""
	case cadre.PermissionDeny:
		return v.Reason
	}
	return r.approveStart(parent, spec, v)
}

// agentVerdict is what the agent's rules say about starting an agent of
// the named definition. The last answer is kept: a reply's spawns mostly
// name one definition. Called by the agent's goroutine (or with the
// Planner's lock held).
func (a *agent) agentVerdict(definition string) rule.Verdict {
	if !a.verdictSet || a.verdictOf != definition {
		a.verdict, a.verdictOf, a.verdictSet = a.rules.Agent(definition), definition, true
	}
	return a.verdict
}

// approveStart asks the engine's approval policy whether spec's agent may
// start, as verdict v (which asks for approval) says to. It returns why
// not, or "".
func (r *run) approveStart(parent *agent, spec loop.ChildSpec, v rule.Verdict) string {
	ap, ok := r.e.cfg.Runner.(Approver)
	if !ok {
		return v.Reason + ", and this engine has no approval policy to ask"
	}
	name := spec.Definition
	if name == "" {
		name = "a subagent"
	}
	via := map[string]string{"sync": loop.ToolSpawnAgent, "background": loop.ToolStartBackground, "onboard": loop.ToolOnboard}[spec.Mode]
	if via == "" {
		via = "<spawn_agents>"
	}
	req := tool.ApprovalRequest{Agent: parent.id, Tool: via, Summary: tool.Printable(fmt.Sprintf("start %s on: %s", name, clip(oneLine(spec.Task), 200))), Rule: v.Reason}
	yes, denial, err := ap.Approve(parent.ctx, req)
	switch {
	case err != nil:
		return fmt.Sprintf("%s was not started: no approval could be obtained (%v).", name, err)
	case !yes:
		return denial
	}
	return ""
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// promptKey identifies a child's system prompt: the same inputs give the
// same text, so children of one definition share one string.
type promptKey struct {
	def             *cadre.Definition
	defs            int    // the catalogue's generation
	offered         string // the names of the definitions the prompt offers
	delegate        bool
	protocol        cadre.Protocol
	depth, maxDepth int
	report          cadre.ReportMode
}

// childPrompt returns prompt.Child(p), built once per distinct input; gen
// is the generation of the run's definitions p.Defs come from.
func (r *run) childPrompt(p prompt.ChildParams, gen int) string {
	names := make([]string, len(p.Defs))
	for i, d := range p.Defs {
		names[i] = d.Name
	}
	key := promptKey{def: p.Def, defs: gen, offered: strings.Join(names, "\x00"), delegate: p.CanDelegate, protocol: p.Protocol,
		depth: p.Depth, maxDepth: p.MaxDepth, report: p.Report}
	r.mu.Lock()
	if s, ok := r.prompts[key]; ok {
		r.mu.Unlock()
		return s
	}
	r.mu.Unlock()
	s := prompt.Child(p)
	r.mu.Lock()
	if r.prompts == nil {
		r.prompts = map[promptKey]string{}
	}
	r.prompts[key] = s
	r.mu.Unlock()
	return s
}
