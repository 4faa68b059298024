package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/cadre-ai/cadre"
)

// runFlags are the flags of cadre run (and cadre demo).
type runFlags struct {
	model      string
	json       bool
	workspace  string
	approve    string
	agentsDirs []string
	pluginDirs []string
	strict     bool
	protocol   string
	report     string
	say        bool
	store      string
	noTree     bool
	maxDepth   int
	maxConc    int
	maxAgents  int
	budget     int64
	maxTurns   int
	timeout    time.Duration
	agent      string
	resume     bool
	serve      string // address of the run's page (--serve)
	// set tells the flags given on the command line.
	set      interface{ Changed(name string) bool }
	temporal temporalFlags
}

func (f *runFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	f.set = fl
	fl.StringVarP(&f.model, "model", "m", "", "model as provider:model or a named model from the config (env CADRE_MODEL)")
	fl.BoolVar(&f.json, "json", false, "write newline-delimited JSON events on stdout instead of the answer")
	fl.StringVarP(&f.workspace, "workspace", "w", "", "folder the file and command tools are confined to (default: the current directory)")
	fl.StringVar(&f.approve, "approve", "", "approval of writes and commands: ask, all or none (default ask)")
	fl.StringArrayVar(&f.agentsDirs, "agents-dir", nil, "extra folder of agent definitions (repeatable)")
	fl.StringArrayVar(&f.pluginDirs, "plugin-dir", nil, "a Claude Code plugin folder, or a folder of plugins (repeatable)")
	fl.BoolVar(&f.strict, "strict", false, "reject agent files with tool names cadre cannot resolve")
	fl.StringVar(&f.protocol, "protocol", "", "how agents delegate: auto, tools or text (text sends no tools to the model)")
	fl.StringVar(&f.report, "report", "", "how subagents report by default: tool (send_agent_message) or tag (<response>)")
	fl.BoolVar(&f.say, "say", false, "show only the <say> blocks of the root agent's replies")
	fl.StringVar(&f.store, "store", "", "run store: a SQLite file, postgres://…, or none (default .cadre/cadre.db)")
	fl.BoolVar(&f.noTree, "no-tree", false, "print plain progress lines instead of the live agent tree")
	fl.IntVar(&f.maxDepth, "max-depth", 0, fmt.Sprintf("deepest level of subagents below the root; 0 for none (default %d)", cadre.DefaultMaxDepth))
	fl.IntVar(&f.maxConc, "max-concurrent", 0, fmt.Sprintf("agents working at once; more wait in a queue (default %d)", cadre.DefaultMaxConcurrent))
	fl.IntVar(&f.maxAgents, "max-agents", 0, fmt.Sprintf("agents one run may create (default %d)", cadre.DefaultMaxAgents))
	fl.Int64Var(&f.budget, "budget-tokens", 0, fmt.Sprintf("tokens the whole tree may use, -1 for no budget (default %d)", cadre.DefaultBudgetTokens))
	fl.IntVar(&f.maxTurns, "max-turns", 0, fmt.Sprintf("model calls per agent before it must answer (default %d)", cadre.DefaultMaxTurns))
	fl.DurationVar(&f.timeout, "timeout", 0, "time limit of the whole run, such as 10m (default none)")
	fl.StringVar(&f.agent, "agent", "", "run this agent definition as the root agent (its prompt, tools and askCaller)")
	fl.BoolVar(&f.resume, "resume", false, "carry on the newest unfinished run of the same task, if the store has one, instead of starting anew")
	f.registerServe(cmd)
	f.temporal.register(fl, cmd.Name() != "worker")
}

// apply puts the flags over the config, as one more config file would be.
func (f *runFlags) apply(c *config) {
	maxDepth := f.maxDepth
	if maxDepth == 0 && f.set != nil && f.set.Changed("max-depth") {
		maxDepth = cadre.NoSubagents // the root works alone
	}
	fc := fileConfig{
		Model: f.model, Approve: f.approve, Protocol: f.protocol, Report: f.report, Store: f.store,
		Workspace: f.workspace, Agent: f.agent, AgentsDirs: f.agentsDirs, Plugins: f.pluginDirs,
		Limits: limitsConfig{MaxDepth: maxDepth, MaxConcurrent: f.maxConc, MaxAgents: f.maxAgents,
			BudgetTokens: f.budget, MaxTurns: f.maxTurns, Timeout: f.timeout},
	}
	if f.strict {
		fc.Strict = &f.strict
	}
	if f.say {
		fc.Say = &f.say
	}
	c.merge(fc)
}

