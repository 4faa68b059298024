package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/journal"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/sqlite"
)

// The tree the crash test runs: the root spawns alpha and beta at once and
// gamma in the background; alpha delegates to leaf; beta reads a file and
// writes one; every child reports its own task; the root waits for gamma
// and answers. Every prompt and every task is unique, so an agent is known
// by its system prompt and its first message.
const (
	crashRootTask = "crash-root-task: build the tree of agents and gather their reports"
	crashAnswer   = "crash answer: alpha, beta, gamma and leaf all reported"
	crashInput    = "input.txt"
	crashOutput   = "out/beta.txt"
	crashContent  = "beta copied the input"
	// interruptedText is what an agent is told about a write that was in
	// progress when the process died.
	interruptedText = "may or may not have taken effect"
)

// crashAgent is one child of the tree.
type crashAgent struct {
	name, prompt, task, tools string
}

var crashChildren = []crashAgent{
	{name: "alpha", prompt: "You are crash-alpha, who delegates to a leaf.", task: "crash-alpha-task: gather the alpha facts"},
	{name: "beta", prompt: "You are crash-beta, who copies files.", task: "crash-beta-task: copy the input", tools: "Read, Write"},
	{name: "gamma", prompt: "You are crash-gamma, who works in the background.", task: "crash-gamma-task: check in the background"},
	{name: "leaf", prompt: "You are crash-leaf, the deepest agent.", task: "crash-leaf-task: find the leaf fact"},
}

func crashChild(name string) crashAgent {
	for _, c := range crashChildren {
		if c.name == name {
			return c
		}
	}
	panic("no crash agent " + name)
}

// crashReport is the report of the child whose task is task.
func crashReport(task string) string { return "REPORT{" + task + "}" }

// crashIdentify names the agent whose system prompt and first user message
// these are, or returns "".
func crashIdentify(system, first string) string {
	for _, c := range crashChildren {
		if strings.HasPrefix(system, c.prompt) && strings.Contains(first, c.task) {
			return c.name
		}
	}
	if first == crashRootTask && strings.Contains(system, "[available-subagents") {
		return "root"
	}
	return ""
}

// crashProject writes the agents of the tree and the input file into a new
// project folder.
func crashProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, c := range crashChildren {
		front := "---\nname: " + c.name + "\ndescription: The " + c.name + " agent of the crash test.\n"
		if c.tools != "" {
			front += "tools: " + c.tools + "\n"
		}
		writeFile(t, filepath.Join(dir, ".cadre", "agents", c.name+".md"), front+"---\n"+c.prompt+"\n")
	}
	writeFile(t, filepath.Join(dir, crashInput), "the input of beta\n")
	return dir
}

// scriptedModel is an OpenAI-compatible server that plays the tree's
// script. A reply depends only on the agent and its turn (the number of
// assistant messages in the request, plus one), except that an agent told
// its write was interrupted writes again. Each process the test starts
// talks to it under its own path prefix /pN/, its phase, so the server
// knows which process made each call even when a request of a killed
// process is read late.
type scriptedModel struct {
	phasedModel
}

func newScriptedModel(t *testing.T) *scriptedModel {
	t.Helper()
	m := &scriptedModel{}
	m.start(t, m.serve)
	return m
}

func (m *scriptedModel) serve(w http.ResponseWriter, r *http.Request) {
	phase, req, ok := readPhased(w, r)
	if !ok {
		return
	}
	name := crashIdentify(req.system(), req.firstUser())
	if name == "" {
		m.problem("phase %d: a request from an unknown agent: system %.80q, first message %.80q", phase, req.system(), req.firstUser())
		http.Error(w, "unknown agent", http.StatusBadRequest)
		return
	}
	assistants := 0
	for _, msg := range req.Messages {
		if msg.Role == "assistant" {
			assistants++
		}
	}
	key := fmt.Sprintf("%s#%d", name, assistants+1)
	m.mu.Lock()
	id := m.countLocked(phase, key)
	m.mu.Unlock()

	rep, ok := m.reply(name, assistants+1, &req)
	if !ok {
		m.problem("phase %d: %s has no reply in the script", phase, key)
		http.Error(w, "no reply in the script for "+key, http.StatusBadRequest)
		return
	}
	if !holdReply(r, key, 20, 61) {
		return
	}
	writeChatStream(w, id, req.Model, rep)
}

