package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/postgres"
	"github.com/cadre-ai/cadre/sqlite"
)

// runsFlags are the flags every cadre runs subcommand shares.
type runsFlags struct {
	store string
}

func (a *app) newRunsCmd() *cobra.Command {
	var f runsFlags
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List, show, follow and export recorded runs",
		Long: `Every cadre run is recorded in the run store: its agents, each agent's journal
(everything that was fed to it, in order) and its events. These commands read
it. The store is found as cadre run finds it: --store, else CADRE_STORE, else
store: in .cadre/config.yaml, else .cadre/cadre.db in the project.

RUN is a run id, a unique prefix of one, or last for the newest run.`,
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&f.store, "store", "", "run store: a SQLite file or postgres://… (default .cadre/cadre.db)")
	cmd.AddCommand(a.newRunsListCmd(&f), a.newRunsShowCmd(&f), a.newRunsExportCmd(&f))
	return cmd
}

// errNoStore reports a store that does not exist yet.
type errNoStore struct{ where string }

func (e *errNoStore) Error() string {
	return fmt.Sprintf("no runs recorded yet in %s: `cadre run TASK` records one there, or give --store with the store to read", e.where)
}

// openRunStore opens the run store that cadre run writes to, resolved the
// same way: the --store value flag when set, else the configuration
// (CADRE_STORE, store: in a config file), else .cadre/cadre.db in the
// project. It returns the store and where it is, as a person would name
// it. A SQLite file that does not exist is an *errNoStore, and is not
// created.
func (a *app) openRunStore(ctx context.Context, flag string) (cadre.Store, string, error) {
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, "", err
	}
	if flag != "" {
		cfg.Store = flag
	}
	return a.existingStore(ctx, cfg)
}

// existingStore opens the run store cfg names, as openRunStore does, with
// the configuration already read.
func (a *app) existingStore(ctx context.Context, cfg *config) (cadre.Store, string, error) {
	loc := a.storePath(cfg)
	where := a.storeWhere(loc)
	switch {
	case loc == "none":
		return nil, loc, errors.New("the run store is turned off (store: none), so no runs are recorded: give --store with the path of a SQLite file or a postgres:// URL")
	case !isPostgres(loc):
		fi, err := os.Stat(loc)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, where, &errNoStore{where: where}
		case err != nil:
			return nil, where, fmt.Errorf("open the run store %s: %w", where, err)
		case fi.IsDir():
			return nil, where, fmt.Errorf("the run store %s is a folder: give --store the path of a SQLite file, such as .cadre/cadre.db", where)
		}
	}
	log, err := a.logger()
	if err != nil {
		return nil, where, err
	}
	s, err := openStore(ctx, loc, where, log)
	if err != nil {
		return nil, where, err
	}
	// These commands show runs; none resumes one through this store.
	return &redactStore{Store: s, r: a.redactor(cfg), journal: true}, where, nil
}

func isPostgres(loc string) bool {
	return strings.HasPrefix(loc, "postgres://") || strings.HasPrefix(loc, "postgresql://")
}

// storeWhere names a store's location for a person: a SQLite path relative
// to the working directory, a PostgreSQL URL without its password.
func (a *app) storeWhere(loc string) string {
	if !isPostgres(loc) {
		return a.relPath(loc)
	}
	if u, err := url.Parse(loc); err == nil {
		return u.Redacted()
	}
	return "the PostgreSQL database"
}

// openStore opens the store at loc, a SQLite file or a postgres:// URL;
// where names it in errors. A SQLite file other users can read is made
// private first (makeStorePrivate); log gets the debug lines.
func openStore(ctx context.Context, loc, where string, log *slog.Logger) (cadre.Store, error) {
	var (
		s   cadre.Store
		err error
	)
	if isPostgres(loc) {
		s, err = postgres.Open(ctx, loc)
	} else {
		makeStorePrivate(loc, log)
		s, err = sqlite.Open(ctx, loc)
	}
	if err != nil {
		return nil, fmt.Errorf("open the run store %s: %w", where, err)
	}
	return s, nil
}