// errNoModel says how to choose a model.
var errNoModel = errors.New("no model chosen: pass --model provider:model (for example --model openai:gpt-4o-mini or --model ollama:llama3.2), set CADRE_MODEL, or set model: in .cadre/config.yaml")

// flagConfig checks the flags, reads the configuration files and the
// environment, and puts the flags over them.
func (a *app) flagConfig(f *runFlags) (*config, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	f.apply(cfg)
	return cfg, nil
}

func (f *runFlags) validate() error {
	if f.approve != "" && !oneOf(f.approve, "ask", "all", "none") {
		return fmt.Errorf("--approve=%s is not valid: use ask, all or none", f.approve)
	}
	if f.protocol != "" && !oneOf(f.protocol, "auto", "tools", "text") {
		return fmt.Errorf("--protocol=%s is not valid: use auto, tools or text", f.protocol)
	}
	if f.report != "" && !oneOf(f.report, "tool", "tag") {
		return fmt.Errorf("--report=%s is not valid: use tool or tag", f.report)
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"--max-depth", f.maxDepth}, {"--max-concurrent", f.maxConc}, {"--max-agents", f.maxAgents}, {"--max-turns", f.maxTurns}} {
		if v.n < 0 {
			return fmt.Errorf("%s=%d is not valid: give a positive number", v.name, v.n)
		}
	}
	if f.timeout < 0 {
		return fmt.Errorf("--timeout=%s is not valid: give a positive duration such as 10m", f.timeout)
	}
	if f.set != nil {
		if f.set.Changed("max-agents") && f.maxAgents == 0 {
			return fmt.Errorf("--max-agents=0 is not valid: a run needs at least its root agent; give 1 for the root alone (default %d)", cadre.DefaultMaxAgents)
		}
		if f.set.Changed("max-turns") && f.maxTurns == 0 {
			return fmt.Errorf("--max-turns=0 is not valid: an agent needs at least one model call; give 1 or more (default %d)", cadre.DefaultMaxTurns)
		}
		if f.set.Changed("max-concurrent") && f.maxConc == 0 {
			return fmt.Errorf("--max-concurrent=0 is not valid: no agent could ever work; give 1 or more (default %d)", cadre.DefaultMaxConcurrent)
		}
	}
	return nil
}

func (a *app) newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [flags] TASK",
		Short: "Run an agent on a task and print its answer",
		Long: `Run the root agent on TASK. It may use the file and command tools inside the
workspace and delegate to the subagents found in .cadre/agents, .claude/agents,
.opencode/agent(s), ~/.cadre/agents and --agents-dir folders.

The final answer goes to stdout; progress goes to stderr. With --json, stdout
carries one JSON event per line instead.`,
		Example: `  cadre run --model openai:gpt-4o-mini "Summarise the README"
  OLLAMA_HOST=127.0.0.1:11434 cadre run -m ollama:llama3.2 "List the Go files"
  cadre run --json -m anthropic:claude-sonnet-4-5 "Review main.go" > events.jsonl`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New(`cadre run needs a task, for example: cadre run "Summarise the README"`)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.flagConfig(&f)
			if err != nil {
				return err
			}
			return a.runTask(cmd.Context(), cfg, &f, strings.Join(args, " "))
		},
	}
	f.register(cmd)
	return cmd
}

// runTask runs one task to its end, or, with --resume, carries on the
// newest unfinished run of the same task.
func (a *app) runTask(ctx context.Context, cfg *config, f *runFlags, task string) error {
	if cfg.Model == "" {
		return errNoModel
	}
	if f.resume {
		rec, err := a.unfinishedRun(ctx, cfg, task)
		if err != nil {
			return err
		}
		if rec != nil {
			fmt.Fprintf(a.io.Stderr, "cadre: carrying on run %s, which stopped before it ended\n", rec.ID)
			return a.resumeRun(ctx, cfg, f, rec)
		}
	}
	return a.execute(ctx, cfg, f, func(ctx context.Context, eng cadre.Engine) (string, error) {
		return eng.Start(ctx, task, cadre.StartOptions{})
	})
}

