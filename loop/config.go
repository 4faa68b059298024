package loop

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/cadre-ai/cadre"
)

// Mode is what an agent was started for.
type Mode string

// Modes. An onboarding agent only asks its caller questions (ask_caller)
// and reports "ready" by ending its turn without asking; its caller gives
// it the task later, in a fresh agent.
const (
	ModeWork       Mode = ""
	ModeOnboarding Mode = "onboarding"
)

// Config is what an agent is, fixed when it starts. It travels in the Start
// input so a replay rebuilds the same agent.
type Config struct {
	ID         cadre.AgentID `json:"id"`
	Parent     cadre.AgentID `json:"parent,omitempty"`
	Depth      int           `json:"depth"`
	MaxDepth   int           `json:"max_depth"`
	Definition string        `json:"definition"`
	// Model is the name of the agent's model, for the engine; the loop
	// does not use it.
	Model  string `json:"model,omitempty"`
	System string `json:"system"`
	// Tools are the ordinary tools the agent may call, after its allowlist
	// was applied. Subagent tools are added by the loop.
	Tools []cadre.ToolSpec `json:"tools,omitempty"`
	// Withheld names the engine's ordinary tools that the agent's
	// definition leaves out, so that a call of one is told apart from a
	// call of a tool that does not exist.
	Withheld []string `json:"withheld,omitempty"`
	// Delegate allows spawning children. It is false at the depth limit or
	// when the agent's allowlist has no subagent tools.
	Delegate bool `json:"delegate,omitempty"`
	// Delegation lists the delegation tools (see DelegationTools) the
	// agent's definition grants; nil grants them all, and an empty list
	// none. A tool it does not list is not offered, except the ones a
	// listed tool cannot work without (see Config.Granted). It is written
	// even when empty, so that none is not read back as all.
	Delegation []string `json:"delegation"`
	// Rules are the tool rules the agent's calls must pass, for the engine:
	// its definition's, then each ancestor's. The loop does not read them;
	// they travel here so that a resumed agent keeps the rules it started
	// with.
	Rules []RuleSet `json:"rules,omitempty"`
	// Catalog lists the definitions the agent knows of.
	Catalog  []CatalogEntry   `json:"catalog,omitempty"`
	Report   cadre.ReportMode `json:"report,omitempty"`
	Protocol cadre.Protocol   `json:"protocol,omitempty"`
	MaxTurns int              `json:"max_turns"`
	// Timeout is the agent's inactivity limit, for the engine; 0 means
	// none. (Journals of cadre before it was a time.Duration have
	// timeout_seconds, a number of seconds, instead, which Decode reads.)
	Timeout time.Duration `json:"timeout,omitempty"`
	// Say shows only <say> blocks of the agent's replies to the user.
	Say         bool     `json:"say,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`

	// Mode is ModeOnboarding for an agent started by agent_onboard.
	Mode Mode `json:"mode,omitempty"`
	// AskCaller keeps the ask_caller tool while the agent works.
	AskCaller bool `json:"ask_caller,omitempty"`
	// MaxQuestions bounds ask_caller calls (cadre.DefaultMaxQuestions
	// when 0).
	MaxQuestions int `json:"max_questions,omitempty"`
	// OutputSchema is a JSON Schema the agent's report must match; a
	// mismatch is sent back to the agent once.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// EndOnReport ends a child (ReportTool, tool calls) as soon as a reply
	// of its does nothing but send messages to its parent, its report among
	// them: it has said all it will, so its model is not called once more
	// to end the turn. Without it the child gets the calls' results and one
	// more model call, as journals written before the field existed expect.
	EndOnReport bool `json:"end_on_report,omitempty"`
}

// A RuleSet is the tool rules of one definition, by name.
type RuleSet struct {
	Definition string           `json:"definition"`
	Rules      []cadre.ToolRule `json:"rules"`
}

// A CatalogEntry is a definition as the loop needs to know it.
type CatalogEntry struct {
	Name     string `json:"name"`
	Internal bool   `json:"internal,omitempty"`
	// OnboardingRequired agents must be onboarded before they are called;
	// NoOnboarding agents cannot be onboarded.
	OnboardingRequired bool `json:"onboarding_required,omitempty"`
	NoOnboarding       bool `json:"no_onboarding,omitempty"`
	// AskCaller agents may ask their caller questions while they work.
	AskCaller bool `json:"ask_caller,omitempty"`
	// MaxQuestions is the definition's question limit (0: the default).
	MaxQuestions int `json:"max_questions,omitempty"`
	// Background agents always run in the background: spawn_agent starts
	// them as start_background_agent does.
	Background bool `json:"background,omitempty"`
}

func (c *Config) isChild() bool { return c.Parent != "" }

