package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/model"
	"github.com/cadre-ai/cadre/server"
	"github.com/cadre-ai/cadre/tool"
)

// engineSet is the engine cadre serve gives its server: each run is
// started by a local engine of its own, configured with the settings its
// request asked for, and the set sends every call about a run to the
// engine that holds it, or, once the run has ended (or for a run of
// another process), to a base engine that reads the store.
//
// The set owns one goroutine per run it started, which waits for the run's
// end and then forgets its engine; close cancels the runs still going and
// waits for them.
type engineSet struct {
	base *local.Engine
	keep bool // without a store, ended runs are kept in their engines

	ctx    context.Context // cancelled by close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	runs map[string]*local.Engine
}

var (
	_ cadre.Engine   = (*engineSet)(nil)
	_ cadre.Answerer = (*engineSet)(nil)
)

func newEngineSet(base local.Config) *engineSet {
	ctx, cancel := context.WithCancel(context.Background())
	return &engineSet{base: local.New(base), keep: base.Store == nil, ctx: ctx, cancel: cancel, runs: map[string]*local.Engine{}}
}

// start starts a run on its own engine.
func (s *engineSet) start(ctx context.Context, cfg local.Config, id, task string) (string, error) {
	eng := local.New(cfg)
	s.mu.Lock()
	s.runs[id] = eng
	s.mu.Unlock()
	if _, err := eng.Start(ctx, task, cadre.StartOptions{ID: id}); err != nil {
		s.mu.Lock()
		delete(s.runs, id)
		s.mu.Unlock()
		return "", err
	}
	s.wg.Go(func() {
		// A nil result means the set is closing; it waits for the run.
		if res, _ := eng.Wait(s.ctx, id); s.keep || res == nil {
			return
		}
		s.mu.Lock()
		delete(s.runs, id)
		s.mu.Unlock()
	})
	return id, nil
}

// of returns the engine that holds the run.
func (s *engineSet) of(run string) *local.Engine {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.runs[run]; e != nil {
		return e
	}
	return s.base
}

// close cancels the runs still going, waits for them to end, and stops
// the set's goroutines.
func (s *engineSet) close(reason string) {
	s.mu.Lock()
	live := make(map[string]*local.Engine, len(s.runs))
	for id, e := range s.runs {
		live[id] = e
	}
	s.mu.Unlock()
	for id, e := range live {
		if e.Cancel(context.Background(), id, cadre.CancelOptions{Reason: reason}) == nil {
			_, _ = e.Wait(context.Background(), id)
		}
	}
	s.cancel()
	s.wg.Wait()
}

// Start starts a run with the base engine's settings.
func (s *engineSet) Start(ctx context.Context, task string, opts cadre.StartOptions) (string, error) {
	return s.base.Start(ctx, task, opts)
}

func (s *engineSet) Resume(ctx context.Context, run string) error { return s.of(run).Resume(ctx, run) }

func (s *engineSet) Wait(ctx context.Context, run string) (*cadre.Result, error) {
	return s.of(run).Wait(ctx, run)
}

func (s *engineSet) Cancel(ctx context.Context, run string, opts cadre.CancelOptions) error {
	return s.of(run).Cancel(ctx, run, opts)
}

func (s *engineSet) Tree(ctx context.Context, run string) (*cadre.Tree, error) {
	return s.of(run).Tree(ctx, run)
}

func (s *engineSet) Events(ctx context.Context, run string) iter.Seq2[cadre.Event, error] {
	return s.of(run).Events(ctx, run)
}

func (s *engineSet) Answer(ctx context.Context, run string, agent cadre.AgentID, text string) error {
	return s.of(run).Answer(ctx, run, agent, text)
}

