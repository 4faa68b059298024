package local

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
)

// errInterrupted is the cause of a model call cancelled for steering.
var errInterrupted = errors.New("interrupted by a steering message")

// agent is one live agent. Its fields are owned by its goroutine unless
// noted.
type agent struct {
	run        *Run
	id         cadre.AgentID
	parent     *agent
	depth      int
	definition string
	def        *cadre.Definition
	modelName  string
	model      cadre.Model
	tools      []cadre.Tool // read by children's spawns: never changed after creation
	delegate   bool
	protocol   cadre.Protocol
	timeout    time.Duration

	st    *loop.State
	box   *mailbox
	first loop.Input
	seq   int64

	ctx    context.Context
	cancel context.CancelFunc
	work   sync.WaitGroup

	modelCancel context.CancelCauseFunc
	busy        int          // model and tool calls in flight
	started     bool         // got its first concurrency slot
	activity    atomic.Int64 // unix nanos of the last sign of life
}

func (r *Run) newAgent(id cadre.AgentID, parent *agent, definition string, def *cadre.Definition, modelName string, m cadre.Model, tools []cadre.Tool, delegate bool) *agent {
	ctx, cancel := context.WithCancel(r.ctx)
	a := &agent{
		run: r, id: id, parent: parent, depth: id.Depth(), definition: definition, def: def,
		modelName: modelName, model: m, tools: tools, delegate: delegate, protocol: r.e.cfg.Protocol,
		st: loop.New(), box: newMailbox(), ctx: ctx, cancel: cancel,
	}
	if def != nil {
		a.timeout = def.Timeout()
	}
	return a
}

func (a *agent) emit(t cadre.EventType, data map[string]any) {
	ev := cadre.Event{Type: t, Agent: a.id, Depth: a.depth, Data: data}
	if a.parent != nil {
		ev.Parent = a.parent.id
	}
	a.run.emit(ev)
}

func (a *agent) touch() { a.activity.Store(time.Now().UnixNano()) }

// main is the agent's owner goroutine.
func (a *agent) main() {
	defer a.run.wg.Done()
	a.emit(cadre.EventAgentStarted, map[string]any{"definition": a.definition, "model": a.modelName})
	a.touch()
	var fin *loop.Finish
	fin = a.handle([]loop.Input{a.first})
	var timer *time.Timer
	for fin == nil {
		var timeout <-chan time.Time
		if a.timeout > 0 && a.busy > 0 {
			left := a.timeout - time.Since(time.Unix(0, a.activity.Load()))
			if timer == nil {
				timer = time.NewTimer(left)
			} else {
				timer.Reset(left)
			}
			timeout = timer.C
		}
		select {
		case <-a.box.notify:
			fin = a.handle(a.box.take())
		case <-timeout:
			if time.Since(time.Unix(0, a.activity.Load())) >= a.timeout {
				fin = a.handle([]loop.Input{loop.Timeout{Seconds: int(a.timeout / time.Second)}})
			}
		}
	}
	if timer != nil {
		timer.Stop()
	}
	a.cancel()
	a.work.Wait()
	a.run.ended(a, *fin)
}

// handle journals inputs, steps them, and carries out the actions. It
// returns the Finish action once the agent is done.
func (a *agent) handle(ins []loop.Input) *loop.Finish {
	if len(ins) == 0 {
		return nil
	}
	a.touch()
	if err := a.journal(ins); err != nil {
		// Without a journal the run cannot be resumed: stop rather than go on
		// with work that could be lost.
		a.run.e.cfg.Logger.Error("journal", "agent", a.id, "err", err)
		ins = []loop.Input{loop.Cancel{Reason: "the run's store failed: " + err.Error()}}
	}
	for _, in := range ins {
		switch in := in.(type) {
		case loop.ModelResult:
			a.busy--
			a.modelCancel = nil
		case loop.ToolResults:
			a.busy -= len(in.Results)
		}
		for _, act := range a.st.Step(in) {
			if fin := a.do(act); fin != nil {
				return fin
			}
		}
	}
	return nil
}

func (a *agent) journal(ins []loop.Input) error {
	if a.run.jour == nil || a.run.e.cfg.Store == nil {
		return nil
	}
	entries := make([]cadre.JournalEntry, len(ins))
	now := time.Now().UTC()
	for i, in := range ins {
		a.seq++
		entries[i] = cadre.JournalEntry{Run: a.run.id, Agent: a.id, Seq: a.seq, Kind: in.Kind(), Data: marshalInput(in), Time: now}
	}
	return a.run.jour.append(entries)
}

