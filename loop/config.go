package loop

import "github.com/cadre-ai/cadre"

// Config is what an agent is, fixed when it starts. It travels in the Start
// input so a replay rebuilds the same agent.
type Config struct {
	ID         cadre.AgentID `json:"id"`
	Parent     cadre.AgentID `json:"parent,omitempty"`
	Depth      int           `json:"depth"`
	MaxDepth   int           `json:"max_depth"`
	Definition string        `json:"definition"`
	System     string        `json:"system"`
	// Tools are the ordinary tools the agent may call, after its allowlist
	// was applied. Subagent tools are added by the loop.
	Tools []cadre.ToolSpec `json:"tools,omitempty"`
	// Delegate allows spawning children. It is false at the depth limit or
	// when the agent's allowlist has no subagent tools.
	Delegate bool `json:"delegate,omitempty"`
	// Catalog lists the definitions the agent knows of.
	Catalog  []CatalogEntry   `json:"catalog,omitempty"`
	Report   cadre.ReportMode `json:"report,omitempty"`
	Protocol cadre.Protocol   `json:"protocol,omitempty"`
	MaxTurns int              `json:"max_turns"`
	// Say shows only <say> blocks of the agent's replies to the user.
	Say         bool     `json:"say,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
}

// A CatalogEntry is a definition as the loop needs to know it.
type CatalogEntry struct {
	Name     string `json:"name"`
	Internal bool   `json:"internal,omitempty"`
	// OnboardingRequired agents must be onboarded before they are called.
	OnboardingRequired bool `json:"onboarding_required,omitempty"`
}

func (c *Config) isChild() bool { return c.Parent != "" }

func (c *Config) textProtocol() bool { return c.Protocol == cadre.ProtocolText }

func (c *Config) maxTurns() int {
	if c.MaxTurns <= 0 {
		return cadre.DefaultMaxTurns
	}
	return c.MaxTurns
}

func (c *Config) entry(name string) (CatalogEntry, bool) {
	for _, e := range c.Catalog {
		if e.Name == name {
			return e, true
		}
	}
	return CatalogEntry{}, false
}

func (c *Config) spawnable() []string {
	var names []string
	for _, e := range c.Catalog {
		if !e.Internal {
			names = append(names, e.Name)
		}
	}
	return names
}
