package temporal

import (
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
)

// runInput starts a run's workflow, or carries its state into the next
// run of it (continue-as-new).
type runInput struct {
	Run      string    `json:"run"`
	Task     string    `json:"task"`
	Model    string    `json:"model,omitempty"`
	Settings settings  `json:"settings"`
	Started  time.Time `json:"started"`
	// Carried is the state of the previous workflow run when this one
	// continues it.
	Carried *runCarried `json:"carried,omitempty"`
}

// runCarried is what a run's workflow hands to the next run of it: the
// limits' counts, the slots held and asked for, the requests received and
// not yet handled, and when the run's time limit ends.
type runCarried struct {
	Created   int            `json:"created"`
	Tasks     map[string]int `json:"tasks,omitempty"`
	Usage     cadre.Usage    `json:"usage,omitzero"`
	Warned    bool           `json:"warned,omitempty"`
	Exhausted bool           `json:"exhausted,omitempty"`
	Held      []string       `json:"held,omitempty"`
	Waiting   []runRequest   `json:"waiting,omitempty"`
	Cancelled string         `json:"cancelled,omitempty"`
	Deadline  time.Time      `json:"deadline,omitzero"`
	Pending   []runRequest   `json:"pending,omitempty"`
}

// runState is what the run's workflow holds for the whole run: it is the
// authority on the run-wide limits, which every agent asks, whatever
// worker runs it. Agents ask by signal and are answered by signal.
type runState struct {
	in        runInput
	created   int
	tasks     map[string]int
	usage     cadre.Usage
	warned    bool
	exhausted bool
	held      map[string]bool // concurrency slots held, by call key
	waiting   []runRequest    // acquires waiting for a slot, oldest first
	cancelled string
	version   workflow.Version // of runVersionChange
	taskKeys  workflow.Version // of runTaskKeyChange
	// continues is the version of runContinueChange: from runContinues the
	// run's workflow continues as new when its history grows long, and
	// learns of the root's end from the root.
	continues workflow.Version
	// replies are the answers sent since the workflow run began, waited
	// for before it continues as new.
	replies []workflow.Future
	fin     *loop.Finish // the root's end, once the root has said it
	// requests are the agents' requests to the run.
	requests workflow.ReceiveChannel
}

