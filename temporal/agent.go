package temporal

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
)

// An envelope carries one loop input through Temporal: its kind and its
// JSON, as the journal of the local engine keeps it.
type envelope struct {
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data"`
}

func wrap(in loop.Input) (envelope, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return envelope{}, fmt.Errorf("the %s input cannot be encoded: %w", in.Kind(), err)
	}
	return envelope{Kind: in.Kind(), Data: b}, nil
}

func (e envelope) input() (loop.Input, error) { return loop.Decode(e.Kind, e.Data) }

// agentInput starts an agent's workflow, or carries its state into the
// next run of it (continue-as-new).
type agentInput struct {
	Run      string        `json:"run"`
	Agent    cadre.AgentID `json:"agent"`
	Parent   cadre.AgentID `json:"parent,omitempty"`
	Depth    int           `json:"depth"`
	Settings settings      `json:"settings"`
	Started  time.Time     `json:"started"`
	// Journal is every input the agent stepped, its Start first. A new
	// agent's has only its Start.
	Journal []envelope `json:"journal"`
	// Carried are inputs received and not yet stepped when the previous
	// run of the workflow continued as new.
	Carried []envelope      `json:"carried,omitempty"`
	Kids    []cadre.AgentID `json:"kids,omitempty"`
	Report  string          `json:"report,omitempty"`
	Reqs    int             `json:"reqs,omitempty"`
	// Continued marks a workflow run that continues a previous one.
	Continued bool `json:"continued,omitempty"`
	// ReportEnd asks the root to tell the run's workflow how it ended, by
	// an "ended" request: a run's workflow that continues as new no longer
	// has the root's result (see runContinues).
	ReportEnd bool `json:"report_end,omitempty"`
}

// runRequest is what an agent asks of its run's workflow.
type runRequest struct {
	Kind  string        `json:"kind"` // reserve, unreserve, acquire, release, cancel, ended
	From  string        `json:"from,omitempty"`
	Agent cadre.AgentID `json:"agent,omitempty"`
	Seq   int           `json:"seq,omitempty"`
	Key   string        `json:"key,omitempty"`
	Items []reserveItem `json:"items,omitempty"`
	Usage cadre.Usage   `json:"usage,omitzero"`
	// Reason and Abort are a cancel's.
	Reason string `json:"reason,omitempty"`
	Abort  bool   `json:"abort,omitempty"`
	// Finish is an ended's: how the root ended.
	Finish *loop.Finish `json:"finish,omitempty"`
}

type reserveItem struct {
	ID         cadre.AgentID `json:"id"`
	Task       string        `json:"task"`
	Onboarding bool          `json:"onboarding,omitempty"`
}

// runReply answers a runRequest.
type runReply struct {
	Kind      string `json:"kind"` // reserved, granted
	Seq       int    `json:"seq,omitempty"`
	Key       string `json:"key,omitempty"`
	Exhausted bool   `json:"exhausted,omitempty"`
	// Refused has one entry per reserved item: empty when it may start.
	Refused []refusal `json:"refused,omitempty"`
}

type refusal struct {
	Limit     int `json:"limit,omitempty"`      // the agent limit was reached
	CycleSeen int `json:"cycle_seen,omitempty"` // the task was delegated that many times already
}

// modelCall is the agent's model call: waiting for a concurrency slot,
// then in flight.
type modelCall struct {
	act         loop.CallModel
	key         string
	granted     bool
	future      workflow.Future
	cancel      workflow.CancelFunc
	interrupted bool
	// inactivity is the limit the call was made with: the call gives up
	// when its reply shows no sign of life for that long.
	inactivity time.Duration
}

type toolCall struct {
	call   cadre.ToolCall
	future workflow.Future
}

// agentRun is one workflow run of an agent.
type agentRun struct {
	w        *Worker
	ctx      workflow.Context
	in       agentInput
	st       *loop.State
	journal  []envelope
	inputs   workflow.ReceiveChannel
	replies  workflow.ReceiveChannel
	queue    []loop.Input // inputs to step before waiting again
	unread   []runReply   // replies not yet matched
	out      []cadre.Event
	records  []cadre.AgentRecord
	kids     map[cadre.AgentID]bool
	model    *modelCall
	tools    []*toolCall
	callCtx  workflow.Context // the parent of calls in flight; cancelled at the end
	cancel   workflow.CancelFunc
	question string
	status   cadre.Status
	fin      *loop.Finish
	err      error // a failure of the engine itself: the agent fails with it

	// active is the workflow time of the agent's last sign of life: an
	// input stepped, or a model call begun.
	active time.Time
	// limit is the agent's inactivity limit, 0 for none; limitKnown says
	// whether it has been decided for this workflow run (see
	// inactivityLimit).
	limit      time.Duration
	limitKnown bool
	timer      *inactivityTimer
}