// reply is the script. It also checks that the reports an agent needs have
// reached it exactly once when it needs them.
func (m *scriptedModel) reply(name string, turn int, req *chatRequest) (chatReply, bool) {
	send := func(task string) chatReply {
		return chatReply{Calls: []toolCall{scriptCall(loop.ToolSendAgentMessage, map[string]string{"text": crashReport(task)})}}
	}
	expectReports := func(tasks ...string) {
		for _, task := range tasks {
			n := 0
			for _, msg := range req.Messages {
				n += strings.Count(contentText(msg.Content), crashReport(task))
			}
			if n != 1 {
				m.problem("%s#%d: the report of %q is in the request %d times, want once", name, turn, task, n)
			}
		}
	}
	switch name {
	case "root":
		switch turn {
		case 1:
			return chatReply{Text: "Delegating.", Calls: []toolCall{
				scriptCall(loop.ToolSpawnAgent, map[string]string{"agent": "alpha", "task": crashChild("alpha").task}),
				scriptCall(loop.ToolSpawnAgent, map[string]string{"agent": "beta", "task": crashChild("beta").task}),
				scriptCall(loop.ToolStartBackground, map[string]string{"agent": "gamma", "prompt": crashChild("gamma").task}),
			}}, true
		case 2:
			expectReports(crashChild("alpha").task, crashChild("beta").task)
			return chatReply{Calls: []toolCall{scriptCall(loop.ToolWaitAgent, map[string]string{"agentId": "root/gamma.1"})}}, true
		case 3:
			expectReports(crashChild("alpha").task, crashChild("beta").task, crashChild("gamma").task)
			return chatReply{Text: crashAnswer}, true
		}
	case "alpha":
		switch turn {
		case 1:
			return chatReply{Calls: []toolCall{scriptCall(loop.ToolSpawnAgent, map[string]string{"agent": "leaf", "task": crashChild("leaf").task})}}, true
		case 2:
			expectReports(crashChild("leaf").task)
			return send(crashChild("alpha").task), true
		case 3:
			return chatReply{Text: "alpha done"}, true
		}
	case "beta":
		write := scriptCall("write_file", map[string]string{"path": crashOutput, "content": crashContent})
		if turn == 1 {
			return chatReply{Calls: []toolCall{scriptCall("read_file", map[string]string{"path": crashInput}), write}}, true
		}
		// The results of the previous reply's calls follow it.
		interrupted, sent := false, false
		for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role != "assistant"; i-- {
			if msg := req.Messages[i]; msg.Role == "tool" && strings.Contains(contentText(msg.Content), interruptedText) {
				interrupted = true
			}
		}
		for _, msg := range req.Messages {
			for _, c := range msg.ToolCalls {
				sent = sent || c.Function.Name == loop.ToolSendAgentMessage
			}
		}
		switch {
		case interrupted:
			return chatReply{Text: "The write was interrupted; writing again.", Calls: []toolCall{write}}, true
		case !sent:
			return send(crashChild("beta").task), true
		}
		return chatReply{Text: "beta done"}, true
	case "gamma", "leaf":
		switch turn {
		case 1:
			return send(crashChild(name).task), true
		case 2:
			return chatReply{Text: name + " done"}, true
		}
	}
	return chatReply{}, false
}

// crashProcessTimeout bounds every process the crash test starts: one that
// has not ended by then is stuck, and fails the test.
const crashProcessTimeout = 90 * time.Second

// crashCalls is the number of model calls of a run nobody kills. A child
// ends with the reply that sends its report, without a call after it.
const crashCalls = 9

// crashRun is one project of the crash test: its folder, its run store,
// and the processes started on it.
type crashRun struct {
	killProject
	model *scriptedModel
}

func newCrashRun(t *testing.T, bin string, model *scriptedModel, phase *int) *crashRun {
	dir := crashProject(t)
	return &crashRun{killProject: killProject{t: t, bin: bin, server: &model.phasedModel, phase: phase, dir: dir, home: t.TempDir(), db: filepath.Join(dir, "runs.db")},
		model: model}
}

func (c *crashRun) runArgs() []string {
	return []string{"run", "--store", c.db, "--approve", "all", "--no-tree", "-m", "openai:test-model", crashRootTask}
}

func (c *crashRun) resumeArgs() []string {
	return []string{"resume", "--store", c.db, "--approve", "all", "--no-tree"}
}

func (c *crashRun) runResumeArgs() []string {
	return []string{"run", "--resume", "--store", c.db, "--approve", "all", "--no-tree", "-m", "openai:test-model", crashRootTask}
}

