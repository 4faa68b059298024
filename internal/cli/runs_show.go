package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cadre-ai/cadre"
)

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
	// Costs are what each agent's model calls cost, when the run had
	// prices.
	Costs map[cadre.AgentID]float64 `json:"costs,omitempty"`
	// Todos are each agent's task list as it last wrote it, in the order
	// of the agents' first lists.
	Todos []agentTodos `json:"todos,omitempty"`
	// AnsweredBy are, for each agent whose server named the model that
	// answered, those models in the order they first answered: the name
	// asked for with a version appended, or another model behind a router.
	AnsweredBy map[cadre.AgentID][]string `json:"answered_by,omitempty"`
}

// agentTodos is an agent's latest task list.
type agentTodos struct {
	Agent cadre.AgentID `json:"agent"`
	Items []cadre.Todo  `json:"items"`
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
	if sum.own.interrupted {
		markInterrupted(agents)
	}
	v := &runView{Run: sum, Agents: agents, Findings: []cadre.Finding{}}
	v.Costs, v.Run.Cost = runCosts(evs)
	for _, e := range evs {
		switch d := e.Data.(type) {
		case cadre.FindingReported:
			v.Findings = append(v.Findings, cadre.Finding{Agent: e.Agent, Title: d.Title, Content: d.Content})
		case cadre.ModelResponse:
			if d.Model != "" && !slices.Contains(v.AnsweredBy[e.Agent], d.Model) {
				if v.AnsweredBy == nil {
					v.AnsweredBy = map[cadre.AgentID][]string{}
				}
				v.AnsweredBy[e.Agent] = append(v.AnsweredBy[e.Agent], d.Model)
			}
		case cadre.Todos:
			if i := slices.IndexFunc(v.Todos, func(t agentTodos) bool { return t.Agent == e.Agent }); i >= 0 {
				v.Todos[i].Items = d.Items
			} else {
				v.Todos = append(v.Todos, agentTodos{Agent: e.Agent, Items: d.Items})
			}
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
	if r.Owner != nil {
		field("Owner", ownerText(r.Owner))
	}
	if d := runDuration(r.RunRecord, now); d > 0 {
		label := "Took"
		switch {
		case r.own.interrupted:
			label, d = "Ran", time.Duration(r.Duration*float64(time.Second))
		case !r.Status.Terminal():
			label = "Running"
		}
		field(label, durationText(d))
	}
	tokens := tokensText(r.Usage.Total())
	if r.Usage.Total() > 0 {
		tokens += fmt.Sprintf(" (%s in, %s out)", tokensText(r.Usage.InputTokens), tokensText(r.Usage.OutputTokens))
	}
	field("Tokens", tokens)
	if r.Cost != 0 {
		field("Cost", costText(r.Cost))
	}

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
			case !ag.Status.Terminal() && ag.Status != cadre.StatusInterrupted && !ag.Started.IsZero():
				dur = durationText(now.Sub(ag.Started))
			}
			rows = append(rows, []string{
				strings.Repeat("  ", n.depth) + statusMark(ag.Status) + " " + agentName(ag.ID),
				string(ag.Status), modelText(ag.Model, v.AnsweredBy[ag.ID]), fmt.Sprint(ag.Turns), tokensText(ag.Usage.Total()), dur, clipText(ag.Task, 50),
			})
			if v.Costs != nil {
				row := rows[len(rows)-1]
				rows[len(rows)-1] = append(row[:5:5], costText(v.Costs[ag.ID]), row[5], row[6])
			}
		}
		head, right := []string{"AGENT", "STATUS", "MODEL", "TURNS", "TOKENS", "TIME", "TASK"}, []bool{3: true, 4: true, 5: true}
		if v.Costs != nil {
			head, right = []string{"AGENT", "STATUS", "MODEL", "TURNS", "TOKENS", "COST", "TIME", "TASK"}, []bool{3: true, 4: true, 5: true, 6: true}
		}
		writeTable(w, "", head, rows, right)
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
	for _, t := range v.Todos {
		if len(t.Items) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nTasks of %s (%s)\n", t.Agent, todoCount(t.Items))
		for _, it := range t.Items {
			fmt.Fprintf(w, "  %s %s\n", todoMark(it.Status), it.Content)
		}
	}
	switch {
	case r.Answer != "":
		fmt.Fprintln(w, "\nAnswer")
		fmt.Fprintln(w, strings.TrimSpace(r.Answer))
	case r.Error != "":
		fmt.Fprintf(w, "\nThe run %s: %s\n", r.Status, strings.TrimSpace(r.Error))
	case r.own.interrupted:
		fmt.Fprintf(w, "\nThe %s\n", r.own.interruptedText())
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

// modelText is an agent's model as the runs show table gives it: the model
// asked for, then, when the server named others as answering, those.
func modelText(asked string, answered []string) string {
	name := asked
	if _, m, ok := strings.Cut(asked, ":"); ok {
		name = m
	}
	var other []string
	for _, a := range answered {
		if a != name {
			other = append(other, a)
		}
	}
	if len(other) == 0 {
		return asked
	}
	return asked + " → " + strings.Join(other, ", ")
}
