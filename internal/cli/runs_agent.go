package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/journal"
	"github.com/cadre-ai/cadre/loop"
)

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
// the agent had after its last input; rd reads the run's journal.
func replayJournal(ctx context.Context, rd *journal.Reader, entries []cadre.JournalEntry) (*loop.State, error) {
	for _, e := range entries {
		if err := e.Verify(); err != nil {
			return nil, err
		}
	}
	ins, err := rd.InputsOf(ctx, entries)
	if err != nil {
		return nil, err
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
	st, err := replayJournal(ctx, &journal.Reader{Store: s, Run: r.ID}, entries)
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