// runWorkflow is a run: it builds and starts the root agent, holds the
// run-wide limits for every agent, applies the run's time limit, and
// writes the run's end.
func (w *Worker) runWorkflow(ctx workflow.Context, in runInput) (*cadre.Result, error) {
	r := &runState{in: in, tasks: map[string]int{}, held: map[string]bool{}}
	r.version = workflow.GetVersion(ctx, runVersionChange, repliesWaited, repliesSent)
	r.continues = workflow.GetVersion(ctx, runContinueChange, runNeverContinues, runContinues)
	r.taskKeys = workflow.GetVersion(ctx, runTaskKeyChange, taskKeysTrimmed, taskKeysFolded)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 10},
	})
	r.requests = workflow.GetSignalChannel(ctx, runSignal)
	var (
		root     workflow.ChildWorkflowFuture // the root's workflow, started by this workflow run
		deadline time.Time                    // the run's time limit, zero for none
	)
	if c := in.Carried; c != nil {
		r.restore(c)
		deadline = c.Deadline
	} else {
		var start loop.Start
		var plan workflow.Future
		if workflow.GetVersion(ctx, runDepthChange, runWorkerDepth, runOwnDepth) == runOwnDepth {
			plan = workflow.ExecuteActivity(actx, w.acts.PlanRootWithin, rootArgs{Task: in.Task, MaxDepth: in.Settings.MaxDepth})
		} else {
			plan = workflow.ExecuteActivity(actx, w.acts.PlanRoot, in.Task)
		}
		if err := plan.Get(ctx, &start); err != nil {
			return w.finishRun(actx, r, loop.Finish{Failed: true, Result: "the root agent could not be built: " + err.Error()})
		}
		e, err := wrap(start)
		if err != nil {
			return w.finishRun(actx, r, loop.Finish{Failed: true, Result: err.Error()})
		}
		r.created = 1
		// A run that may continue as new abandons the root rather than end
		// it when a workflow run of it closes; the root then tells the run
		// when it ends.
		policy := enumspb.PARENT_CLOSE_POLICY_TERMINATE
		if r.continues >= runContinues {
			policy = enumspb.PARENT_CLOSE_POLICY_ABANDON
		}
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID:            AgentWorkflowID(in.Run, cadre.RootID),
			ParentClosePolicy:     policy,
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		})
		now := workflow.Now(ctx).UTC()
		root = workflow.ExecuteChildWorkflow(cctx, AgentWorkflow, agentInput{Run: in.Run, Agent: cadre.RootID, Settings: in.Settings, Started: now,
			Journal: []envelope{e}, ReportEnd: r.continues >= runContinues})
		if t := in.Settings.Timeout; t > 0 {
			deadline = now.Add(t)
		}
	}
	var timeout workflow.Future
	if !deadline.IsZero() {
		if left := deadline.Sub(workflow.Now(ctx)); left > 0 {
			timeout = workflow.NewTimer(ctx, left)
		} else if r.cancelled == "" {
			w.handle(ctx, r, runRequest{Kind: "cancel", Reason: fmt.Sprintf("the run's time limit of %s passed", in.Settings.Timeout)})
		}
	}
	if c := in.Carried; c != nil {
		for _, req := range c.Pending {
			w.handle(ctx, r, req)
		}
	}
	var (
		fin  loop.Finish
		done bool
	)
	for !done && r.fin == nil {
		if r.continues >= runContinues && longHistory(ctx, in.Settings) {
			// Not before the root has started: Temporal starts no child
			// of a workflow run that has closed.
			if root == nil || root.GetChildWorkflowExecution().Get(ctx, nil) == nil {
				return nil, w.continueRun(ctx, r, deadline)
			}
			// The root's workflow did not start: its future, ready now,
			// says why.
		}
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(r.requests, func(c workflow.ReceiveChannel, _ bool) {
			var req runRequest
			c.Receive(ctx, &req)
			w.handle(ctx, r, req)
		})
		if root != nil {
			sel.AddFuture(root, func(f workflow.Future) {
				done = true
				if err := f.Get(ctx, &fin); err != nil {
					fin = loop.Finish{Failed: true, Result: "the root agent's workflow failed: " + err.Error()}
				}
			})
		}
		if timeout != nil {
			sel.AddFuture(timeout, func(workflow.Future) {
				timeout = nil
				w.handle(ctx, r, runRequest{Kind: "cancel", Reason: fmt.Sprintf("the run's time limit of %s passed", in.Settings.Timeout)})
			})
		}
		sel.Select(ctx)
	}
	if !done {
		fin = *r.fin
	}
	return w.finishRun(actx, r, fin)
}

// longHistory reports whether the run's workflow run has recorded more
// events than the settings allow, or Temporal suggests it continue as new.
func longHistory(ctx workflow.Context, s settings) bool {
	info := workflow.GetInfo(ctx)
	return info.GetCurrentHistoryLength() > s.HistoryLimit || info.GetContinueAsNewSuggested()
}

// continueRun ends this workflow run of the run with its state carried into
// the next: the answers sent are waited for, and the requests received and
// not yet handled go along.
func (w *Worker) continueRun(ctx workflow.Context, r *runState, deadline time.Time) error {
	for _, f := range r.replies {
		_ = f.Get(ctx, nil) // one that fails went to an agent that has ended
	}
	c := &runCarried{Created: r.created, Tasks: r.tasks, Usage: r.usage, Warned: r.warned, Exhausted: r.exhausted,
		Waiting: r.waiting, Cancelled: r.cancelled, Deadline: deadline}
	for k := range r.held {
		c.Held = append(c.Held, k)
	}
	slices.Sort(c.Held)
	for {
		var req runRequest
		if !r.requests.ReceiveAsync(&req) {
			break
		}
		c.Pending = append(c.Pending, req)
	}
	next := r.in
	next.Carried = c
	return workflow.NewContinueAsNewError(ctx, RunWorkflow, next)
}

