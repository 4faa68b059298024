package cadre

import "strings"

// A Price is what a model costs, in a currency of the user's choosing
// (US dollars in the examples), per million tokens.
type Price struct {
	// Input is the price of a million prompt tokens not read from a cache.
	Input float64 `json:"input" yaml:"input"`
	// CachedInput is the price of a million prompt tokens read from the
	// provider's cache. Zero means the same as Input when the provider
	// gives no discount, so set it whenever the provider has one.
	CachedInput float64 `json:"cached_input,omitempty" yaml:"cachedInput,omitempty"`
	// Output is the price of a million completion tokens.
	Output float64 `json:"output" yaml:"output"`
}

// Cost is what u costs at p. Cached input tokens are charged at
// CachedInput, or at Input when CachedInput is zero.
func (p Price) Cost(u Usage) float64 {
	cached := min(max(u.CachedInputTokens, 0), u.InputTokens)
	cachedPrice := p.CachedInput
	if cachedPrice == 0 {
		cachedPrice = p.Input
	}
	return (float64(u.InputTokens-cached)*p.Input + float64(cached)*cachedPrice + float64(u.OutputTokens)*p.Output) / 1e6
}

// Prices maps model names, as the configuration names them, to their
// prices. A nil map knows no prices.
type Prices map[string]Price

// Price returns the price of the named model. A name with a provider
// prefix ("openai:gpt-4o") also matches an entry without it ("gpt-4o").
func (ps Prices) Price(model string) (Price, bool) {
	if p, ok := ps[model]; ok {
		return p, true
	}
	if _, bare, ok := strings.Cut(model, ":"); ok {
		if p, ok := ps[bare]; ok {
			return p, true
		}
	}
	return Price{}, false
}

// Cost is what u costs on the named model, and false when the model has no
// price.
func (ps Prices) Cost(model string, u Usage) (float64, bool) {
	p, ok := ps.Price(model)
	if !ok {
		return 0, false
	}
	return p.Cost(u), true
}
