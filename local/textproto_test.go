package local

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/model/scripted"
	"github.com/cadre-ai/cadre/prompt"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// These tests run whole trees on the <spawn_agents> text protocol: every
// model answers with text only and is never offered a tool.

// textConfig is an engine configuration on the text protocol. Without
// definitions the catalogue holds one, "helper", as a real one always
// holds the built-in agents (see TestTextSpawnWithoutDefinitions).
func textConfig(m cadre.Model, d ...*cadre.Definition) Config {
	if len(d) == 0 {
		d = defs("helper")
	}
	return Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Protocol: cadre.ProtocolText, Definitions: d}
}

// taskOf is the task a generic text-protocol child was given: its first
// user message that is not a previous step's result.
func taskOf(req *cadre.Request) string {
	for _, m := range req.Messages {
		if m.Role == cadre.RoleUser && !strings.HasPrefix(m.Content, "Previous sub-agent result for context:\n") {
			return m.Content
		}
	}
	return ""
}

// spawnBlock writes a <spawn_agents> block of generic tasks.
func spawnBlock(mode string, tasks ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<spawn_agents mode=%q>\n", mode)
	for _, t := range tasks {
		fmt.Fprintf(&b, "  <agent task=%q />\n", t)
	}
	b.WriteString("</spawn_agents>")
	return b.String()
}

// checkNoTools fails for every request that offered the model a tool.
func checkNoTools(t *testing.T, reqs []cadre.Request) {
	t.Helper()
	for _, r := range reqs {
		if len(r.Tools) > 0 {
			t.Errorf("%s turn %d was offered %d tools on the text protocol", r.Agent, r.Turn, len(r.Tools))
		}
	}
}

// index returns the position of the first event matching ok, or -1.
func (e *events) index(ok func(cadre.Event) bool) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, ev := range e.all {
		if ok(ev) {
			return i
		}
	}
	return -1
}

// countingModel counts the calls of children in flight at once.
type countingModel struct {
	cadre.Model
	inFlight, peak atomic.Int32
}

func (m *countingModel) Stream(ctx context.Context, req *cadre.Request) iter.Seq2[*cadre.Chunk, error] {
	inner := m.Model.Stream(ctx, req)
	return func(yield func(*cadre.Chunk, error) bool) {
		if req.Agent != cadre.RootID {
			n := m.inFlight.Add(1)
			defer m.inFlight.Add(-1)
			for p := m.peak.Load(); n > p && !m.peak.CompareAndSwap(p, n); p = m.peak.Load() {
			}
		}
		for c, err := range inner {
			if !yield(c, err) {
				return
			}
		}
	}
}

// The three tasks of a parallel block start at once: every child has
// started before any child's model call has returned, and the scripted
// model sees all three calls in flight together. A concurrency limit of two
// queues the third.
func TestTextParallelBlockRunsConcurrently(t *testing.T) {
	checkNoLeaks(t)
	script, err := scripted.Parse([]byte(`
root:
  - text: |
      I'll split this into three parts.
      <spawn_agents mode="parallel">
        <agent task="part one" />
        <agent task="part two" />
        <agent task="part three" />
      </spawn_agents>
  - text: "All three parts are done."
sub:
  - {when: "part one", text: "one is done", delay: 300ms}
  - {when: "part two", text: "two is done", delay: 300ms}
  - {when: "part three", text: "three is done", delay: 300ms}
`), "parallel.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		maxConcurrent int
		wantPeak      int32
	}{{"unlimited", 0, 3}, {"limit 2", 2, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			sm, err := scripted.New(script)
			if err != nil {
				t.Fatal(err)
			}
			m := &countingModel{Model: sm}
			cfg := textConfig(m)
			cfg.Limits.MaxConcurrent = tc.maxConcurrent
			res, err, ev := runTask(t, cfg, "Do the three parts")
			if err != nil {
				t.Fatal(err)
			}
			if res.Answer != "All three parts are done." {
				t.Errorf("answer %q", res.Answer)
			}
			checkNoTools(t, sm.Requests())
			if p := m.peak.Load(); p != tc.wantPeak {
				t.Errorf("at most %d child model calls were in flight at once, want %d", p, tc.wantPeak)
			}
			spawned := ev.of(cadre.EventAgentSpawned)
			if len(spawned) != 3 {
				t.Fatalf("%d agent_spawned events, want 3", len(spawned))
			}
			for i, e := range spawned {
				if data[cadre.AgentSpawned](e).Index != i+1 || data[cadre.AgentSpawned](e).Total != 3 || data[cadre.AgentSpawned](e).Mode != "parallel" || e.Parent != cadre.RootID || e.Depth != 1 {
					t.Errorf("agent_spawned %d: parent %s depth %d data %v", i, e.Parent, e.Depth, e.Data)
				}
			}
			if tc.maxConcurrent == 0 {
				// Overlap from the event stream: the last child to start did
				// so before the first child's model call came back.
				lastStart, firstResponse := -1, -1
				for _, id := range []cadre.AgentID{"root/sub.1", "root/sub.2", "root/sub.3"} {
					s := ev.index(func(e cadre.Event) bool { return e.Type == cadre.EventAgentStarted && e.Agent == id })
					r := ev.index(func(e cadre.Event) bool { return e.Type == cadre.EventModelResponse && e.Agent == id })
					if s < 0 || r < 0 {
						t.Fatalf("%s: agent_started at %d, model_response at %d", id, s, r)
					}
					lastStart = max(lastStart, s)
					if firstResponse < 0 || r < firstResponse {
						firstResponse = r
					}
				}
				if lastStart > firstResponse {
					t.Errorf("a child started (event %d) only after another child's model call returned (event %d): the block ran one at a time", lastStart, firstResponse)
				}
			} else if len(ev.of(cadre.EventAgentQueued)) != 1 {
				t.Errorf("%d queued events, want 1 (the third task waits for a slot)", len(ev.of(cadre.EventAgentQueued)))
			}
			root := sm.RequestsOf(cadre.RootID)
			synth := lastContent(&root[len(root)-1])
			want := prompt.Synthesis("Do the three parts", []prompt.Result{
				{Task: "part one", Status: prompt.StatusCompleted, Output: "one is done"},
				{Task: "part two", Status: prompt.StatusCompleted, Output: "two is done"},
				{Task: "part three", Status: prompt.StatusCompleted, Output: "three is done"},
			})
			if synth != want {
				t.Errorf("synthesis message:\n%s\nwant:\n%s", synth, want)
			}
			if s := ev.of(cadre.EventSynthesisStarted); len(s) != 1 || s[0].Agent != cadre.RootID || data[cadre.SynthesisStarted](s[0]).Tasks != 3 {
				t.Errorf("synthesis_started events %+v", s)
			}
		})
	}
}