// inactivityTimer wakes an agent whose calls in flight showed no sign of
// life until at.
type inactivityTimer struct {
	at     time.Time
	future workflow.Future
	cancel workflow.CancelFunc
}

func (a *agentRun) wid() string { return AgentWorkflowID(a.in.Run, a.in.Agent) }

// agentWorkflow is an agent: it steps the loop with what happens to the
// agent and carries out what the loop asks for.
func (w *Worker) agentWorkflow(ctx workflow.Context, in agentInput) (loop.Finish, error) {
	a := &agentRun{w: w, ctx: ctx, in: in, kids: map[cadre.AgentID]bool{},
		inputs: workflow.GetSignalChannel(ctx, inputSignal), replies: workflow.GetSignalChannel(ctx, replySignal)}
	a.callCtx, a.cancel = workflow.WithCancel(ctx)
	a.active = workflow.Now(ctx)
	for _, k := range in.Kids {
		a.kids[k] = true
	}
	if err := workflow.SetQueryHandler(ctx, questionQuery, func() (string, error) { return a.question, nil }); err != nil {
		return loop.Finish{}, err
	}
	if len(in.Journal) == 0 {
		return loop.Finish{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("agent %s of run %s has no Start input", in.Agent, in.Run), "cadre", nil)
	}
	ins := make([]loop.Input, 0, len(in.Journal))
	for i, e := range in.Journal {
		x, err := e.input()
		if err != nil {
			return loop.Finish{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("agent %s: journal entry %d: %v", in.Agent, i, err), "cadre", nil)
		}
		ins = append(ins, x)
	}
	if !in.Continued {
		start, ok := ins[0].(loop.Start)
		if !ok {
			return loop.Finish{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("agent %s of run %s: its first input is %s, not start", in.Agent, in.Run, ins[0].Kind()), "cadre", nil)
		}
		a.status = cadre.StatusRunning
		a.emit(cadre.AgentStarted{Definition: start.Config.Definition, Model: start.Config.Model})
		a.record()
		a.st = loop.New()
		a.journal = in.Journal
		a.doAll(a.st.Step(start))
	} else {
		a.st = loop.Replay(ins)
		a.journal = slices.Clone(in.Journal)
		a.status = cadre.StatusWaiting
		for _, e := range in.Carried {
			if x, err := e.input(); err == nil {
				a.queue = append(a.queue, x)
			}
		}
	}
	for a.fin == nil && a.err == nil {
		if len(a.queue) > 0 {
			x := a.queue[0]
			a.queue = a.queue[1:]
			a.step(x)
			continue
		}
		if a.st.Waiting() && a.status != cadre.StatusWaiting {
			a.status = cadre.StatusWaiting
			a.record()
		}
		a.flush()
		if a.idle() && workflow.GetInfo(ctx).GetCurrentHistoryLength() > in.Settings.HistoryLimit {
			return loop.Finish{}, a.continueAsNew()
		}
		a.wait()
	}
	if a.err != nil && a.fin == nil {
		a.doAll(a.st.Step(loop.Cancel{Reason: "the engine failed: " + a.err.Error()}))
	}
	return a.end(), nil
}

// idle reports whether nothing is in flight, so the agent may continue as
// new: no call, no question, nothing queued.
func (a *agentRun) idle() bool {
	return a.model == nil && len(a.tools) == 0 && len(a.queue) == 0 && a.question == "" && len(a.unread) == 0
}

func (a *agentRun) continueAsNew() error {
	next := a.in
	next.Journal, next.Continued, next.Carried = a.journal, true, nil
	for {
		var e envelope
		if !a.inputs.ReceiveAsync(&e) {
			break
		}
		next.Carried = append(next.Carried, e)
	}
	next.Kids = next.Kids[:0]
	for _, k := range sortedIDs(a.kids) {
		next.Kids = append(next.Kids, k)
	}
	return workflow.NewContinueAsNewError(a.ctx, AgentWorkflow, next)
}

