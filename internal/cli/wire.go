package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/agentdef"
	"github.com/cadre-ai/cadre/internal/safefile"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/mcp"
	"github.com/cadre-ai/cadre/redact"
	"github.com/cadre-ai/cadre/tool"
	"github.com/cadre-ai/cadre/tool/builtin"
)

// wiring is everything a run needs, built from the merged configuration.
type wiring struct {
	engine    local.Config
	models    *models
	store     cadre.Store
	workspace string
	ws        tool.Workspace // its root held open for the file tools
	// mcpClient holds the MCP servers whose tools are in engine.Tools.
	mcpClient *mcp.Client
	// redact hides the secrets of the configuration (see redact.go).
	redact *redact.Redactor
	// approver is the approval policy of the run's writes and commands.
	approver *tool.Approver
	// telemetry, when on, is flushed by close.
	telemetry *telemetrySetup
}

// redacted returns one handler of the run's events that passes them to
// hs, in order, with their secrets hidden.
func (w *wiring) redacted(hs ...func(cadre.Event)) func(cadre.Event) {
	return redactHandler(w.redact, func(ev cadre.Event) {
		for _, h := range hs {
			h(ev)
		}
	})
}

func (w *wiring) close() {
	w.telemetry.shutdown()
	closeMCP(w.mcpClient)
	if w.store != nil {
		w.store.Close()
	}
	w.ws.Close()
}

// runSettings is what a run's record keeps of its configuration, so that
// cadre resume carries it on as it was started.
type runSettings struct {
	Model      string       `json:"model"`
	Agent      string       `json:"agent,omitempty"`
	Workspace  string       `json:"workspace"`
	Protocol   string       `json:"protocol,omitempty"`
	Report     string       `json:"report,omitempty"`
	Say        bool         `json:"say,omitempty"`
	Strict     bool         `json:"strict,omitempty"`
	AgentsDirs []string     `json:"agents_dirs,omitempty"`
	PluginDirs []string     `json:"plugin_dirs,omitempty"`
	Limits     storedLimits `json:"limits"`
	// Mark is the user's mark on the settings (see runmark.go).
	Mark string `json:"mark,omitempty"`
}

// apply puts the settings of a recorded run over a configuration.
func (s *runSettings) apply(c *config) {
	c.Model, c.Agent, c.Workspace = s.Model, s.Agent, s.Workspace
	c.Protocol, c.Report = s.Protocol, s.Report
	c.Say, c.Strict = &s.Say, &s.Strict
	c.AgentsDirs = s.AgentsDirs
	c.Plugins = s.PluginDirs
	c.Limits = s.Limits.limitsConfig
}