// resolveRun finds the run arg names: an id, a unique prefix of one, or
// "last" for the newest run.
func resolveRun(ctx context.Context, s cadre.Store, where, arg string) (*cadre.RunRecord, error) {
	if arg == "last" {
		runs, err := s.ListRuns(ctx, 1)
		if err != nil {
			return nil, err
		}
		if len(runs) == 0 {
			return nil, &errNoStore{where: where}
		}
		return runs[0], nil
	}
	r, err := s.GetRun(ctx, arg)
	if err == nil {
		return r, nil
	}
	if !errors.Is(err, cadre.ErrNotFound) {
		return nil, err
	}
	all, err := s.ListRuns(ctx, 0)
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, &errNoStore{where: where}
	}
	var matches []*cadre.RunRecord
	for _, r := range all {
		if arg != "" && strings.HasPrefix(r.ID, arg) {
			matches = append(matches, r)
		}
	}
	now := time.Now()
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		closest := slices.Clone(all)
		slices.SortStableFunc(closest, func(x, y *cadre.RunRecord) int {
			if c := cmp.Compare(commonPrefix(arg, y.ID), commonPrefix(arg, x.ID)); c != 0 {
				return c
			}
			return cmp.Compare(nameDistance(arg, x.ID), nameDistance(arg, y.ID))
		})
		return nil, fmt.Errorf("unknown run %q in %s; the closest are:\n%s\nrun `cadre runs list` to see every run", arg, where, runLines(closest[:min(3, len(closest))], now))
	default:
		return nil, fmt.Errorf("%q is the start of %d runs:\n%s\ngive more of the id", arg, len(matches), runLines(matches[:min(5, len(matches))], now))
	}
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// runLines lists runs for an error message, one indented line each.
func runLines(runs []*cadre.RunRecord, now time.Time) string {
	rows := make([][]string, len(runs))
	for i, r := range runs {
		rows[i] = []string{r.ID, startedText(r.Started), statusMark(r.Status) + " " + string(r.Status), clipText(r.Task, 50)}
	}
	var b strings.Builder
	writeTable(&b, "  ", nil, rows, nil)
	return strings.TrimRight(b.String(), "\n")
}

// runSummary is a run as cadre runs list shows it: the record, with the
// agents and tokens counted from the agents' records while it runs.
type runSummary struct {
	*cadre.RunRecord
	Duration float64 `json:"duration_seconds"`
}

func summarize(ctx context.Context, s cadre.Store, r *cadre.RunRecord, now time.Time) (runSummary, error) {
	if !r.Status.Terminal() || r.Agents == 0 {
		agents, err := s.ListAgents(ctx, r.ID)
		if err != nil {
			return runSummary{}, err
		}
		c := *r
		c.Agents = len(agents)
		if !r.Status.Terminal() || c.Usage == (cadre.Usage{}) {
			c.Usage = cadre.Usage{}
			for _, a := range agents {
				c.Usage = c.Usage.Add(a.Usage)
			}
		}
		r = &c
	}
	return runSummary{RunRecord: r, Duration: runDuration(r, now).Seconds()}, nil
}

// runDuration is how long a run took, or has run so far.
func runDuration(r *cadre.RunRecord, now time.Time) time.Duration {
	switch {
	case r.Started.IsZero():
		return 0
	case !r.Ended.IsZero():
		return r.Ended.Sub(r.Started)
	case !r.Status.Terminal():
		return now.Sub(r.Started)
	}
	return 0
}

