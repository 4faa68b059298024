package temporal

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/loop"
)

// Engine starts runs on Temporal and watches them: the agents run in the
// workers of the task queue (see Worker), which write the runs' agents
// and events to the shared store that the Engine reads. It keeps nothing
// of its own, so any process with the same Config sees every run.
type Engine struct {
	cfg Config
	// Poll is how often Events looks for new events in the store.
	poll time.Duration
}

var (
	_ cadre.Engine   = (*Engine)(nil)
	_ cadre.Answerer = (*Engine)(nil)
)

// New returns an Engine for cfg.
func New(cfg Config) (*Engine, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Engine{cfg: cfg, poll: 50 * time.Millisecond}, nil
}

// Start records the run and starts its workflow (see cadre.Engine). The
// run's workflow ID derives from its ID, so a start that is retried never
// makes a second run.
func (e *Engine) Start(ctx context.Context, task string, opts cadre.StartOptions) (string, error) {
	if strings.TrimSpace(task) == "" {
		return "", errors.New("temporal: the task is empty: say what the agent should do")
	}
	id := opts.ID
	if id == "" {
		id = local.NewRunID()
	}
	s := e.cfg.Store
	now := time.Now().UTC()
	rec := &cadre.RunRecord{ID: id, Task: task, Status: cadre.StatusRunning, Model: e.cfg.Local.RootModel, Started: now, Config: e.cfg.Local.Settings}
	if err := s.CreateRun(ctx, rec); err != nil {
		return "", fmt.Errorf("temporal: record run %s: %w", id, err)
	}
	evs := []cadre.Event{{Type: cadre.EventRunStarted, Run: id, Time: now, Data: cadre.RunStarted{Task: task, Model: e.cfg.Local.RootModel}}}
	for _, w := range e.cfg.Local.Warnings {
		evs = append(evs, cadre.Event{Type: cadre.EventWarning, Run: id, Agent: cadre.RootID, Time: now, Data: cadre.Warning{Message: w}})
	}
	if err := s.AppendEvents(ctx, evs); err != nil {
		return "", fmt.Errorf("temporal: record the start of run %s: %w", id, err)
	}
	in := runInput{Run: id, Task: task, Model: e.cfg.Local.RootModel, Settings: e.cfg.settings(), Started: now}
	_, err := e.cfg.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: RunWorkflowID(id), TaskQueue: e.cfg.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
	}, RunWorkflow, in)
	if err != nil {
		rec.Status, rec.Error, rec.Ended = cadre.StatusFailed, "the run's workflow could not be started: "+err.Error(), time.Now().UTC()
		_ = s.UpdateRun(context.WithoutCancel(ctx), rec)
		return "", fmt.Errorf("temporal: start the workflow of run %s on task queue %q: %w", id, e.cfg.TaskQueue, err)
	}
	return id, nil
}

// Resume is not needed on Temporal: a run goes on as long as one worker of
// its task queue does.
func (e *Engine) Resume(ctx context.Context, id string) error {
	if _, err := e.record(ctx, id); err != nil {
		return err
	}
	return fmt.Errorf("run %s runs on Temporal, where nothing needs resuming: its agents carry on in any worker of the task queue %q; start a worker (cadre worker) if none is running", id, e.cfg.TaskQueue)
}

// record returns the run's record, or an error wrapping cadre.ErrNotFound.
func (e *Engine) record(ctx context.Context, id string) (*cadre.RunRecord, error) {
	rec, err := e.cfg.Store.GetRun(ctx, id)
	if errors.Is(err, cadre.ErrNotFound) {
		return nil, fmt.Errorf("temporal: there is no run %s in the store: %w", id, cadre.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("temporal: run %s: %w", id, err)
	}
	return rec, nil
}

// Wait waits for the run's workflow to end and returns its result.
func (e *Engine) Wait(ctx context.Context, id string) (*cadre.Result, error) {
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	if _, err := e.record(ctx, id); err != nil {
		return nil, err
	}
	var res cadre.Result
	err := e.cfg.Client.GetWorkflow(ctx, RunWorkflowID(id), "").Get(ctx, &res)
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("temporal: run %s: %w", id, err)
	}
	if res.Status != cadre.StatusDone {
		return &res, &cadre.RunError{Run: id, Status: res.Status, Reason: res.Error}
	}
	return &res, nil
}

