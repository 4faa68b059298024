package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/agentdef"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/mcp"
	"github.com/cadre-ai/cadre/prompt"
	"github.com/cadre-ai/cadre/redact"
)

// mcpCloseTimeout bounds how long the end of a command waits for MCP
// servers to stop before killing them.
const mcpCloseTimeout = 10 * time.Second

func (a *app) newMCPCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Use MCP servers' tools, and serve cadre's agents over MCP",
		Long: `MCP servers configured under mcpServers in .cadre/config.yaml or
~/.cadre/config.yaml, or in the project's .mcp.json, give agents their tools,
named mcp__SERVER__TOOL. cadre mcp list shows them; cadre mcp serve offers
cadre's agents as tools to another MCP client.`,
	}
	cmd.AddCommand(a.newMCPListCmd(), a.newMCPServeCmd())
	return cmd
}

func (a *app) newMCPListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Connect to the configured MCP servers and list their tools",
		Long: `Start or reach every configured MCP server, list its tools, and stop it again.
A server that cannot be used is listed with the reason, and the exit status
is 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			return a.listMCP(cmd.Context(), cfg, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"servers": [...]} as JSON`)
	return cmd
}

// mcpToolInfo and mcpServerInfo are what cadre mcp list --json prints.
type mcpToolInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	ReadOnly    bool   `json:"read_only"`
}

type mcpServerInfo struct {
	Name      string        `json:"name"`
	Transport string        `json:"transport"`
	Target    string        `json:"target"`
	File      string        `json:"file"`
	Tools     []mcpToolInfo `json:"tools"`
	Error     string        `json:"error,omitempty"`
}

func (a *app) listMCP(ctx context.Context, cfg *config, asJSON bool) error {
	if len(cfg.MCPServers) == 0 {
		if asJSON {
			return agentsWriteJSON(a.io.Stdout, map[string]any{"servers": []mcpServerInfo{}})
		}
		fmt.Fprintln(a.io.Stdout, "No MCP servers are configured. Add them under mcpServers in .cadre/config.yaml, or in .mcp.json (see README.md, section MCP).")
		return nil
	}
	r := a.redactor(cfg)
	client, unusable := a.mcpClient(cfg, r)
	connected := map[string]mcp.ServerInfo{}
	if client != nil {
		defer closeMCP(client)
		_ = client.Connect(ctx) // each server's error is in its ServerInfo
		for _, s := range client.Servers() {
			connected[s.Name] = s
		}
	}
	var infos []mcpServerInfo
	failed := false
	for _, name := range slices.Sorted(maps.Keys(cfg.MCPServers)) {
		e := cfg.MCPServers[name]
		info := mcpServerInfo{Name: name, File: a.relPath(e.file), Tools: []mcpToolInfo{}}
		info.Transport, info.Target = "stdio", strings.Join(append([]string{e.Command}, e.Args...), " ")
		if e.URL != "" {
			info.Transport, info.Target = "http", e.URL
		}
		info.Target = r.String(info.Target)
		if err := unusable[name]; err != nil {
			info.Error = r.String(err.Error())
		} else if s := connected[name]; s.Err != nil {
			info.Error = r.String(s.Err.Error())
		} else {
			for _, t := range s.Tools {
				info.Tools = append(info.Tools, mcpToolInfo{Name: t.Spec().Name, Description: t.Spec().Description, ReadOnly: !cadre.Mutates(t)})
			}
		}
		failed = failed || info.Error != ""
		infos = append(infos, info)
	}
	if asJSON {
		if err := agentsWriteJSON(a.io.Stdout, map[string]any{"servers": infos}); err != nil {
			return err
		}
	} else {
		printMCPServers(a.io.Stdout, infos)
	}
	if failed {
		return &exitError{code: 1}
	}
	return nil
}