// exec runs the binary with args in the project. With kill, it sends
// SIGKILL after the delay unless the process has ended by then.
func (c *crashRun) exec(kill bool, after time.Duration, args ...string) crashProc {
	c.t.Helper()
	p := c.nextProc(args)
	var fire chan struct{}
	if kill {
		fire = make(chan struct{})
		tm := time.AfterFunc(after, func() { close(fire) })
		defer tm.Stop()
	}
	c.run(&p, crashProcessTimeout, fire)
	fmt.Fprintf(&c.log, "  %s\n", p)
	return p
}

// crashInspect reads the store while no process is using it.
func crashInspect(t *testing.T, db string) killState {
	t.Helper()
	st, err := inspectStore(db, 301, func(in loop.Start) string {
		first := ""
		if len(in.Messages) > 0 {
			first = in.Messages[len(in.Messages)-1].Content
		}
		return crashIdentify(in.Config.System, first)
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// crashSeed is CADRE_CRASH_SEED when set, so that a failure can be looked
// at again with the same kill points (the timing of a run still varies).
func crashSeed(t *testing.T) uint64 {
	if v := os.Getenv("CADRE_CRASH_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("CADRE_CRASH_SEED=%s: %v", v, err)
		}
		return n
	}
	return uint64(time.Now().UnixNano())
}

// crashStats counts the kills of the test and where they left the runs.
type crashStats struct {
	procs, kills int
	mid          int            // kills that left a run with some of its model calls made
	at           map[string]int // killState.progress -> kills
	interrupted  int            // writes in progress when a process was killed
}

// TestCrashKillAndResume kills the real binary with SIGKILL at random
// points of a run of a tree of agents and resumes it until it completes,
// many times. After each process it checks that no model call whose result
// was journaled before the process started was made again; when the run
// completes, that the answer is printed and recorded, that every child's
// report reached its parent exactly once, and that the write happened and
// did not succeed twice.
//
// CADRE_CRASH_ITERATIONS sets the number of runs and CADRE_CRASH_SEED the
// seed of the kill points.
func TestCrashKillAndResume(t *testing.T) {
	iterations := 25
	if testing.Short() {
		iterations = 5
	}
	if v := os.Getenv("CADRE_CRASH_ITERATIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CADRE_CRASH_ITERATIONS=%s: give a positive number", v)
		}
		iterations = n
	}
	seed := crashSeed(t)
	t.Logf("seed %d (CADRE_CRASH_SEED=%d uses it again), %d iterations", seed, seed, iterations)
	rng := rand.New(rand.NewPCG(seed, seed))
	bin := cadreBinary(t)
	model := newScriptedModel(t)
	phase := 0

	// A run nobody kills shows that the script works and how long a whole
	// process takes: the kills are spread over that time.
	ref := newCrashRun(t, bin, model, &phase)
	fmt.Fprintf(&ref.log, "the run nobody kills:\n")
	p := ref.exec(false, 0, ref.runArgs()...)
	if p.hung || p.code != 0 {
		t.Fatalf("the run nobody killed: %s\nstderr:\n%s", p, p.stderr)
	}
	calls := model.phaseCalls(p.phase)
	if len(calls) != crashCalls {
		t.Errorf("the run nobody killed made the calls %v, want %d different ones", calls, crashCalls)
	}
	for key, n := range calls {
		if n != 1 {
			t.Errorf("the run nobody killed made the call %s %d times", key, n)
		}
	}
	if n := ref.verify(p.stdout, true); n != 0 {
		t.Errorf("the run nobody killed was told %d writes were interrupted", n)
	}
	if t.Failed() {
		t.FailNow()
	}
	span := p.took
	t.Logf("a whole run takes %v", span.Round(time.Millisecond))

	stats := crashStats{procs: 1, at: map[string]int{}}
	for it := range iterations {
		c := newCrashRun(t, bin, model, &phase)
		fmt.Fprintf(&c.log, "iteration %d of seed %d:\n", it, seed)
		stdout, printed := c.complete(rng, span, &stats)
		stats.interrupted += c.verify(stdout, printed)
		if t.Failed() {
			t.FailNow()
		}
	}
	t.Logf("%d iterations: %d processes, %d of them killed, %d in the middle of a write", iterations, stats.procs, stats.kills, stats.interrupted)
	var where []string
	for k, n := range stats.at {
		where = append(where, fmt.Sprintf("%s: %d", k, n))
	}
	sort.Strings(where)
	t.Logf("the kills left: %s", strings.Join(where, "; "))
	if stats.kills < iterations/2 || iterations >= 10 && stats.mid == 0 {
		t.Errorf("%d kills in %d iterations, %d of them in the middle of a run: the kills miss the runs", stats.kills, iterations, stats.mid)
	}
}

