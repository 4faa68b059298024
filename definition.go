package cadre

import (
	"encoding/json"
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
	DefaultTimeoutSeconds = 300
	DefaultMaxQuestions   = 5
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
	Tools []string `json:"tools"`
	// ToolArgs keeps the argument patterns of entries such as Bash(git *),
	// keyed by cadre tool name.
	ToolArgs map[string][]string `json:"tool_args,omitempty"`
	// DisallowedTools are removed from whatever the agent would have.
	DisallowedTools []string `json:"disallowed_tools,omitempty"`

	// Model is an alias ("sonnet", "inherit"), a configured named model or
	// a provider:model name. Empty means the role, then the parent's model.
	Model     string `json:"model,omitempty"`
	ModelRole string `json:"model_role,omitempty"`

	TimeoutSeconds         int        `json:"timeout_seconds"`
	Visibility             Visibility `json:"visibility"`
	EmitStructuredFindings bool       `json:"emit_structured_findings,omitempty"`
	MaxTurns               int        `json:"max_turns,omitempty"`
	MaxDepth               int        `json:"max_depth,omitempty"`
	Temperature            *float64   `json:"temperature,omitempty"`

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

	// Extra keeps frontmatter fields cadre reads but does not act on
	// (color, permissionMode, skills, …), as parsed.
	Extra map[string]any `json:"extra,omitempty"`
}

// Timeout is the inactivity limit of the agent.
func (d *Definition) Timeout() time.Duration {
	if d.TimeoutSeconds <= 0 {
		return DefaultTimeoutSeconds * time.Second
	}
	return time.Duration(d.TimeoutSeconds) * time.Second
}

// UserFacing reports whether models may see and spawn the agent.
func (d *Definition) UserFacing() bool { return d.Visibility != VisibilityInternal }