func (a *app) newRunsListCmd(f *runsFlags) *cobra.Command {
	var (
		limit  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the recorded runs, newest first",
		Example: `  cadre runs list
  cadre runs list --limit 0 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			s, where, err := a.openRunStore(ctx, f.store)
			if _, ok := errors.AsType[*errNoStore](err); ok {
				if asJSON {
					_, err := io.WriteString(a.io.Stdout, "[]\n")
					return err
				}
				fmt.Fprintln(a.io.Stdout, err)
				return nil
			}
			if err != nil {
				return err
			}
			defer s.Close()
			runs, err := s.ListRuns(ctx, 0)
			if err != nil {
				return err
			}
			total := len(runs)
			if limit > 0 && total > limit {
				runs = runs[:limit]
			}
			now := time.Now()
			sums := make([]runSummary, 0, len(runs))
			for _, r := range runs {
				sum, err := summarize(ctx, s, r, now)
				if err != nil {
					return err
				}
				sums = append(sums, sum)
			}
			if asJSON {
				return writeIndentedJSON(a.io.Stdout, sums)
			}
			if total == 0 {
				fmt.Fprintln(a.io.Stdout, (&errNoStore{where: where}).Error())
				return nil
			}
			rows := make([][]string, len(sums))
			for i, r := range sums {
				dur := durationText(time.Duration(r.Duration * float64(time.Second)))
				if r.Started.IsZero() {
					dur = "-"
				}
				rows[i] = []string{r.ID, startedText(r.Started), statusMark(r.Status) + " " + string(r.Status), clipText(r.Task, 48),
					fmt.Sprint(r.Agents), tokensText(r.Usage.Total()), dur}
			}
			writeTable(a.io.Stdout, "", []string{"ID", "STARTED", "STATUS", "TASK", "AGENTS", "TOKENS", "DURATION"}, rows, []bool{4: true, 5: true, 6: true})
			if len(runs) < total {
				fmt.Fprintf(a.io.Stdout, "\nthe %d newest of %d runs; --limit 0 lists them all\n", len(runs), total)
			}
			return nil
		},
	}
	cmd.Flags().IntVarP(&limit, "limit", "n", 20, "how many runs to list, newest first; 0 lists all")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of runs instead of a table")
	return cmd
}

// showFlags are the flags of cadre runs show.
type showFlags struct {
	agent    string
	json     bool
	follow   bool
	interval time.Duration
}

func (a *app) newRunsShowCmd(f *runsFlags) *cobra.Command {
	var sf showFlags
	cmd := &cobra.Command{
		Use:   "show RUN",
		Short: "Show a run: its agent tree, findings and answer, or one agent's conversation",
		Long: `Show a run: its agents as a tree with their status, turns, tokens and time,
the findings they reported, and the final answer or error.

--agent ID shows that agent's conversation instead, rebuilt from its journal:
the system prompt, then every message and tool call in order. ID is an agent
id as shown by cadre runs show, or its last part when that is unique
(research-assistant.1).

--follow watches a run that is still going, in this process or another: it
prints each new event as a line (streamed text excepted) until the run ends,
then the run as show prints it, and exits with the status cadre run would
have (0 done, 1 failed, 130 cancelled). Ctrl+C stops following, not the run.`,
		Example: `  cadre runs show last
  cadre runs show 20250314-1509 --agent root/research-assistant.1
  cadre runs show --follow last
  cadre runs show last --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return errors.New("cadre runs show needs one run: an id from `cadre runs list`, a unique prefix of one, or last")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if sf.interval <= 0 {
				return fmt.Errorf("--interval=%s is not valid: give a positive duration such as 500ms", sf.interval)
			}
			if sf.follow && sf.agent != "" {
				return errors.New("--follow and --agent do not go together: follow the run, then show the agent")
			}
			ctx := cmd.Context()
			s, where, err := a.openRunStore(ctx, f.store)
			if err != nil {
				return err
			}
			defer s.Close()
			r, err := resolveRun(ctx, s, where, args[0])
			if err != nil {
				return err
			}
			switch {
			case sf.follow:
				return a.followRun(ctx, s, r, &sf)
			case sf.agent != "":
				return a.showAgentTranscript(ctx, s, r, sf.agent, sf.json)
			}
			return a.showRun(ctx, s, r, sf.json)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&sf.agent, "agent", "", "show this agent's conversation (an agent id, or its last part)")
	fl.BoolVar(&sf.json, "json", false, "print JSON instead of text (with --follow: one JSON event per line)")
	fl.BoolVarP(&sf.follow, "follow", "f", false, "print the run's events as they happen until it ends")
	fl.DurationVar(&sf.interval, "interval", 500*time.Millisecond, "how often --follow looks for new events")
	return cmd
}

// runView is what cadre runs show prints, and its JSON.
type runView struct {
	Run      runSummary           `json:"run"`
	Agents   []*cadre.AgentRecord `json:"agents"`
	Findings []cadre.Finding      `json:"findings"`
}