// Cancel cancels the run, or an agent and its subtree (see cadre.Engine).
func (e *Engine) Cancel(ctx context.Context, id string, opts cadre.CancelOptions) error {
	rec, err := e.record(ctx, id)
	if err != nil {
		return err
	}
	if opts.Abort && opts.Agent != "" {
		return fmt.Errorf("cancel %s in run %s: Abort stops a whole run; leave Agent empty, or cancel the agent without Abort", opts.Agent, id)
	}
	if rec.Status.Terminal() {
		return fmt.Errorf("run %s has ended (%s): %w", id, rec.Status, cadre.ErrNotRunning)
	}
	reason := opts.Reason
	if reason == "" {
		reason = "cancelled by the user"
		if opts.Abort {
			reason = "aborted"
		}
	}
	if opts.Agent != "" {
		env, err := wrap(loop.Cancel{Reason: reason})
		if err != nil {
			return err
		}
		if err := e.cfg.Client.SignalWorkflow(ctx, AgentWorkflowID(id, opts.Agent), "", inputSignal, env); err != nil {
			if isGone(err) {
				return fmt.Errorf("cancel %s: no live agent with that id in run %s", opts.Agent, id)
			}
			return fmt.Errorf("cancel %s in run %s: %w", opts.Agent, id, err)
		}
		return nil
	}
	err = e.cfg.Client.SignalWorkflow(ctx, RunWorkflowID(id), "", runSignal, runRequest{Kind: "cancel", Reason: reason, Abort: opts.Abort})
	if isGone(err) {
		return fmt.Errorf("run %s is ending already: %w", id, cadre.ErrNotRunning)
	}
	if err != nil {
		return fmt.Errorf("cancel run %s: %w", id, err)
	}
	return nil
}

// isGone reports whether err says the workflow does not exist or has ended.
func isGone(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// Tree returns the run's agents as the store has them.
func (e *Engine) Tree(ctx context.Context, id string) (*cadre.Tree, error) {
	if _, err := e.record(ctx, id); err != nil {
		return nil, err
	}
	return storedTree(ctx, e.cfg.Store, id)
}

// Events yields the run's events from the store, as the workers write
// them, until the run's last. The model's streamed text (model_delta) is
// not among them: workers do not write it.
func (e *Engine) Events(ctx context.Context, id string) iter.Seq2[cadre.Event, error] {
	return func(yield func(cadre.Event, error) bool) {
		if _, err := e.record(ctx, id); err != nil {
			yield(cadre.Event{}, err)
			return
		}
		var after int64
		t := time.NewTicker(e.poll)
		defer t.Stop()
		for {
			evs, err := e.cfg.Store.Events(ctx, id, after)
			if err != nil {
				if ctx.Err() != nil {
					err = context.Cause(ctx)
				}
				yield(cadre.Event{}, err)
				return
			}
			for _, ev := range evs {
				after = ev.Seq
				if !yield(ev, nil) {
					return
				}
				if ev.Type == cadre.EventRunCompleted || ev.Type == cadre.EventRunFailed {
					return
				}
			}
			select {
			case <-t.C:
			case <-ctx.Done():
				yield(cadre.Event{}, context.Cause(ctx))
				return
			}
		}
	}
}

// Answer answers the root agent's pending question (Config.AnswerQuestions).
func (e *Engine) Answer(ctx context.Context, id string, agent cadre.AgentID, text string) error {
	if _, err := e.record(ctx, id); err != nil {
		return err
	}
	v, err := e.cfg.Client.QueryWorkflow(ctx, AgentWorkflowID(id, agent), "", questionQuery)
	var q string
	if err == nil {
		err = v.Get(&q)
	}
	if err != nil || q == "" {
		return fmt.Errorf("answer %s in run %s: %w", agent, id, cadre.ErrNoQuestion)
	}
	env, err := wrap(loop.Answer{Text: text})
	if err != nil {
		return err
	}
	return e.cfg.Client.SignalWorkflow(ctx, AgentWorkflowID(id, agent), "", inputSignal, env)
}
