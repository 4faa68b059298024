package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/prompt"
)

// Engine runs agents in this process.
type Engine struct {
	cfg  Config
	defs map[string]*cadre.Definition
}

// New returns an Engine for cfg.
func New(cfg Config) *Engine {
	cfg.Limits = cfg.Limits.WithDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Runner == nil {
		cfg.Runner = directRunner{}
	}
	if cfg.Protocol == "" {
		cfg.Protocol = cadre.ProtocolAuto
	}
	if cfg.Report == "" {
		cfg.Report = cadre.ReportTool
	}
	defs := make(map[string]*cadre.Definition, len(cfg.Definitions))
	for _, d := range cfg.Definitions {
		defs[d.Name] = d
	}
	return &Engine{cfg: cfg, defs: defs}
}

// A Result is how a run ended.
type Result struct {
	RunID  string       `json:"run"`
	Status cadre.Status `json:"status"`
	// Answer is the root's final text.
	Answer   string          `json:"answer"`
	Error    string          `json:"error,omitempty"`
	Usage    cadre.Usage     `json:"usage"`
	Findings []cadre.Finding `json:"findings,omitempty"`
	// BudgetExhausted is set when the token budget stopped agents; Completed
	// and Incomplete then list which agents finished their work.
	BudgetExhausted bool            `json:"budget_exhausted,omitempty"`
	Completed       []cadre.AgentID `json:"completed,omitempty"`
	Incomplete      []cadre.AgentID `json:"incomplete,omitempty"`
	Agents          []AgentInfo     `json:"agents"`
}

// AgentInfo is a snapshot of one agent for the live tree.
type AgentInfo struct {
	ID         cadre.AgentID `json:"id"`
	Parent     cadre.AgentID `json:"parent,omitempty"`
	Depth      int           `json:"depth"`
	Definition string        `json:"definition"`
	Model      string        `json:"model,omitempty"`
	Mode       string        `json:"mode,omitempty"`
	Task       string        `json:"task"`
	Status     cadre.Status  `json:"status"`
	Turns      int           `json:"turns"`
	Usage      cadre.Usage   `json:"usage"`
	Started    time.Time     `json:"started"`
	Ended      time.Time     `json:"ended,omitzero"`
	Result     string        `json:"result,omitempty"`
	Error      string        `json:"error,omitempty"`
	// Stopped marks an agent the token budget stopped before it finished.
	Stopped bool `json:"stopped,omitempty"`
}

// RunError says why a run did not complete.
type RunError struct {
	Run    string
	Status cadre.Status
	Reason string
}

func (e *RunError) Error() string {
	return fmt.Sprintf("run %s %s: %s", e.Run, e.Status, e.Reason)
}

// ErrNoStore is returned by Resume when the engine has no Store.
var ErrNoStore = errors.New("local: the engine has no store, so there is no run to resume")

// Start begins a run of the root agent on task. The run goes on until the
// root finishes, ctx is cancelled (calls are aborted at once), Cancel is
// called (agents stop gracefully), or the run's timeout passes.
func (e *Engine) Start(ctx context.Context, task string) (*Run, error) {
	return e.StartID(ctx, NewRunID(), task)
}

// NewRunID returns a fresh run ID: the UTC time and a random suffix.
func NewRunID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// StartID is Start with a run ID chosen by the caller.
func (e *Engine) StartID(ctx context.Context, id, task string) (*Run, error) {
	if e.cfg.Models == nil {
		return nil, errors.New("local: Config.Models is nil: the engine needs a ModelSource to call models")
	}
	if strings.TrimSpace(task) == "" {
		return nil, errors.New("local: the task is empty: say what the agent should do")
	}
	r := e.newRun(id, task)
	if s := r.store; s != nil {
		// The lease first: no reader sees the run without an owner.
		if err := r.own(ctx); err != nil {
			r.abandon(err)
			return nil, fmt.Errorf("local: run %s: %w", id, err)
		}
		rec := &cadre.RunRecord{ID: id, Task: task, Status: cadre.StatusRunning, Model: e.cfg.RootModel, Started: time.Now().UTC(), Config: e.cfg.Settings}
		if err := s.CreateRun(ctx, rec); err != nil {
			r.abandon(err)
			return nil, fmt.Errorf("local: record run %s: %w", id, err)
		}
	}
	r.emit(cadre.Event{Type: cadre.EventRunStarted, Data: map[string]any{"task": task, "model": e.cfg.RootModel}})
	root, start, err := r.newRoot()
	if err == nil {
		r.created++
		err = r.create(root, start)
	}
	if err != nil {
		r.failStart(err)
		return nil, err
	}
	r.launch(root, nil)
	r.watch(ctx)
	return r, nil
}

