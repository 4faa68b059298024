package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cadre-ai/cadre/tool"
)

// firstPending makes a request of run on a and returns it as listed, with
// a function that withdraws it.
func firstPending(t *testing.T, a *Approvals, run string) (Pending, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = a.Prompt(run)(ctx, tool.ApprovalRequest{Agent: "root", Tool: "write_file", Summary: "write notes.md"})
	}()
	deadline := time.Now().Add(failsafe)
	for time.Now().Before(deadline) {
		if p, _ := a.Pending(run); len(p) == 1 {
			return p[0], func() { cancel(); <-done }
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	t.Fatal("the request was never listed")
	return Pending{}, nil
}

// The ids of two servers' approvals differ, so that an answer from a page
// left open across a restart, naming a request of the old server, answers
// nothing on the new one, where the same run asks again.
func TestApprovalIDsDifferAcrossServers(t *testing.T) {
	var before, after Approvals
	old, stop := firstPending(t, &before, "run-1")
	stop()
	cur, stop := firstPending(t, &after, "run-1")
	defer stop()
	if old.ID == cur.ID || !strings.HasPrefix(cur.ID, "approval-") {
		t.Fatalf("the first requests of two servers have ids %q and %q, want two different approval-… ids", old.ID, cur.ID)
	}
	if err := after.Answer("run-1", old.ID, true); err == nil {
		t.Errorf("an answer naming the old server's %s was taken by the new one's %s", old.ID, cur.ID)
	}
	if p, _ := after.Pending("run-1"); len(p) != 1 || p[0].ID != cur.ID {
		t.Errorf("after the stale answer, waiting: %+v, want %s", p, cur.ID)
	}
}