// runStarter returns the server's Start: it puts the settings of a request
// over the configuration cadre serve was started with, gives the run an
// approval policy whose questions wait for the page or the API, and
// starts it on an engine of its own. The server's settings are a ceiling:
// a request may ask for a stricter approval mode and smaller limits, never
// for more (see withinServer).
func (a *app) runStarter(cfg *config, w *wiring, set *engineSet, approvals *server.Approvals) func(context.Context, server.RunRequest) (string, error) {
	// What the server was started with, read once: the settings each
	// run's record starts from (so that cadre resume carries it on as it
	// was started), the approval mode, and whether it plays a scripted
	// model itself.
	var base runSettings
	baseErr := json.Unmarshal(w.engine.Settings, &base)
	serverMode, modeErr := tool.ParseApprovalMode(cfg.Approve)
	own, _ := w.models.resolve(cfg.Model)
	ownScripted := providerOf(own) == "scripted"
	return func(ctx context.Context, req server.RunRequest) (string, error) {
		ecfg := w.engine
		if baseErr != nil {
			return "", fmt.Errorf("read the server's settings: %w", baseErr)
		}
		if modeErr != nil {
			return "", fmt.Errorf("the server's approval mode: %w", modeErr)
		}
		settings := base
		mode, err := tool.ParseApprovalMode(cmpOr(req.Approve, string(serverMode)))
		if err != nil {
			return "", &server.RequestError{Msg: err.Error()}
		}
		lim, err := req.Limits.Limits()
		if err != nil {
			return "", err
		}
		if msg := withinServer(serverMode, w.engine.Limits, mode, lim); msg != "" {
			return "", &server.RequestError{Msg: msg, Status: http.StatusForbidden}
		}
		if req.Model != "" {
			name, err := w.models.resolve(req.Model)
			if err != nil {
				return "", &server.RequestError{Msg: fmt.Sprintf("model %q: %v", req.Model, err)}
			}
			// A scripted model plays a file named by the request: only a
			// server playing one itself (a test) takes another.
			if providerOf(name) == "scripted" && !ownScripted {
				return "", &server.RequestError{Msg: fmt.Sprintf("model %q: a run started through the API cannot use a scripted model, which reads a file of this machine", req.Model), Status: http.StatusForbidden}
			}
			ecfg.RootModel, settings.Model = req.Model, req.Model
		}
		if req.Agent != "" {
			var names []string
			ecfg.RootDefinition = nil
			for _, d := range ecfg.Definitions {
				names = append(names, d.Name)
				if d.Name == req.Agent {
					ecfg.RootDefinition = d
				}
			}
			if ecfg.RootDefinition == nil {
				return "", &server.RequestError{Msg: fmt.Sprintf("there is no agent definition %q; the agents are: %s", req.Agent, strings.Join(names, ", "))}
			}
			settings.Agent = req.Agent
		}
		l := &settings.Limits.limitsConfig
		for _, o := range []struct {
			to   *int
			from int
		}{{&l.MaxDepth, lim.MaxDepth}, {&l.MaxConcurrent, lim.MaxConcurrent}, {&l.MaxAgents, lim.MaxAgents}, {&l.MaxTurns, lim.MaxTurns}} {
			if o.from != 0 {
				*o.to = o.from
			}
		}
		if lim.BudgetTokens != 0 {
			l.BudgetTokens = lim.BudgetTokens
		}
		if lim.Timeout != 0 {
			l.Timeout, l.TimeoutSeconds = lim.Timeout, 0
		}
		ecfg.Limits = (&config{fileConfig: fileConfig{Limits: *l}}).limits()

		id := local.NewRunID()
		approver := &tool.Approver{Mode: mode, Prompt: approvals.Prompt(id)}
		ecfg.Runner = redactRunner{next: &tool.Executor{Approver: approver}, r: w.redact}
		ecfg.CreateAgent = a.agentCreator(approver, a.projectDir())
		ecfg.AskUser = local.AwaitAnswer
		a.mark(&settings) // the request changed them: marked again
		if ecfg.Settings, err = json.Marshal(settings); err != nil {
			return "", err
		}
		return set.start(ctx, ecfg, id, req.Task)
	}
}

// leniency orders the approval modes from the strictest.
var leniency = map[tool.ApprovalMode]int{tool.ApproveNone: 0, tool.ApproveAsk: 1, tool.ApproveAll: 2}

// withinServer checks what a request asks for against the server's settings,
// which it may tighten but not loosen. It returns "" when the request
// stays within them, else what it asked for beyond them and what the
// server allows.
func withinServer(serverMode tool.ApprovalMode, serverLimits cadre.Limits, mode tool.ApprovalMode, req cadre.Limits) string {
	var over []string
	if leniency[mode] > leniency[serverMode] {
		may := map[tool.ApprovalMode]string{tool.ApproveNone: "none", tool.ApproveAsk: "ask or none"}[serverMode]
		over = append(over, fmt.Sprintf("approve %q: the server's approval mode is %s, so a run may use %s", mode, serverMode, may))
	}
	srv := serverLimits.WithDefaults()
	for _, c := range []struct {
		name     string
		req, max int
	}{
		{"max_depth", req.MaxDepth, srv.MaxDepth},
		{"max_concurrent", req.MaxConcurrent, srv.MaxConcurrent},
		{"max_agents", req.MaxAgents, srv.MaxAgents},
		{"max_turns", req.MaxTurns, srv.MaxTurns},
	} {
		switch {
		case c.req == 0:
		case c.max < 0:
			over = append(over, fmt.Sprintf("limits.%s %d: the server allows no subagents", c.name, c.req))
		case c.req > c.max:
			over = append(over, fmt.Sprintf("limits.%s %d: the server allows at most %d", c.name, c.req, c.max))
		}
	}
	if b := req.BudgetTokens; b != 0 && srv.BudgetTokens > 0 && (b < 0 || b > srv.BudgetTokens) {
		asked := strconv.FormatInt(b, 10)
		if b < 0 {
			asked = "-1 (no budget)"
		}
		over = append(over, fmt.Sprintf("limits.budget_tokens %s: the server allows at most %d", asked, srv.BudgetTokens))
	}
	if t := req.Timeout; t != 0 && srv.Timeout > 0 && t > srv.Timeout {
		over = append(over, fmt.Sprintf("limits.timeout %s: the server allows at most %s", t, srv.Timeout))
	}
	if len(over) == 0 {
		return ""
	}
	return "this server's settings (the flags and config it was started with) are the most a run may ask for; " +
		strings.Join(over, "; ") + ". Ask for less, or leave the field out for the server's setting"
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// providerOf is the provider a model name names, as the models open it;
// "" for a name that is not provider:model.
func providerOf(name string) string {
	prov, _, err := model.ParseName(name)
	if err != nil {
		return ""
	}
	return prov
}