// A sequential block runs one task after the other; each step after the
// first gets the previous step's result, and only that, before its task.
func TestTextSequentialBlockPassesPreviousResult(t *testing.T) {
	checkNoLeaks(t)
	var inFlight, peak atomic.Int32
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent == cadre.RootID {
			if req.Turn == 1 {
				return text("Step by step.\n" + spawnBlock("sequential", "gather the data", "analyse the data", "write the report")), nil
			}
			return text("report written"), nil
		}
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		return text("RESULT<" + taskOf(req) + ">"), nil
	})
	res, err, ev := runTask(t, textConfig(m), "Make a report")
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "report written" {
		t.Errorf("answer %q", res.Answer)
	}
	checkNoTools(t, m.Requests())
	if p := peak.Load(); p != 1 {
		t.Errorf("%d sequential steps ran at once", p)
	}
	want := map[cadre.AgentID][]cadre.Message{
		"root/sub.1": {{Role: cadre.RoleUser, Content: "gather the data"}},
		"root/sub.2": {
			{Role: cadre.RoleUser, Content: "Previous sub-agent result for context:\nRESULT<gather the data>"},
			{Role: cadre.RoleUser, Content: "analyse the data"},
		},
		"root/sub.3": {
			{Role: cadre.RoleUser, Content: "Previous sub-agent result for context:\nRESULT<analyse the data>"},
			{Role: cadre.RoleUser, Content: "write the report"},
		},
	}
	for id, msgs := range want {
		reqs := m.RequestsOf(id)
		if len(reqs) != 1 {
			t.Fatalf("%s made %d model calls, want 1", id, len(reqs))
		}
		if d := cmp.Diff(msgs, reqs[0].Messages); d != "" {
			t.Errorf("%s got other messages (-want +got):\n%s", id, d)
		}
	}
	if sys := m.RequestsOf("root/sub.3")[0].System; strings.Contains(sys, "RESULT<gather the data>") {
		t.Error("the third step saw the first step's result")
	}
	// Each step starts only after the step before it has reported.
	for i := 2; i <= 3; i++ {
		prev := cadre.AgentID(fmt.Sprintf("root/sub.%d", i-1))
		reported := ev.index(func(e cadre.Event) bool {
			return e.Type == cadre.EventAgentReported && data[cadre.AgentReported](e).Child == prev
		})
		spawned := ev.index(func(e cadre.Event) bool {
			return e.Type == cadre.EventAgentSpawned && e.Agent == cadre.AgentID(fmt.Sprintf("root/sub.%d", i))
		})
		if reported < 0 || spawned < reported {
			t.Errorf("step %d was spawned (event %d) before step %d reported (event %d)", i, spawned, i-1, reported)
		}
	}
	for i, e := range ev.of(cadre.EventAgentSpawned) {
		if data[cadre.AgentSpawned](e).Index != i+1 || data[cadre.AgentSpawned](e).Total != 3 || data[cadre.AgentSpawned](e).Mode != "sequential" {
			t.Errorf("agent_spawned %d: %v", i, e.Data)
		}
	}
	root := m.RequestsOf(cadre.RootID)
	synth := lastContent(&root[len(root)-1])
	if !strings.Contains(synth, "<result task=\"write the report\" status=\"completed\">\nRESULT<write the report>\n</result>") {
		t.Errorf("synthesis lacks the last step's result:\n%s", synth)
	}
}

