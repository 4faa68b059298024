package temporal

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/cadre-ai/cadre/local"
)

// A Worker carries out runs: it polls the task queue for the workflows of
// runs and agents and for their activities (model calls, tool calls,
// writes to the store). Any number of workers, on any machines, may serve
// one task queue; a run goes on as long as one of them does.
type Worker struct {
	cfg  Config
	acts *activities
	w    worker.Worker
}

// NewWorker returns a worker for cfg. Start or Run makes it poll.
func NewWorker(cfg Config) (*Worker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	w := &Worker{cfg: cfg, acts: &activities{store: cfg.Store, planner: local.NewPlanner(cfg.Local)}}
	w.w = worker.New(cfg.Client, cfg.TaskQueue, worker.Options{})
	w.Register(w.w)
	return w, nil
}

// Register registers the workflows and activities of cadre with r.
func (w *Worker) Register(r worker.Registry) {
	w.registerWorkflows(r)
	r.RegisterActivityWithOptions(w.acts, activity.RegisterOptions{})
}

func (w *Worker) registerWorkflows(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(w.runWorkflow, workflow.RegisterOptions{Name: RunWorkflow})
	r.RegisterWorkflowWithOptions(w.agentWorkflow, workflow.RegisterOptions{Name: AgentWorkflow})
}

// NewReplayer returns a workflow replayer with cadre's workflows
// registered: it replays recorded histories against this code and fails
// when the code would no longer do what the history says it did.
func NewReplayer() (worker.WorkflowReplayer, error) {
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{})
	if err != nil {
		return nil, err
	}
	w := &Worker{acts: &activities{}}
	w.registerWorkflows(r)
	return r, nil
}

// Start starts polling and returns; Stop stops.
func (w *Worker) Start() error { return w.w.Start() }

// Stop stops the worker, waiting for what it is doing to finish or give up.
func (w *Worker) Stop() { w.w.Stop() }

// Run polls until interrupt yields a value (worker.InterruptCh() for
// SIGINT and SIGTERM), then stops.
func (w *Worker) Run(interrupt <-chan any) error { return w.w.Run(interrupt) }
