package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/cadre-ai/cadre"
)

// storedLimits are the limits a run's record keeps (runs.config): every
// limit as the run applies it, defaults included, in snake_case keys like
// the rest of the record, so that what a reader sees is what was in
// effect. max_depth 0 means no subagents, budget_tokens -1 no budget, and
// a run without a time limit has no timeout key.
type storedLimits struct{ limitsConfig }

// storedLimitsJSON is the JSON form of storedLimits.
type storedLimitsJSON struct {
	MaxDepth      int    `json:"max_depth"`
	MaxConcurrent int    `json:"max_concurrent"`
	MaxAgents     int    `json:"max_agents"`
	BudgetTokens  int64  `json:"budget_tokens"`
	MaxTurns      int    `json:"max_turns"`
	Timeout       string `json:"timeout,omitempty"`
	MaxQuestions  int    `json:"max_questions"`
}

func (l storedLimits) MarshalJSON() ([]byte, error) {
	c := config{fileConfig: fileConfig{Limits: l.limitsConfig}}
	eff := c.limits().WithDefaults()
	out := storedLimitsJSON{MaxDepth: max(eff.MaxDepth, 0), MaxConcurrent: eff.MaxConcurrent, MaxAgents: eff.MaxAgents,
		BudgetTokens: eff.BudgetTokens, MaxTurns: eff.MaxTurns, MaxQuestions: eff.MaxQuestions}
	if eff.Timeout > 0 {
		out.Timeout = eff.Timeout.String()
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads the limits in effect, and the configured limits
// that records of earlier versions of cadre kept instead (keys such as
// MaxDepth, where 0 meant the default).
func (l *storedLimits) UnmarshalJSON(b []byte) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return err
	}
	if _, ok := keys["max_depth"]; !ok {
		return json.Unmarshal(b, &l.limitsConfig)
	}
	var in storedLimitsJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	l.limitsConfig = limitsConfig{MaxDepth: in.MaxDepth, MaxConcurrent: in.MaxConcurrent, MaxAgents: in.MaxAgents,
		BudgetTokens: in.BudgetTokens, MaxTurns: in.MaxTurns, MaxQuestions: in.MaxQuestions}
	if in.MaxDepth == 0 {
		l.MaxDepth = cadre.NoSubagents
	}
	if in.Timeout != "" {
		d, err := time.ParseDuration(in.Timeout)
		if err != nil {
			return fmt.Errorf("timeout %q: %w", in.Timeout, err)
		}
		l.Timeout = d
	}
	return nil
}

// checkAgentsDirs fails for a folder of agent definitions that does not
// exist: a mistyped --agents-dir would otherwise run without its agents.
// given are the folders as written, dirs as resolved.
func checkAgentsDirs(given, dirs []string) error {
	for i, d := range dirs {
		fi, err := os.Stat(d)
		name := d
		if i < len(given) {
			name = given[i]
		}
		switch {
		case err != nil:
			return fmt.Errorf("agents folder %s: %w (check --agents-dir or agentsDirs in .cadre/config.yaml)", name, err)
		case !fi.IsDir():
			return fmt.Errorf("agents folder %s is a file, not a folder (check --agents-dir or agentsDirs in .cadre/config.yaml)", name)
		}
	}
	return nil
}