// A sequential step whose model call fails is run again once, with the
// same previous result; a step that fails twice is reported as an error
// and the next step gets the last successful result.
func TestTextSequentialStepRetriedOnce(t *testing.T) {
	checkNoLeaks(t)
	var mu sync.Mutex
	calls := map[string]int{}
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent == cadre.RootID {
			if req.Turn == 1 {
				return text(spawnBlock("sequential", "alpha", "beta", "gamma", "delta")), nil
			}
			return text("done"), nil
		}
		task := taskOf(req)
		mu.Lock()
		calls[task]++
		n := calls[task]
		mu.Unlock()
		switch {
		case task == "beta" && n == 1, task == "gamma":
			return nil, errors.New("upstream exploded")
		}
		return text(task + " ok"), nil
	})
	res, err, ev := runTask(t, textConfig(m), "Run the four steps")
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "done" {
		t.Errorf("answer %q", res.Answer)
	}
	if calls["alpha"] != 1 || calls["beta"] != 2 || calls["gamma"] != 2 || calls["delta"] != 1 {
		t.Errorf("model calls per task %v, want alpha 1, beta 2, gamma 2, delta 1", calls)
	}
	// root/sub.1 alpha, sub.2 beta (fails), sub.3 beta again, sub.4 gamma
	// (fails), sub.5 gamma again (fails), sub.6 delta.
	prev := func(id cadre.AgentID) string {
		for _, msg := range m.RequestsOf(id)[0].Messages {
			if s, ok := strings.CutPrefix(msg.Content, "Previous sub-agent result for context:\n"); ok {
				return s
			}
		}
		return ""
	}
	for id, want := range map[cadre.AgentID]string{
		"root/sub.1": "", "root/sub.2": "alpha ok", "root/sub.3": "alpha ok",
		"root/sub.4": "beta ok", "root/sub.5": "beta ok", "root/sub.6": "beta ok",
	} {
		if got := prev(id); got != want {
			t.Errorf("%s (%s) got previous result %q, want %q", id, taskOf(&m.RequestsOf(id)[0]), got, want)
		}
	}
	status := map[cadre.AgentID]cadre.Status{}
	for _, a := range res.Agents {
		status[a.ID] = a.Status
	}
	if status["root/sub.2"] != cadre.StatusFailed || status["root/sub.3"] != cadre.StatusDone || status["root/sub.5"] != cadre.StatusFailed || len(res.Agents) != 7 {
		t.Errorf("agents %v", status)
	}
	root := m.RequestsOf(cadre.RootID)
	want := prompt.Synthesis("Run the four steps", []prompt.Result{
		{Task: "alpha", Status: prompt.StatusCompleted, Output: "alpha ok"},
		{Task: "beta", Status: prompt.StatusCompleted, Output: "beta ok"},
		{Task: "gamma", Status: prompt.StatusFailed, Output: "Error: model call failed: upstream exploded"},
		{Task: "delta", Status: prompt.StatusCompleted, Output: "delta ok"},
	})
	if got := lastContent(&root[len(root)-1]); got != want {
		t.Errorf("synthesis:\n%s\nwant:\n%s", got, want)
	}
	// The retried step keeps its place: index 2 of 4 both times.
	for _, e := range ev.of(cadre.EventAgentSpawned) {
		if (e.Agent == "root/sub.2" || e.Agent == "root/sub.3") && (data[cadre.AgentSpawned](e).Index != 2 || data[cadre.AgentSpawned](e).Total != 4) {
			t.Errorf("retried step spawned as %v", e.Data)
		}
	}
}