func sortedIDs(m map[cadre.AgentID]bool) []cadre.AgentID {
	ids := make([]cadre.AgentID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// wait waits for one thing to happen and handles it.
func (a *agentRun) wait() {
	sel := workflow.NewSelector(a.ctx)
	sel.AddReceive(a.inputs, func(c workflow.ReceiveChannel, _ bool) {
		var e envelope
		c.Receive(a.ctx, &e)
		a.received(e)
	})
	sel.AddReceive(a.replies, func(c workflow.ReceiveChannel, _ bool) {
		var r runReply
		c.Receive(a.ctx, &r)
		a.unread = append(a.unread, r)
	})
	if m := a.model; m != nil && m.future != nil {
		sel.AddFuture(m.future, func(f workflow.Future) { a.modelDone(f) })
	}
	for _, t := range a.tools {
		sel.AddFuture(t.future, func(f workflow.Future) { a.toolDone(t, f) })
	}
	a.armTimer(sel)
	if len(a.unread) == 0 {
		sel.Select(a.ctx)
	}
	// Replies the agent waits for.
	for len(a.unread) > 0 {
		r := a.unread[0]
		a.unread = a.unread[1:]
		if r.Kind == "granted" && a.model != nil && a.model.key == r.Key && !a.model.granted {
			a.granted(r.Exhausted)
		}
	}
}

// Versions of the agent's workflow, for workflow.GetVersion: histories
// recorded by older workers replay as they ran.
const (
	agentTimersChange = "agent-inactivity"
	// timersNone: the agent had no inactivity limit.
	timersNone = workflow.DefaultVersion
	// timersArmed: a timer holds the limit while the agent waits for a
	// concurrency slot or for tools, and a model call gives up by itself.
	timersArmed = workflow.Version(1)

	agentWakeChange = "agent-wake"
	// wakesSignalled: a message to a finished child was signalled to its
	// closed workflow, and lost.
	wakesSignalled = workflow.DefaultVersion
	// wakesRefused: the agent is told the child could not be woken.
	wakesRefused = workflow.Version(1)
)

// inactivityLimit is the agent's inactivity limit (its definition's
// timeout), or 0 in workflows recorded before the engine kept it. It is
// decided once per workflow run, when first needed, so that the histories
// of agents without a limit carry no version marker.
func (a *agentRun) inactivityLimit() time.Duration {
	if a.limitKnown {
		return a.limit
	}
	if t := a.st.Config().Timeout; t > 0 {
		a.limitKnown = true
		if workflow.GetVersion(a.ctx, agentTimersChange, timersNone, timersArmed) == timersArmed {
			a.limit = t
		}
	}
	return a.limit
}

// armTimer adds to sel the timer of the agent's inactivity limit, as the
// local engine keeps it: it runs while a call of the agent is waiting for a
// concurrency slot or tools are in flight, from the agent's last sign of
// life, and when it fires the agent steps a Timeout. A model call in flight
// keeps the limit itself, since only it sees its reply stream in (see
// CallModel). The timer is made again only when the last sign of life
// moved, and the one it replaces is cancelled.
func (a *agentRun) armTimer(sel workflow.Selector) {
	waiting := (a.model != nil && a.model.future == nil) || len(a.tools) > 0
	if !waiting || a.inactivityLimit() <= 0 {
		a.stopTimer()
		return
	}
	limit := a.limit
	at := a.active.Add(limit)
	if a.timer == nil || !a.timer.at.Equal(at) {
		a.stopTimer()
		ctx, cancel := workflow.WithCancel(a.ctx)
		a.timer = &inactivityTimer{at: at, cancel: cancel, future: workflow.NewTimer(ctx, at.Sub(workflow.Now(a.ctx)))}
	}
	t := a.timer
	sel.AddFuture(t.future, func(f workflow.Future) {
		if a.timer == t {
			a.timer = nil
		}
		if f.Get(a.ctx, nil) == nil {
			a.step(loop.Timeout{Limit: limit})
		}
	})
}

func (a *agentRun) stopTimer() {
	if a.timer != nil {
		a.timer.cancel()
		a.timer = nil
	}
}

// received handles an input signalled to the agent.
func (a *agentRun) received(e envelope) {
	x, err := e.input()
	if err != nil {
		workflow.GetLogger(a.ctx).Warn("an input the agent cannot read", "agent", a.in.Agent, "kind", e.Kind, "err", err)
		return
	}
	if ans, ok := x.(loop.Answer); ok && a.in.Parent == "" && a.question != "" {
		a.emit(cadre.Answer{Question: a.question, Answer: ans.Text, From: "user"})
		a.question = ""
	}
	a.step(x)
}

// step steps one input, as the journal would give it back, and carries
// out the actions.
func (a *agentRun) step(x loop.Input) {
	e, err := wrap(x)
	if err != nil {
		workflow.GetLogger(a.ctx).Warn("an input that cannot be kept", "agent", a.in.Agent, "err", err)
		return
	}
	back, err := e.input()
	if err != nil {
		workflow.GetLogger(a.ctx).Warn("an input that cannot be read back", "agent", a.in.Agent, "err", err)
		return
	}
	if ce, ok := back.(loop.ChildEnded); ok {
		delete(a.kids, ce.Child)
	}
	a.active = workflow.Now(a.ctx)
	if a.fin != nil {
		return
	}
	a.journal = append(a.journal, e)
	a.doAll(a.st.Step(back))
}

func (a *agentRun) doAll(acts []loop.Action) {
	for _, act := range acts {
		if a.fin != nil {
			return
		}
		a.do(act)
	}
}

func (a *agentRun) do(act loop.Action) {
	switch act := act.(type) {
	case loop.CallModel:
		a.callModel(act)
	case loop.CallTools:
		a.callTools(act)
	case loop.Spawn:
		a.spawn(act.Children)
	case loop.Deliver:
		a.deliver(act)
	case loop.Ask:
		a.ask(act)
	case loop.Reply:
		a.signal(AgentWorkflowID(a.in.Run, act.To), inputSignal, loop.Answer{Text: act.Text})
	case loop.CreateAgent:
		a.queue = append(a.queue, loop.AgentCreated{Ref: act.Ref, Err: "this run does not allow creating agents"})
	case loop.CancelChild:
		a.signal(AgentWorkflowID(a.in.Run, act.Child), inputSignal, loop.Cancel{Reason: "cancelled by its parent " + string(a.in.Agent)})
	case loop.Interrupt:
		if m := a.model; m != nil {
			if m.future != nil {
				m.interrupted = true
				m.cancel()
			} else {
				a.requestRun(runRequest{Kind: "release", Key: m.key})
				a.model = nil
				a.queue = append(a.queue, loop.ModelResult{Interrupted: true})
			}
		}
	case loop.Emit:
		a.emit(act.Event)
	case loop.Wait:
		// The loop waits for its children, inbox or answer.
	case loop.Finish:
		a.fin = &act
	}
}

// emit buffers an event of this agent until the next flush.
func (a *agentRun) emit(p cadre.Payload) {
	ev := cadre.Event{Type: p.EventType(), Run: a.in.Run, Agent: a.in.Agent, Parent: a.in.Parent, Depth: a.in.Depth, Data: p, Time: workflow.Now(a.ctx).UTC()}
	a.out = append(a.out, ev)
}

// record buffers the agent's record until the next flush.
func (a *agentRun) record() {
	rec := cadre.AgentRecord{Run: a.in.Run, ID: a.in.Agent, Parent: a.in.Parent, Depth: a.in.Depth, Status: a.status, Started: a.in.Started}
	if a.st != nil && a.st.Started() {
		cfg := a.st.Config()
		rec.Definition, rec.Model, rec.Task, rec.Turns, rec.Usage = cfg.Definition, cfg.Model, a.st.Task(), a.st.Turns(), a.st.Usage()
	} else if start, ok := a.start(); ok {
		rec.Definition, rec.Model, rec.Task = start.Config.Definition, start.Config.Model, start.Task
	}
	a.records = append(a.records, rec)
}

func (a *agentRun) start() (loop.Start, bool) {
	if len(a.in.Journal) == 0 {
		return loop.Start{}, false
	}
	x, err := a.in.Journal[0].input()
	if err != nil {
		return loop.Start{}, false
	}
	s, ok := x.(loop.Start)
	return s, ok
}

// flush writes the buffered events and records to the store. Everything
// the agent does that others can see waits for it, so the store keeps
// events in causal order.
func (a *agentRun) flush() {
	if len(a.out) == 0 && len(a.records) == 0 {
		return
	}
	p := publication{Events: a.out, Records: a.records}
	a.out, a.records = nil, nil
	ctx := workflow.WithLocalActivityOptions(a.ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 5},
	})
	if err := workflow.ExecuteLocalActivity(ctx, a.w.acts.Publish, p).Get(ctx, nil); err != nil && a.err == nil {
		a.err = fmt.Errorf("write events to the store: %w", err)
	}
}