// execute wires everything together, starts the run with begin (a new run
// or a resumed one), shows its progress and waits for its end.
func (a *app) execute(ctx context.Context, cfg *config, f *runFlags, begin func(context.Context, cadre.Engine) (string, error)) error {
	con := a.newConsole()
	w, err := a.wire(ctx, cfg, con)
	if err != nil {
		return err
	}
	defer w.close()

	tty := isTerminal(a.io.Stderr)
	var out *renderer
	switch {
	case f.json:
		out = newJSONRenderer(a.io.Stdout)
	case tty && !f.noTree:
		out = newRenderer(io.Discard, false)
	default:
		out = newRenderer(a.io.Stderr, tty)
		out.rootEndSaid = !tty
	}
	// With say, what the root says is the answer: its <say> blocks go to
	// stdout as they come, one per line, and nothing else of its replies.
	say := w.engine.Say && !f.json
	out.rootSays = say
	out.told = w.engine.Warnings
	show := []func(cadre.Event){out.handle}
	if say {
		show = append(show, func(ev cadre.Event) {
			if d, ok := ev.Data.(cadre.Say); ok && ev.Agent == cadre.RootID {
				fmt.Fprintln(a.io.Stdout, d.Text)
			}
		})
	}
	var tree *treeView
	if tty && !f.noTree && !f.json {
		tree = makeTreeView(con, w.engine.Limits.WithDefaults().BudgetTokens)
		show = append(show, func(ev cadre.Event) {
			if !out.isTold(ev) {
				tree.handle(ev)
			}
		})
	}

	page, err := a.prepareRunPage(f, w, con)
	if err != nil {
		return err
	}
	defer page.close()
	eng, closeEngine, err := a.engineFor(ctx, cfg, &f.temporal, w)
	if err != nil {
		return err
	}
	defer closeEngine()
	id, err := begin(ctx, eng)
	if err != nil {
		return err
	}
	page.serve(eng, w, id)
	defer abortWhenDone(ctx, eng, id)()
	if s := a.session; s != nil {
		s.attach(eng, id)
		defer s.attach(nil, id)
	}
	shown := showEvents(eng, w.store, id, w.redacted(show...))
	if tree != nil {
		tree.start(eng, id)
	}
	ended := make(chan struct{})
	stopSignals := a.watchInterrupts(eng, id, con, ended)
	defer stopSignals()
	res, err := eng.Wait(context.Background(), id)
	close(ended)
	<-shown
	if tree != nil {
		tree.close()
	}
	out.close()
	if res != nil && !f.json {
		if res.Answer != "" && !say {
			fmt.Fprintln(a.io.Stdout, res.Answer)
		}
		printSummary(a.io.Stderr, res)
		if w.store != nil && res.Status != cadre.StatusDone && tty {
			fmt.Fprintf(a.io.Stderr, "cadre: the run is kept as %s; see it with: cadre runs show %s\n", res.RunID, res.RunID)
		}
	}
	if err != nil {
		var re *cadre.RunError
		if errors.As(err, &re) {
			msg := oneLine(re.Reason)
			if w.store != nil && !tty {
				// One line: the reason, and what to do next.
				msg = fmt.Sprintf("run %s %s: %s; to go on, cadre continue %s \"…\"", re.Run, re.Status, strings.TrimSuffix(msg, " …"), re.Run)
			}
			return &exitError{code: exitCode(re.Status), err: errors.New(msg)}
		}
		return err
	}
	return nil
}

func exitCode(st cadre.Status) int {
	if st == cadre.StatusCancelled {
		return 130
	}
	return 1
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return s
}

func printSummary(w io.Writer, res *cadre.Result) {
	if res.BudgetExhausted {
		fmt.Fprintf(w, "The token budget ran out: %d agents finished their work, %d stopped early (%s).\n",
			len(res.Completed), len(res.Incomplete), joinIDs(res.Incomplete))
	}
	for _, f := range res.Findings {
		fmt.Fprintf(w, "finding %s (%s): %s\n", f.Title, f.Agent, oneLine(f.Content))
	}
	if res.Cost != 0 {
		fmt.Fprintf(w, "cost %s at the configured prices\n", costText(res.Cost))
	}
}

func joinIDs(ids []cadre.AgentID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, ", ")
}

func isTerminal(w io.Writer) bool {
	f := terminalFile(w)
	return f != nil && term.IsTerminal(int(f.Fd()))
}

