package cli

import (
	"context"
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
			detailLines(tool.ApprovalDetail(req)), req.Tool)
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

// detailLines is a call's detail as lines under its approval question.
func detailLines(d string) string {
	if d == "" {
		return ""
	}
	return d + "\n"
}