// signal sends an input to another workflow, after the events so far are
// written, and returns whether it reached it.
func (a *agentRun) signal(wid, name string, x loop.Input) bool {
	a.flush()
	e, err := wrap(x)
	if err != nil {
		return false
	}
	return workflow.SignalExternalWorkflow(a.ctx, wid, "", name, e).Get(a.ctx, nil) == nil
}

// requestRun sends a request to the run's workflow.
func (a *agentRun) requestRun(r runRequest) {
	r.From, r.Agent = a.wid(), a.in.Agent
	a.flush()
	if err := workflow.SignalExternalWorkflow(a.ctx, RunWorkflowID(a.in.Run), "", runSignal, r).Get(a.ctx, nil); err != nil && a.err == nil {
		a.err = fmt.Errorf("reach the run's workflow: %w", err)
	}
}

// callRun sends a request to the run's workflow and waits for its reply.
func (a *agentRun) callRun(r runRequest) (runReply, bool) {
	a.in.Reqs++
	r.Seq = a.in.Reqs
	a.requestRun(r)
	if a.err != nil {
		return runReply{}, false
	}
	for {
		for i, u := range a.unread {
			if u.Seq == r.Seq {
				a.unread = slices.Delete(a.unread, i, i+1)
				return u, true
			}
		}
		var u runReply
		a.replies.Receive(a.ctx, &u)
		a.unread = append(a.unread, u)
	}
}

