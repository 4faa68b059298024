package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/agentdef"
)

// agentsFlags are the flags of the cadre agents subcommands.
type agentsFlags struct {
	dirs    []string
	plugins []string
	strict  bool
	json    bool
}

func (f *agentsFlags) register(cmd *cobra.Command, jsonUsage string) {
	fl := cmd.Flags()
	fl.StringArrayVar(&f.dirs, "agents-dir", nil, "extra folder of agent definitions (repeatable)")
	fl.StringArrayVar(&f.plugins, "plugin-dir", nil, "a Claude Code plugin folder, or a folder of plugins (repeatable)")
	fl.BoolVar(&f.strict, "strict", false, "reject agent files with tool names cadre cannot resolve")
	if jsonUsage != "" {
		fl.BoolVar(&f.json, "json", false, jsonUsage)
	}
}

func (a *app) newAgentsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "List, show and check agent definitions",
		Long: `Agent definitions are markdown files with YAML frontmatter, read from, lowest
precedence first: cadre's built-in agents; ~/.cadre/agents, ~/.claude/agents and
~/.config/opencode/agent; the project's .cadre/agents, .claude/agents and
.opencode/agent(s), from the repository root down to the current directory;
then agentsDirs: from the config and each --agents-dir.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(a.newAgentsListCmd(), a.newAgentsShowCmd(), a.newAgentsValidateCmd())
	return cmd
}

func (a *app) newAgentsListCmd() *cobra.Command {
	var f agentsFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the agents in effect, with their scope, file, model, tools and status",
		Example: `  cadre agents list
  cadre agents list --json --agents-dir ../shared-agents`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, opts, err := a.agentOptions(&f)
			if err != nil {
				return err
			}
			cat, diags := agentdef.Load(opts)
			rows := listRows(cat, diags)
			if f.json {
				return agentsWriteJSON(a.io.Stdout, rows)
			}
			a.printAgentTable(rows)
			a.printProblems(diags)
			return nil
		},
	}
	f.register(cmd, "print a JSON array of agents instead of a table")
	return cmd
}

// agentRow is one line of cadre agents list.
type agentRow struct {
	Name        string   `json:"name"`
	Scope       string   `json:"scope"`
	File        string   `json:"file"`
	Description string   `json:"description"`
	Tools       []string `json:"tools"`
	// Disallowed are taken away from Tools (or from the parent's tools).
	Disallowed []string         `json:"disallowed_tools,omitempty"`
	Model      string           `json:"model"`
	ModelRole  string           `json:"model_role,omitempty"`
	Visibility cadre.Visibility `json:"visibility"`
	// Status is ok, "N warnings", or overridden (by OverriddenBy).
	Status       string `json:"status"`
	Warnings     int    `json:"warnings"`
	OverriddenBy string `json:"overridden_by,omitempty"`
}

func listRows(cat *agentdef.Catalog, diags []agentdef.Diagnostic) []agentRow {
	warnings := map[string]int{}
	for _, d := range diags {
		if d.Severity == agentdef.SeverityWarning {
			warnings[d.File]++
		}
	}
	row := func(d *cadre.Definition, status string) agentRow {
		r := agentRow{Name: d.Name, Scope: d.Scope, File: d.File, Description: d.Description, Tools: d.Tools, Disallowed: d.DisallowedTools,
			Model: d.Model, ModelRole: d.ModelRole, Visibility: d.Visibility, Status: status, Warnings: warnings[d.File]}
		if r.Status == "" {
			r.Status = "ok"
			if n := r.Warnings; n > 0 {
				r.Status = countNoun(n, "warning")
			}
		}
		return r
	}
	rows := []agentRow{}
	for _, d := range cat.All() {
		rows = append(rows, row(d, ""))
	}
	// Overridden agents are listed too, except built-in ones: a project
	// copy of a built-in agent (as cadre init writes) is expected.
	for _, d := range cat.Overridden() {
		if d.Scope == agentdef.ScopeBuiltin {
			continue
		}
		r := row(d, "overridden")
		if cur, ok := cat.Get(d.Name); ok {
			r.OverriddenBy = cur.File
		}
		rows = append(rows, r)
	}
	slices.SortStableFunc(rows, func(x, y agentRow) int { return strings.Compare(x.Name, y.Name) })
	return rows
}

func (a *app) printAgentTable(rows []agentRow) {
	tw := tabwriter.NewWriter(a.io.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSCOPE\tMODEL\tTOOLS\tVISIBILITY\tSTATUS\tFILE")
	for _, r := range rows {
		status := r.Status
		if r.OverriddenBy != "" {
			status += " by " + a.relPath(r.OverriddenBy)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Scope, modelCell(r.Model, r.ModelRole),
			cellClip(toolsCell(r.Tools, r.Disallowed), 60), r.Visibility, status, a.relPath(r.File))
	}
	_ = tw.Flush()
}

func modelCell(model, role string) string {
	switch {
	case model != "":
		return model
	case role != "":
		return "role:" + role
	}
	return "(parent's)"
}

// toolsCell shows the tools an agent gets, with the delegation tools as
// one word when all are there: its list less the disallowed tools, or the
// parent's except them.
func toolsCell(tools, disallowed []string) string {
	if tools == nil {
		if len(disallowed) > 0 {
			return "(parent's) except " + strings.Join(disallowed, ", ")
		}
		return "(parent's)"
	}
	tools = slices.DeleteFunc(slices.Clone(tools), func(t string) bool { return slices.Contains(disallowed, t) })
	if len(tools) == 0 {
		return "(none)"
	}
	sub := agentdef.DelegationTools()
	all := true
	for _, s := range sub {
		all = all && slices.Contains(tools, s)
	}
	var out []string
	for _, t := range tools {
		if all && slices.Contains(sub, t) {
			continue
		}
		out = append(out, t)
	}
	if all {
		out = append(out, agentdef.GroupDelegation)
	}
	return strings.Join(out, ", ")
}

func cellClip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func countNoun(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// printProblems tells on stderr how many files were rejected or warned
// about, pointing at validate for the details.
func (a *app) printProblems(diags []agentdef.Diagnostic) {
	rejected, warned := map[string]bool{}, map[string]bool{}
	for _, d := range diags {
		switch d.Severity {
		case agentdef.SeverityError:
			rejected[d.File] = true
		case agentdef.SeverityWarning:
			warned[d.File] = true
		}
	}
	var parts []string
	if n := len(rejected); n > 0 {
		parts = append(parts, countNoun(n, "file")+" rejected")
	}
	if n := len(warned); n > 0 {
		parts = append(parts, countNoun(n, "file")+" with warnings")
	}
	if len(parts) > 0 {
		fmt.Fprintf(a.io.Stderr, "%s: run cadre agents validate to see why\n", strings.Join(parts, ", "))
	}
}

func (a *app) newAgentsShowCmd() *cobra.Command {
	var f agentsFlags
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show every field of an agent, its resolved tools and model, and its prompt",
		Example: `  cadre agents show code-analyst
  cadre agents show --json research-assistant`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("cadre agents show needs one agent name, for example: cadre agents show code-analyst (cadre agents list shows the names)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, opts, err := a.agentOptions(&f)
			if err != nil {
				return err
			}
			cat, diags := agentdef.Load(opts)
			def, ok := cat.Get(args[0])
			if !ok {
				return unknownAgent(args[0], cat, diags, a.relPath)
			}
			if f.json {
				return agentsWriteJSON(a.io.Stdout, def)
			}
			a.showAgent(cfg, def, cat, diags)
			return nil
		},
	}
	f.register(cmd, "print the definition as JSON")
	return cmd
}

// unknownAgent explains a name that is not in the catalog: a near name, or
// the file that defined it and was rejected.
func unknownAgent(name string, cat *agentdef.Catalog, diags []agentdef.Diagnostic, rel func(string) string) error {
	var why []string
	for _, d := range diags {
		if d.Severity == agentdef.SeverityError && strings.TrimSuffix(filepath.Base(d.File), filepath.Ext(d.File)) == name {
			d.File = rel(d.File)
			why = append(why, "\n  "+d.String())
		}
	}
	if len(why) > 0 {
		return fmt.Errorf("agent %s was not loaded:%s", name, strings.Join(why, ""))
	}
	names := cat.Names()
	msg := fmt.Sprintf("no agent named %q", name)
	best, bestDist := "", 4
	for _, n := range names {
		if dist := nameDistance(strings.ToLower(n), strings.ToLower(name)); dist < bestDist {
			best, bestDist = n, dist
		}
	}
	if best != "" {
		msg += fmt.Sprintf("; did you mean %s?", best)
	}
	if len(names) > 0 {
		msg += " Agents: " + strings.Join(names, ", ")
	}
	return fmt.Errorf("%s", msg)
}

func nameDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// ruleLine shows one rule of a definition: what it decides, about which
// tool and calls, and where it comes from.
func ruleLine(r cadre.ToolRule) string {
	what := "every call"
	if r.Pattern != "" {
		what = fmt.Sprintf("%s %q", r.Syntax, r.Pattern)
	}
	tool := r.Tool
	switch tool {
	case cadre.RuleAgents:
		tool = "starting agents"
	case cadre.RuleAnyTool:
		tool = "every tool"
	}
	line := fmt.Sprintf("%-5s %s: %s", r.Action, tool, what)
	if r.Source != "" {
		line += "  (" + r.Source + ")"
	}
	return line
}

// showAgent prints every field of a definition, then its prompt.
func (a *app) showAgent(cfg *config, def *cadre.Definition, cat *agentdef.Catalog, diags []agentdef.Diagnostic) {
	w := a.io.Stdout
	field := func(name, format string, args ...any) {
		fmt.Fprintf(w, "%-22s %s\n", name+":", fmt.Sprintf(format, args...))
	}
	yesNo := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	field("name", "%s", def.Name)
	field("description", "%s", strings.ReplaceAll(def.Description, "\n", "\n"+strings.Repeat(" ", 23)))
	field("scope", "%s", def.Scope)
	field("file", "%s", a.relPath(def.File))
	for _, o := range cat.Overridden() {
		if strings.EqualFold(o.Name, def.Name) {
			field("overrides", "%s (%s)", a.relPath(o.File), o.Scope)
		}
	}
	field("model", "%s", a.modelLine(cfg, def))
	if def.ModelRole != "" {
		field("model role", "%s", def.ModelRole)
	}
	switch {
	case def.Tools == nil:
		field("tools", "the parent's tools")
	case len(def.Tools) == 0:
		field("tools", "none")
	default:
		field("tools", "%s", strings.Join(def.Tools, ", "))
	}
	if len(def.DisallowedTools) > 0 {
		field("disallowed tools", "%s", strings.Join(def.DisallowedTools, ", "))
	}
	for i, r := range def.Rules {
		if i == 0 {
			field("rules", "%s", ruleLine(r))
			continue
		}
		fmt.Fprintf(w, "%-22s %s\n", "", ruleLine(r))
	}
	field("timeout", "%s of inactivity", def.TimeoutOrDefault())
	field("visibility", "%s", def.Visibility)
	if def.MaxTurns > 0 {
		field("max turns", "%d", def.MaxTurns)
	} else {
		field("max turns", "the run's (default %d)", cadre.DefaultMaxTurns)
	}
	if def.MaxDepth > 0 {
		field("max depth", "%d", def.MaxDepth)
	}
	if def.Temperature != nil {
		field("temperature", "%g", *def.Temperature)
	}
	field("report", "%s", def.Report)
	field("protocol", "%s", def.Protocol)
	field("onboarding", "%s (at most %d questions)", def.Onboarding, def.MaxQuestions)
	field("ask caller", "%s", yesNo(def.AskCaller))
	field("say", "%s", yesNo(def.Say))
	field("background", "%s", yesNo(def.Background))
	field("structured findings", "%s", yesNo(def.EmitStructuredFindings))
	if len(def.OutputSchema) > 0 {
		field("output schema", "%s", def.OutputSchema)
	}
	if len(def.Extra) > 0 {
		fmt.Fprintln(w, "other fields (kept as written):")
		for _, k := range slices.Sorted(maps.Keys(def.Extra)) {
			v, _ := json.Marshal(def.Extra[k])
			if note := extraNote(k); note != "" {
				field("  "+k, "%s  (%s)", v, note)
				continue
			}
			field("  "+k, "%s", v)
		}
	}
	var mine []agentdef.Diagnostic
	for _, d := range diags {
		if d.File == def.File {
			mine = append(mine, d)
		}
	}
	if len(mine) > 0 {
		fmt.Fprintln(w, "diagnostics:")
		for _, d := range mine {
			d.File = a.relPath(d.File)
			fmt.Fprintf(w, "  %s\n", d)
		}
	}
	fmt.Fprintln(w, "prompt:")
	fmt.Fprint(w, def.Prompt)
	if !strings.HasSuffix(def.Prompt, "\n") {
		fmt.Fprintln(w)
	}
}

// extraNote says what cadre makes of a field kept in Definition.Extra;
// fields it does not act on have none.
func extraNote(key string) string {
	switch key {
	case "mode":
		return "OpenCode: a primary agent is internal"
	case "permission":
		return "OpenCode: read as the rules above, enforced on every call"
	case "displayName":
		return "the name as written in the file"
	}
	return ""
}

// modelLine says which model an agent gets, as a run would choose it.
func (a *app) modelLine(cfg *config, def *cadre.Definition) string {
	parent := "the parent's model"
	m := newModels(cfg, a.io.Getenv)
	m.scripted = a.scriptedAllowed(cfg, m)
	got, note := m.Choose(def, parent)
	asked := def.Model
	if asked == "" {
		asked = "(none)"
	}
	switch {
	case note != "":
		return fmt.Sprintf("%s: not configured, so the parent's model is used (add %s under models: in .cadre/config.yaml to choose one)", asked, def.Model)
	case got == parent:
		if def.ModelRole != "" {
			return fmt.Sprintf("%s: the parent's model (no model named %s is configured for the role)", asked, def.ModelRole)
		}
		return asked + ": the parent's model"
	}
	if full, err := m.resolve(got); err == nil && full != got {
		return fmt.Sprintf("%s → %s", got, full)
	}
	return got
}

func (a *app) newAgentsValidateCmd() *cobra.Command {
	var f agentsFlags
	cmd := &cobra.Command{
		Use:   "validate [PATH...]",
		Short: "Check agent files and print what is wrong with them, as file:line:col: severity: message",
		Long: `Without PATH, check every agent file cadre would load. With PATHs (files or
folders), check only those, and the folders of --agents-dir. The exit status
is 1 if any file has an error.`,
		Example: `  cadre agents validate
  cadre agents validate .claude/agents ~/my-agent.md
  cadre agents validate --strict --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, opts, err := a.agentOptions(&f)
			if err != nil {
				return err
			}
			if len(args) > 0 {
				wd, err := a.wd()
				if err != nil {
					return err
				}
				// Only the paths named, and the folders of --agents-dir:
				// the config's agentsDirs are not asked about.
				var paths []string
				for _, p := range append(slices.Clone(args), f.dirs...) {
					paths = append(paths, absUnder(wd, a.expandHome(p)))
				}
				opts.ExtraDirs = paths
				opts.NoBuiltin, opts.NoUser, opts.NoProject = true, true, true
			}
			cat, diags := agentdef.Load(opts)
			agentdef.SortDiagnostics(diags)
			if f.json {
				out := struct {
					Agents      []string              `json:"agents"`
					Diagnostics []agentdef.Diagnostic `json:"diagnostics"`
				}{cat.Names(), diags}
				if out.Agents == nil {
					out.Agents = []string{}
				}
				if out.Diagnostics == nil {
					out.Diagnostics = []agentdef.Diagnostic{}
				}
				if err := agentsWriteJSON(a.io.Stdout, out); err != nil {
					return err
				}
			} else {
				counts := map[agentdef.Severity]int{}
				for _, d := range diags {
					counts[d.Severity]++
					d.File = a.relPath(d.File)
					fmt.Fprintln(a.io.Stdout, d)
				}
				fmt.Fprintf(a.io.Stderr, "%s loaded; %s, %s, %s\n", countNoun(cat.Len(), "agent"),
					countNoun(counts[agentdef.SeverityError], "error"), countNoun(counts[agentdef.SeverityWarning], "warning"),
					countNoun(counts[agentdef.SeverityInfo], "note"))
			}
			if agentdef.HasErrors(diags) {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	f.register(cmd, `print {"agents": [...], "diagnostics": [...]} as JSON`)
	return cmd
}