func loadRunView(ctx context.Context, s cadre.Store, r *cadre.RunRecord, now time.Time) (*runView, error) {
	sum, err := summarize(ctx, s, r, now)
	if err != nil {
		return nil, err
	}
	agents, err := s.ListAgents(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	evs, err := s.Events(ctx, r.ID, 0)
	if err != nil {
		return nil, err
	}
	v := &runView{Run: sum, Agents: agents, Findings: []cadre.Finding{}}
	for _, e := range evs {
		if e.Type == cadre.EventFinding {
			title, _ := e.Data["title"].(string)
			content, _ := e.Data["content"].(string)
			v.Findings = append(v.Findings, cadre.Finding{Agent: e.Agent, Title: title, Content: content})
		}
	}
	return v, nil
}

func (a *app) showRun(ctx context.Context, s cadre.Store, r *cadre.RunRecord, asJSON bool) error {
	now := time.Now()
	v, err := loadRunView(ctx, s, r, now)
	if err != nil {
		return err
	}
	if asJSON {
		return writeIndentedJSON(a.io.Stdout, v)
	}
	printRunView(a.io.Stdout, v, now)
	return nil
}

func printRunView(w io.Writer, v *runView, now time.Time) {
	r := v.Run
	field := func(name, value string) {
		if value != "" {
			fmt.Fprintf(w, "%-8s %s\n", name, value)
		}
	}
	field("Run", r.ID)
	field("Status", statusMark(r.Status)+" "+string(r.Status))
	field("Task", oneLineText(r.Task))
	field("Model", r.Model)
	field("Started", startedText(r.Started))
	if d := runDuration(r.RunRecord, now); d > 0 {
		label := "Took"
		if !r.Status.Terminal() {
			label = "Running"
		}
		field(label, durationText(d))
	}
	tokens := tokensText(r.Usage.Total())
	if r.Usage.Total() > 0 {
		tokens += fmt.Sprintf(" (%s in, %s out)", tokensText(r.Usage.InputTokens), tokensText(r.Usage.OutputTokens))
	}
	field("Tokens", tokens)

	fmt.Fprintln(w)
	if len(v.Agents) == 0 {
		fmt.Fprintln(w, "No agents recorded.")
	} else {
		var rows [][]string
		for _, n := range agentTree(v.Agents) {
			ag := n.rec
			dur := "-"
			switch {
			case !ag.Ended.IsZero():
				dur = durationText(ag.Ended.Sub(ag.Started))
			case !ag.Status.Terminal() && !ag.Started.IsZero():
				dur = durationText(now.Sub(ag.Started))
			}
			rows = append(rows, []string{
				strings.Repeat("  ", n.depth) + statusMark(ag.Status) + " " + agentName(ag.ID),
				string(ag.Status), ag.Model, fmt.Sprint(ag.Turns), tokensText(ag.Usage.Total()), dur, clipText(ag.Task, 50),
			})
		}
		writeTable(w, "", []string{"AGENT", "STATUS", "MODEL", "TURNS", "TOKENS", "TIME", "TASK"}, rows, []bool{3: true, 4: true, 5: true})
		for _, ag := range v.Agents {
			// The root's error is the run's, shown below.
			if ag.Error != "" && ag.Status != cadre.StatusDone && ag.Error != r.Error {
				fmt.Fprintf(w, "%s %s %s: %s\n", statusMark(ag.Status), ag.ID, ag.Status, clipText(ag.Error, 200))
			}
		}
	}
	if len(v.Findings) > 0 {
		fmt.Fprintln(w, "\nFindings")
		for _, f := range v.Findings {
			fmt.Fprintf(w, "  %s (%s)\n", f.Title, f.Agent)
			fmt.Fprintln(w, indentLines(strings.TrimSpace(f.Content), "    "))
		}
	}
	switch {
	case r.Answer != "":
		fmt.Fprintln(w, "\nAnswer")
		fmt.Fprintln(w, strings.TrimSpace(r.Answer))
	case r.Error != "":
		fmt.Fprintf(w, "\nThe run %s: %s\n", r.Status, strings.TrimSpace(r.Error))
	case !r.Status.Terminal():
		fmt.Fprintf(w, "\nThe run is %s; follow it with: cadre runs show --follow %s\n", r.Status, r.ID)
	}
	if len(v.Agents) > 0 {
		pick := v.Agents[0].ID
		for _, ag := range v.Agents {
			if ag.ID != cadre.RootID {
				pick = ag.ID
				break
			}
		}
		fmt.Fprintf(w, "\nAn agent's conversation: cadre runs show %s --agent %s\n", r.ID, pick)
	}
}

// treeNode is an agent with its depth in the shown tree.
type treeNode struct {
	rec   *cadre.AgentRecord
	depth int
}

// agentTree orders agents depth first, children by start time then id,
// under their parent. Agents whose parent is not recorded are shown at the
// top level.
func agentTree(agents []*cadre.AgentRecord) []treeNode {
	known := map[cadre.AgentID]bool{}
	for _, ag := range agents {
		known[ag.ID] = true
	}
	children := map[cadre.AgentID][]*cadre.AgentRecord{}
	var tops []*cadre.AgentRecord
	for _, ag := range agents {
		if ag.Parent != "" && known[ag.Parent] && ag.Parent != ag.ID {
			children[ag.Parent] = append(children[ag.Parent], ag)
		} else {
			tops = append(tops, ag)
		}
	}
	order := func(list []*cadre.AgentRecord) {
		slices.SortStableFunc(list, func(x, y *cadre.AgentRecord) int {
			return cmp.Or(x.Started.Compare(y.Started), cmp.Compare(x.ID, y.ID))
		})
	}
	var out []treeNode
	seen := map[cadre.AgentID]bool{}
	var walk func(list []*cadre.AgentRecord, depth int)
	walk = func(list []*cadre.AgentRecord, depth int) {
		order(list)
		for _, ag := range list {
			if seen[ag.ID] {
				continue
			}
			seen[ag.ID] = true
			out = append(out, treeNode{rec: ag, depth: depth})
			walk(children[ag.ID], depth+1)
		}
	}
	walk(tops, 0)
	return out
}

// agentName is the last part of an agent id: the definition and its
// number under its parent.
func agentName(id cadre.AgentID) string {
	s := string(id)
	return s[strings.LastIndexByte(s, '/')+1:]
}

// findAgent resolves what the user typed to one of the run's agents: the
// id, its last part, or the start of an id, when only one agent matches.
func findAgent(agents []*cadre.AgentRecord, run, arg string) (*cadre.AgentRecord, error) {
	for _, ag := range agents {
		if string(ag.ID) == arg {
			return ag, nil
		}
	}
	var matches []*cadre.AgentRecord
	for _, ag := range agents {
		if agentName(ag.ID) == arg {
			matches = append(matches, ag)
		}
	}
	if len(matches) == 0 {
		for _, ag := range agents {
			if arg != "" && strings.HasPrefix(string(ag.ID), arg) {
				matches = append(matches, ag)
			}
		}
	}
	if len(matches) == 1 {
		return matches[0], nil
	}
	list := matches
	what := fmt.Sprintf("%q names %d agents of run %s", arg, len(matches), run)
	if len(matches) == 0 {
		list = agents
		what = fmt.Sprintf("run %s has no agent %q", run, arg)
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%s: it has no agents recorded", what)
	}
	ids := make([]string, len(list))
	for i, ag := range list {
		ids[i] = "  " + string(ag.ID)
	}
	return nil, fmt.Errorf("%s; give one of:\n%s", what, strings.Join(ids, "\n"))
}

// replayJournal decodes an agent's journal and replays it into the state
// the agent had after its last input.
func replayJournal(entries []cadre.JournalEntry) (*loop.State, error) {
	ins := make([]loop.Input, 0, len(entries))
	for _, e := range entries {
		in, err := loop.Decode(e.Kind, e.Data)
		if err != nil {
			return nil, fmt.Errorf("journal entry %d of %s: %w", e.Seq, e.Agent, err)
		}
		ins = append(ins, in)
	}
	return loop.Replay(ins), nil
}

// transcript is an agent's conversation as cadre runs show --agent prints
// it, and its JSON.
type transcript struct {
	Run      string             `json:"run"`
	Agent    *cadre.AgentRecord `json:"agent"`
	System   string             `json:"system"`
	Turns    int                `json:"turns"`
	Messages []cadre.Message    `json:"messages"`
}

func (a *app) showAgentTranscript(ctx context.Context, s cadre.Store, r *cadre.RunRecord, arg string, asJSON bool) error {
	agents, err := s.ListAgents(ctx, r.ID)
	if err != nil {
		return err
	}
	ag, err := findAgent(agents, r.ID, arg)
	if err != nil {
		return err
	}
	entries, err := s.Journal(ctx, r.ID, ag.ID)
	if err != nil {
		return err
	}
	st, err := replayJournal(entries)
	if err != nil {
		return fmt.Errorf("rebuild the conversation of %s: %w", ag.ID, err)
	}
	tr := transcript{Run: r.ID, Agent: ag, System: st.Config().System, Turns: st.Turns(), Messages: st.Messages()}
	if tr.Messages == nil {
		tr.Messages = []cadre.Message{}
	}
	if asJSON {
		return writeIndentedJSON(a.io.Stdout, tr)
	}
	w := a.io.Stdout
	head := fmt.Sprintf("%s %s  %s", statusMark(ag.Status), ag.ID, ag.Status)
	if ag.Definition != "" {
		head += "  " + ag.Definition
	}
	if ag.Model != "" {
		head += "  " + ag.Model
	}
	fmt.Fprintln(w, head)
	facts := []string{countText(ag.Turns, "turn"), tokensText(ag.Usage.Total()) + " tokens"}
	if !ag.Ended.IsZero() {
		facts = append(facts, durationText(ag.Ended.Sub(ag.Started)))
	}
	fmt.Fprintf(w, "%s, run %s\n", strings.Join(facts, ", "), r.ID)
	if ag.Task != "" {
		fmt.Fprintf(w, "Task: %s\n", oneLineText(ag.Task))
	}
	if len(entries) == 0 {
		fmt.Fprintln(w, "\nNo journal entries: the agent had not started.")
		return nil
	}
	section := func(title, body string) {
		fmt.Fprintf(w, "\n── %s ──\n", title)
		if body = strings.TrimRight(body, "\n "); body != "" {
			fmt.Fprintln(w, body)
		}
	}
	if tr.System != "" {
		section("system", tr.System)
	}
	for _, m := range tr.Messages {
		switch m.Role {
		case cadre.RoleTool:
			title := "tool " + m.ToolName
			if m.ToolCallID != "" {
				title += " (" + m.ToolCallID + ")"
			}
			if m.IsError {
				title += " error"
			}
			section(title, m.Content)
		case cadre.RoleAssistant:
			body := m.Content
			for _, c := range m.ToolCalls {
				body = strings.TrimRight(body, "\n") + fmt.Sprintf("\n→ %s %s", c.Name, clipText(c.Arguments, 300))
			}
			section("assistant", strings.TrimLeft(body, "\n"))
		default:
			section(string(m.Role), m.Content)
		}
	}
	switch {
	case ag.Error != "" && ag.Status != cadre.StatusDone:
		fmt.Fprintf(w, "\n%s %s: %s\n", statusMark(ag.Status), ag.Status, strings.TrimSpace(ag.Error))
	case ag.Result != "" && ag.ID != cadre.RootID:
		fmt.Fprintf(w, "\n── report ──\n%s\n", strings.TrimSpace(ag.Result))
	}
	return nil
}

// followRun prints a run's events as they are stored until the run is
// over, then the run.
func (a *app) followRun(ctx context.Context, s cadre.Store, r *cadre.RunRecord, sf *showFlags) error {
	w := a.io.Stdout
	if !sf.json {
		fmt.Fprintf(w, "Following run %s: %s\n", r.ID, clipText(r.Task, 80))
		if !r.Status.Terminal() {
			fmt.Fprintln(a.io.Stderr, "(Ctrl+C stops following; the run goes on)")
		}
	}
	tick := time.NewTicker(sf.interval)
	defer tick.Stop()
	var (
		after    int64
		statuses = map[cadre.AgentID]cadre.Status{}
	)
	for {
		// The run's record is read before its events: an engine stores a
		// run's last events before it marks the run ended, so once the
		// record says so, the events read next are all there are.
		cur, err := s.GetRun(ctx, r.ID)
		if err != nil {
			return err
		}
		evs, err := s.Events(ctx, r.ID, after)
		if err != nil {
			return err
		}
		for _, e := range evs {
			after = e.Seq
			if e.Type == cadre.EventModelDelta {
				continue
			}
			if sf.json {
				b, err := json.Marshal(e)
				if err != nil {
					return err
				}
				fmt.Fprintf(w, "%s\n", b)
				continue
			}
			fmt.Fprintln(w, eventLine(e))
		}
		agents, err := s.ListAgents(ctx, r.ID)
		if err != nil {
			return err
		}
		for _, ag := range agents {
			prev, ok := statuses[ag.ID]
			statuses[ag.ID] = ag.Status
			if !ok || prev == ag.Status || sf.json {
				continue
			}
			// Events tell when agents start and end; waiting is only in
			// the records.
			if ag.Status == cadre.StatusWaiting || prev == cadre.StatusWaiting && ag.Status == cadre.StatusRunning {
				fmt.Fprintf(w, "%s  %-28s  %s %s\n", eventClock(time.Now()), ag.ID, statusMark(ag.Status), ag.Status)
			}
		}
		if cur.Status.Terminal() {
			if !sf.json {
				fmt.Fprintln(w)
				now := time.Now()
				v, err := loadRunView(ctx, s, cur, now)
				if err != nil {
					return err
				}
				printRunView(w, v, now)
			}
			if cur.Status == cadre.StatusDone {
				return nil
			}
			reason := oneLineText(cur.Error)
			if reason == "" {
				reason = "no reason recorded"
			}
			return &exitError{code: exitCode(cur.Status), err: fmt.Errorf("run %s %s: %s", cur.ID, cur.Status, clipText(reason, 300))}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-a.io.Interrupts:
			fmt.Fprintf(a.io.Stderr, "\nstopped following run %s; it goes on (cadre runs show %s)\n", r.ID, r.ID)
			return nil
		case <-tick.C:
		}
	}
}

// eventLine is one event as --follow prints it: time, agent, what
// happened.
func eventLine(e cadre.Event) string {
	str := func(k string) string { s, _ := e.Data[k].(string); return s }
	num := func(k string) string {
		if f, ok := e.Data[k].(float64); ok {
			return fmt.Sprint(int64(f))
		}
		return fmt.Sprint(e.Data[k])
	}
	var what string
	switch e.Type {
	case cadre.EventRunStarted:
		what = "run started: " + clipText(str("task"), 100)
	case cadre.EventRunCompleted:
		what = "run completed: " + clipText(str("answer"), 100)
	case cadre.EventRunFailed:
		what = fmt.Sprintf("run %s: %s", str("status"), clipText(str("error"), 150))
	case cadre.EventAgentStarted:
		what = "started " + strings.TrimSpace(str("definition")+" "+str("model"))
	case cadre.EventAgentSpawned:
		what = fmt.Sprintf("spawned (%s): %s", strings.Trim(str("definition")+", "+str("mode"), ", "), clipText(str("task"), 100))
	case cadre.EventAgentQueued:
		what = "queued: all " + num("max_concurrent") + " slots are busy"
	case cadre.EventModelResponse:
		what = "replied"
		if n, _ := e.Data["tool_calls"].(float64); n > 0 {
			what += fmt.Sprintf(" with %s", countText(int(n), "tool call"))
		}
		if t := clipText(str("text"), 100); t != "" {
			what += ": " + t
		}
	case cadre.EventToolCalled:
		what = "→ " + str("tool") + " " + clipText(str("arguments"), 100)
	case cadre.EventToolResult:
		what = "← " + str("tool")
		if isErr, _ := e.Data["is_error"].(bool); isErr {
			what += " error"
		}
		what += ": " + clipText(str("content"), 100)
	case cadre.EventAgentReported:
		what = "report from " + str("child")
	case cadre.EventAgentCompleted:
		what = "done: " + clipText(str("result"), 100)
	case cadre.EventAgentFailed:
		what = "failed: " + clipText(str("error"), 150)
	case cadre.EventAgentCancelled:
		what = "cancelled: " + clipText(str("reason"), 150)
	case cadre.EventFinding:
		what = "finding: " + str("title")
	case cadre.EventSay:
		what = "says: " + clipText(str("text"), 150)
	default:
		what = string(e.Type)
		if len(e.Data) > 0 {
			b, _ := json.Marshal(e.Data)
			what += " " + clipText(string(b), 150)
		}
	}
	who := string(e.Agent)
	if who == "" {
		who = "-"
	}
	return fmt.Sprintf("%s  %-28s  %s", eventClock(e.Time), who, strings.TrimRight(what, " :"))
}

// runExport is the JSON cadre runs export writes: everything the store
// holds about a run.
type runExport struct {
	Format  string           `json:"format"`
	Version int              `json:"version"`
	Run     *cadre.RunRecord `json:"run"`
	Agents  []agentExport    `json:"agents"`
	Events  []cadre.Event    `json:"events"`
}

// exportFormat and exportVersion identify cadre runs export's JSON.
const (
	exportFormat  = "cadre.run"
	exportVersion = 1
)

// agentExport is an agent's record with its journal.
type agentExport struct {
	cadre.AgentRecord
	Journal []journalExport `json:"journal"`
}

// journalExport is one journal entry with its input decoded. When this
// build cannot decode it, Input holds the entry as stored and Error says
// why.
type journalExport struct {
	Seq   int64           `json:"seq"`
	Kind  string          `json:"kind"`
	Time  time.Time       `json:"time"`
	Input json.RawMessage `json:"input"`
	Error string          `json:"error,omitempty"`
}

func (a *app) newRunsExportCmd(f *runsFlags) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "export RUN",
		Short: "Write a whole run as JSON: its record, agents, journals and events",
		Long: `Write everything the store holds about a run as one JSON object: the run's
record, each agent's record with its journal (every input it was fed, in
order, decoded), and the run's events. The object starts with
"format": "cadre.run" and "version": 1.`,
		Example: `  cadre runs export last > run.json
  cadre runs export 20250314-1509 -o run.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return errors.New("cadre runs export needs one run: an id from `cadre runs list`, a unique prefix of one, or last")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, where, err := a.openRunStore(ctx, f.store)
			if err != nil {
				return err
			}
			defer s.Close()
			r, err := resolveRun(ctx, s, where, args[0])
			if err != nil {
				return err
			}
			x, err := exportRun(ctx, s, r)
			if err != nil {
				return err
			}
			if output == "" || output == "-" {
				return writeIndentedJSON(a.io.Stdout, x)
			}
			wd, err := a.wd()
			if err != nil {
				return err
			}
			path := absUnder(wd, a.expandHome(output))
			file, err := os.Create(path)
			if err != nil {
				return fmt.Errorf("export run %s: %w", r.ID, err)
			}
			if err := writeIndentedJSON(file, x); err != nil {
				file.Close()
				return fmt.Errorf("export run %s to %s: %w", r.ID, a.relPath(path), err)
			}
			if err := file.Close(); err != nil {
				return fmt.Errorf("export run %s to %s: %w", r.ID, a.relPath(path), err)
			}
			entries := 0
			for _, ag := range x.Agents {
				entries += len(ag.Journal)
			}
			fmt.Fprintf(a.io.Stderr, "wrote run %s to %s: %s, %s, %s\n", r.ID, a.relPath(path),
				countText(len(x.Agents), "agent"), countText(entries, "journal entry"), countText(len(x.Events), "event"))
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file instead of stdout")
	return cmd
}

func exportRun(ctx context.Context, s cadre.Store, r *cadre.RunRecord) (*runExport, error) {
	agents, err := s.ListAgents(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	evs, err := s.Events(ctx, r.ID, 0)
	if err != nil {
		return nil, err
	}
	x := &runExport{Format: exportFormat, Version: exportVersion, Run: r, Agents: make([]agentExport, 0, len(agents)), Events: evs}
	for _, ag := range agents {
		entries, err := s.Journal(ctx, r.ID, ag.ID)
		if err != nil {
			return nil, err
		}
		ax := agentExport{AgentRecord: *ag, Journal: make([]journalExport, 0, len(entries))}
		for _, e := range entries {
			ax.Journal = append(ax.Journal, exportEntry(e))
		}
		x.Agents = append(x.Agents, ax)
	}
	return x, nil
}

func exportEntry(e cadre.JournalEntry) journalExport {
	je := journalExport{Seq: e.Seq, Kind: e.Kind, Time: e.Time}
	in, err := loop.Decode(e.Kind, e.Data)
	if err == nil {
		var b []byte
		if b, err = json.Marshal(in); err == nil {
			je.Input = b
			return je
		}
	}
	je.Error = err.Error()
	if json.Valid(e.Data) {
		je.Input = e.Data
	} else {
		b, _ := json.Marshal(string(e.Data))
		je.Input = b
	}
	return je
}

func writeIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeTable writes rows as columns two spaces apart, each line starting
// with prefix. right marks the columns aligned to the right. The last
// column is not padded.
func writeTable(w io.Writer, prefix string, header []string, rows [][]string, right []bool) {
	all := rows
	if header != nil {
		all = append([][]string{header}, rows...)
	}
	var widths []int
	for _, row := range all {
		for i, cell := range row {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	for _, row := range all {
		var b strings.Builder
		b.WriteString(prefix)
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
			if i > 0 {
				b.WriteString("  ")
			}
			switch {
			case i < len(right) && right[i]:
				b.WriteString(pad + cell)
			case i == len(row)-1:
				b.WriteString(cell)
			default:
				b.WriteString(cell + pad)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// durationText writes a duration the way people read one: 850ms, 4.2s,
// 1m12s, 2h3m0s, 3d4h.
func durationText(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d < day:
		return d.Round(time.Second).String()
	}
	d = d.Round(time.Hour)
	return fmt.Sprintf("%dd%dh", d/day, d%day/time.Hour)
}

// tokensText writes a token count short: 950, 12.3k, 123k, 1.2M.
func tokensText(n int64) string {
	short := func(v float64, unit string) string {
		if v >= 100 {
			return fmt.Sprintf("%.0f%s", v, unit)
		}
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") + unit
	}
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 999_500:
		return short(float64(n)/1e3, "k")
	}
	return short(float64(n)/1e6, "M")
}

// startedText is a start time in the local zone, to the second.
func startedText(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// eventClock is the time of day of an event, in the local zone.
func eventClock(t time.Time) string {
	if t.IsZero() {
		return "--:--:--"
	}
	return t.Local().Format("15:04:05")
}

// oneLineText folds a text's whitespace, newlines included, to single
// spaces.
func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }

// clipText folds s to one line and cuts it to n characters.
func clipText(s string, n int) string {
	s = oneLineText(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func countText(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func indentLines(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}