func (a *agentRun) callModel(act loop.CallModel) {
	a.in.Reqs++
	m := &modelCall{act: act, key: fmt.Sprintf("%s#%d", a.in.Agent, a.in.Reqs)}
	a.model = m
	a.requestRun(runRequest{Kind: "acquire", Key: m.key})
}

// granted starts the model call once the run gave it a slot.
func (a *agentRun) granted(exhausted bool) {
	m := a.model
	m.granted = true
	if exhausted {
		a.requestRun(runRequest{Kind: "release", Key: m.key})
		a.model = nil
		a.queue = append(a.queue, loop.ModelResult{BudgetExhausted: true})
		return
	}
	if a.status != cadre.StatusRunning {
		a.status = cadre.StatusRunning
		a.record()
	}
	a.flush()
	a.active = workflow.Now(a.ctx)
	m.inactivity = a.inactivityLimit()
	s := a.in.Settings
	ctx, cancel := workflow.WithCancel(a.callCtx)
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: s.ModelTimeout,
		HeartbeatTimeout:    s.HeartbeatTimeout,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 10},
	})
	cfg := a.st.Config()
	m.cancel = cancel
	m.future = workflow.ExecuteActivity(ctx, a.w.acts.CallModel, modelArgs{Run: a.in.Run, Agent: a.in.Agent, Model: cfg.Model, Request: m.act.Request, Heartbeat: s.HeartbeatTimeout / 4, Inactivity: m.inactivity})
}

func (a *agentRun) modelDone(f workflow.Future) {
	m := a.model
	a.model = nil
	var out modelOutcome
	err := f.Get(a.ctx, &out)
	if err == nil && out.Inactive {
		a.requestRun(runRequest{Kind: "release", Key: m.key})
		a.step(loop.Timeout{Limit: m.inactivity})
		return
	}
	res := loop.ModelResult{}
	switch {
	case err != nil && m.interrupted:
		res.Interrupted = true
	case err != nil:
		res.Err = "the call failed: " + err.Error()
	case out.Err != "":
		res.Err = out.Err
	default:
		res.Response = out.Response
	}
	var usage cadre.Usage
	if res.Response != nil {
		usage = res.Response.Usage
		r := res.Response
		a.emit(cadre.ModelResponse{Turn: m.act.Request.Turn, Usage: r.Usage, Text: r.Message.Content, ToolCalls: len(r.Message.ToolCalls), StopReason: r.StopReason, Model: r.Model, Final: m.act.Final})
	}
	a.requestRun(runRequest{Kind: "release", Key: m.key, Usage: usage})
	a.step(res)
}

