package cli

import (
	"context"
	"fmt"

	"github.com/cadre-ai/cadre"
)

// runCosts adds up what a run's model calls cost, by agent and in all,
// from its stored model_response events: each says what the call cost at
// the prices the run had (prices: in the config). Both are zero for a run
// without prices.
func runCosts(evs []cadre.Event) (map[cadre.AgentID]float64, float64) {
	var (
		by    map[cadre.AgentID]float64
		total float64
	)
	for _, e := range evs {
		if d, ok := e.Data.(cadre.ModelResponse); ok && d.Cost != 0 {
			if by == nil {
				by = map[cadre.AgentID]float64{}
			}
			by[e.Agent] += d.Cost
			total += d.Cost
		}
	}
	return by, total
}

// storedCost is what the stored run's model calls cost.
func storedCost(ctx context.Context, s cadre.Store, run string) (float64, error) {
	evs, err := s.Events(ctx, run, 0)
	if err != nil {
		return 0, err
	}
	_, total := runCosts(evs)
	return total, nil
}

// costText shows a cost with the precision its size needs, in the unit of
// the configured prices.
func costText(c float64) string {
	switch {
	case c == 0:
		return "-"
	case c >= 100:
		return fmt.Sprintf("%.0f", c)
	case c >= 1:
		return fmt.Sprintf("%.2f", c)
	case c >= 0.01:
		return fmt.Sprintf("%.3f", c)
	}
	return fmt.Sprintf("%.5f", c)
}