func (a *agent) do(act loop.Action) *loop.Finish {
	switch act := act.(type) {
	case loop.CallModel:
		a.callModel(act)
	case loop.CallTools:
		a.callTools(act)
	case loop.Spawn:
		for _, spec := range act.Children {
			err := a.run.spawn(a, spec)
			a.box.put(loop.Spawned{Ref: spec.Ref, Child: spec.ID, Err: err})
		}
	case loop.Deliver:
		a.run.deliver(a, act)
	case loop.CancelChild:
		a.run.cancelTree(act.Child, "cancelled by its parent "+string(a.id))
	case loop.Interrupt:
		if a.modelCancel != nil {
			a.modelCancel(errInterrupted)
		}
	case loop.Emit:
		a.emit(act.Type, act.Data)
	case loop.Wait:
		a.run.setStatus(a, cadre.StatusWaiting)
	case loop.Finish:
		return &act
	}
	return nil
}

// acquire takes a concurrency slot, marking the agent queued while it waits
// for its first one.
func (a *agent) acquire(ctx context.Context) bool {
	select {
	case a.run.sem <- struct{}{}:
		return true
	default:
	}
	if !a.started {
		a.run.setStatus(a, cadre.StatusQueued)
		a.emit(cadre.EventAgentQueued, map[string]any{"max_concurrent": cap(a.run.sem)})
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
	queued := !a.started
	a.work.Add(1)
	go func() {
		defer a.work.Done()
		defer cancel(nil)
		a.box.put(a.model1(ctx, act, queued))
	}()
	a.started = true
}

// model1 makes one model call and returns its input for the loop.
func (a *agent) model1(ctx context.Context, act loop.CallModel, queued bool) loop.ModelResult {
	if !a.acquire(ctx) {
		return a.modelAborted(ctx)
	}
	defer a.release()
	if queued || a.run.statusOf(a.id) != cadre.StatusRunning {
		a.run.setStatus(a, cadre.StatusRunning)
	}
	if !a.run.allow(a) {
		return loop.ModelResult{BudgetExhausted: true}
	}
	req := act.Request
	var streamed strings.Builder
	resp, err := cadre.Collect(a.model.Stream(ctx, &req), func(text string) {
		a.touch()
		streamed.WriteString(text)
		a.emit(cadre.EventModelDelta, map[string]any{"text": text})
	})
	if err != nil {
		if ctx.Err() != nil {
			return a.modelAborted(ctx)
		}
		return loop.ModelResult{Err: err.Error()}
	}
	a.run.charge(a, resp.Usage)
	data := map[string]any{
		"turn": req.Turn, "usage": resp.Usage, "text": resp.Message.Content, "tool_calls": len(resp.Message.ToolCalls),
	}
	if resp.StopReason != "" {
		data["stop_reason"] = resp.StopReason
	}
	if act.Final {
		data["final"] = true
	}
	a.emit(cadre.EventModelResponse, data)
	return loop.ModelResult{Response: resp}
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

func (a *agent) callTools(act loop.CallTools) {
	a.busy += len(act.Calls)
	byName := make(map[string]cadre.Tool, len(a.tools))
	for _, t := range a.tools {
		byName[t.Spec().Name] = t
	}
	a.work.Add(1)
	go func() {
		defer a.work.Done()
		if !a.acquire(a.ctx) {
			var res []loop.ToolResult
			for _, c := range act.Calls {
				res = append(res, loop.ToolResult{CallID: c.ID, Content: "Error: the tool call was aborted: the agent is stopping.", IsError: true})
			}
			a.box.put(loop.ToolResults{Results: res})
			return
		}
		defer a.release()
		var wg sync.WaitGroup
		for _, c := range act.Calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a.emit(cadre.EventToolCalled, map[string]any{"call_id": c.ID, "tool": c.Name, "arguments": c.Arguments})
				out, isErr := a.run.e.cfg.Runner.RunTool(a.ctx, a.id, byName[c.Name], c)
				a.touch()
				a.emit(cadre.EventToolResult, map[string]any{"call_id": c.ID, "tool": c.Name, "is_error": isErr, "content": clip(out, 2000)})
				a.box.put(loop.ToolResults{Results: []loop.ToolResult{{CallID: c.ID, Content: out, IsError: isErr}}})
			}()
		}
		wg.Wait()
	}()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func (r *Run) statusOf(id cadre.AgentID) cadre.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	if in := r.infos[id]; in != nil {
		return in.Status
	}
	return ""
}