func (a *agentRun) callTools(act loop.CallTools) {
	s := a.in.Settings
	ctx := workflow.WithActivityOptions(a.callCtx, workflow.ActivityOptions{
		StartToCloseTimeout: s.ToolTimeout,
		HeartbeatTimeout:    s.HeartbeatTimeout,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 10},
	})
	cfg := a.st.Config()
	for _, c := range act.Calls {
		a.emit(cadre.ToolCalled{CallID: c.ID, Tool: c.Name, Arguments: c.Arguments})
	}
	a.flush()
	for _, c := range act.Calls {
		f := workflow.ExecuteActivity(ctx, a.w.acts.CallTool, toolArgs{Run: a.in.Run, Config: cfg, Call: c, Resumed: act.Resumed, Heartbeat: s.HeartbeatTimeout / 4})
		a.tools = append(a.tools, &toolCall{call: c, future: f})
	}
}

func (a *agentRun) toolDone(t *toolCall, f workflow.Future) {
	a.tools = slices.DeleteFunc(a.tools, func(x *toolCall) bool { return x == t })
	var res loop.ToolResult
	if err := f.Get(a.ctx, &res); err != nil {
		res = loop.ToolResult{CallID: t.call.ID, Content: "Error: the tool call failed: " + err.Error(), IsError: true}
	}
	res.CallID = t.call.ID
	a.emit(cadre.ToolResult{CallID: t.call.ID, Tool: t.call.Name, IsError: res.IsError, Content: clip(res.Content, 2000)})
	a.step(loop.ToolResults{Results: []loop.ToolResult{res}})
}

// deliver routes a message the agent sent.
func (a *agentRun) deliver(d loop.Deliver) {
	if d.Report {
		if a.in.Parent == "" {
			return
		}
		a.in.Report = d.Text
		a.signal(AgentWorkflowID(a.in.Run, a.in.Parent), inputSignal,
			loop.ChildReport{Child: a.in.Agent, Text: d.Text, Failed: d.Failed, Cancelled: d.Cancelled, Incomplete: d.Incomplete, Round: d.Round})
		return
	}
	if d.Wake && workflow.GetVersion(a.ctx, agentWakeChange, wakesSignalled, wakesRefused) == wakesRefused {
		// A child that has finished has a closed workflow, which cannot
		// take new work. The agent is told so, as the local engine tells
		// of a child it cannot wake, and stops waiting for it: a message
		// lost here left a wait_agent on the child waiting for ever.
		a.queue = append(a.queue,
			loop.ChildReport{Child: d.To, Failed: true, Round: d.Round,
				Text: fmt.Sprintf("Error: %s could not be woken: on Temporal, an agent that has finished cannot be given new work; start a new agent for it, with what it needs to know.", d.To)},
			loop.ChildEnded{Child: d.To, Status: cadre.StatusFailed, Error: "it could not be woken"})
		return
	}
	// Only its parent may interrupt an agent's turn.
	msg := loop.InboxMessage{From: a.in.Agent, Text: d.Text, Steering: d.Steering && a.kids[d.To], FollowUp: d.FollowUp}
	if !a.signal(AgentWorkflowID(a.in.Run, d.To), inputSignal, msg) {
		a.queue = append(a.queue, loop.InboxMessage{Text: fmt.Sprintf("Your message to %s was not delivered: there is no running agent with that id.", d.To)})
	}
}

// ask puts the agent's question to its caller.
func (a *agentRun) ask(act loop.Ask) {
	if act.Onboarding {
		a.emit(cadre.OnboardQuestion{Question: act.Question})
	} else {
		a.emit(cadre.Question{Question: act.Question})
	}
	if a.in.Parent != "" {
		a.signal(AgentWorkflowID(a.in.Run, a.in.Parent), inputSignal, loop.ChildQuestion{Child: a.in.Agent, Question: act.Question})
		return
	}
	if !a.in.Settings.AnswerQuestions {
		a.queue = append(a.queue, loop.Answer{Err: "there is no one to ask: the run has no terminal for questions."})
		return
	}
	a.question = act.Question
}