func printMCPServers(w io.Writer, infos []mcpServerInfo) {
	for i, s := range infos {
		if i > 0 {
			fmt.Fprintln(w)
		}
		// What a server said (its error, its tools' descriptions) is
		// drawn without control characters: they could redraw the
		// terminal.
		fmt.Fprintf(w, "%s (%s: %s; from %s)\n", sanitize(s.Name), s.Transport, sanitize(s.Target), sanitize(s.File))
		if s.Error != "" {
			fmt.Fprintf(w, "  not available: %s\n", sanitize(s.Error))
			continue
		}
		if len(s.Tools) == 0 {
			fmt.Fprintln(w, "  no tools")
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, t := range s.Tools {
			mode := "asks approval"
			if t.ReadOnly {
				mode = "read-only"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", sanitize(t.Name), mode, sanitize(clipText(t.Description, 81)))
		}
		tw.Flush()
	}
}

func (a *app) newMCPServeCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve cadre's agents to an MCP client over stdin and stdout",
		Long: `Serve cadre's agents as MCP tools over stdin and stdout, for another MCP
client (Claude Code, an editor) to delegate to: agent_NAME for each user-facing
agent definition, and run_task for the root agent. Each call starts a run
with the configuration of this directory and returns its answer; progress
goes to stderr.

There is no terminal to ask for approvals on: with the default --approve=ask,
writes and commands are denied. Pass --approve=all to allow them.`,
		Example: `  claude mcp add cadre -- cadre mcp serve --model openai:gpt-4o-mini --approve all`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.flagConfig(&f)
			if err != nil {
				return err
			}
			if cfg.Model == "" {
				return errNoModel
			}
			return a.serveMCP(cmd.Context(), cfg)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.model, "model", "m", "", "model as provider:model or a named model from the config (env CADRE_MODEL)")
	fl.StringVarP(&f.workspace, "workspace", "w", "", "folder the file and command tools are confined to (default: the current directory)")
	fl.StringVar(&f.approve, "approve", "", "approval of writes and commands: all or none (ask, the default, denies them: there is no terminal)")
	fl.StringArrayVar(&f.agentsDirs, "agents-dir", nil, "extra folder of agent definitions (repeatable)")
	fl.StringVar(&f.store, "store", "", "run store: a SQLite file, postgres://…, or none (default .cadre/cadre.db)")
	fl.DurationVar(&f.timeout, "timeout", 0, "time limit of each run, such as 10m (default none)")
	return cmd
}