// Children run their own blocks down to the depth limit. An agent at the
// limit sees no <agent_capabilities>; its block is refused once with a
// depth_limit event, it does the work itself, and the run completes.
func TestTextRecursionStopsAtDepthLimit(t *testing.T) {
	checkNoLeaks(t)
	for _, insist := range []bool{false, true} {
		t.Run(fmt.Sprintf("insist=%v", insist), func(t *testing.T) {
			deep := "I'll delegate.\n" + spawnBlock("parallel", "too deep")
			m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
				switch req.Agent.Depth() {
				case 0:
					if req.Turn == 1 {
						return text(spawnBlock("parallel", "top task")), nil
					}
					return text("root final"), nil
				case 1:
					if req.Turn == 1 {
						return text("Splitting further.\n" + spawnBlock("parallel", "middle task")), nil
					}
					return text("middle summary"), nil
				case 2:
					if req.Turn == 1 || insist {
						return text(deep), nil
					}
					return text("did it myself"), nil
				}
				return nil, fmt.Errorf("%s runs past the depth limit", req.Agent)
			})
			cfg := textConfig(m)
			cfg.Limits.MaxDepth = 2
			cfg.Soul, cfg.Identity = "Calm and exact.", "Name: Cadre"
			res, err, ev := runTask(t, cfg, "Top-level request")
			if err != nil {
				t.Fatal(err)
			}
			if res.Answer != "root final" {
				t.Errorf("answer %q", res.Answer)
			}
			checkNoTools(t, m.Requests())
			var ids []cadre.AgentID
			for _, a := range res.Agents {
				ids = append(ids, a.ID)
				if a.Status != cadre.StatusDone {
					t.Errorf("%s ended %s", a.ID, a.Status)
				}
			}
			if !slices.Equal(ids, []cadre.AgentID{"root", "root/sub.1", "root/sub.1/sub.1"}) {
				t.Fatalf("agents %v", ids)
			}

			mid := m.RequestsOf("root/sub.1")
			if sys := mid[0].System; !strings.Contains(sys, "<agent_capabilities>") || !strings.Contains(sys, "you are at level 1") ||
				!strings.Contains(sys, "<task>\ntop task\n</task>") || !strings.Contains(sys, "<sub_agent_instructions>") ||
				!strings.Contains(sys, "<soul>\nCalm and exact.\n</soul>") || !strings.Contains(sys, "<identity>\nName: Cadre\n</identity>") {
				t.Errorf("the middle agent's system prompt:\n%s", sys)
			}
			leaf := m.RequestsOf("root/sub.1/sub.1")
			if sys := leaf[0].System; strings.Contains(sys, "agent_capabilities") || !strings.Contains(sys, "<task>\nmiddle task\n</task>") {
				t.Errorf("the agent at the depth limit was taught to spawn:\n%s", sys)
			}
			if len(leaf) != 2 || !strings.Contains(lastContent(&leaf[1]), "Do the work yourself") {
				t.Fatalf("the agent at the limit made %d calls; last input %q", len(leaf), lastContent(&leaf[len(leaf)-1]))
			}
			limits := ev.of(cadre.EventDepthLimit)
			if len(limits) != 1 || limits[0].Agent != "root/sub.1/sub.1" || data[cadre.DepthLimit](limits[0]).AttemptedDepth != 3 || data[cadre.DepthLimit](limits[0]).MaxDepth != 2 {
				t.Errorf("depth_limit events %+v", limits)
			}
			// The middle agent synthesised its child's work for its own task.
			leafReport := "did it myself"
			if insist {
				leafReport = deep // a second block is taken as the reply
			}
			midSynth := lastContent(&mid[len(mid)-1])
			if want := prompt.Synthesis("top task", []prompt.Result{{Task: "middle task", Status: prompt.StatusCompleted, Output: leafReport}}); midSynth != want {
				t.Errorf("the middle agent's synthesis:\n%s\nwant:\n%s", midSynth, want)
			}
			root := m.RequestsOf(cadre.RootID)
			if want := prompt.Synthesis("Top-level request", []prompt.Result{{Task: "top task", Output: "middle summary"}}); lastContent(&root[1]) != want {
				t.Errorf("the root's synthesis:\n%s", lastContent(&root[1]))
			}
			if n := len(ev.of(cadre.EventSynthesisStarted)); n != 2 {
				t.Errorf("%d synthesis_started events, want 2", n)
			}
		})
	}
}

// A definition's maxDepth bounds its whole subtree: the general subagents
// it starts do not get the run's deeper limit back.
func TestTextDefinitionMaxDepthBoundsSubtree(t *testing.T) {
	checkNoLeaks(t)
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch {
		case req.Agent == cadre.RootID:
			if req.Turn == 1 {
				return text(`<spawn_agents><agent name="planner" task="plan it" /></spawn_agents>`), nil
			}
			return text("root final"), nil
		case defName(req.Agent) == "planner":
			if req.Turn == 1 {
				return text(spawnBlock("parallel", "one step")), nil
			}
			return text("planned"), nil
		case req.Agent.Depth() == 2:
			if req.Turn == 1 {
				return text(spawnBlock("parallel", "one level too deep")), nil
			}
			return text("stepped myself"), nil
		}
		return text("too deep"), nil
	})
	d := defs("planner")
	d[0].MaxDepth = 1 // the planner's children, and nothing below them
	res, err, ev := runTask(t, textConfig(m, d...), "Plan")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range res.Agents {
		if a.Depth > 2 {
			t.Errorf("%s runs at depth %d, below the planner's limit", a.ID, a.Depth)
		}
	}
	step := m.RequestsOf("root/planner.1/sub.1")
	if len(step) == 0 || strings.Contains(step[0].System, "agent_capabilities") {
		t.Errorf("the planner's child was taught to spawn")
	}
	if n := len(ev.of(cadre.EventDepthLimit)); n != 1 {
		t.Errorf("%d depth_limit events, want 1", n)
	}
}

// A child whose definition may not delegate is below the depth limit: its
// block is refused for that reason, without a depth_limit event.
func TestTextSpawnRefusedWithoutDelegation(t *testing.T) {
	checkNoLeaks(t)
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch defName(req.Agent) {
		case "root":
			if req.Turn == 1 {
				return text(`<spawn_agents><agent name="reader" task="read it" /></spawn_agents>`), nil
			}
			return text("root final"), nil
		case "reader":
			if req.Turn == 1 {
				return text(spawnBlock("parallel", "read it for me")), nil
			}
			return text("read it myself"), nil
		}
		return nil, errors.New("unexpected agent " + string(req.Agent))
	})
	d := defs("reader")
	d[0].Tools = []string{"read_file"}
	res, err, ev := runTask(t, textConfig(m, d...), "Read it")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Agents) != 2 || res.Answer != "root final" {
		t.Fatalf("%d agents, answer %q", len(res.Agents), res.Answer)
	}
	reader := m.RequestsOf("root/reader.1")
	if strings.Contains(reader[0].System, "agent_capabilities") {
		t.Errorf("a reader that may not delegate was taught to spawn:\n%s", reader[0].System)
	}
	if len(reader) != 2 {
		t.Fatalf("the reader made %d calls, want 2", len(reader))
	}
	if got := lastContent(&reader[1]); !strings.Contains(got, "tool list does not allow it") || strings.Contains(got, "depth limit") {
		t.Errorf("the reader was told %q", got)
	}
	if n := len(ev.of(cadre.EventDepthLimit)); n != 0 {
		t.Errorf("%d depth_limit events for an agent at depth 1 of 3", n)
	}
	root := m.RequestsOf(cadre.RootID)
	if got := lastContent(&root[1]); !strings.Contains(got, "read it myself") {
		t.Errorf("the root's synthesis:\n%s", got)
	}
}