func (c *Config) onboarding() bool { return c.Mode == ModeOnboarding }

func (c *Config) textProtocol() bool { return c.Protocol == cadre.ProtocolText }

func (c *Config) maxTurns() int {
	if c.MaxTurns <= 0 {
		return cadre.DefaultMaxTurns
	}
	return c.MaxTurns
}

func (c *Config) maxQuestions() int {
	if c.MaxQuestions <= 0 {
		return cadre.DefaultMaxQuestions
	}
	return c.MaxQuestions
}

func (c *Config) entry(name string) (CatalogEntry, bool) {
	for _, e := range c.Catalog {
		if e.Name == name {
			return e, true
		}
	}
	return CatalogEntry{}, false
}

// anyAskCaller reports whether some definition the agent may spawn asks
// its caller questions while it works.
func (c *Config) anyAskCaller() bool {
	for _, e := range c.Catalog {
		if e.AskCaller && !e.Internal {
			return true
		}
	}
	return false
}

// spawnable returns the names of the agents a model may start; without
// onboarding, those that require onboarding are left out (a block cannot
// onboard its agents).
func (c *Config) spawnable(onboarding bool) []string {
	var names []string
	for _, e := range c.Catalog {
		if !e.Internal && (onboarding || !e.OnboardingRequired) {
			names = append(names, e.Name)
		}
	}
	return names
}

// Granted reports whether the agent may use a delegation tool. A tool
// Delegation lists is granted, and so are the ones a listed tool cannot
// work without: agent_onboard_reply with agent_onboard (an onboarding
// agent's questions must be answered before its handle is ready), and
// answer_agent and wait_agent with a tool that starts agents when one of
// the definitions the agent may start asks its caller questions (the
// question comes back as the result of the call that started it, and the
// child is paused until answer_agent answers it and wait_agent collects its
// report). Neither can start an agent or reach one the agent did not start.
func (c *Config) Granted(name string) bool {
	if c.Delegation == nil || slices.Contains(c.Delegation, name) {
		return true
	}
	switch name {
	case ToolOnboardReply:
		return slices.Contains(c.Delegation, ToolOnboard)
	case ToolAnswerAgent, ToolWaitAgent:
		return c.anyAskCaller() && slices.ContainsFunc(c.Delegation, runsTask)
	}
	return false
}

// granted lists the delegation tools Granted allows, in the order of
// DelegationTools.
func (c *Config) granted() []string {
	var out []string
	for _, t := range DelegationTools() {
		if c.Granted(t) {
			out = append(out, t)
		}
	}
	return out
}

// CreatableTools are the tools an agent of this configuration may give an
// agent it creates (agent_create): its own, and the tools that start
// agents when it may use them. An agent never gives more than it has.
func (c *Config) CreatableTools() []string {
	names := make([]string, 0, len(c.Tools)+2)
	for _, t := range c.Tools {
		names = append(names, t.Name)
	}
	for _, t := range []string{ToolSpawnAgent, ToolStartBackground} {
		if c.Delegate && c.Granted(t) {
			names = append(names, t)
		}
	}
	return names
}

// TaskKey is the key under which the cycle detector counts a delegated
// task: the task as a model could respell it and mean the same, with its
// case folded, its spaces (any kind) collapsed to one, invisible format
// characters (zero-width spaces and joiners) dropped and sentence
// punctuation and quotes at its ends trimmed (not # or %: "in C#" is not
// "in C"). Before, "Do X", "Do  X", "Do X." and "Do\u00a0X" were four
// tasks, and the detector was easy to pass.
func TaskKey(task string) string {
	if isKey(task) {
		return task // what a model writes most often: no allocation
	}
	return taskKey(task)
}

// isKey reports whether task is its own key: ASCII without capitals or
// control characters, its words each parted by one space, and neither
// space nor sentence punctuation at its ends.
func isKey(task string) bool {
	if task == "" {
		return true
	}
	space := true // before the first byte: a leading space is not allowed
	for i := 0; i < len(task); i++ {
		c := task[i]
		switch {
		case c == ' ':
			if space {
				return false
			}
			space = true
			continue
		case c <= ' ' || c >= 0x7f || 'A' <= c && c <= 'Z':
			return false
		}
		space = false
	}
	ends := func(c byte) bool { return c == ' ' || strings.IndexByte(sentencePunct, c) >= 0 }
	return !ends(task[0]) && !ends(task[len(task)-1])
}

// taskKey is TaskKey the long way, for any task.
func taskKey(task string) string {
	task = strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, task)
	key := strings.ToLower(strings.Join(strings.Fields(task), " "))
	return strings.TrimFunc(key, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(sentencePunct, r) })
}

// sentencePunct is what TaskKey trims at a task's ends.
const sentencePunct = ".,;:!?…\"'«»“”‘’"
