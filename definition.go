package cadre

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Visibility says whether the model may see and spawn an agent.
type Visibility string

// Visibilities. Internal agents are not listed to models and cannot be
// spawned by them.
const (
	VisibilityUserFacing Visibility = "user-facing"
	VisibilityInternal   Visibility = "internal"
)

// ReportMode is how a child hands its result to its parent.
type ReportMode string

// Report modes. ReportTool (the default) tracks the first send_agent_message
// aimed at the parent; ReportTag extracts the <response>…</response> block
// from the child's final text.
const (
	ReportTool ReportMode = "tool"
	ReportTag  ReportMode = "tag"
)

// Protocol is how an agent asks for subagents.
type Protocol string

// Protocols. ProtocolAuto uses tool calls when the model supports them and
// the <spawn_agents> text protocol otherwise.
const (
	ProtocolAuto  Protocol = "auto"
	ProtocolTools Protocol = "tools"
	ProtocolText  Protocol = "text"
)

// Onboarding says whether an agent takes part in onboarding conversations.
type Onboarding string

// Onboarding settings.
const (
	OnboardingOptional Onboarding = "optional"
	OnboardingRequired Onboarding = "required"
	OnboardingOff      Onboarding = "false"
)

// Defaults of a Definition's fields.
const (
	DefaultTimeout      = 300 * time.Second
	DefaultMaxQuestions = 5
)

// A Definition describes a subagent. Definitions are usually read from
// markdown files with YAML frontmatter by package agentdef; the body of the
// file is Prompt, verbatim.
type Definition struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Prompt is the system prompt: the file's body, byte for byte.
	Prompt string `json:"prompt"`

	// File and Line locate the definition's source; Scope is where it was
	// found ("builtin", "user", "project", "dir", "generated").
	File  string `json:"file,omitempty"`
	Scope string `json:"scope,omitempty"`

	// Tools is the allowlist in cadre's tool names. Nil means the agent
	// inherits its parent's tools; a non-nil empty list means no tools.
	// An entry mcp__SERVER names every tool of that MCP server, and one
	// with *, ? or [ ] the tools it matches (see rule.NameMatches); so do
	// those of DisallowedTools and the Tool of a rule.
	Tools []string `json:"tools"`
	// DisallowedTools are removed from whatever the agent would have.
	DisallowedTools []string `json:"disallowed_tools,omitempty"`
	// Rules decide about each call of the agent's tools and about the
	// agents it may start: entries with arguments such as Bash(git *) or
	// Agent(explore), and OpenCode's permission maps. See ToolRule for how
	// they are read. They are checked when a call is made, by the engine.
	Rules []ToolRule `json:"rules,omitempty"`

	// Model is an alias ("sonnet", "inherit"), a configured named model or
	// a provider:model name. Empty means the role, then the parent's model.
	Model     string `json:"model,omitempty"`
	ModelRole string `json:"model_role,omitempty"`

	// Timeout is the agent's inactivity limit: it fails when a model or
	// tool call of its shows no sign of life for this long. 0 means
	// DefaultTimeout. JSON writes it as timeout_seconds, a number of
	// seconds, as agent files do.
	Timeout                time.Duration `json:"-"`
	Visibility             Visibility    `json:"visibility"`
	EmitStructuredFindings bool          `json:"emit_structured_findings,omitempty"`
	MaxTurns               int           `json:"max_turns,omitempty"`
	MaxDepth               int           `json:"max_depth,omitempty"`
	Temperature            *float64      `json:"temperature,omitempty"`

	Report       ReportMode      `json:"report,omitempty"`
	Protocol     Protocol        `json:"protocol,omitempty"`
	Onboarding   Onboarding      `json:"onboarding,omitempty"`
	MaxQuestions int             `json:"max_questions,omitempty"`
	AskCaller    bool            `json:"ask_caller,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// Say makes only <say>…</say> blocks of the agent's replies visible.
	Say bool `json:"say,omitempty"`
	// Background agents always run in the background: spawn_agent starts
	// them as start_background_agent does, and their caller goes on at once.
	Background bool `json:"background,omitempty"`
	// TurnAfterReport gives the agent one more model call after a reply
	// that only sends its report (and other messages) to its parent, to end
	// its turn in its own words; by default it ends there, its report
	// delivered.
	TurnAfterReport bool `json:"turn_after_report,omitempty"`

	// Extra keeps frontmatter fields cadre reads but does not act on
	// (color, permissionMode, skills, …), as parsed.
	Extra map[string]any `json:"extra,omitempty"`
}

// TimeoutOrDefault is the inactivity limit of the agent: Timeout, or
// DefaultTimeout when Timeout is not set.
func (d *Definition) TimeoutOrDefault() time.Duration {
	if d.Timeout <= 0 {
		return DefaultTimeout
	}
	return d.Timeout
}

// definitionFields is Definition without its JSON methods.
type definitionFields Definition

// definitionJSON is the JSON form of a Definition.
type definitionJSON struct {
	*definitionFields
	TimeoutSeconds json.Number `json:"timeout_seconds"`
}

// MarshalJSON writes the definition with Timeout as timeout_seconds.
func (d Definition) MarshalJSON() ([]byte, error) {
	return json.Marshal(definitionJSON{(*definitionFields)(&d), SecondsJSON(d.Timeout)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (d *Definition) UnmarshalJSON(b []byte) error {
	v := definitionJSON{definitionFields: (*definitionFields)(d)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	t, err := ParseSecondsJSON(v.TimeoutSeconds)
	if err != nil {
		return fmt.Errorf("timeout_seconds: %w", err)
	}
	d.Timeout = t
	return nil
}

// SecondsJSON writes a duration as a number of seconds, with a fraction
// only when it has one: the form journals and records keep durations in.
func SecondsJSON(d time.Duration) json.Number {
	return json.Number(strconv.FormatFloat(d.Seconds(), 'f', -1, 64))
}

// ParseSecondsJSON reads a number of seconds written by SecondsJSON; an
// absent one is 0.
func ParseSecondsJSON(n json.Number) (time.Duration, error) {
	if n == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.Abs(f)*1e9 >= math.MaxInt64 {
		return 0, fmt.Errorf("%s is not a number of seconds of at most %d", n, math.MaxInt64/int64(time.Second))
	}
	return time.Duration(math.Round(f * 1e9)), nil
}

// UserFacing reports whether models may see and spawn the agent.
func (d *Definition) UserFacing() bool { return d.Visibility != VisibilityInternal }
