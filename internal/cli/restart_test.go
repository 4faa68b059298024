package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/memstore"
)

func rootDelta(text string) cadre.Event {
	return cadre.Event{Type: cadre.EventModelDelta, Agent: cadre.RootID, Data: cadre.ModelDelta{Text: text}}
}

func restartDelta(agent cadre.AgentID) cadre.Event {
	return cadre.Event{Type: cadre.EventModelDelta, Agent: agent, Data: cadre.ModelDelta{Restart: true}}
}

// A reply that broke off and was asked again is never printed twice
// without a word: the note stands on a line of its own between the void
// text and the new reply.
func TestRendererMarksRestartedReply(t *testing.T) {
	var out bytes.Buffer
	r := newRenderer(&out, true)
	r.handle(rootDelta("The release is "))
	r.handle(rootDelta("on"))
	r.handle(restartDelta("root/researcher.1")) // a child's restart is not the streamed answer's
	r.handle(restartDelta(cadre.RootID))
	r.handle(rootDelta("The release is on 3 March."))
	r.handle(cadre.Event{Type: cadre.EventModelResponse, Agent: cadre.RootID, Data: cadre.ModelResponse{Text: "The release is on 3 March."}})
	want := "The release is on\n" + replyRestarted + "\nThe release is on 3 March.\n"
	if got := out.String(); got != want {
		t.Errorf("terminal shows %q, want %q", got, want)
	}
}

// The live tree shows the new reply after the note, not the void text.
func TestTreeViewRestartedReply(t *testing.T) {
	src := &fakeTree{agents: sampleTree()[:1]}
	v := newTestTreeView(&console{w: &countingWriter{}}, src, 0)
	v.now = func() time.Time { return treeT0 }
	v.size = func() (int, int) { return 80, 24 }
	v.handle(rootDelta("The release is "))
	v.handle(rootDelta("on 3 Ma"))
	v.handle(restartDelta(cadre.RootID))
	v.handle(rootDelta("The release is on 3 March."))
	f := strings.Join(v.snapshot(false).render(), "\n")
	if !strings.Contains(f, replyRestarted+"\nThe release is on 3 March.") || strings.Contains(f, "on 3 Ma\n") {
		t.Errorf("frame does not show the note then the new reply alone:\n%s", f)
	}
}

// runs show names the model that answered when the server named another
// than the one asked for.
func TestRunsShowAnsweredBy(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	run := &cadre.RunRecord{ID: "r-answered", Task: "Summarise", Status: cadre.StatusDone, Model: "openai:gpt-4o", Started: t0, Ended: t0.Add(time.Minute), Agents: 2}
	runsMust(t, s.CreateRun(ctx, run))
	for _, a := range []*cadre.AgentRecord{
		{Run: run.ID, ID: cadre.RootID, Definition: "default", Model: "openai:gpt-4o", Task: "Summarise", Status: cadre.StatusDone, Started: t0, Ended: t0.Add(time.Minute)},
		{Run: run.ID, ID: "root/critic.1", Parent: cadre.RootID, Depth: 1, Definition: "critic", Model: "fast", Task: "Check", Status: cadre.StatusDone, Started: t0, Ended: t0.Add(time.Second)},
	} {
		runsMust(t, s.PutAgent(ctx, a))
	}
	ev := func(agent cadre.AgentID, d cadre.Payload) cadre.Event {
		return cadre.Event{Type: d.EventType(), Run: run.ID, Agent: agent, Parent: agent.Parent(), Depth: agent.Depth(), Time: t0, Data: d}
	}
	runsMust(t, s.AppendEvents(ctx, []cadre.Event{
		ev(cadre.RootID, cadre.ModelResponse{Turn: 1, Text: "a", Model: "gpt-4o"}),
		ev("root/critic.1", cadre.ModelResponse{Turn: 1, Text: "b", Model: "gpt-4o-mini-2024-07-18"}),
		ev("root/critic.1", cadre.ModelResponse{Turn: 2, Text: "c", Model: "gpt-4o-mini-2024-07-18"}),
	}))
	v, err := loadRunView(ctx, s, run, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	printRunView(&out, v, t0.Add(time.Hour))
	if l := lineContaining(t, out.String(), "critic.1"); !strings.Contains(l, "fast → gpt-4o-mini-2024-07-18") {
		t.Errorf("critic's line %q does not name the model that answered", l)
	}
	if l := lineContaining(t, out.String(), "✓ root "); strings.Contains(l, "→") {
		t.Errorf("root's line %q names another model, though the one asked for answered", l)
	}
}
