package temporal

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/loop"
)

// activities are what a worker does outside workflow code: calls to
// models and tools, building agents, and writing to the store.
type activities struct {
	store   cadre.Store
	planner *local.Planner
}

// publication is a batch of an agent's events and records for the store.
type publication struct {
	Events  []cadre.Event       `json:"events,omitempty"`
	Records []cadre.AgentRecord `json:"records,omitempty"`
}

// Publish writes events and agent records to the store.
func (x *activities) Publish(ctx context.Context, p publication) error {
	if len(p.Events) > 0 {
		if err := x.store.AppendEvents(ctx, p.Events); err != nil {
			return fmt.Errorf("append %d events: %w", len(p.Events), err)
		}
	}
	for i := range p.Records {
		if err := x.store.PutAgent(ctx, &p.Records[i]); err != nil {
			return fmt.Errorf("record agent %s: %w", p.Records[i].ID, err)
		}
	}
	return nil
}

// PlanRoot builds the root agent's Start for a run of task.
func (x *activities) PlanRoot(ctx context.Context, task string) (loop.Start, error) {
	return x.planner.Root(task)
}

// rootArgs are what PlanRootWithin plans the root of.
type rootArgs struct {
	Task string `json:"task"`
	// MaxDepth is the run's depth limit; 0 for the worker's.
	MaxDepth int `json:"max_depth,omitempty"`
}

// PlanRootWithin is PlanRoot within the run's depth limit, which the
// process that started the run decided, rather than the worker's.
func (x *activities) PlanRootWithin(ctx context.Context, a rootArgs) (loop.Start, error) {
	start, err := x.planner.Root(a.Task)
	if err == nil {
		withinDepth(&start.Config, a.MaxDepth)
	}
	return start, err
}

// withinDepth lowers an agent's depth limit to the run's, limit (0 for
// none given): the children the agent starts inherit the lower one, and a
// spawn past it is refused where the agent's loop checks its depth.
func withinDepth(cfg *loop.Config, limit int) {
	if limit == 0 {
		return
	}
	if m := max(limit, 0); cfg.MaxDepth > m { // cadre.NoSubagents: none below the root
		cfg.MaxDepth = m
	}
}

type planArgs struct {
	Run    string           `json:"run"`
	Parent loop.Config      `json:"parent"`
	Specs  []loop.ChildSpec `json:"specs"`
	// MaxDepth is the run's depth limit; 0 for the worker's (runs started
	// before it was kept).
	MaxDepth int `json:"max_depth,omitempty"`
}

// childPlan is a child built for its parent, or why it may not start.
type childPlan struct {
	Start   loop.Start    `json:"start"`
	Refused string        `json:"refused,omitempty"`
	Events  []cadre.Event `json:"events,omitempty"`
}

// PlanChildren builds the children a parent asked for.
func (x *activities) PlanChildren(ctx context.Context, a planArgs) ([]childPlan, error) {
	withinDepth(&a.Parent, a.MaxDepth)
	out := make([]childPlan, len(a.Specs))
	for i, s := range a.Specs {
		start, refused, evs := x.planner.Child(ctx, a.Parent, s)
		for j := range evs {
			evs[j].Run = a.Run
		}
		out[i] = childPlan{Start: start, Refused: refused, Events: evs}
	}
	return out, nil
}

type modelArgs struct {
	Run       string        `json:"run"`
	Agent     cadre.AgentID `json:"agent"`
	Model     string        `json:"model"`
	Request   cadre.Request `json:"request"`
	Heartbeat time.Duration `json:"heartbeat"`
	// Inactivity is the agent's inactivity limit: the call gives up when
	// it goes that long without a chunk of the reply. 0 means no limit.
	Inactivity time.Duration `json:"inactivity,omitempty"`
}

// modelOutcome is a model call's reply, or why it failed for good (the
// provider's own retries are done).
type modelOutcome struct {
	Response *cadre.Response `json:"response,omitempty"`
	Err      string          `json:"err,omitempty"`
	// Inactive says the call gave up at the agent's inactivity limit.
	Inactive bool `json:"inactive,omitempty"`
}

// errInactive is the cause of a model call given up at its agent's
// inactivity limit.
var errInactive = errors.New("no sign of life within the agent's inactivity limit")