// terminalFile is the file w writes to, if it is one: w itself, or the
// terminal under cadre chat's line editor. It is nil for other writers.
func terminalFile(w io.Writer) *os.File {
	switch w := w.(type) {
	case *os.File:
		return w
	case *promptWriter:
		return w.file
	}
	return nil
}

// replyRestarted is printed where a streamed reply broke off and the model
// is asked again: the text before it is void, the text after it the new
// reply.
const replyRestarted = "(the reply was cut off; asking again)"

// renderer shows events: JSON lines, a live view on a terminal, or plain lines.
type renderer struct {
	mu     sync.Mutex
	w      io.Writer
	json   bool
	tty    bool
	inText bool // the root's streamed text is mid-line
	// rootSays: the root's say events are the answer, printed elsewhere.
	rootSays bool
	// told are warnings already printed when the run started.
	told []string
	// rootEndSaid: why the root failed is said once, by the error the
	// command ends with, not by a progress line too.
	rootEndSaid bool
}

func newJSONRenderer(w io.Writer) *renderer { return &renderer{w: w, json: true} }

func newRenderer(w io.Writer, tty bool) *renderer { return &renderer{w: w, tty: tty} }

func (r *renderer) handle(ev cadre.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.json {
		if ev.Type == cadre.EventModelDelta {
			return
		}
		b, err := json.Marshal(ev)
		if err != nil {
			return
		}
		r.w.Write(append(b, '\n'))
		return
	}
	r.plain(ev)
}

// isTold reports whether ev is a warning printed when the run started.
func (r *renderer) isTold(ev cadre.Event) bool {
	w, ok := ev.Data.(cadre.Warning)
	return ok && slices.Contains(r.told, w.Message)
}

func (r *renderer) line(format string, args ...any) {
	if r.inText {
		fmt.Fprintln(r.w)
		r.inText = false
	}
	fmt.Fprintf(r.w, format+"\n", args...)
}

func (r *renderer) plain(ev cadre.Event) {
	switch d := ev.Data.(type) {
	case cadre.ModelDelta:
		if r.tty && ev.Agent == cadre.RootID && !r.rootSays {
			if d.Restart {
				// The text so far is void: say so on a line of its own,
				// and the new reply starts on the next.
				r.line("%s", replyRestarted)
				return
			}
			fmt.Fprint(r.w, sanitizeLines(d.Text))
			r.inText = true
		}
		return
	case cadre.ModelResponse:
		if r.inText {
			fmt.Fprintln(r.w)
			r.inText = false
		}
		return
	case cadre.Say:
		if r.rootSays && ev.Agent == cadre.RootID {
			return // the answer, printed on stdout
		}
	}
	if r.isTold(ev) {
		return
	}
	if r.rootEndSaid && ev.Agent == cadre.RootID && (ev.Type == cadre.EventAgentFailed || ev.Type == cadre.EventAgentCancelled) {
		return
	}
	if line := describeEvent(ev).Progress; line != "" {
		r.line("%s", sanitize(line))
	}
}

func (r *renderer) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inText {
		fmt.Fprintln(r.w)
		r.inText = false
	}
}

// storePath resolves the configured store location.
func (a *app) storePath(cfg *config) string {
	s := cfg.Store
	if s == "" {
		return filepath.Join(a.projectDir(), ".cadre", "cadre.db")
	}
	if s == "none" || isPostgres(s) || filepath.IsAbs(s) {
		return s
	}
	wd, _ := a.wd()
	return filepath.Join(wd, s)
}

// watchInterrupts cancels the run gracefully on the first Ctrl+C and aborts
// it on the second, until ended is closed. It returns a function that
// stops watching.
func (a *app) watchInterrupts(eng cadre.Engine, id string, con *console, ended <-chan struct{}) func() {
	if a.io.Interrupts == nil {
		return func() {}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		n := 0
		for {
			select {
			case <-a.io.Interrupts:
				n++
				opts := cadre.CancelOptions{Reason: "interrupted by Ctrl+C"}
				if n == 1 {
					// Not after a prompt waiting: stopping ends it.
					con.note("\ncadre: stopping the run (press Ctrl+C again to abort at once)")
				} else {
					opts = cadre.CancelOptions{Abort: true}
				}
				_ = eng.Cancel(context.Background(), id, opts)
			case <-stop:
				return
			case <-ended:
				return
			}
		}
	}()
	return func() { close(stop); <-done }
}