// serveMCP serves the agents of cfg over stdin and stdout until the client
// goes away or the process is interrupted.
func (a *app) serveMCP(ctx context.Context, cfg *config) error {
	opts, err := a.loadOptions(cfg, nil, false)
	if err != nil {
		return err
	}
	cat, diags := agentdef.Load(opts)
	for _, d := range diags {
		if d.Severity == agentdef.SeverityError || d.Severity == agentdef.SeverityWarning {
			fmt.Fprintf(a.io.Stderr, "cadre: %s\n", d.String())
		}
	}
	srv := mcp.NewAgentServer(mcp.AgentServerConfig{
		Name: "cadre", Version: Version, Agents: cat.UserFacing(),
		Run: func(ctx context.Context, agent, task, taskContext string) (string, error) {
			return a.serveRun(ctx, cfg, agent, task, taskContext)
		},
	})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if a.io.Interrupts != nil {
		done := make(chan struct{})
		defer func() { cancel(); <-done }()
		go func() {
			defer close(done)
			select {
			case <-a.io.Interrupts:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	fmt.Fprintf(a.io.Stderr, "cadre: serving %s over MCP on stdin and stdout\n", strings.Join(srv.ToolNames(), ", "))
	if err := srv.ServeStdio(ctx, a.io.Stdin, a.io.Stdout); err != nil && ctx.Err() == nil {
		return fmt.Errorf("serve MCP: %w", err)
	}
	return nil
}

// serveRun runs one task for an MCP client: as a run of cadre run would,
// with the configured store, but with progress as plain lines on stderr
// (stdout carries the protocol) and no one to ask questions or approvals.
func (a *app) serveRun(ctx context.Context, base *config, agent, task, taskContext string) (string, error) {
	cfg := *base
	if agent != "" {
		cfg.Agent = agent
	}
	w, err := a.wire(ctx, &cfg, &console{w: a.io.Stderr})
	if err != nil {
		return "", err
	}
	defer w.close()
	out := newRenderer(a.io.Stderr, false)
	var eng cadre.Engine = local.New(w.engine)
	id, err := eng.Start(ctx, prompt.UserMessage(task, taskContext), cadre.StartOptions{})
	if err != nil {
		return "", err
	}
	defer abortWhenDone(ctx, eng, id)()
	progress := mcp.ProgressFrom(ctx)
	shown := showEvents(eng, w.store, id, w.redacted(out.handle, func(ev cadre.Event) {
		if msg := progressMessage(ev); msg != "" {
			progress(msg)
		}
	}))
	res, err := eng.Wait(context.Background(), id)
	<-shown
	out.close()
	if err != nil {
		return "", err
	}
	return res.Answer, nil
}

// mcpClient builds a client for the usable servers of cfg, which hides the
// secrets r knows in their errors and results. unusable gives the reason
// for each server left out: an entry of .mcp.json cadre does not support,
// or a variable its values need that is not set. client is nil when no
// server is usable.
func (a *app) mcpClient(cfg *config, r *redact.Redactor) (client *mcp.Client, unusable map[string]error) {
	servers := map[string]mcp.ServerConfig{}
	unusable = map[string]error{}
	for name, e := range cfg.MCPServers {
		sc, err := a.mcpServer(name, e)
		if err != nil {
			unusable[name] = err
			continue
		}
		servers[name] = sc
	}
	if len(servers) == 0 {
		return nil, unusable
	}
	var environ []string
	if a.io.Environ != nil {
		environ = a.io.Environ()
	}
	return mcp.NewClient(mcp.Config{Servers: servers, Name: "cadre", Version: Version, Environ: environ, Redactor: r}), unusable
}

// maxMCPTimeout is the largest timeoutSeconds of an mcpServers entry: a
// week.
const maxMCPTimeout = 7 * 24 * 3600

// mcpServer turns one mcpServers entry into the mcp package's config:
// variables expanded, the working directory resolved against the project.
func (a *app) mcpServer(name string, e mcpServerConfig) (mcp.ServerConfig, error) {
	if e.problem != "" {
		return mcp.ServerConfig{}, errors.New(e.problem)
	}
	var firstErr error
	expand := func(s string) string {
		out, err := expandVars(s, a.io.Getenv)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("mcp server %q (%s): %w", name, a.relPath(e.file), err)
		}
		return out
	}
	expandMap := func(m map[string]string) map[string]string {
		if m == nil {
			return nil
		}
		out := make(map[string]string, len(m))
		for k, v := range m {
			out[k] = expand(v)
		}
		return out
	}
	sc := mcp.ServerConfig{Command: expand(e.Command), Env: expandMap(e.Env), EnvPassthrough: e.EnvPassthrough, URL: expand(e.URL), Headers: expandMap(e.Headers),
		CallTimeout: time.Duration(e.TimeoutSeconds) * time.Second}
	if e.TimeoutSeconds < 0 || e.TimeoutSeconds > maxMCPTimeout {
		return mcp.ServerConfig{}, fmt.Errorf("mcp server %q (%s): timeoutSeconds is %d: give the seconds a call of its tools may take, 1 to %d (the default is %d)",
			name, a.relPath(e.file), e.TimeoutSeconds, maxMCPTimeout, int(mcp.DefaultCallTimeout/time.Second))
	}
	for _, arg := range e.Args {
		sc.Args = append(sc.Args, expand(arg))
	}
	if e.Command != "" {
		proj := a.projectDir()
		sc.Dir = proj
		if e.Cwd != "" {
			sc.Dir = absUnder(proj, a.expandHome(expand(e.Cwd)))
		}
	}
	return sc, firstErr
}

// expandVars replaces ${VAR} and ${VAR:-default} in s, as .mcp.json files
// do. A VAR that is empty or not set, without a default, is an error
// naming it.
func expandVars(s string, getenv func(string) string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		name, def, hasDef := strings.Cut(s[i+2:i+j], ":-")
		v := getenv(name)
		if v == "" && hasDef {
			v = def
		}
		if v == "" && !hasDef {
			return "", fmt.Errorf("${%s} is not set; set it in the environment, or give a default as ${%s:-value}", name, name)
		}
		b.WriteString(v)
		s = s[i+j+1:]
	}
}

// mcpTools connects to the MCP servers of cfg and returns their tools,
// keeping the client in w to be closed with it. A server that cannot be
// used is a warning on stderr: the run goes on without its tools.
func (a *app) mcpTools(ctx context.Context, cfg *config, w *wiring) []cadre.Tool {
	if len(cfg.MCPServers) == 0 {
		return nil
	}
	client, unusable := a.mcpClient(cfg, w.redact)
	for _, name := range slices.Sorted(maps.Keys(unusable)) {
		fmt.Fprintf(a.io.Stderr, "cadre: warning: %v; the run goes on without its tools\n", unusable[name])
	}
	if client == nil {
		return nil
	}
	w.mcpClient = client
	if err := client.Connect(ctx); err != nil {
		for _, s := range client.Servers() {
			if s.Err != nil {
				fmt.Fprintf(a.io.Stderr, "cadre: warning: %v; the run goes on without its tools\n", s.Err)
			}
		}
	}
	return client.Tools()
}

// closeMCP stops the servers of c, if any, killing those that take too
// long.
func closeMCP(c *mcp.Client) {
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), mcpCloseTimeout)
	defer cancel()
	_ = c.Close(ctx)
}

// progressMessage is what an MCP client asking for progress is told of an
// event: agents starting and ending, and reports reaching their parents.
func progressMessage(ev cadre.Event) string {
	switch d := ev.Data.(type) {
	case cadre.AgentSpawned:
		return fmt.Sprintf("agent %s started: %s", ev.Agent, clipText(d.Task, 120))
	case cadre.AgentReported:
		return fmt.Sprintf("%s received the report of %s", ev.Agent, d.Child)
	case cadre.AgentFailed:
		return fmt.Sprintf("agent %s failed: %s", ev.Agent, clipText(d.Error, 120))
	case cadre.AgentCompleted:
		if ev.Agent != cadre.RootID {
			return fmt.Sprintf("agent %s done", ev.Agent)
		}
	}
	return ""
}