// The synthesis message a root receives matches the golden file: results
// in task order although they completed in reverse, task text escaped, a
// failure as "Error: …", an empty <response> as "(no output)", and the
// original request.
func TestTextSynthesisGolden(t *testing.T) {
	checkNoLeaks(t)
	const request = "Compare the vendors & tell me who wins"
	reported := map[string]chan struct{}{"root/sub.2": make(chan struct{}), "root/sub.3": make(chan struct{})}
	onEvent := func(e cadre.Event) {
		if e.Type != cadre.EventAgentReported {
			return
		}
		if c, ok := reported[string(data[cadre.AgentReported](e).Child)]; ok {
			close(c)
		}
	}
	wait := func(ctx context.Context, id string) error {
		select {
		case <-reported[id]:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch req.Agent {
		case cadre.RootID:
			if req.Turn == 1 {
				return text(`I'll look at each part.
<spawn_agents mode="parallel">
  <agent task="Compare A &amp; B &lt;details&gt;" />
  <agent task='List "top" vendors' />
  <agent task="Summarize" />
</spawn_agents>`), nil
			}
			return text("A wins."), nil
		case "root/sub.1": // completes last
			if err := wait(ctx, "root/sub.2"); err != nil {
				return nil, err
			}
			return text("Some notes first.\n<response>\nA is faster than B.\n</response>"), nil
		case "root/sub.2": // fails second
			if err := wait(ctx, "root/sub.3"); err != nil {
				return nil, err
			}
			return nil, errors.New("server exploded")
		case "root/sub.3": // completes first, with an empty response
			return text("<response>  </response>"), nil
		}
		return nil, errors.New("unexpected agent " + string(req.Agent))
	})
	res, err, ev := runWatched(t, textConfig(m), request, onEvent)
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "A wins." {
		t.Errorf("answer %q", res.Answer)
	}
	var order []string
	for _, e := range ev.of(cadre.EventAgentReported) {
		order = append(order, string(data[cadre.AgentReported](e).Child))
	}
	if !slices.Equal(order, []string{"root/sub.3", "root/sub.2", "root/sub.1"}) {
		t.Fatalf("reports arrived in order %v, want the reverse of the tasks", order)
	}
	root := m.RequestsOf(cadre.RootID)
	if len(root) != 2 {
		t.Fatalf("the root made %d model calls, want 2", len(root))
	}
	got := lastContent(&root[1])
	if !strings.Contains(got, request) {
		t.Errorf("the synthesis does not hold the original request %q", request)
	}
	if s := ev.of(cadre.EventSynthesisStarted); len(s) != 1 || data[cadre.SynthesisStarted](s[0]).Tasks != 3 {
		t.Errorf("synthesis_started events %+v", s)
	}
	golden(t, filepath.Join("testdata", "synthesis_run.golden"), got)
}

