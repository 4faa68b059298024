package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/cadre-ai/cadre/tool"
)

// promptApproval asks on the console whether a call may go ahead, showing
// what it would do in full: the text a write would write, the lines an
// edit replaces, the whole command. "a" allows that tool for the rest of
// the run without asking again: for as long as the console lasts, which
// in a session (cadre chat) is every follow-up of the run.
func promptApproval(con *console) func(context.Context, tool.ApprovalRequest) (bool, error) {
	con.mu.Lock()
	if con.always == nil {
		con.always = &allowed{tools: map[string]bool{}}
	}
	al := con.always
	con.mu.Unlock()
	mu, always := &al.mu, al.tools
	return func(ctx context.Context, req tool.ApprovalRequest) (bool, error) {
		mu.Lock()
		ok := always[req.Tool]
		mu.Unlock()
		if ok {
			return true, nil
		}
		why := ""
		if req.Rule != "" {
			why = "\n(" + tool.Printable(req.Rule) + ")"
		}
		q := fmt.Sprintf("\n%s wants to run %s: %s%s\n%sAllow? [y/N] (a: always %s for this run) ", req.Agent, req.Tool, req.Summary, why,
			approvalDetail(req), req.Tool)
		ans, err := con.ask(ctx, q)
		if err != nil {
			return false, err
		}
		switch strings.ToLower(ans) {
		case "y", "yes":
			return true, nil
		case "a", "always":
			mu.Lock()
			always[req.Tool] = true
			mu.Unlock()
			return true, nil
		}
		return false, nil
	}
}

// allowed are the tools the user allowed for the rest of the run.
type allowed struct {
	mu    sync.Mutex
	tools map[string]bool
}

// maxDetailLines bounds the lines of a call shown before its approval.
const maxDetailLines = 40

// approvalDetail shows what a call of a built-in tool would do: a write's
// text, an edit's lines as a diff, a command whole; empty for other tools.
// What the model wrote is shown escaped.
func approvalDetail(req tool.ApprovalRequest) string {
	var a struct {
		Path      string `json:"path"`
		Content   string `json:"content"`
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
		Command   string `json:"command"`
	}
	if len(req.Args) == 0 || json.Unmarshal([]byte(req.Args), &a) != nil {
		return ""
	}
	var lines []string
	switch req.Tool {
	case "write_file":
		for _, l := range strings.Split(strings.TrimSuffix(a.Content, "\n"), "\n") {
			lines = append(lines, "+ "+l)
		}
	case "edit_file":
		for _, l := range strings.Split(strings.TrimSuffix(a.OldString, "\n"), "\n") {
			lines = append(lines, "- "+l)
		}
		for _, l := range strings.Split(strings.TrimSuffix(a.NewString, "\n"), "\n") {
			lines = append(lines, "+ "+l)
		}
	case "run_command":
		if !strings.Contains(a.Command, "\n") && len(a.Command) <= 1000 {
			return "" // the summary shows it whole
		}
		lines = strings.Split(a.Command, "\n")
	default:
		return ""
	}
	if len(lines) > maxDetailLines {
		n := len(lines) - maxDetailLines
		lines = append(lines[:maxDetailLines], fmt.Sprintf("… (%d more lines)", n))
	}
	return tool.Printable(strings.Join(lines, "\n")) + "\n"
}