// wire builds the engine configuration: models, agent definitions, tools
// with their approval policy, the store, the personality files, and how
// questions and new agents reach the user.
func (a *app) wire(ctx context.Context, cfg *config, con *console) (*wiring, error) {
	wired := false // the wiring is returned, and closes what it holds
	wd, err := a.wd()
	if err != nil {
		return nil, err
	}
	w := &wiring{models: newModels(cfg, a.io.Getenv), redact: a.redactor(cfg)}
	w.models.redact = w.redact
	w.models.scripted = a.scriptedAllowed(cfg, w.models)
	log, err := a.logger()
	if err != nil {
		return nil, err
	}
	if a.io.Getenv("CADRE_LOG") != "" {
		w.models.logger = log
		w.engine.Logger = w.models.logger
	}
	root := cfg.Workspace
	if root == "" {
		root = wd
	}
	ws, err := tool.NewWorkspace(absUnder(wd, a.expandHome(root)))
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w (give an existing folder with --workspace)", root, err)
	}
	w.workspace, w.ws = ws.Root, ws
	defer func() {
		if !wired {
			ws.Close()
		}
	}()

	mode := tool.DefaultApprovalMode
	if cfg.Approve != "" {
		if mode, err = tool.ParseApprovalMode(cfg.Approve); err != nil {
			return nil, err
		}
	}
	approver := &tool.Approver{Mode: mode}
	w.approver = approver
	if con.canAsk() {
		approver.Prompt = promptApproval(con)
	}
	w.engine.Runner = redactRunner{next: &tool.Executor{Approver: approver}, r: w.redact}
	w.engine.Workspace = w.workspace
	topts, warning, err := a.commandOptions(ctx, cfg)
	if err != nil {
		return nil, err
	}
	// With --approve=none no command runs: there is nothing to warn of.
	if warning != "" && mode != tool.ApproveNone {
		fmt.Fprintf(a.io.Stderr, "cadre: %s\n", warning)
		w.engine.Warnings = append(w.engine.Warnings, warning)
	}
	topts.FetchAllow, err = cfg.fetchRules()
	if err != nil {
		return nil, err
	}
	topts.FetchAllowWhere = "webFetch.allow in .cadre/config.yaml"
	if topts.WebSearch, err = cfg.searchBackend(a.io.Getenv); err != nil {
		return nil, err
	}
	topts.AllowHardLinks = cfg.FileTools.AllowHardLinks != nil && *cfg.FileTools.AllowHardLinks
	// One set of tools for every agent: edits of one file take turns.
	w.engine.Tools = builtin.New(ws, topts)

	// Agent definitions: diagnostics are shown, never fatal.
	opts, err := a.loadOptions(cfg, nil, false)
	if err != nil {
		return nil, err
	}
	if err := checkAgentsDirs(cfg.AgentsDirs, opts.ExtraDirs); err != nil {
		return nil, err
	}
	cat, diags := agentdef.Load(opts)
	for _, d := range diags {
		if d.Severity == agentdef.SeverityError || d.Severity == agentdef.SeverityWarning {
			fmt.Fprintf(a.io.Stderr, "cadre: %s\n", d.String())
		}
	}
	w.engine.Definitions = cat.All()
	if sk := loadSkills(a.io.Stderr, opts, cat, w.engine.Definitions); sk != nil {
		w.engine.Tools = append(w.engine.Tools, sk)
	}
	if cfg.Agent != "" {
		def, ok := cat.Get(cfg.Agent)
		if !ok {
			return nil, fmt.Errorf("--agent %s: there is no agent definition of that name; the agents are: %s (see cadre agents list)", cfg.Agent, strings.Join(cat.Names(), ", "))
		}
		w.engine.RootDefinition = def
	}

	if _, err := w.models.resolve(cfg.Model); err != nil {
		return nil, fmt.Errorf("model %q: %w", cfg.Model, err)
	}
	if env := w.models.missingKey(cfg.Model); env != "" {
		return nil, errMissingKey(cfg.Model, env)
	}
	w.engine.Models = w.models
	w.engine.RootModel = cfg.Model
	w.engine.Limits = cfg.limits()
	w.engine.LeaseTTL, _ = time.ParseDuration(cfg.LeaseTTL) // checked when read; empty is the default

	// auto is resolved per agent, from its definition and its model.
	w.engine.Protocol = cadre.Protocol(cfg.Protocol)
	w.engine.Report = cadre.ReportMode(cfg.Report)
	w.engine.Say = cfg.Say != nil && *cfg.Say

	proj := a.projectDir()
	read := func(name string) string {
		file := filepath.Join(proj, ".cadre", name)
		b, err := safefile.ReadRegular(file, maxConfigFile)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				fmt.Fprintf(a.errOut(), "cadre: warning: %s is not used: %v\n", a.relPath(file), fileError(file, err))
			}
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	w.engine.Soul, w.engine.Identity, w.engine.Guidance = read("SOUL.md"), read("IDENTITY.md"), read("AGENTS.md")

	if con.canAsk() {
		w.engine.AskUser = func(ctx context.Context, agent cadre.AgentID, question string) (string, error) {
			return con.ask(ctx, fmt.Sprintf("\n%s asks: %s\nYour answer: ", agent, question))
		}
	}
	w.engine.CreateAgent = a.agentCreator(approver, proj)

	settings := runSettings{
		Model: cfg.Model, Agent: cfg.Agent, Workspace: w.workspace, Protocol: cfg.Protocol, Report: cfg.Report,
		Say: w.engine.Say, Strict: cfg.Strict != nil && *cfg.Strict, AgentsDirs: opts.ExtraDirs, PluginDirs: opts.PluginDirs, Limits: storedLimits{cfg.Limits},
	}
	a.mark(&settings)
	if w.engine.Settings, err = json.Marshal(settings); err != nil {
		return nil, err
	}

	if loc := a.storePath(cfg); loc != "none" {
		if !isPostgres(loc) {
			if err := os.MkdirAll(filepath.Dir(loc), privateDir); err != nil {
				return nil, fmt.Errorf("create the folder of the run store %s: %w (choose another with --store, or --store none)", loc, err)
			}
			if cfg.Store == "" {
				keepOutOfGit(filepath.Dir(loc))
			}
		}
		s, err := openStore(ctx, loc, a.storeWhere(loc), log)
		if err != nil {
			return nil, err
		}
		w.store = &redactStore{Store: s, r: w.redact}
	}
	w.engine.Store = w.store
	w.engine.Prices = w.models.prices(cfg.Prices)
	if w.telemetry, err = a.setupTelemetry(ctx, cfg, w.models); err != nil {
		if w.store != nil {
			w.store.Close()
		}
		return nil, err
	}
	if o := w.telemetry; o != nil {
		w.engine.Observer = o.obs
		w.engine.Models = o.obs.Models(w.engine.Models)
		w.engine.Runner = o.obs.Runner(w.engine.Runner)
	}
	// MCP servers' tools join the built-in ones last, when nothing can
	// fail any more, so no server is left running by an error above.
	w.engine.Tools = append(w.engine.Tools, a.mcpTools(ctx, cfg, w)...)
	wired = true
	return w, nil
}