// restore takes up the state a previous workflow run of the run carried.
func (r *runState) restore(c *runCarried) {
	r.created, r.usage, r.warned, r.exhausted, r.cancelled = c.Created, c.Usage, c.Warned, c.Exhausted, c.Cancelled
	if c.Tasks != nil {
		r.tasks = c.Tasks
		if r.taskKeys >= taskKeysFolded {
			// Counted by an earlier workflow run, maybe under the keys
			// before loop.TaskKey: counted again under its keys.
			r.tasks = make(map[string]int, len(c.Tasks))
			for k, n := range c.Tasks {
				r.tasks[loop.TaskKey(k)] += n
			}
		}
	}
	for _, k := range c.Held {
		r.held[k] = true
	}
	r.waiting = c.Waiting
}

// handle carries out one request to the run.
func (w *Worker) handle(ctx workflow.Context, r *runState, req runRequest) {
	s := r.in.Settings
	switch req.Kind {
	case "reserve":
		reply := runReply{Kind: "reserved", Seq: req.Seq, Refused: make([]refusal, len(req.Items))}
		for i, it := range req.Items {
			norm := strings.ToLower(strings.TrimSpace(it.Task))
			if r.taskKeys >= taskKeysFolded {
				norm = loop.TaskKey(it.Task)
			}
			switch {
			case r.created >= s.MaxAgents:
				reply.Refused[i].Limit = s.MaxAgents
			case !it.Onboarding && r.tasks[norm] >= cadre.DefaultCycleRepeats:
				reply.Refused[i].CycleSeen = r.tasks[norm]
			default:
				if !it.Onboarding {
					r.tasks[norm]++
				}
				r.created++
			}
		}
		w.reply(ctx, r, req.From, reply)
	case "unreserve":
		r.created--
	case "acquire":
		if r.held[req.Key] {
			w.reply(ctx, r, req.From, runReply{Kind: "granted", Key: req.Key})
			return
		}
		r.waiting = append(r.waiting, req)
		w.grant(ctx, r)
	case "release":
		delete(r.held, req.Key)
		for i, q := range r.waiting {
			if q.Key == req.Key {
				r.waiting = append(r.waiting[:i], r.waiting[i+1:]...)
				break
			}
		}
		if req.Usage.Total() > 0 {
			r.usage = r.usage.Add(req.Usage)
			if b := s.BudgetTokens; b > 0 && !r.warned && r.usage.Total()*5 >= b*4 {
				r.warned = true
				used := r.usage.Total()
				w.publishRun(ctx, r, req.Agent, cadre.BudgetWarning{Used: used, Budget: b, Percent: used * 100 / b})
			}
		}
		w.grant(ctx, r)
	case "ended":
		// The root's end, from a root that says it (see runContinues).
		if req.Finish != nil && r.fin == nil {
			r.fin = req.Finish
		}
	case "cancel":
		if r.cancelled == "" {
			r.cancelled = req.Reason
		}
		e, err := wrap(loop.Cancel{Reason: req.Reason})
		if err == nil {
			err = workflow.SignalExternalWorkflow(ctx, AgentWorkflowID(r.in.Run, cadre.RootID), "", inputSignal, e).Get(ctx, nil)
		}
		if err != nil && r.continues >= runContinues {
			// The root's workflow has ended. If it said how, that request
			// is waiting; if not (terminated from outside, or failed before
			// its end), nothing but this ends the run.
			for r.fin == nil {
				var next runRequest
				if !r.requests.ReceiveAsync(&next) {
					break
				}
				w.handle(ctx, r, next)
			}
			if r.fin == nil {
				r.fin = &loop.Finish{Cancelled: true, Result: req.Reason}
			}
		}
	}
}