// golden compares got with the file, or rewrites it with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// A named task runs that definition with its own prompt and a
// Context/Task first message; a task without a name runs a general
// subagent; an unknown name fails that task only.
func TestTextSpawnNamedDefinitions(t *testing.T) {
	checkNoLeaks(t)
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch defName(req.Agent) {
		case "root":
			if req.Turn == 1 {
				return text(`<spawn_agents>
  <agent name="researcher" task="Find the release date" context="The user means version 2." />
  <agent task="Draft a changelog entry" />
  <agent name="nosuch" task="Do something" />
</spawn_agents>`), nil
			}
			return text("combined"), nil
		case "researcher":
			return text("3 March"), nil
		case "sub":
			return text("Draft: fixed bugs."), nil
		}
		return nil, errors.New("unexpected agent " + string(req.Agent))
	})
	res, err, ev := runTask(t, textConfig(m, defs("researcher")...), "Prepare the release notes")
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "combined" {
		t.Errorf("answer %q", res.Answer)
	}
	checkNoTools(t, m.Requests())
	rs := m.RequestsOf("root/researcher.1")
	if len(rs) != 1 {
		t.Fatalf("the researcher made %d calls", len(rs))
	}
	if sys := rs[0].System; !strings.HasPrefix(sys, "You are researcher.\n\n"+prompt.ChildHeader) || !strings.Contains(sys, "reply with your full result") ||
		strings.Contains(sys, "send_agent_message") || strings.Contains(sys, "<sub_agent_instructions>") {
		t.Errorf("the researcher's system prompt:\n%s", sys)
	}
	if want := []cadre.Message{{Role: cadre.RoleUser, Content: "Context:\nThe user means version 2.\n\nTask:\nFind the release date"}}; cmp.Diff(want, rs[0].Messages) != "" {
		t.Errorf("the researcher's messages (-want +got):\n%s", cmp.Diff(want, rs[0].Messages))
	}
	gen := m.RequestsOf("root/sub.1")
	if len(gen) != 1 || !strings.Contains(gen[0].System, "<task>\nDraft a changelog entry\n</task>") || !strings.Contains(gen[0].System, "<sub_agent_instructions>") {
		t.Fatalf("the general subagent's requests %+v", gen)
	}
	spawned := ev.of(cadre.EventAgentSpawned)
	if len(spawned) != 2 || data[cadre.AgentSpawned](spawned[0]).Definition != "researcher" || data[cadre.AgentSpawned](spawned[0]).Index != 1 ||
		data[cadre.AgentSpawned](spawned[1]).Definition != "sub" || data[cadre.AgentSpawned](spawned[1]).Index != 2 || data[cadre.AgentSpawned](spawned[1]).Total != 3 {
		t.Errorf("agent_spawned events %+v", spawned)
	}
	root := m.RequestsOf(cadre.RootID)
	want := prompt.Synthesis("Prepare the release notes", []prompt.Result{
		{Task: "Find the release date", Output: "3 March"},
		{Task: "Draft a changelog entry", Output: "Draft: fixed bugs."},
		{Task: "Do something", Status: prompt.StatusFailed, Output: `Error: there is no subagent named "nosuch"`},
	})
	if got := lastContent(&root[len(root)-1]); got != want {
		t.Errorf("synthesis:\n%s\nwant:\n%s", got, want)
	}
}

// The root's system prompt teaches the text protocol, naming the
// definitions it may use, and offers no tool.
func TestTextRootPromptHasCapabilities(t *testing.T) {
	checkNoLeaks(t)
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		return text("nothing to delegate"), nil
	})
	if _, err, _ := runTask(t, textConfig(m, defs("researcher", "writer")...), "hello"); err != nil {
		t.Fatal(err)
	}
	root := m.RequestsOf(cadre.RootID)
	sys := root[0].System
	for _, want := range []string{"<agent_capabilities>", `<spawn_agents mode="sequential">`, "  - researcher: the researcher agent", "  - writer: the writer agent", "you are at level 0"} {
		if !strings.Contains(sys, want) {
			t.Errorf("the root's system prompt lacks %q:\n%s", want, sys)
		}
	}
	if strings.Contains(sys, prompt.DiscoveryHeader) {
		t.Error("the root's system prompt describes spawn_agent on the text protocol")
	}
	if strings.Contains(sys, "with your tools") {
		t.Errorf("the root's system prompt promises tools it is never offered:\n%s", sys)
	}
	checkNoTools(t, root)
}

// On the text protocol general subagents need no definition: a run with an
// empty catalogue still teaches and runs <spawn_agents>.
func TestTextSpawnWithoutDefinitions(t *testing.T) {
	checkNoLeaks(t)
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent == cadre.RootID {
			if req.Turn == 1 {
				return text(spawnBlock("parallel", "look it up")), nil
			}
			return text("final"), nil
		}
		return text("found it"), nil
	})
	cfg := textConfig(m)
	cfg.Definitions = nil
	res, err, ev := runTask(t, cfg, "Find it")
	if err != nil {
		t.Fatal(err)
	}
	root := m.RequestsOf(cadre.RootID)
	if !strings.Contains(root[0].System, "<agent_capabilities>") {
		t.Errorf("the root's system prompt lacks <agent_capabilities> when there are no definitions")
	}
	if n := len(ev.of(cadre.EventDepthLimit)); n != 0 {
		t.Errorf("the root's block was refused (%d depth_limit events) although it is at depth 0 of 3", n)
	}
	if len(res.Agents) != 2 || res.Answer != "final" {
		t.Errorf("%d agents, answer %q; want the root and one subagent", len(res.Agents), res.Answer)
	}
}