// complete starts the run, kills it, and resumes it (killing some of the
// resumes too) until a process completes it, checking after each process
// that it made no model call whose result was journaled before it
// started. It returns the stdout of the process that completed the run,
// and false when that process was killed after recording the run as done.
func (c *crashRun) complete(rng *rand.Rand, span time.Duration, stats *crashStats) (stdout string, printed bool) {
	t := c.t
	t.Helper()
	killed := false
	for attempt := 0; ; attempt++ {
		if attempt > 15 {
			t.Fatalf("the run did not complete after %d processes\n%s", attempt, c.context(""))
		}
		st := crashInspect(t, c.db)
		if killed {
			stats.at[st.progress(1)]++
			if n := len(st.journaled); st.rootStarted && n > 0 && n < crashCalls {
				stats.mid++
			}
		}
		if st.run != nil && st.run.Status == cadre.StatusDone {
			return "", false // killed after the run was recorded as done
		}
		var args []string
		switch {
		case st.run == nil:
			// Killed before it recorded anything: start again.
			args = c.runArgs()
		case st.run.Status.Terminal():
			t.Fatalf("the run ended %s: %s\n%s", st.run.Status, st.run.Error, c.context(st.journal))
		case !st.rootStarted:
			// Killed between recording the run and journaling its root's
			// start: resuming starts the run from the beginning.
			args = c.resumeArgs()
		case rng.IntN(3) == 0:
			args = c.runResumeArgs()
		default:
			args = c.resumeArgs()
		}
		// The first process is killed somewhere in its run; about half of
		// the next few too, a little sooner, since less is left to do.
		kill, after := true, time.Duration(rng.Int64N(int64(span*9/10)))
		if attempt > 0 {
			kill, after = attempt < 5 && rng.IntN(2) == 0, time.Duration(rng.Int64N(int64(span*6/10)))
		}
		p := c.exec(kill, after, args...)
		stats.procs++
		var again []string
		for key, n := range c.model.phaseCalls(p.phase) {
			if st.journaled[key] {
				again = append(again, key)
			}
			if n > 1 {
				t.Errorf("phase %d made the model call %s %d times\n%s", p.phase, key, n, c.context(""))
			}
		}
		if len(again) > 0 {
			sort.Strings(again)
			t.Errorf("phase %d made the model calls %v again, although their results were journaled before it started\n%s",
				p.phase, again, c.context(st.journal))
		}
		switch {
		case p.hung:
			t.Fatalf("%s\nstderr:\n%s\n%s", p, p.stderr, c.context(st.journal))
		case p.killed:
			stats.kills++
			killed = true
		case p.code != 0:
			t.Fatalf("%s\nstderr:\n%s\n%s", p, p.stderr, c.context(st.journal))
		default:
			return p.stdout, true
		}
	}
}