// keepOutOfGit writes a .gitignore for the default run store in dir, the
// project's .cadre folder, unless one is there: the store is the user's
// history, not the project's source.
func keepOutOfGit(dir string) {
	path := filepath.Join(dir, ".gitignore")
	if _, err := os.Stat(path); err == nil {
		return
	}
	_ = os.WriteFile(path, []byte("# cadre's run store: the history of runs on this machine.\ncadre.db\ncadre.db-*\n"), privateFile)
}

// generatedDir is where agentCreator saves definitions, in the project.
var generatedDir = filepath.Join(".cadre", "agents", "generated")

// agentCreator asks for approval of a definition an agent wrote
// (agent_create) and saves it in the project's generatedDir as NAME.md,
// where later runs load it from like any project agent. No folder of
// generatedDir may be a symbolic link (see noLinksTo): a repository's
// .cadre/agents/generated linked to ~/.claude/agents had the agent saved
// among the user's own, loaded by every project, while the approval named
// the project's folder.
func (a *app) agentCreator(approver *tool.Approver, project string) func(context.Context, cadre.AgentID, *cadre.Definition) (string, error) {
	dir := filepath.Join(project, generatedDir)
	return func(ctx context.Context, agent cadre.AgentID, def *cadre.Definition) (string, error) {
		tools := "its caller's tools"
		if def.Tools != nil {
			tools = "tools " + strings.Join(def.Tools, ", ")
			if len(def.Tools) == 0 {
				tools = "no tools"
			}
		}
		summary := fmt.Sprintf("create the agent %s (%s; %s), saved in %s", def.Name, oneLine(def.Description), tools, a.relPath(dir))
		ok, denial, err := approver.Approve(ctx, tool.ApprovalRequest{Agent: agent, Tool: "agent_create", Summary: summary})
		if err != nil {
			return "", fmt.Errorf("no approval could be had: %w", err)
		}
		if !ok {
			return "", errors.New(denial)
		}
		path := filepath.Join(dir, def.Name+".md")
		data, err := definitionFile(def)
		if err != nil {
			return "", err
		}
		if err := a.noLinksTo(project, dir); err != nil {
			return "", err
		}
		// The folders are made and the file opened through the project as
		// a root: whatever changes on the way after the check, nothing is
		// written outside the project.
		root, err := os.OpenRoot(project)
		if err != nil {
			return "", err
		}
		defer root.Close()
		if err := root.MkdirAll(generatedDir, privateDir); err != nil {
			return "", fmt.Errorf("create %s: %w", a.relPath(dir), err)
		}
		f, err := root.OpenFile(filepath.Join(generatedDir, def.Name+".md"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, privateFile)
		if errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("%s already exists; choose another name", a.relPath(path))
		}
		if err != nil {
			return "", err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return "", err
		}
		if err := f.Close(); err != nil {
			return "", err
		}
		return a.relPath(path), nil
	}
}

// noLinksTo refuses when a folder on the way from project to dir (one of
// its folders, project excluded) is a symbolic link.
func (a *app) noLinksTo(project, dir string) error {
	for p := dir; p != project && len(p) > len(project); p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		to, _ := os.Readlink(p)
		return fmt.Errorf("%s is a symbolic link (to %s): cadre does not save an agent through it, since the agent would be saved elsewhere than said; make it a folder", a.relPath(p), to)
	}
	return nil
}