// agentOptions reads the config and turns it and the flags into the
// options agentdef.Load takes. Folders from the config and the flags are
// resolved against the working directory; ~ is the home directory.
func (a *app) agentOptions(f *agentsFlags) (*config, agentdef.LoadOptions, error) {
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, agentdef.LoadOptions{}, err
	}
	cfg.Plugins = append(cfg.Plugins, f.plugins...)
	opts, err := a.loadOptions(cfg, f.dirs, f.strict)
	return cfg, opts, err
}

// loadOptions are the agentdef options of a configuration: its agentsDirs
// and then dirs, resolved against the working directory; strict when the
// flag or the configuration says so.
func (a *app) loadOptions(cfg *config, dirs []string, strict bool) (agentdef.LoadOptions, error) {
	wd, err := a.wd()
	if err != nil {
		return agentdef.LoadOptions{}, err
	}
	opts := agentdef.LoadOptions{
		Dir:        wd,
		Home:       a.home(),
		Strict:     strict || cfg.Strict != nil && *cfg.Strict,
		MCPServers: slices.Sorted(maps.Keys(cfg.MCPServers)),
		Models:     slices.Sorted(maps.Keys(cfg.Models)),
	}
	for _, d := range append(slices.Clone(cfg.AgentsDirs), dirs...) {
		opts.ExtraDirs = append(opts.ExtraDirs, absUnder(wd, a.expandHome(d)))
	}
	for _, d := range cfg.Plugins {
		opts.PluginDirs = append(opts.PluginDirs, absUnder(wd, a.expandHome(d)))
	}
	return opts, nil
}

func (a *app) expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h := a.home(); h != "" {
			return filepath.Join(h, p[1:])
		}
	}
	return p
}

func absUnder(wd, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(wd, p)
}

// relPath shows a path relative to the working directory when it is below
// it.
func (a *app) relPath(p string) string {
	wd, err := a.wd()
	if err != nil || !filepath.IsAbs(p) {
		return p
	}
	if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}

func agentsWriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