// grant gives free concurrency slots to the oldest waiting calls, and
// refuses every call once the token budget is spent.
func (w *Worker) grant(ctx workflow.Context, r *runState) {
	s := r.in.Settings
	for len(r.waiting) > 0 {
		q := r.waiting[0]
		if b := s.BudgetTokens; b > 0 && r.usage.Total() >= b {
			r.waiting = r.waiting[1:]
			if !r.exhausted {
				r.exhausted = true
				w.publishRun(ctx, r, q.Agent, cadre.BudgetExhausted{Used: r.usage.Total(), Budget: b})
			}
			w.reply(ctx, r, q.From, runReply{Kind: "granted", Key: q.Key, Exhausted: true})
			continue
		}
		if len(r.held) >= s.MaxConcurrent {
			return
		}
		r.waiting = r.waiting[1:]
		r.held[q.Key] = true
		w.reply(ctx, r, q.From, runReply{Kind: "granted", Key: q.Key})
	}
}

// reply answers an agent. The run does not wait for the signal to be
// delivered: waiting would cost a round trip through the server per
// answer, one after another for every agent of the run, while the answers
// of one workflow task go out together. A signal that fails went to an
// agent that has ended and no longer needs the answer. Runs recorded
// before this (version repliesWaited) wait, as their histories say.
func (w *Worker) reply(ctx workflow.Context, r *runState, to string, rep runReply) {
	f := workflow.SignalExternalWorkflow(ctx, to, "", replySignal, rep)
	if r.version == repliesWaited {
		_ = f.Get(ctx, nil)
	} else if r.continues >= runContinues {
		r.replies = append(r.replies, f)
	}
}

// Versions of the run's workflow, for workflow.GetVersion: histories
// recorded by older workers replay as they ran.
const (
	runVersionChange = "run-replies"
	repliesWaited    = workflow.DefaultVersion
	repliesSent      = workflow.Version(1)

	runContinueChange = "run-continues"
	runNeverContinues = workflow.DefaultVersion
	runContinues      = workflow.Version(1)

	runTaskKeyChange = "run-task-keys"
	// taskKeysTrimmed: the cycle detector counted tasks lowered and trimmed.
	taskKeysTrimmed = workflow.DefaultVersion
	// taskKeysFolded: by loop.TaskKey.
	taskKeysFolded = workflow.Version(1)

	runDepthChange = "run-depth"
	// runWorkerDepth: the root was planned within the worker's depth limit.
	runWorkerDepth = workflow.DefaultVersion
	// runOwnDepth: within the run's (see PlanRootWithin).
	runOwnDepth = workflow.Version(1)
)

// publishRun writes an event the run tells about an agent.
func (w *Worker) publishRun(ctx workflow.Context, r *runState, agent cadre.AgentID, p cadre.Payload) {
	ev := cadre.Event{Type: p.EventType(), Run: r.in.Run, Agent: agent, Data: p, Time: workflow.Now(ctx).UTC()}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 5},
	})
	_ = workflow.ExecuteLocalActivity(lctx, w.acts.Publish, publication{Events: []cadre.Event{ev}}).Get(ctx, nil)
}

// finishRun writes the run's end and returns its result.
func (w *Worker) finishRun(ctx workflow.Context, r *runState, fin loop.Finish) (*cadre.Result, error) {
	var res cadre.Result
	args := finishArgs{Run: r.in.Run, Task: r.in.Task, Model: r.in.Model, Finish: fin, Cancelled: r.cancelled, Exhausted: r.exhausted, Usage: r.usage, Started: r.in.Started}
	if err := workflow.ExecuteActivity(ctx, w.acts.FinishRun, args).Get(ctx, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
