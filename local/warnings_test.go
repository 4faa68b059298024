package local

import (
	"context"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/model/scripted"
)

// Config.Warnings are told once, as warning events of the root, right
// after the run starts and again after it resumes.
func TestWarningsOnStartAndResume(t *testing.T) {
	const warning = "warning: run_command is unconfined: sandbox: off"
	answer := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) { return text("done"), nil })
	check := func(t *testing.T, ev *events, after cadre.EventType) {
		t.Helper()
		ev.mu.Lock()
		defer ev.mu.Unlock()
		n := 0
		for i, e := range ev.all {
			if e.Type != cadre.EventWarning {
				continue
			}
			n++
			if e.Agent != cadre.RootID || e.Data != (cadre.Warning{Message: warning}) || e.Run == "" {
				t.Errorf("warning event %+v", e)
			}
			if i == 0 || ev.all[i-1].Type != after {
				t.Errorf("the warning is not right after %s: %+v", after, ev.all)
			}
		}
		if n != 1 {
			t.Errorf("%d warning events, want 1", n)
		}
	}

	t.Run("start", func(t *testing.T) {
		_, err, ev := runTask(t, Config{Models: OneModel{Name: "fake", Model: answer}, RootModel: "fake", Warnings: []string{warning}}, "task")
		if err != nil {
			t.Fatal(err)
		}
		check(t, ev, cadre.EventRunStarted)
	})

	t.Run("resume", func(t *testing.T) {
		mem := memstore.New()
		ctx := context.Background()
		const id = "run-warned"
		if err := mem.CreateRun(ctx, &cadre.RunRecord{ID: id, Task: "t", Status: cadre.StatusRunning, Started: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if err := mem.PutAgent(ctx, &cadre.AgentRecord{Run: id, ID: cadre.RootID, Status: cadre.StatusRunning, Started: time.Now()}); err != nil {
			t.Fatal(err)
		}
		start := loop.Start{Config: loop.Config{ID: cadre.RootID, MaxDepth: 3, Definition: "root", Model: "fake", System: "s", MaxTurns: 5},
			Task: "t", Messages: []cadre.Message{{Role: cadre.RoleUser, Content: "t"}}}
		data, _, err := roundTripOwned(start, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := mem.Append(ctx, []cadre.JournalEntry{{Run: id, Agent: cadre.RootID, Seq: 1, Kind: start.Kind(), Data: data, Time: time.Now()}}); err != nil {
			t.Fatal(err)
		}
		cfg := Config{Models: OneModel{Name: "fake", Model: answer}, RootModel: "fake", Store: mem, Warnings: []string{warning}}
		e := New(cfg)
		if err := e.Resume(ctx, id); err != nil {
			t.Fatal(err)
		}
		ev := watch(t, e, id, nil)
		if _, err := waitRun(t, e, id); err != nil {
			t.Fatal(err)
		}
		ev.wait(t)
		check(t, ev, cadre.EventRunResumed)
	})
}
