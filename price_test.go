package cadre

import "testing"

func TestPriceCost(t *testing.T) {
	ps := Prices{
		"openai:gpt-4o": {Input: 2.5, CachedInput: 1.25, Output: 10},
		"claude":        {Input: 3, Output: 15},
	}
	tests := []struct {
		name, model string
		u           Usage
		want        float64
		ok          bool
	}{
		{"input and output", "openai:gpt-4o", Usage{InputTokens: 1_000_000, OutputTokens: 100_000}, 2.5 + 1, true},
		{"cached input at its price", "openai:gpt-4o", Usage{InputTokens: 1_000_000, CachedInputTokens: 400_000}, 0.6*2.5 + 0.4*1.25, true},
		{"no cached price charges input", "claude", Usage{InputTokens: 1_000_000, CachedInputTokens: 500_000}, 3, true},
		{"provider prefix matches a bare name", "anthropic:claude", Usage{OutputTokens: 1_000_000}, 15, true},
		{"more cached than input is capped", "openai:gpt-4o", Usage{InputTokens: 10, CachedInputTokens: 20}, 10 * 1.25 / 1e6, true},
		{"unknown model", "ollama:llama3", Usage{InputTokens: 5}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ps.Cost(tt.model, tt.u)
			if ok != tt.ok || diff(got, tt.want) > 1e-12 {
				t.Errorf("Cost(%q, %+v) = %v, %v; want %v, %v", tt.model, tt.u, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func diff(a, b float64) float64 {
	if a > b {
		return a - b
	}
	return b - a
}
