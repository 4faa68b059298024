package local

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/model/scripted"
)

// wakeResumeScript is a root that starts a child in the background, waits
// for its report, then wakes it with a message and waits for its second
// report in the same reply. The child reports its round: one more than the
// wake messages it has read.
func wakeResumeScript(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
	const child = "root/researcher.1"
	if req.Agent != cadre.RootID {
		round := 1
		for _, m := range req.Messages {
			round += strings.Count(m.Content, "look again")
		}
		return calls(tc(fmt.Sprintf("r%d", round), loop.ToolSendAgentMessage, map[string]string{"text": fmt.Sprintf("report %d", round)})), nil
	}
	switch req.Turn {
	case 1:
		return calls(tc("bg", loop.ToolStartBackground, map[string]string{"agent": "researcher", "prompt": "look"})), nil
	case 2:
		return calls(tc("w1", loop.ToolWaitAgent, map[string]string{"agentId": child})), nil
	case 3:
		return calls(
			tc("m", loop.ToolSendAgentMessage, map[string]string{"agentId": child, "text": "look again"}),
			tc("w2", loop.ToolWaitAgent, map[string]string{"agentId": child}),
		), nil
	}
	return text("final"), nil
}

// TestResumeAfterCrashDuringWake kills the process (the store dies) at
// every journal entry of a run in which the root wakes a child that had
// reported, and resumes it. The run whose store died must end, even when
// the entry refused is the woken child's wake; the resumed run must
// complete, and the woken child's second report reach the root once,
// whether the process died before or after the child journaled its wake.
func TestResumeAfterCrashDuringWake(t *testing.T) {
	checkNoLeaks(t)
	cfg := func(s cadre.Store) Config {
		return Config{Models: OneModel{Name: "fake", Model: scripted.Func(wakeResumeScript)}, RootModel: "fake", Store: s,
			Definitions: defs("researcher")}
	}
	full := memstore.New()
	r, err := begin(New(cfg(full)), "task")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r.Wait(); err != nil || res.Answer != "final" {
		t.Fatalf("uninterrupted run: %v %+v", err, res)
	}
	total := journalSize(full, r.ID())
	for limit := 1; limit < total; limit++ {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			mem := memstore.New()
			crash := &crashStore{Store: mem, limit: limit}
			r, err := begin(New(cfg(crash)), "task")
			if err != nil {
				t.Fatal(err)
			}
			// The store dies under the run: it must end (failed) all the
			// same, whichever agent's entry the store refused.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res0, err0 := r.e.Wait(ctx, r.ID())
			switch {
			case errors.Is(err0, context.DeadlineExceeded):
				r.e.Cancel(context.Background(), r.ID(), cadre.CancelOptions{Reason: "stuck"})
				t.Fatalf("the run whose store died after %d entries did not end\n%s", limit, dumpJournals(t, mem, r.ID()))
			case !crash.dead():
				// Inputs that arrive together may share an entry: this
				// interleaving journaled fewer entries, and must be complete.
				if err0 != nil || res0.Answer != "final" {
					t.Fatalf("the store never died, and the run ended with %v, %+v", err0, res0)
				}
				return
			}
			r2, err := resumeRun(New(cfg(mem)), r.ID())
			if err != nil {
				t.Fatal(err)
			}
			ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel2()
			res, err := r2.e.Wait(ctx2, r2.ID())
			if err != nil {
				r2.e.Cancel(context.Background(), r2.ID(), cadre.CancelOptions{Reason: "stuck"})
				r2.Wait()
				t.Fatalf("the resumed run did not end: %v\n%s", err, dumpJournals(t, mem, r.ID()))
			}
			if res.Answer != "final" {
				t.Fatalf("resumed run: %+v", res)
			}
			states := replayAll(t, mem, r.ID())
			var conv strings.Builder
			for _, m := range states[cadre.RootID].Messages() {
				conv.WriteString(m.Content + "\n")
			}
			for _, rep := range []string{"report 1", "report 2"} {
				if n := strings.Count(conv.String(), rep); n != 1 {
					t.Errorf("%s reached the root %d times:\n%s", rep, n, conv.String())
				}
			}
		})
	}
}

// replayAll replays the journal of every agent of a run.
func replayAll(t *testing.T, s cadre.Store, run string) map[cadre.AgentID]*loop.State {
	t.Helper()
	ctx := context.Background()
	agents, _ := s.ListAgents(ctx, run)
	states := map[cadre.AgentID]*loop.State{}
	for _, a := range agents {
		entries, _ := s.Journal(ctx, run, a.ID)
		var ins []loop.Input
		for _, e := range journalInputs(t, s, entries) {
			ins = append(ins, e.In)
		}
		states[a.ID] = loop.Replay(ins)
	}
	return states
}

// dumpJournals writes out every agent's journal, for a failure message.
func dumpJournals(t *testing.T, s cadre.Store, run string) string {
	ctx := context.Background()
	agents, _ := s.ListAgents(ctx, run)
	var b strings.Builder
	for _, a := range agents {
		entries, _ := s.Journal(ctx, run, a.ID)
		fmt.Fprintf(&b, "%s:\n", a.ID)
		for _, e := range entries {
			fmt.Fprintf(&b, "  %d %s %.200s\n", e.Seq, e.Kind, e.Data)
		}
	}
	return b.String()
}