// The text before a block is the pre-spawn message, shown as a say event.
// With say on, only <say> blocks are shown, each as its own event, in
// order; the journal keeps the whole reply.
func TestTextSayAndPreSpawn(t *testing.T) {
	checkNoLeaks(t)
	const first = "<say>Let me split this up.</say>\nPrivate plan: ask two helpers.\n"
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent == cadre.RootID {
			switch req.Turn {
			case 1:
				return text(first + spawnBlock("parallel", "one", "two")), nil
			case 2:
				return text("Notes to self. <say>Here is the answer.</say> More notes. <say>Second part.</say>"), nil
			}
		}
		return text("child result"), nil
	})
	type said struct {
		agent    cadre.AgentID
		text     string
		preSpawn bool
	}
	says := func(ev *events) []said {
		var out []said
		for _, e := range ev.of(cadre.EventSay) {
			d := data[cadre.Say](e)
			out = append(out, said{e.Agent, d.Text, d.PreSpawn})
		}
		return out
	}
	t.Run("say off", func(t *testing.T) {
		_, err, ev := runTask(t, textConfig(m), "Answer in two parts")
		if err != nil {
			t.Fatal(err)
		}
		want := []said{{cadre.RootID, strings.TrimSpace(first), true}}
		if got := says(ev); !slices.Equal(got, want) {
			t.Errorf("say events %+v, want %+v", got, want)
		}
	})
	t.Run("say on", func(t *testing.T) {
		cfg := textConfig(m)
		cfg.Say = true
		res, err, ev := runTask(t, cfg, "Answer in two parts")
		if err != nil {
			t.Fatal(err)
		}
		want := []said{
			{cadre.RootID, "Let me split this up.", false},
			{cadre.RootID, "Here is the answer.", false},
			{cadre.RootID, "Second part.", false},
		}
		if got := says(ev); !slices.Equal(got, want) {
			t.Errorf("say events %+v, want %+v", got, want)
		}
		// The journal, and so the next call, keeps the whole reply.
		root := m.RequestsOf(cadre.RootID)
		last := root[len(root)-1]
		if !slices.ContainsFunc(last.Messages, func(msg cadre.Message) bool {
			return msg.Role == cadre.RoleAssistant && strings.Contains(msg.Content, "Private plan: ask two helpers.")
		}) {
			t.Error("the root's conversation lost the text outside <say>")
		}
		if !strings.Contains(res.Answer, "Notes to self.") {
			t.Errorf("answer %q", res.Answer)
		}
	})
}

// textTreeScript is a text-protocol tree whose replies depend only on the
// agent and its turn: the root runs a sequential block whose first step
// runs a parallel block of its own and whose second step fails once and is
// retried; every synthesis is echoed into the reply after it, so the
// answer shows what each agent received.
func textTreeScript(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
	switch req.Agent {
	case cadre.RootID:
		if req.Turn == 1 {
			return text("Two steps.\n" + spawnBlock("sequential", "step one", "step two")), nil
		}
		return text("final:\n" + lastContent(req)), nil
	case "root/sub.1":
		if req.Turn == 1 {
			return text(spawnBlock("parallel", "part a", "part b")), nil
		}
		return text("one from [" + lastContent(req) + "]"), nil
	case "root/sub.2":
		return nil, errors.New("flaky")
	case "root/sub.3":
		return text("two after " + req.Messages[0].Content), nil
	case "root/sub.1/sub.1", "root/sub.1/sub.2":
		return text("did " + taskOf(req)), nil
	}
	return nil, fmt.Errorf("no reply for %s turn %d", req.Agent, req.Turn)
}

// A text-protocol run resumed after the process died at any point of its
// journal ends with the same answer as an uninterrupted one, and no model
// call whose result was journaled is made again.
func TestTextResumeAfterCrashAtEveryPoint(t *testing.T) {
	checkNoLeaks(t)
	config := func(cc *callCounter, s cadre.Store) Config {
		m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
			cc.mu.Lock()
			cc.calls[fmt.Sprintf("%s#%d", req.Agent, req.Turn)]++
			cc.mu.Unlock()
			return textTreeScript(ctx, req)
		})
		cfg := textConfig(m)
		cfg.Store = s
		return cfg
	}
	full := memstore.New()
	r, err := begin(New(config(&callCounter{calls: map[string]int{}}, full)), "two steps")
	if err != nil {
		t.Fatal(err)
	}
	want, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{"one from [<sub_agent_results>", "did part a", "did part b", "two after Previous sub-agent result for context:\none from ["} {
		if !strings.Contains(want.Answer, part) {
			t.Fatalf("the uninterrupted answer lacks %q:\n%s", part, want.Answer)
		}
	}
	total := 0
	agents, _ := full.ListAgents(context.Background(), r.ID())
	for _, a := range agents {
		e, _ := full.Journal(context.Background(), r.ID(), a.ID)
		total += len(e)
	}
	if len(agents) != 6 || total < 20 {
		t.Fatalf("the run has %d agents and journaled %d entries", len(agents), total)
	}
	crashed := 0 // crash points a run reached
	for limit := 1; limit < total; limit++ {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			mem := memstore.New()
			crash := &crashStore{Store: mem, limit: limit}
			r, err := begin(New(config(&callCounter{calls: map[string]int{}}, crash)), "two steps")
			if err != nil {
				t.Fatal(err)
			}
			res0, err0 := r.Wait()
			if !crash.dead() {
				// Inputs taken together share one journal entry, so an
				// interleaving can journal fewer entries than the first run
				// did. Such a run must still be complete.
				crash.mu.Lock()
				written := crash.written
				crash.mu.Unlock()
				if written >= total || err0 != nil || res0.Status != cadre.StatusDone {
					t.Fatalf("the store never crashed at %d of %d entries: %d written, %v", limit, total, written, err0)
				}
				return
			}
			crashed++
			completed := journaledTurns(t, mem, r.ID())
			second := &callCounter{calls: map[string]int{}}
			r2, err := resumeRun(New(config(second, mem)), r.ID())
			if err != nil {
				t.Fatal(err)
			}
			res, err := r2.Wait()
			if err != nil {
				t.Fatalf("resumed run: %v", err)
			}
			if res.Answer != want.Answer {
				t.Errorf("resumed answer:\n%s\nwant:\n%s", res.Answer, want.Answer)
			}
			for call := range second.calls {
				if completed[call] {
					t.Errorf("model call %s was completed before the crash and made again", call)
				}
			}
			if len(res.Agents) != 6 {
				t.Errorf("%d agents after the resume, want 6", len(res.Agents))
			}
		})
	}
	// Runs that journal fewer entries skip the last points, not most.
	if crashed < (total-1)*3/4 {
		t.Errorf("only %d of %d crash points were reached: the test resumed too few runs", crashed, total-1)
	}
}

