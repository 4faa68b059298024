package cadre

import "time"

// Defaults of Limits. A zero field in Limits means its default.
const (
	DefaultMaxDepth      = 3
	DefaultMaxConcurrent = 16
	DefaultMaxAgents     = 200
	DefaultBudgetTokens  = 500_000
	DefaultMaxTurns      = 25
	// DefaultCycleRepeats is how many times one task may be spawned in a
	// run; the next spawn of it is refused.
	DefaultCycleRepeats = 3
)

// Limits keep a run's agent tree in bounds.
type Limits struct {
	// MaxDepth is the deepest level below the root an agent may be spawned
	// at; NoSubagents (any negative value) allows none.
	MaxDepth int `json:"max_depth,omitempty"`
	// MaxConcurrent agents run at once; more spawns queue.
	MaxConcurrent int `json:"max_concurrent,omitempty"`
	// MaxAgents is the total number of agents a run may create, root included.
	MaxAgents int `json:"max_agents,omitempty"`
	// BudgetTokens is shared by the whole tree; -1 means no budget.
	BudgetTokens int64 `json:"budget_tokens,omitempty"`
	// MaxTurns is the number of model calls an agent may make before it is
	// asked for its final answer.
	MaxTurns int `json:"max_turns,omitempty"`
	// Timeout bounds the whole run; 0 means none.
	Timeout time.Duration `json:"timeout,omitempty"`
	// MaxQuestions is how many questions an agent may ask its caller
	// (ask_caller) when its definition does not say.
	MaxQuestions int `json:"max_questions,omitempty"`
}

// NoSubagents is the MaxDepth of a run whose root may not start subagents.
const NoSubagents = -1

// WithDefaults returns l with zero fields set to their defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxDepth == 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxConcurrent <= 0 {
		l.MaxConcurrent = DefaultMaxConcurrent
	}
	if l.MaxAgents <= 0 {
		l.MaxAgents = DefaultMaxAgents
	}
	if l.BudgetTokens == 0 {
		l.BudgetTokens = DefaultBudgetTokens
	}
	if l.MaxTurns <= 0 {
		l.MaxTurns = DefaultMaxTurns
	}
	if l.MaxQuestions <= 0 {
		l.MaxQuestions = DefaultMaxQuestions
	}
	return l
}
