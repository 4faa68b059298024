package temporal

import (
	"errors"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/local"
)

// Config configures an Engine (which starts and watches runs) and a Worker
// (which carries them out). One Config usually serves both; each reads
// what it needs.
type Config struct {
	// Client is the connection to the Temporal service. Required.
	Client client.Client
	// TaskQueue is the queue the run's workflows and activities go to;
	// empty means DefaultTaskQueue. Engines and workers of one deployment
	// name the same one.
	TaskQueue string
	// Store keeps the runs' records, agents and events: workers write
	// them, engines read them. Every engine and worker of a deployment must
	// reach the same store (PostgreSQL across machines). Required.
	Store cadre.Store
	// Local is what workers build agents from, as the local engine would:
	// models, definitions, tools and their runner, prompts, protocol. Its
	// Limits are the run-wide limits a run started by the Engine keeps (the
	// starting process decides maxAgents, maxDepth, maxConcurrent, the
	// token budget and the time limit; maxTurns and maxQuestions, which
	// agent files may set otherwise, are those of the worker that plans the
	// agents, so give workers the same); its Store is not used.
	Local local.Config
	// HistoryLimit is the number of events the workflow history of an
	// agent, or of a run, may reach before it continues as a new workflow
	// run, carrying its state over. Zero means DefaultHistoryLimit.
	HistoryLimit int
	// ModelTimeout bounds one model call (start to close); ToolTimeout one
	// tool call. Zero means DefaultCallTimeout.
	ModelTimeout, ToolTimeout time.Duration
	// HeartbeatTimeout is how long a model or tool call may go without a
	// heartbeat from its worker before Temporal gives it to another one.
	// Calls heartbeat four times within it. Zero means
	// DefaultHeartbeatTimeout.
	HeartbeatTimeout time.Duration
	// AnswerQuestions lets a root agent's ask_caller questions wait for
	// Engine.Answer. Without it a root's question is answered at once with
	// an error telling the agent to go on with what it knows.
	AnswerQuestions bool
}

// Defaults of a Config.
const (
	DefaultTaskQueue    = "cadre"
	DefaultHistoryLimit = 10000
	// DefaultCallTimeout bounds one model or tool call.
	DefaultCallTimeout = 10 * time.Minute
	// DefaultHeartbeatTimeout is chosen so that the calls of a worker that
	// dies move to another within 30 seconds: Temporal notices the missing
	// heartbeat after at most 10 s and schedules the call again at once;
	// the workflow tasks of the dead worker's sticky queue move after 5 s,
	// and those in progress after the 10 s workflow task timeout.
	DefaultHeartbeatTimeout = 10 * time.Second
)

func (c Config) withDefaults() (Config, error) {
	if c.Client == nil {
		return c, errors.New("temporal: Config.Client is nil: connect to the Temporal service first (client.Dial)")
	}
	if c.Store == nil {
		return c, errors.New("temporal: Config.Store is nil: the engine and its workers keep runs, agents and events in a shared store")
	}
	if c.TaskQueue == "" {
		c.TaskQueue = DefaultTaskQueue
	}
	if c.HistoryLimit <= 0 {
		c.HistoryLimit = DefaultHistoryLimit
	}
	if c.ModelTimeout <= 0 {
		c.ModelTimeout = DefaultCallTimeout
	}
	if c.ToolTimeout <= 0 {
		c.ToolTimeout = DefaultCallTimeout
	}
	if c.HeartbeatTimeout <= 0 {
		c.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	c.Local.Limits = c.Local.Limits.WithDefaults()
	return c, nil
}

// settings are what a run's workflows are told at its start, so that every
// worker carries the run out alike, whatever its own configuration says.
type settings struct {
	HistoryLimit     int           `json:"history_limit"`
	ModelTimeout     time.Duration `json:"model_timeout"`
	ToolTimeout      time.Duration `json:"tool_timeout"`
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout"`
	AnswerQuestions  bool          `json:"answer_questions,omitempty"`
	MaxAgents        int           `json:"max_agents"`
	// MaxDepth is the run's depth limit (cadre.NoSubagents for none below
	// the root); 0 in runs started before it was kept, whose workers'
	// limit applies.
	MaxDepth      int           `json:"max_depth,omitempty"`
	MaxConcurrent int           `json:"max_concurrent"`
	BudgetTokens  int64         `json:"budget_tokens,omitempty"`
	Timeout       time.Duration `json:"timeout,omitempty"`
}

func (c Config) settings() settings {
	l := c.Local.Limits
	return settings{
		HistoryLimit: c.HistoryLimit, ModelTimeout: c.ModelTimeout, ToolTimeout: c.ToolTimeout, HeartbeatTimeout: c.HeartbeatTimeout,
		AnswerQuestions: c.AnswerQuestions, MaxAgents: l.MaxAgents, MaxDepth: l.MaxDepth, MaxConcurrent: l.MaxConcurrent, BudgetTokens: l.BudgetTokens, Timeout: l.Timeout,
	}
}

// Names of workflows, signals and queries. They are part of the histories
// Temporal keeps: changing one breaks the runs in progress.
const (
	RunWorkflow   = "cadre.Run"
	AgentWorkflow = "cadre.Agent"
	inputSignal   = "cadre.input" // loop inputs for an agent, in order
	replySignal   = "cadre.reply" // the run's answers to an agent's requests
	runSignal     = "cadre.run"   // requests to the run
	questionQuery = "cadre.question"
)

// RunWorkflowID is the workflow ID of a run: starting a run twice with one
// ID never makes two.
func RunWorkflowID(run string) string { return "cadre/" + run }

// AgentWorkflowID is the workflow ID of an agent of a run: derived from
// both, so a retried start never makes a second agent.
func AgentWorkflowID(run string, agent cadre.AgentID) string {
	return "cadre/" + run + "/" + string(agent)
}