// agent_onboard alone starts no task: on the text protocol, a worker
// granted it (and no tool that runs a task) is not taught <spawn_agents>,
// and its block is refused with a reason naming the tools it would need.
func TestTextSpawnRefusedWithOnboardOnly(t *testing.T) {
	checkNoLeaks(t)
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch defName(req.Agent) {
		case "root":
			if req.Turn == 1 {
				return text(`<spawn_agents><agent name="reader" task="read it" /></spawn_agents>`), nil
			}
			return text("root final"), nil
		case "reader":
			if req.Turn == 1 {
				return text(`<spawn_agents><agent name="writer" task="write it" /></spawn_agents>`), nil
			}
			return text("read it myself"), nil
		case "writer":
			return text("wrote it"), nil
		}
		return nil, errors.New("unexpected agent " + string(req.Agent))
	})
	d := defs("reader", "writer")
	d[0].Tools = []string{"read_file", "agent_onboard"}
	res, err, ev := runTask(t, textConfig(m, d...), "Read it")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Agents) != 2 || res.Answer != "root final" {
		t.Fatalf("%d agents, answer %q", len(res.Agents), res.Answer)
	}
	if n := len(ev.of(cadre.EventAgentSpawned)); n != 1 {
		t.Errorf("%d agents spawned, want the reader only", n)
	}
	reader := m.RequestsOf("root/reader.1")
	if strings.Contains(reader[0].System, "agent_capabilities") {
		t.Errorf("a reader that may not run tasks was taught to spawn:\n%s", reader[0].System)
	}
	if len(reader) != 2 {
		t.Fatalf("the reader made %d calls, want 2", len(reader))
	}
	if got := lastContent(&reader[1]); !strings.Contains(got, "was not run") || !strings.Contains(got, "spawn_agent, start_background_agent, call_agent or agent_call") {
		t.Errorf("the reader was told %q", got)
	}
}

// The turn limit holds on the text protocol: a root that answers every
// turn with a new <spawn_agents> block is asked for its final answer once
// it has used its turns (after its last block's results, as after tool
// calls), and a block in that answer is not run: the text before it is
// the answer, and without any the root fails, as one calling tools then
// does. It was never checked there: with maxTurns 2 such a root made
// twelve calls and started twelve agents.
func TestTextTurnLimit(t *testing.T) {
	for _, c := range []struct {
		name, before string
	}{{"with text before the block", "Two parts are done. "}, {"with the block alone", ""}} {
		t.Run(c.name, func(t *testing.T) {
			m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
				if req.Agent != cadre.RootID {
					return text("part done"), nil
				}
				if req.Turn >= 12 {
					return text("all done"), nil
				}
				return text(c.before + spawnBlock("parallel", fmt.Sprintf("task number %d", req.Turn))), nil
			})
			cfg := textConfig(m)
			cfg.Limits = cadre.Limits{MaxTurns: 2}
			res, err, ev := runTask(t, cfg, "go")
			// Its two turns' blocks run; the third call asks for the answer.
			if n := len(m.RequestsOf(cadre.RootID)); n != 3 || len(res.Agents) != 3 {
				t.Errorf("the root made %d model calls and the run %d agents; want 3 calls and 3 agents", n, len(res.Agents))
			}
			if ev.index(func(e cadre.Event) bool { return e.Type == cadre.EventTurnLimit }) < 0 {
				t.Error("no turn_limit event")
			}
			if c.before != "" {
				if err != nil || res.Answer != strings.TrimSpace(c.before) {
					t.Errorf("answer %q, %v; want the text before the block", res.Answer, err)
				}
			} else if err == nil || !strings.Contains(res.Error, "wrote a <spawn_agents> block instead of answering") {
				t.Errorf("status %s, error %q; want failed at the turn limit", res.Status, res.Error)
			}
		})
	}
}

// With maxTurns 1 a text-protocol agent still runs the block of its one
// turn, then is asked for its answer (a first check, before the block,
// took its only turn's block away).
func TestTextTurnLimitOne(t *testing.T) {
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent != cadre.RootID {
			return text("part done"), nil
		}
		if req.Turn == 1 {
			return text(spawnBlock("parallel", "the only task")), nil
		}
		return text("all done"), nil
	})
	cfg := textConfig(m)
	cfg.Limits = cadre.Limits{MaxTurns: 1}
	res, err, _ := runTask(t, cfg, "go")
	if err != nil || len(res.Agents) != 2 || res.Answer != "all done" {
		t.Errorf("%d agents, answer %q, %v; want the block run and the answer", len(res.Agents), res.Answer, err)
	}
}
