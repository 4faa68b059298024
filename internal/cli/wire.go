package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/agentdef"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/postgres"
	"github.com/cadre-ai/cadre/sqlite"
	"github.com/cadre-ai/cadre/tool"
	"github.com/cadre-ai/cadre/tool/builtin"
)

// wiring is everything a run needs, built from the merged configuration.
type wiring struct {
	engine local.Config
	models *models
	store  cadre.Store
	// storeLocation is where the store lives, as the user would name it.
	storeLocation string
	workspace     string
}

func (w *wiring) close() {
	if w.store != nil {
		w.store.Close()
	}
}

// wire builds the engine configuration: models, agent definitions, tools
// with their approval policy, the store and the personality files.
func (a *app) wire(ctx context.Context, cfg *config) (*wiring, error) {
	wd, err := a.wd()
	if err != nil {
		return nil, err
	}
	w := &wiring{models: newModels(cfg, a.io.Getenv)}
	root := cfg.Workspace
	if root == "" {
		root = wd
	}
	ws, err := tool.NewWorkspace(absUnder(wd, a.expandHome(root)))
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w (give an existing folder with --workspace)", root, err)
	}
	w.workspace = ws.Root

	mode := tool.DefaultApprovalMode
	if cfg.Approve != "" {
		if mode, err = tool.ParseApprovalMode(cfg.Approve); err != nil {
			return nil, err
		}
	}
	approver := &tool.Approver{Mode: mode, Prompt: a.approvalPrompt()}
	w.engine.Runner = &tool.Executor{Approver: approver}
	w.engine.Tools = builtin.New(ws, builtin.Options{})

	// Agent definitions: diagnostics are shown, never fatal.
	opts := agentdef.LoadOptions{
		Dir:        wd,
		Home:       a.home(),
		Strict:     cfg.Strict != nil && *cfg.Strict,
		MCPServers: slices.Sorted(maps.Keys(cfg.MCPServers)),
		Models:     slices.Sorted(maps.Keys(cfg.Models)),
	}
	for _, d := range cfg.AgentsDirs {
		opts.ExtraDirs = append(opts.ExtraDirs, absUnder(wd, a.expandHome(d)))
	}
	cat, diags := agentdef.Load(opts)
	for _, d := range diags {
		if d.Severity == agentdef.SeverityError || d.Severity == agentdef.SeverityWarning {
			fmt.Fprintf(a.io.Stderr, "cadre: %s\n", d.String())
		}
	}
	w.engine.Definitions = cat.All()

	if _, err := w.models.resolve(cfg.Model); err != nil {
		return nil, fmt.Errorf("model %q: %w", cfg.Model, err)
	}
	w.engine.Models = w.models
	w.engine.RootModel = cfg.Model
	w.engine.Limits = cfg.limits()

	switch cadre.Protocol(cfg.Protocol) {
	case cadre.ProtocolText:
		w.engine.Protocol = cadre.ProtocolText
	case cadre.ProtocolTools:
		w.engine.Protocol = cadre.ProtocolTools
	default:
		w.engine.Protocol = cadre.ProtocolTools
		if !w.models.toolCalling(cfg.Model) {
			w.engine.Protocol = cadre.ProtocolText
		}
	}
	w.engine.Report = cadre.ReportMode(cfg.Report)
	w.engine.Say = cfg.Say != nil && *cfg.Say

	proj := a.projectDir()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(proj, ".cadre", name))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	w.engine.Soul, w.engine.Identity, w.engine.Guidance = read("SOUL.md"), read("IDENTITY.md"), read("AGENTS.md")

	loc := a.storePath(cfg)
	w.storeLocation = loc
	switch {
	case loc == "none":
	case strings.HasPrefix(loc, "postgres://") || strings.HasPrefix(loc, "postgresql://"):
		s, err := postgres.Open(ctx, loc)
		if err != nil {
			return nil, fmt.Errorf("open the run store: %w", err)
		}
		w.store = s
	default:
		if err := os.MkdirAll(filepath.Dir(loc), 0o755); err != nil {
			return nil, fmt.Errorf("create the folder of the run store %s: %w (choose another with --store, or --store none)", loc, err)
		}
		s, err := sqlite.Open(ctx, loc)
		if err != nil {
			return nil, fmt.Errorf("open the run store %s: %w", loc, err)
		}
		w.store = s
	}
	w.engine.Store = w.store
	return w, nil
}

// approvalPrompt asks the user on the terminal whether a write or command
// may run. It returns nil when stdin or stderr is not a terminal: then
// there is no one to ask and such calls are denied.
func (a *app) approvalPrompt() func(context.Context, tool.ApprovalRequest) (bool, error) {
	in, ok := a.io.Stdin.(*os.File)
	if !ok || !isTerminal(a.io.Stderr) || !isTerminal(in) {
		return nil
	}
	rd := bufio.NewReader(in)
	return func(ctx context.Context, req tool.ApprovalRequest) (bool, error) {
		fmt.Fprintf(a.io.Stderr, "\n%s wants to run %s: %s\nAllow? [y/N] ", req.Agent, req.Tool, req.Summary)
		line, err := rd.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return false, err
		}
		ans := strings.ToLower(strings.TrimSpace(line))
		return ans == "y" || ans == "yes", nil
	}
}