// heartbeat records a heartbeat every interval until stop is called, so
// that Temporal can tell this worker is alive, and learn of a
// cancellation.
func heartbeat(ctx context.Context, every time.Duration) (stop func()) {
	if every <= 0 {
		every = time.Second
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			activity.RecordHeartbeat(ctx)
			select {
			case <-t.C:
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { close(done); <-finished }
}

// CallModel makes one model call, heartbeating while it is open.
func (x *activities) CallModel(ctx context.Context, a modelArgs) (modelOutcome, error) {
	stop := heartbeat(ctx, a.Heartbeat)
	defer stop()
	m, err := x.planner.Model(a.Model)
	if err != nil {
		return modelOutcome{Err: fmt.Sprintf("cannot open model %q: %v", a.Model, err)}, nil
	}
	req := a.Request
	resp, err := collect(ctx, m, &req, a.Inactivity)
	if err != nil {
		if errors.Is(err, errInactive) {
			return modelOutcome{Inactive: true}, nil
		}
		if ctx.Err() != nil {
			// Cancelled by the workflow, or this worker is stopping: the
			// workflow decides what it means.
			return modelOutcome{}, ctx.Err()
		}
		return modelOutcome{Err: err.Error()}, nil
	}
	return modelOutcome{Response: resp}, nil
}

// collect asks m for a reply. With a limit, the call gives up with
// errInactive when it shows no sign of life for that long: as on the local
// engine, it is alive when it starts and with each chunk of text or restart
// of the reply (cadre.CollectFunc).
func collect(ctx context.Context, m cadre.Model, req *cadre.Request, limit time.Duration) (*cadre.Response, error) {
	if limit <= 0 {
		return cadre.Collect(m.Stream(ctx, req), nil)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watch := time.AfterFunc(limit, func() { cancel(errInactive) })
	defer watch.Stop()
	resp, err := cadre.CollectFunc(m.Stream(ctx, req), func(*cadre.Chunk) { watch.Reset(limit) })
	if err != nil && errors.Is(context.Cause(ctx), errInactive) {
		return nil, fmt.Errorf("the model call gave up after %s without a sign of life: %w", limit, errInactive)
	}
	return resp, err
}

type toolArgs struct {
	Run       string         `json:"run"`
	Config    loop.Config    `json:"config"`
	Call      cadre.ToolCall `json:"call"`
	Resumed   bool           `json:"resumed,omitempty"`
	Heartbeat time.Duration  `json:"heartbeat"`
}

// CallTool runs one tool call of an agent. A call that changes something
// and is given to this worker again after another's stopped is not
// repeated blindly: the model is told to check its effect. The images and
// sounds of a result are described in its text, not passed on.
func (x *activities) CallTool(ctx context.Context, a toolArgs) (loop.ToolResult, error) {
	stop := heartbeat(ctx, a.Heartbeat)
	defer stop()
	resumed := a.Resumed || activity.GetInfo(ctx).Attempt > 1
	res := x.planner.RunTool(ctx, a.Config, a.Call, resumed)
	// The workflow's history holds this result and every later model
	// request, and Temporal refuses payloads over a few megabytes: images
	// and sounds stay behind, and the model reads that they did.
	for _, m := range res.Media {
		res.Content = cadre.LeaveOut(res.Content, m, "the Temporal engine does not carry images or sounds to the model")
	}
	res.Media = nil
	return res, nil
}

type finishArgs struct {
	Run       string      `json:"run"`
	Task      string      `json:"task"`
	Model     string      `json:"model,omitempty"`
	Finish    loop.Finish `json:"finish"`
	Cancelled string      `json:"cancelled,omitempty"`
	Exhausted bool        `json:"exhausted,omitempty"`
	Usage     cadre.Usage `json:"usage"`
	Started   time.Time   `json:"started"`
}

// FinishRun writes the run's last event and its record, and returns its
// result.
func (x *activities) FinishRun(ctx context.Context, a finishArgs) (*cadre.Result, error) {
	tree, err := storedTree(ctx, x.store, a.Run)
	if err != nil {
		return nil, err
	}
	fin := a.Finish
	res := &cadre.Result{RunID: a.Run, Answer: fin.Result, Usage: tree.Usage, BudgetExhausted: a.Exhausted, Agents: tree.Agents}
	for _, in := range tree.Agents {
		if a.Exhausted {
			if in.Status == cadre.StatusDone && !in.Stopped {
				res.Completed = append(res.Completed, in.ID)
			} else {
				res.Incomplete = append(res.Incomplete, in.ID)
			}
		}
	}
	evs, err := x.store.Events(ctx, a.Run, 0)
	if err != nil {
		return nil, fmt.Errorf("read the events of run %s: %w", a.Run, err)
	}
	for _, ev := range evs {
		if f, ok := ev.Data.(cadre.FindingReported); ok {
			res.Findings = append(res.Findings, cadre.Finding{Agent: ev.Agent, Title: f.Title, Content: f.Content})
		}
	}
	switch {
	case fin.Cancelled:
		res.Status, res.Error, res.Answer = cadre.StatusCancelled, cmp.Or(a.Cancelled, fin.Result), ""
	case fin.Failed:
		res.Status, res.Error, res.Answer = cadre.StatusFailed, fin.Result, ""
	default:
		res.Status = cadre.StatusDone
	}
	// The run's last event is written once, even when this is retried.
	last := slices.IndexFunc(evs, func(e cadre.Event) bool {
		return e.Type == cadre.EventRunCompleted || e.Type == cadre.EventRunFailed
	})
	if last < 0 {
		var ev cadre.Event
		if res.Status == cadre.StatusDone {
			data := cadre.RunCompleted{Answer: res.Answer, Usage: res.Usage, Agents: len(res.Agents), Findings: res.Findings}
			if res.BudgetExhausted {
				data.BudgetExhausted, data.Completed, data.Incomplete = true, res.Completed, res.Incomplete
			}
			ev = cadre.NewEvent(data)
		} else {
			ev = cadre.NewEvent(cadre.RunFailed{Status: res.Status, Error: res.Error, Usage: res.Usage})
		}
		ev.Run, ev.Time = a.Run, time.Now().UTC()
		if err := x.store.AppendEvents(ctx, []cadre.Event{ev}); err != nil {
			return nil, fmt.Errorf("write the end of run %s: %w", a.Run, err)
		}
	}
	rec := &cadre.RunRecord{ID: a.Run, Task: a.Task, Status: res.Status, Model: a.Model, Usage: res.Usage, Answer: res.Answer, Error: res.Error,
		Agents: len(res.Agents), Started: a.Started, Ended: time.Now().UTC()}
	if old, err := x.store.GetRun(ctx, a.Run); err == nil {
		rec.Started, rec.Config = old.Started, old.Config
	}
	if err := x.store.UpdateRun(ctx, rec); err != nil {
		return nil, fmt.Errorf("record the end of run %s: %w", a.Run, err)
	}
	return res, nil
}

// storedTree reads a run's agents from the store: parents before
// children, each level in the order the agents started.
func storedTree(ctx context.Context, s cadre.Store, run string) (*cadre.Tree, error) {
	recs, err := s.ListAgents(ctx, run)
	if err != nil {
		if errors.Is(err, cadre.ErrNotFound) {
			return nil, fmt.Errorf("temporal: there is no run %s in the store: %w", run, cadre.ErrNotFound)
		}
		return nil, fmt.Errorf("run %s: list its agents: %w", run, err)
	}
	t := &cadre.Tree{Run: run, Agents: make([]cadre.AgentInfo, 0, len(recs))}
	slices.SortStableFunc(recs, func(a, b *cadre.AgentRecord) int {
		return cmp.Or(cmp.Compare(a.Depth, b.Depth), a.Started.Compare(b.Started), cmp.Compare(a.ID, b.ID))
	})
	for _, a := range recs {
		t.Usage = t.Usage.Add(a.Usage)
		t.Agents = append(t.Agents, cadre.AgentInfo{ID: a.ID, Parent: a.Parent, Depth: a.Depth, Definition: a.Definition, Model: a.Model,
			Task: a.Task, Status: a.Status, Turns: a.Turns, Usage: a.Usage, Started: a.Started, Ended: a.Ended, Result: a.Result, Error: a.Error})
	}
	return t, nil
}