// spawn starts the children of a Spawn action: the run reserves their
// places, a worker builds them, they are announced and recorded, and only
// then started, each as a child workflow, and acknowledged to the loop.
func (a *agentRun) spawn(specs []loop.ChildSpec) {
	items := make([]reserveItem, len(specs))
	for i, s := range specs {
		items[i] = reserveItem{ID: s.ID, Task: s.Task, Onboarding: s.Onboarding}
	}
	reply, ok := a.callRun(runRequest{Kind: "reserve", Items: items})
	refused := make([]string, len(specs))
	var ask []loop.ChildSpec
	for i, s := range specs {
		if !ok || i >= len(reply.Refused) {
			refused[i] = "the subagent could not be started: the run did not answer"
			continue
		}
		switch r := reply.Refused[i]; {
		case r.Limit > 0:
			a.emit(cadre.AgentLimit{MaxAgents: r.Limit, Task: s.Task})
			refused[i] = fmt.Sprintf("agent limit reached: this run has already created %d agents, the most it allows (maxAgents %d). Finish the work with the agents you have, or do it yourself.", r.Limit, r.Limit)
		case r.CycleSeen > 0:
			a.emit(cadre.CycleDetected{Task: s.Task, Count: r.CycleSeen + 1})
			refused[i] = fmt.Sprintf("cycle detected: this same task was already delegated %d times in this run. Do not delegate it again; work with the results you have.", r.CycleSeen)
		default:
			ask = append(ask, s)
		}
	}
	var plans []childPlan
	if len(ask) > 0 {
		ctx := workflow.WithActivityOptions(a.ctx, workflow.ActivityOptions{
			StartToCloseTimeout: time.Minute,
			RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 10},
		})
		plans = a.planChildren(ctx, ask)
	}
	now := workflow.Now(a.ctx).UTC()
	type birth struct {
		spec  loop.ChildSpec
		start loop.Start
	}
	var births []birth
	j := 0
	for i, s := range specs {
		if refused[i] != "" {
			continue
		}
		p := plans[j]
		j++
		a.out = append(a.out, p.Events...)
		if p.Refused != "" {
			refused[i] = p.Refused
			a.requestRun(runRequest{Kind: "unreserve"})
			continue
		}
		data := cadre.AgentSpawned{Child: s.ID, Definition: p.Start.Config.Definition, Mode: s.Mode, Task: s.Task, Model: p.Start.Config.Model, Name: s.Name}
		if s.Total > 0 {
			data.Index, data.Total = s.Index, s.Total
		}
		ev := cadre.Event{Type: data.EventType(), Run: a.in.Run, Agent: s.ID, Parent: a.in.Agent, Depth: a.in.Depth + 1, Data: data, Time: now}
		a.out = append(a.out, ev)
		a.records = append(a.records, cadre.AgentRecord{Run: a.in.Run, ID: s.ID, Parent: a.in.Agent, Depth: a.in.Depth + 1,
			Definition: p.Start.Config.Definition, Model: p.Start.Config.Model, Task: s.Task, Status: cadre.StatusQueued, Started: now})
		births = append(births, birth{spec: s, start: p.Start})
	}
	a.flush()
	started := map[cadre.AgentID]string{}
	var futures []workflow.ChildWorkflowFuture
	for _, b := range births {
		e, err := wrap(b.start)
		if err != nil {
			started[b.spec.ID] = "the subagent could not be started: " + err.Error()
			futures = append(futures, nil)
			continue
		}
		ctx := workflow.WithChildOptions(a.ctx, workflow.ChildWorkflowOptions{
			WorkflowID:            AgentWorkflowID(a.in.Run, b.spec.ID),
			ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		})
		in := agentInput{Run: a.in.Run, Agent: b.spec.ID, Parent: a.in.Agent, Depth: a.in.Depth + 1, Settings: a.in.Settings, Started: now, Journal: []envelope{e}}
		futures = append(futures, workflow.ExecuteChildWorkflow(ctx, AgentWorkflow, in))
	}
	for i, b := range births {
		if futures[i] == nil {
			continue
		}
		if err := futures[i].GetChildWorkflowExecution().Get(a.ctx, nil); err != nil {
			started[b.spec.ID] = "the subagent could not be started: " + err.Error()
		}
	}
	for i, s := range specs {
		msg := refused[i]
		if msg == "" {
			msg = started[s.ID]
		}
		if msg == "" {
			a.kids[s.ID] = true
		}
		a.queue = append(a.queue, loop.Spawned{Ref: s.Ref, Child: s.ID, Err: msg})
	}
}