// verify checks a completed run. stdout is what the process that completed
// it printed, if printed. It returns the number of writes that the agent
// was told were interrupted.
func (c *crashRun) verify(stdout string, printed bool) (interrupted int) {
	t := c.t
	t.Helper()
	var bad []string
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	for _, p := range c.model.takeProblems() {
		fail("the model saw: %s", p)
	}
	if printed && strings.TrimSpace(stdout) != crashAnswer {
		fail("stdout %q, want the answer %q", stdout, crashAnswer)
	}
	dump := crashInspect(t, c.db).journal
	ctx := context.Background()
	s, err := sqlite.Open(ctx, c.db)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := s.ListRuns(ctx, 0)
	s.Close()
	if err != nil || len(runs) == 0 {
		t.Fatalf("no runs in the store (%v)\n%s", err, c.context(""))
	}
	run := runs[0]
	if run.Status != cadre.StatusDone || run.Answer != crashAnswer {
		fail("the run record: status %s, answer %q, error %q", run.Status, run.Answer, run.Error)
	}
	if !printed {
		// The process that completed the run was killed before it printed
		// the answer: there is nothing left to resume. (The run is named:
		// a run whose root never started may be the newest unfinished one.)
		p := c.exec(false, 0, append(c.resumeArgs(), run.ID)...)
		if p.code == 0 || !strings.Contains(p.stderr, "nothing to resume") {
			fail("cadre resume after the run was done: %s\nstderr:\n%s", p, p.stderr)
		}
	}
	s, err = sqlite.Open(ctx, c.db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	agents, err := s.ListAgents(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	states := map[cadre.AgentID]*loop.State{}
	writes := map[string]int{} // write_file call ID -> successful results
	rd := &journal.Reader{Store: s, Run: run.ID}
	for _, a := range agents {
		entries, err := s.Journal(ctx, run.ID, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := replayAgent(ctx, rd, entries, "write_file")
		if err != nil {
			t.Fatalf("the journal of %s: %v", a.ID, err)
		}
		for id, n := range rep.succeeded {
			writes[id] += n
		}
		interrupted += rep.interrupted
		states[a.ID] = rep.state
	}
	want := []cadre.AgentID{cadre.RootID, "root/alpha.1", "root/beta.1", "root/gamma.1", "root/alpha.1/leaf.1"}
	if len(states) != len(want) {
		var ids []string
		for id := range states {
			ids = append(ids, string(id))
		}
		sort.Strings(ids)
		fail("the run has the agents %v, want %v", ids, want)
	}
	for _, id := range want {
		st, ok := states[id]
		if !ok {
			fail("%s never started", id)
			continue
		}
		if fin, ok := st.Finished(); !ok || fin.Failed || fin.Cancelled {
			fail("%s did not finish well: %+v", id, fin)
		}
		if id == cadre.RootID {
			continue
		}
		task := crashChild(st.Config().Definition).task
		if st.Task() != task {
			fail("%s has the task %q, want %q", id, st.Task(), task)
		}
		parent, ok := states[id.Parent()]
		if !ok {
			continue
		}
		n := 0
		for _, m := range parent.Messages() {
			n += strings.Count(m.Content, crashReport(task))
		}
		if n != 1 {
			fail("the report of %s reached %s %d times, want once", id, id.Parent(), n)
		}
	}

	if got, err := os.ReadFile(filepath.Join(c.dir, crashOutput)); err != nil || string(got) != crashContent {
		fail("the file beta writes: %q, %v", got, err)
	}
	done := 0
	for id, n := range writes {
		if n > 1 {
			fail("the write %s succeeded %d times", id, n)
		}
		done += n
	}
	if done == 0 {
		fail("no write of beta succeeded: %v", writes)
	}
	// The events of a killed process may be lost, never doubled.
	evs, err := s.Events(ctx, run.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	called := map[string]int{}
	for _, ev := range evs {
		if c, ok := ev.Data.(cadre.ToolCalled); ok && c.Tool == "write_file" {
			called[c.CallID]++
		}
	}
	for id, n := range called {
		if n > 1 {
			fail("the write %s ran %d times", id, n)
		}
	}
	if len(bad) > 0 {
		t.Errorf("%s\n%s", strings.Join(bad, "\n"), c.context(dump))
	}
	return interrupted
}

// runBinaryWithin is runBinary with a time limit: a process that outlives
// it is killed and fails the test, with what it wrote to stderr.
func runBinaryWithin(t *testing.T, limit time.Duration, dir string, env []string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, cadreBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"HOME=" + testHome(t), "PATH=" + os.Getenv("PATH")}, env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	cmd.Stdin = strings.NewReader("")
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("cadre %s was stuck after %v\nstderr:\n%s", strings.Join(args, " "), limit, se.String())
	}
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return cliResult{stdout: so.String(), stderr: se.String(), code: code}
}

// lastLine is the last line of s that is not blank.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// cadre resume with nothing to resume says so and fails; cadre run
// --resume with nothing to resume starts the task afresh.
func TestE2EResumeWithNothingToResume(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	var mu sync.Mutex
	asked := map[string]int{} // first user message -> calls
	srv := newOpenAIServer(t, func(req *chatRequest) chatReply {
		mu.Lock()
		asked[req.firstUser()]++
		mu.Unlock()
		return chatReply{Text: "answer to " + req.firstUser()}
	})
	env := []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"}
	limit := time.Minute

	// No store yet.
	res := runBinaryWithin(t, limit, dir, env, "resume", "--store", db)
	if res.code == 0 || !strings.HasPrefix(lastLine(res.stderr), "cadre: ") || !strings.Contains(res.stderr, "no runs recorded yet") {
		t.Errorf("resume without a store: exit %d, stderr %q", res.code, res.stderr)
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("resume without a store created one: %v", err)
	}

	// A run that ended.
	res = runBinaryWithin(t, limit, dir, env, "run", "--store", db, "-m", "openai:test-model", "first task")
	if res.code != 0 || strings.TrimSpace(res.stdout) != "answer to first task" {
		t.Fatalf("run: exit %d, stdout %q\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	res = runBinaryWithin(t, limit, dir, env, "resume", "--store", db)
	if res.code == 0 || res.stdout != "" || !strings.Contains(lastLine(res.stderr), "nothing to resume") {
		t.Errorf("resume when every run ended: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	res = runBinaryWithin(t, limit, dir, env, "resume", "--store", db, "last")
	if res.code == 0 || !strings.Contains(lastLine(res.stderr), "already ended") {
		t.Errorf("resume of a run that ended: exit %d, stderr %q", res.code, res.stderr)
	}

	// An unfinished run of another task is left alone by run --resume.
	ctx := context.Background()
	s, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	other := &cadre.RunRecord{ID: "20250101-000000-0a0b0c", Task: "another task", Status: cadre.StatusRunning, Started: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	if err := s.CreateRun(ctx, other); err != nil {
		t.Fatal(err)
	}
	s.Close()

	for _, task := range []string{"first task", "second task"} {
		res = runBinaryWithin(t, limit, dir, env, "run", "--resume", "--store", db, "-m", "openai:test-model", task)
		if res.code != 0 || strings.TrimSpace(res.stdout) != "answer to "+task || strings.Contains(res.stderr, "carrying on") {
			t.Errorf("run --resume %q with no unfinished run of it: exit %d, stdout %q\nstderr:\n%s", task, res.code, res.stdout, res.stderr)
		}
	}
	mu.Lock()
	if asked["first task"] != 2 || asked["second task"] != 1 || asked["another task"] != 0 {
		t.Errorf("model calls by task: %v", asked)
	}
	mu.Unlock()

	s, err = sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runs, err := s.ListRuns(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		got = append(got, r.Task+": "+string(r.Status))
	}
	sort.Strings(got)
	want := []string{"another task: running", "first task: done", "first task: done", "second task: done"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("runs in the store:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A process killed after it recorded a run but before it journaled the
// root's start leaves a run that did not end and cannot be carried on.
// cadre resume says so; cadre run --resume, which carries a run on "if
// unfinished, else starts it", must then start the task anew rather than
// fail on that run every time it is tried again.
func TestE2ERunResumeAfterKillBeforeRootStarted(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	srv := newOpenAIServer(t, func(req *chatRequest) chatReply { return chatReply{Text: "answer to " + req.firstUser()} })
	env := []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"}
	const task = "the task"
	res := runBinaryWithin(t, time.Minute, dir, env, "run", "--store", db, "-m", "openai:test-model", task)
	if res.code != 0 {
		t.Fatalf("run: exit %d\nstderr:\n%s", res.code, res.stderr)
	}

	// What the killed process left: the run's record, with the settings of
	// the run above, and the root's record, without a journal.
	ctx := context.Background()
	s, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := s.ListRuns(ctx, 0)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v, %v", runs, err)
	}
	started := runs[0].Started.Add(time.Second)
	orphan := &cadre.RunRecord{ID: "20990101-000000-0d0e0f", Task: task, Status: cadre.StatusRunning, Model: runs[0].Model, Started: started, Config: runs[0].Config}
	if err := s.CreateRun(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	if err := s.PutAgent(ctx, &cadre.AgentRecord{Run: orphan.ID, ID: cadre.RootID, Definition: "root", Model: orphan.Model, Task: task, Status: cadre.StatusQueued, Started: started}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	for try := range 2 {
		res = runBinaryWithin(t, time.Minute, dir, env, "run", "--resume", "--store", db, "-m", "openai:test-model", task)
		if res.code != 0 || strings.TrimSpace(res.stdout) != "answer to "+task {
			t.Errorf("run --resume, try %d: exit %d, stdout %q, stderr:\n%s", try+1, res.code, res.stdout, res.stderr)
		}
	}
	// The first try carried on the run the kill left, from its start.
	s, err = sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rec, err := s.GetRun(ctx, orphan.ID); err != nil || rec.Status != cadre.StatusDone || rec.Answer != "answer to "+task {
		t.Errorf("the interrupted run: %+v, %v", rec, err)
	}
}