// protocolFor resolves how an agent of def on the named model delegates:
// the run's protocol when it is forced, else the definition's, else the
// model's ability.
func (e *Engine) protocolFor(def *cadre.Definition, model string) cadre.Protocol {
	if p := e.cfg.Protocol; p == cadre.ProtocolText || p == cadre.ProtocolTools {
		return p
	}
	if def != nil && (def.Protocol == cadre.ProtocolText || def.Protocol == cadre.ProtocolTools) {
		return def.Protocol
	}
	if tc, ok := e.cfg.Models.(ToolCaller); ok && !tc.ToolCalling(model) {
		return cadre.ProtocolText
	}
	return cadre.ProtocolTools
}

// newRoot builds the root agent and its Start input.
func (r *Run) newRoot() (*agent, loop.Start, error) {
	e := r.e
	lim := e.cfg.Limits
	name := e.cfg.RootModel
	m, err := e.cfg.Models.Open(name)
	if err != nil {
		return nil, loop.Start{}, fmt.Errorf("open model %q: %w", name, err)
	}
	tools := e.cfg.Tools
	def := e.cfg.RootDefinition
	definition := "root"
	if def != nil {
		definition = def.Name
		tools = filterTools(tools, def)
	}
	userFacing := r.userFacing()
	protocol := e.protocolFor(def, name)
	// On the text protocol an agent may delegate to general subagents even
	// when there is no definition to name.
	delegate := lim.MaxDepth > 0 && (len(userFacing) > 0 || protocol == cadre.ProtocolText) && mayDelegate(def, true)
	var system string
	if def != nil {
		system = prompt.Child(prompt.ChildParams{Def: def, Soul: e.cfg.Soul, Identity: e.cfg.Identity, Defs: userFacing,
			CanDelegate: delegate, Protocol: protocol, Depth: 0, MaxDepth: lim.MaxDepth, AskCaller: def.AskCaller})
		if e.cfg.Guidance != "" {
			system += "\n\n" + e.cfg.Guidance
		}
	} else {
		system = prompt.Root(prompt.RootParams{Soul: e.cfg.Soul, Identity: e.cfg.Identity, Guidance: e.cfg.Guidance, Defs: userFacing,
			Protocol: protocol, CanDelegate: delegate, Depth: 0, MaxDepth: lim.MaxDepth})
	}
	cfg := loop.Config{
		ID: cadre.RootID, Depth: 0, MaxDepth: lim.MaxDepth, Definition: definition, Model: name, System: system,
		Tools: specs(tools), Delegate: delegate, Catalog: r.catalog(), Protocol: protocol,
		MaxTurns: lim.MaxTurns, Say: e.cfg.Say,
	}
	if def != nil {
		if def.MaxTurns > 0 {
			cfg.MaxTurns = def.MaxTurns
		}
		cfg.AskCaller = def.AskCaller
		cfg.MaxQuestions = e.maxQuestions(def)
		cfg.Temperature = def.Temperature
	}
	a := r.newAgent(cfg, nil, def, m, tools)
	start := loop.Start{Config: cfg, Task: r.task, Messages: []cadre.Message{{Role: cadre.RoleUser, Content: r.task}}}
	return a, start, nil
}