// planBatch is the most children one PlanChildren call builds. Its result
// holds the Start of each child, with its system prompt, and Temporal
// refuses a payload over 2 MB by default: a run of a thousand children
// from one reply did not start any in one call.
const planBatch = 32

// Versions of the agent's workflow for planning children, for
// workflow.GetVersion: workflows recorded before built all the children of
// a spawn in one call.
const (
	planChange   = "plan-children"
	plansWhole   = workflow.DefaultVersion
	plansBatched = workflow.Version(1)
)

// planChildren builds the children in ask, in calls of planBatch children
// at most, made at once. A call that fails refuses its children with its
// error.
func (a *agentRun) planChildren(ctx workflow.Context, ask []loop.ChildSpec) []childPlan {
	batch := len(ask)
	if len(ask) > planBatch && workflow.GetVersion(a.ctx, planChange, plansWhole, plansBatched) == plansBatched {
		batch = planBatch
	}
	cfg := a.st.Config()
	var futures []workflow.Future
	for lo := 0; lo < len(ask); lo += batch {
		specs := ask[lo:min(lo+batch, len(ask))]
		futures = append(futures, workflow.ExecuteActivity(ctx, a.w.acts.PlanChildren, planArgs{Run: a.in.Run, Parent: cfg, Specs: specs, MaxDepth: a.in.Settings.MaxDepth}))
	}
	plans := make([]childPlan, 0, len(ask))
	for i, f := range futures {
		n := min(batch, len(ask)-i*batch)
		var part []childPlan
		err := f.Get(ctx, &part)
		if err == nil && len(part) != n {
			err = fmt.Errorf("%d children were built for %d asked for", len(part), n)
		}
		if err != nil {
			part = part[:0]
			for range n {
				part = append(part, childPlan{Refused: "the subagent could not be started: " + err.Error()})
			}
		}
		plans = append(plans, part...)
	}
	return plans
}

// end finishes the agent: its calls in flight are given up, its children
// still alive cancelled and waited for, its end told and recorded, and its
// parent told.
func (a *agentRun) end() loop.Finish {
	fin := *a.fin
	a.cancel()
	if m := a.model; m != nil {
		a.requestRun(runRequest{Kind: "release", Key: m.key})
		a.model = nil
	}
	if len(a.kids) > 0 {
		reason := fmt.Sprintf("its parent %s ended", a.in.Agent)
		if fin.Cancelled {
			reason = fin.Result
		}
		for _, k := range sortedIDs(a.kids) {
			if !a.signal(AgentWorkflowID(a.in.Run, k), inputSignal, loop.Cancel{Reason: reason}) {
				delete(a.kids, k)
			}
		}
		for len(a.kids) > 0 {
			var e envelope
			a.inputs.Receive(a.ctx, &e)
			if x, err := e.input(); err == nil {
				if ce, ok := x.(loop.ChildEnded); ok {
					delete(a.kids, ce.Child)
				}
			}
		}
	}
	switch {
	case fin.Cancelled:
		a.status = cadre.StatusCancelled
		a.emit(cadre.AgentCancelled{Reason: fin.Result})
	case fin.Failed:
		a.status = cadre.StatusFailed
		a.emit(cadre.AgentFailed{Error: fin.Result})
	default:
		a.status = cadre.StatusDone
		a.emit(cadre.AgentCompleted{Result: fin.Result, BudgetExhausted: fin.BudgetExhausted})
	}
	a.record()
	rec := &a.records[len(a.records)-1]
	rec.Ended = workflow.Now(a.ctx).UTC()
	// As on the local engine, a child's result is the report its parent
	// got, a failed one's included.
	switch {
	case a.in.Report != "" && a.in.Parent != "":
		rec.Result = a.in.Report
	case a.status == cadre.StatusDone:
		rec.Result = fin.Result
	}
	if a.status != cadre.StatusDone {
		rec.Error = fin.Result
	}
	a.flush()
	if a.in.Parent != "" {
		ce := loop.ChildEnded{Child: a.in.Agent, Status: a.status}
		if a.status != cadre.StatusDone {
			ce.Error = fin.Result
		}
		a.signal(AgentWorkflowID(a.in.Run, a.in.Parent), inputSignal, ce)
	}
	if a.in.ReportEnd {
		a.requestRun(runRequest{Kind: "ended", Finish: &fin})
	}
	return fin
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
