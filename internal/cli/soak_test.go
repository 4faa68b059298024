package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/journal"
	"github.com/cadre-ai/cadre/internal/pgtest"
	"github.com/cadre-ai/cadre/loop"
)

// The soak runs a tree of 50 agents in three levels and kills the binary
// at random points of it, then resumes it until it completes, many times.
//
// The root onboards b6 (one question, answered with agent_onboard_reply,
// then call_agent with the handle), starts b4 and b5 in the background and
// waits for them with wait_agent, and spawns b1, b2 and b3. b1 spawns its
// eight leaves at once; b2 starts its seven in the background and waits for
// them; b3 runs on a model without tool calling and runs its six leaves as
// one sequential <spawn_agents> block, each step seeing the previous
// result; b4 spawns its leaves in two replies; b5's first leaf asks b5 a
// question (ask_caller), which b5 answers with answer_agent before waiting
// for it. Five leaves append a line to a file with run_command, so a
// command run twice shows. Last, the root wakes b1, which had reported and
// ended, with a message, and waits for its second report.
//
// Every agent is known by a key, written [[key]] in its task (the last such
// mark in the messages before its first reply), so the model server knows
// who calls it and the checks know whose report is whose.
const (
	soakRootTask = "[[root]] soak-root-task: gather the reports of the whole tree"
	soakAnswer   = "soak answer: all seven branches reported"
	soakLog      = "soak.log"
	// soakAgents is the number of agents of the tree, root included.
	soakAgents = 50
	// soakConfig gives b3 a model without tool calling, and runs commands
	// without a sandbox, which this test does not need.
	soakConfig = "models:\n  plain:\n    model: \"openai:test-model\"\n    toolCalling: false\nsandbox: off\n"
)

// soakDef is one agent definition of the soak's project.
type soakDef struct {
	name, front, prompt string
}

var soakDefs = []soakDef{
	{name: "b1", prompt: "You are soak-b1, who spawns all its leaves at once."},
	{name: "b2", prompt: "You are soak-b2, who starts its leaves in the background."},
	{name: "b3", front: "model: plain\n", prompt: "You are soak-b3, who runs its leaves in sequence."},
	{name: "b4", prompt: "You are soak-b4, who spawns its leaves in two rounds."},
	{name: "b5", prompt: "You are soak-b5, who answers its leaf's question."},
	{name: "b6", front: "onboarding: required\n", prompt: "You are soak-b6, who is onboarded before its task."},
	{name: "leaf", prompt: "You are soak-leaf, who reports at once."},
	{name: "cmdleaf", front: "tools: Bash\n", prompt: "You are soak-cmdleaf, who appends a line to a file."},
	{name: "asker", front: "askCaller: true\n", prompt: "You are soak-asker, who asks before it works."},
	{name: "tleaf", prompt: "You are soak-tleaf, a step of a sequence."},
}

// soakLeaves lists the leaves of each branch: their keys are the branch's
// key, a dot and their number, in this order.
var soakLeaves = map[string][]string{
	"b1": {"leaf", "leaf", "leaf", "leaf", "leaf", "leaf", "cmdleaf", "cmdleaf"},
	"b2": {"leaf", "leaf", "leaf", "leaf", "leaf", "leaf", "cmdleaf"},
	"b3": {"tleaf", "tleaf", "tleaf", "tleaf", "tleaf", "tleaf"},
	"b4": {"leaf", "leaf", "leaf", "leaf", "leaf", "leaf", "cmdleaf"},
	"b5": {"asker", "leaf", "leaf", "leaf", "leaf", "leaf", "leaf"},
	"b6": {"leaf", "leaf", "leaf", "leaf", "leaf", "leaf", "cmdleaf"},
}

// soakBranches are the children of the root; b6o is b6's onboarding
// conversation.
var soakBranches = []string{"b1", "b2", "b3", "b4", "b5", "b6o", "b6"}

// soakAgent is what the soak knows of an agent by its key.
type soakAgent struct {
	key, def, parent string
	id               cadre.AgentID
}

// soakTree returns every agent of the tree by key.
func soakTree() map[string]soakAgent {
	tree := map[string]soakAgent{"root": {key: "root", def: "root", id: cadre.RootID}}
	for _, b := range soakBranches {
		def := strings.TrimSuffix(b, "o")
		tree[b] = soakAgent{key: b, def: def, parent: "root", id: cadre.RootID.Child(def, 1)}
	}
	// b6o and b6 are both of definition b6: the onboarding conversation
	// is the first, the call the second.
	tree["b6"] = soakAgent{key: "b6", def: "b6", parent: "root", id: cadre.RootID.Child("b6", 2)}
	for b, leaves := range soakLeaves {
		n := map[string]int{}
		for i, def := range leaves {
			n[def]++
			key := fmt.Sprintf("%s.%d", b, i+1)
			tree[key] = soakAgent{key: key, def: def, parent: b, id: tree[b].id.Child(def, n[def])}
		}
	}
	return tree
}

func soakTask(key string) string { return "[[" + key + "]] soak-task of " + key }

func soakReport(key string) string { return "REPORT{" + key + "}" }

func soakQuestion(key string) string { return "Q{" + key + "} which colour should it be?" }

func soakReply(key string) string { return "A{" + key + "} blue" }

func soakLine(key string) string { return "RAN " + key }

// The root wakes b1 after its report with soakWake, and b1 reports again
// with soakSecond.
const (
	soakWake   = "WAKE{b1}: look at your leaves' reports once more"
	soakSecond = "SECOND{b1}"
)

var soakMark = regexp.MustCompile(`\[\[([a-z0-9.]+)\]\]`)

// soakKeyOf returns the key of the agent whose first messages (those
// before its first reply) are these, or "".
func soakKeyOf(first []string) string {
	key := ""
	for _, text := range first {
		for _, m := range soakMark.FindAllStringSubmatch(text, -1) {
			key = m[1]
		}
	}
	return key
}

// soakProject writes the definitions and the config into a new project
// folder.
func soakProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range soakDefs {
		writeFile(t, filepath.Join(dir, ".cadre", "agents", d.name+".md"),
			"---\nname: "+d.name+"\ndescription: The "+d.name+" agent of the soak.\n"+d.front+"---\n"+d.prompt+"\n")
	}
	writeFile(t, filepath.Join(dir, ".cadre", "config.yaml"), soakConfig)
	return dir
}

// soakKill says when the test kills a process: when its model request
// number n arrives (before it is answered), right after its reply number n
// was sent, or after a delay.
type soakKill struct {
	kind  string // "request", "reply" or "delay"
	n     int
	after time.Duration
	fire  chan struct{} // closed when the server reaches the point
	once  sync.Once
}

func (k *soakKill) String() string {
	if k == nil {
		return "not killed"
	}
	if k.kind == "delay" {
		return fmt.Sprintf("kill after %v", k.after.Round(time.Millisecond))
	}
	return fmt.Sprintf("kill at %s %d", k.kind, k.n)
}

// soakModel is an OpenAI-compatible server that plays the soak's script.
// Each process talks to it under its own path prefix /pN/ (its phase).
// A reply depends only on the agent, its turn and what the request holds;
// the script also checks what each agent sees, and records what is wrong.
type soakModel struct {
	phasedModel
	served map[int]int       // phase -> requests
	kills  map[int]*soakKill // phase -> its kill point
	dirs   map[int]string    // phase -> project folder
}

func newSoakModel(t *testing.T) *soakModel {
	t.Helper()
	m := &soakModel{served: map[int]int{}, kills: map[int]*soakKill{}, dirs: map[int]string{}}
	m.start(t, m.serve)
	return m
}

// prepare tells the server the project and the kill point of phase.
func (m *soakModel) prepare(phase int, dir string, k *soakKill) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dirs[phase] = dir
	if k != nil && k.kind != "delay" {
		m.kills[phase] = k
	}
}

func (m *soakModel) phaseServed(phase int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.served[phase]
}

func (m *soakModel) serve(w http.ResponseWriter, r *http.Request) {
	phase, req, ok := readPhased(w, r)
	if !ok {
		return
	}
	var first []string
	for _, msg := range req.Messages {
		if msg.Role == "assistant" {
			break
		}
		if msg.Role == "user" {
			first = append(first, contentText(msg.Content))
		}
	}
	key := soakKeyOf(first)
	if key == "" {
		m.problem("phase %d: a request from an unknown agent: system %.80q, first message %.80q", phase, req.system(), req.firstUser())
		http.Error(w, "unknown agent", http.StatusBadRequest)
		return
	}
	turn := req.assistantTurns() + 1
	call := fmt.Sprintf("%s#%d", key, turn)
	m.mu.Lock()
	id := m.countLocked(phase, call)
	m.served[phase]++
	n := m.served[phase]
	dir := m.dirs[phase]
	kill := m.kills[phase]
	m.mu.Unlock()

	if kill != nil && kill.kind == "request" && n == kill.n {
		// The process dies with this call in flight.
		kill.once.Do(func() { close(kill.fire) })
		<-r.Context().Done()
		return
	}
	rep, ok := m.reply(key, turn, &req, dir)
	if !ok {
		m.problem("phase %d: %s has no reply in the script", phase, call)
		http.Error(w, "no reply in the script for "+call, http.StatusBadRequest)
		return
	}
	if !holdReply(r, call, 10, 41) {
		return
	}
	writeChatStream(w, id, req.Model, rep)
	if kill != nil && kill.kind == "reply" && n == kill.n {
		kill.once.Do(func() { close(kill.fire) })
	}
}

// reply is the script.
func (m *soakModel) reply(key string, turn int, req *chatRequest, dir string) (chatReply, bool) {
	at := fmt.Sprintf("%s#%d", key, turn)
	// seen counts the report of k in what the agent received.
	seen := func(k string) int {
		n := 0
		for _, msg := range req.Messages {
			if msg.Role != "assistant" && msg.Role != "system" {
				n += strings.Count(contentText(msg.Content), soakReport(k))
			}
		}
		return n
	}
	seenText := func(text string) int {
		n := 0
		for _, msg := range req.Messages {
			if msg.Role != "assistant" && msg.Role != "system" {
				n += strings.Count(contentText(msg.Content), text)
			}
		}
		return n
	}
	expect := func(keys ...string) {
		for _, k := range keys {
			if n := seen(k); n != 1 {
				m.problem("%s: the report of %s is in the request %d times, want once", at, k, n)
			}
		}
	}
	atMostOnce := func(keys ...string) (missing []string) {
		for _, k := range keys {
			switch n := seen(k); {
			case n == 0:
				missing = append(missing, k)
			case n > 1:
				m.problem("%s: the report of %s is in the request %d times, want once", at, k, n)
			}
		}
		return missing
	}
	reported := false
	for _, msg := range req.Messages {
		for _, c := range msg.ToolCalls {
			reported = reported || c.Function.Name == loop.ToolSendAgentMessage
		}
	}
	send := chatReply{Calls: []toolCall{scriptCall(loop.ToolSendAgentMessage, map[string]string{"text": soakReport(key)})}}
	if key == "b1" && seenText(soakWake) > 0 {
		// Woken by the root after its report: it reports again, once.
		sends := 0
		for _, msg := range req.Messages {
			for _, c := range msg.ToolCalls {
				if c.Function.Name == loop.ToolSendAgentMessage {
					sends++
				}
			}
		}
		if n := seenText(soakWake); n != 1 {
			m.problem("%s: the wake is in the request %d times, want once", at, n)
		}
		if sends < 2 {
			return chatReply{Calls: []toolCall{scriptCall(loop.ToolSendAgentMessage, map[string]string{"text": soakSecond})}}, true
		}
	}
	if reported && key != "root" {
		// A child that reports ends with that reply; a turn after it is
		// not in the script but harmless.
		return chatReply{Text: key + " done"}, true
	}
	leaves := func(b string, from, to int) []toolCall {
		var calls []toolCall
		for i := from; i <= to; i++ {
			k := fmt.Sprintf("%s.%d", b, i)
			calls = append(calls, scriptCall(loop.ToolSpawnAgent, map[string]string{"agent": soakLeaves[b][i-1], "task": soakTask(k)}))
		}
		return calls
	}
	leafKeys := func(b string, from, to int) []string {
		var keys []string
		for i := from; i <= to; i++ {
			keys = append(keys, fmt.Sprintf("%s.%d", b, i))
		}
		return keys
	}
	tree := soakTree()
	toolText := strings.Join(req.toolResults(), "\n")
	textOnly := func() {
		if req.Tools != nil {
			m.problem("%s runs on a model without tool calling but was sent tools: %v", at, req.toolNames())
		}
	}

	switch def := tree[key].def; {
	case key == "root":
		switch turn {
		case 1:
			return chatReply{Text: "Onboarding b6 and starting b4 and b5 in the background.", Calls: []toolCall{
				scriptCall(loop.ToolOnboard, map[string]string{"agent": "b6", "context": "[[b6o]] the soak's onboarding context"}),
				scriptCall(loop.ToolStartBackground, map[string]string{"agent": "b4", "prompt": soakTask("b4")}),
				scriptCall(loop.ToolStartBackground, map[string]string{"agent": "b5", "prompt": soakTask("b5")}),
			}}, true
		case 2:
			if !strings.Contains(toolText, soakQuestion("b6")) {
				m.problem("%s: the result of agent_onboard is not b6's question: %q", at, toolText)
			}
			return chatReply{Calls: []toolCall{
				scriptCall(loop.ToolOnboardReply, map[string]string{"handle": "onboard-1", "answer": soakReply("b6")}),
				scriptCall(loop.ToolSpawnAgent, map[string]string{"agent": "b1", "task": soakTask("b1")}),
				scriptCall(loop.ToolSpawnAgent, map[string]string{"agent": "b2", "task": soakTask("b2")}),
				scriptCall(loop.ToolSpawnAgent, map[string]string{"agent": "b3", "task": soakTask("b3")}),
			}}, true
		case 3:
			if strings.Count(toolText, `"ready":true`) != 1 {
				m.problem("%s: the handle onboard-1 is not ready once in the results: %q", at, toolText)
			}
			expect("b1", "b2", "b3")
			calls := []toolCall{scriptCall(loop.ToolCallAgent, map[string]string{"handle": "onboard-1", "input": soakTask("b6")})}
			for _, k := range atMostOnce("b4", "b5") {
				calls = append(calls, scriptCall(loop.ToolWaitAgent, map[string]string{"agentId": string(tree[k].id)}))
			}
			return chatReply{Calls: calls}, true
		case 4:
			expect("b1", "b2", "b3", "b4", "b5", "b6")
			id := string(tree["b1"].id)
			return chatReply{Calls: []toolCall{
				scriptCall(loop.ToolSendAgentMessage, map[string]string{"agentId": id, "text": soakWake}),
				scriptCall(loop.ToolWaitAgent, map[string]string{"agentId": id}),
			}}, true
		case 5:
			expect("b1", "b2", "b3", "b4", "b5", "b6")
			if n := seenText(soakSecond); n != 1 {
				m.problem("%s: the second report of b1 is in the request %d times, want once", at, n)
			}
			return chatReply{Text: soakAnswer}, true
		}
	case key == "b1":
		if turn == 1 {
			return chatReply{Calls: leaves("b1", 1, 8)}, true
		}
		expect(leafKeys("b1", 1, 8)...)
		return send, true
	case key == "b2":
		if turn == 1 {
			var calls []toolCall
			for i, def := range soakLeaves["b2"] {
				calls = append(calls, scriptCall(loop.ToolStartBackground, map[string]string{"agent": def, "prompt": soakTask(fmt.Sprintf("b2.%d", i+1))}))
			}
			return chatReply{Calls: calls}, true
		}
		missing := atMostOnce(leafKeys("b2", 1, 7)...)
		if len(missing) == 0 {
			return send, true
		}
		var calls []toolCall
		for _, k := range missing {
			calls = append(calls, scriptCall(loop.ToolWaitAgent, map[string]string{"agentId": string(tree[k].id)}))
		}
		return chatReply{Calls: calls}, true
	case key == "b3":
		textOnly()
		switch turn {
		case 1:
			var b strings.Builder
			b.WriteString("Running the steps in order.\n<spawn_agents mode=\"sequential\">\n")
			for i := range soakLeaves["b3"] {
				fmt.Fprintf(&b, "  <agent name=\"tleaf\" task=\"%s\" />\n", soakTask(fmt.Sprintf("b3.%d", i+1)))
			}
			b.WriteString("</spawn_agents>")
			return chatReply{Text: b.String()}, true
		case 2:
			expect(leafKeys("b3", 1, 6)...)
			return chatReply{Text: soakReport("b3")}, true
		}
	case def == "tleaf":
		textOnly()
		if turn == 1 {
			if i, _ := strconv.Atoi(strings.TrimPrefix(key, "b3.")); i > 1 {
				expect(fmt.Sprintf("b3.%d", i-1))
			}
			return chatReply{Text: "<response>" + soakReport(key) + "</response>"}, true
		}
	case key == "b4":
		switch turn {
		case 1:
			return chatReply{Calls: leaves("b4", 1, 3)}, true
		case 2:
			expect(leafKeys("b4", 1, 3)...)
			return chatReply{Calls: leaves("b4", 4, 7)}, true
		case 3:
			expect(leafKeys("b4", 1, 7)...)
			return send, true
		}
	case key == "b5":
		switch turn {
		case 1:
			return chatReply{Calls: leaves("b5", 1, 7)}, true
		case 2:
			if n := strings.Count(toolText, soakQuestion("b5.1")); n != 1 {
				m.problem("%s: the question of b5.1 is in the results %d times, want once: %q", at, n, toolText)
			}
			expect(leafKeys("b5", 2, 7)...)
			id := string(tree["b5.1"].id)
			return chatReply{Calls: []toolCall{
				scriptCall(loop.ToolAnswerAgent, map[string]string{"agentId": id, "answer": soakReply("b5.1")}),
				scriptCall(loop.ToolWaitAgent, map[string]string{"agentId": id}),
			}}, true
		case 3:
			expect(leafKeys("b5", 1, 7)...)
			return send, true
		}
	case key == "b6o":
		switch turn {
		case 1:
			return chatReply{Calls: []toolCall{scriptCall(loop.ToolAskCaller, map[string]string{"question": soakQuestion("b6")})}}, true
		case 2:
			if n := strings.Count(toolText, soakReply("b6")); n != 1 {
				m.problem("%s: the answer to the onboarding question is in the results %d times, want once", at, n)
			}
			return chatReply{Text: "Ready."}, true
		}
	case key == "b6":
		if turn == 1 {
			if !strings.Contains(req.firstUser(), soakReply("b6")) {
				m.problem("%s: the onboarded call's first message lacks the onboarding answer: %q", at, req.firstUser())
			}
			return chatReply{Calls: leaves("b6", 1, 7)}, true
		}
		expect(leafKeys("b6", 1, 7)...)
		return send, true
	case def == "asker":
		switch turn {
		case 1:
			return chatReply{Calls: []toolCall{scriptCall(loop.ToolAskCaller, map[string]string{"question": soakQuestion(key)})}}, true
		case 2:
			if n := strings.Count(toolText, soakReply(key)); n != 1 {
				m.problem("%s: the answer is in the results %d times, want once: %q", at, n, toolText)
			}
			return send, true
		}
	case def == "leaf":
		return send, true
	case def == "cmdleaf":
		// The command takes effect at once and then lasts a while, so that
		// kills often find it done but its result not yet journaled: a
		// resumed run that ran it again would show.
		run := scriptCall("run_command", map[string]string{"command": "echo '" + soakLine(key) + "' >> " + soakLog + " && sleep 0.3"})
		if turn == 1 {
			return chatReply{Calls: []toolCall{run}}, true
		}
		// The result of the previous reply's call follows it.
		last := ""
		for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role != "assistant"; i-- {
			if msg := req.Messages[i]; msg.Role == "tool" {
				last = contentText(msg.Content)
			}
		}
		if strings.Contains(last, interruptedText) {
			// Told the command may or may not have run: look, as the
			// result asks, and run it again only if it did not.
			data, err := os.ReadFile(filepath.Join(dir, soakLog))
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				m.problem("%s: %v", at, err)
			}
			if !strings.Contains(string(data), soakLine(key)+"\n") {
				return chatReply{Text: "The command was interrupted and did not run; running it again.", Calls: []toolCall{run}}, true
			}
		}
		return send, true
	}
	return chatReply{}, false
}

// soakProcessTimeout bounds every process of the soak: one that has not
// ended by then is stuck, and fails the test.
const soakProcessTimeout = 3 * time.Minute

// soakStats are the figures of the soak.
type soakStats struct {
	trials, procs, kills, resumes int
	killsBy                       map[string]int // soakKill.kind -> kills
	at                            map[string]int // how far the run had got at each kill
	mid                           int            // kills that left a run with some of its model calls journaled
	reports, commands, questions  int            // checked in completed runs
	served, again, interrupted    int            // model calls served; made again after a kill; commands told interrupted
	failures                      []string
}

// soakRun is one trial: a project, its store and its processes.
type soakRun struct {
	killProject
	model *soakModel
	// called holds the key#turn of every model call the trial's processes
	// made so far.
	called map[string]bool
	// limits are the run's limits, as flags: always exactly as many agents
	// as the tree has, so that an agent counted twice after a resume fails
	// the run; some trials let few agents work at once, so that kills find
	// agents queued before their first call.
	limits []string
}

func newSoakRun(t *testing.T, bin string, model *soakModel, phase *int) *soakRun {
	dir := soakProject(t)
	db := filepath.Join(dir, "runs.db")
	if os.Getenv("CADRE_SOAK_STORE") == "postgres" {
		db = soakSchema(t)
	}
	return &soakRun{killProject: killProject{t: t, bin: bin, server: &model.phasedModel, phase: phase, dir: dir, home: t.TempDir(), db: db},
		model: model, called: map[string]bool{}, limits: []string{"--max-agents", strconv.Itoa(soakAgents)}}
}

// soakSchema returns the connection string of a new schema of the database
// CADRE_TEST_POSTGRES names, dropped at the test's end, for a trial with
// CADRE_SOAK_STORE=postgres.
func soakSchema(t *testing.T) string {
	t.Helper()
	base := os.Getenv("CADRE_TEST_POSTGRES")
	if !isPostgres(base) {
		t.Fatal("CADRE_SOAK_STORE=postgres needs CADRE_TEST_POSTGRES, a postgres:// URL: `source .ci/postgres.sh` starts a throwaway server and sets it")
	}
	dsn, _ := pgtest.Schema(t, base, "cadre_soak")
	return dsn
}

func (c *soakRun) runArgs() []string {
	args := []string{"run", "--store", c.db, "--approve", "all", "--no-tree", "-m", "openai:test-model"}
	return append(append(args, c.limits...), soakRootTask)
}

func (c *soakRun) resumeArgs() []string {
	return []string{"resume", "--store", c.db, "--approve", "all", "--no-tree"}
}

func (c *soakRun) runResumeArgs() []string {
	args := []string{"run", "--resume", "--store", c.db, "--approve", "all", "--no-tree", "-m", "openai:test-model"}
	return append(append(args, c.limits...), soakRootTask)
}

// exec runs the binary with args in the project, killing it with SIGKILL
// at k unless it ends first.
func (c *soakRun) exec(k *soakKill, args ...string) crashProc {
	c.t.Helper()
	p := c.nextProc(args)
	var fire chan struct{}
	if k != nil {
		k.fire = make(chan struct{})
		if k.kind == "delay" {
			tm := time.AfterFunc(k.after, func() { k.once.Do(func() { close(k.fire) }) })
			defer tm.Stop()
		}
		fire = k.fire
	}
	c.model.prepare(p.phase, c.dir, k)
	c.run(&p, soakProcessTimeout, fire)
	fmt.Fprintf(&c.log, "  %s (%s, %d model requests)\n", p, k, c.model.phaseServed(p.phase))
	return p
}

// soakName is the key of the agent a journal starts.
func soakName(in loop.Start) string {
	var first []string
	for _, m := range in.Messages {
		first = append(first, m.Content)
	}
	return soakKeyOf(first)
}

// soakFail ends a trial with a failure, keeping what is needed to look at
// it again.
type soakFail struct{ msg string }

// fail records a failed check of the trial and stops it.
func (c *soakRun) fail(format string, args ...any) {
	panic(soakFail{msg: fmt.Sprintf(format, args...)})
}

// pickKill chooses a kill point for a process; span and calls are the
// length and the model requests of a whole run. Later processes have less
// left to do, so their kills come sooner.
func pickKill(rng *rand.Rand, span time.Duration, calls int, later bool) *soakKill {
	frac := 0.95
	if later {
		frac = 0.6
	}
	switch rng.IntN(3) {
	case 0:
		return &soakKill{kind: "delay", after: time.Duration(rng.Int64N(int64(float64(span) * frac)))}
	case 1:
		return &soakKill{kind: "request", n: 1 + rng.IntN(max(1, int(float64(calls)*frac)))}
	}
	return &soakKill{kind: "reply", n: 1 + rng.IntN(max(1, int(float64(calls)*frac)))}
}

// trial starts the run, kills it, and resumes it (killing some resumes
// too) until a process completes it, then checks the whole run.
func (c *soakRun) trial(rng *rand.Rand, span time.Duration, calls int, stats *soakStats) {
	killed := false
	var stdout string
	printed := true
	for attempt := 0; ; attempt++ {
		if attempt > 20 {
			c.fail("the run did not complete after %d processes\n%s", attempt, c.context(""))
		}
		st, err := inspectStore(c.db, 201, soakName)
		if err != nil {
			c.fail("reading the store: %v\n%s", err, c.context(""))
		}
		if killed {
			stats.at[st.progress(10)]++
			if st.rootStarted && len(st.journaled) > 0 && len(st.journaled) < calls {
				stats.mid++
			}
		}
		if st.run != nil && st.run.Status == cadre.StatusDone {
			printed = false // killed after the run was recorded as done
			break
		}
		var args []string
		switch {
		case st.run == nil:
			args = c.runArgs()
		case st.run.Status.Terminal():
			c.fail("the run ended %s: %s\n%s", st.run.Status, st.run.Error, c.context(st.journal))
		case !st.rootStarted:
			args = c.resumeArgs()
		case rng.IntN(3) == 0:
			args = c.runResumeArgs()
		default:
			args = c.resumeArgs()
		}
		// The first process is always killed; about half of the next few.
		var k *soakKill
		if attempt == 0 || attempt < 5 && rng.IntN(2) == 0 {
			k = pickKill(rng, span, calls, attempt > 0)
		}
		if st.run != nil {
			stats.resumes++
		}
		p := c.exec(k, args...)
		stats.procs++
		var again []string
		for key, n := range c.model.phaseCalls(p.phase) {
			stats.served += n
			if c.called[key] {
				stats.again++ // in flight, or its result not journaled, when a process was killed
			}
			c.called[key] = true
			if st.journaled[key] {
				again = append(again, key)
			}
			if n > 1 {
				c.fail("phase %d made the model call %s %d times\n%s", p.phase, key, n, c.context(""))
			}
		}
		if len(again) > 0 {
			sort.Strings(again)
			c.fail("phase %d made the model calls %v again, although their results were journaled before it started\n%s",
				p.phase, again, c.context(st.journal))
		}
		switch {
		case p.hung:
			c.fail("%s\nstderr:\n%s\n%s", p, p.stderr, c.context(st.journal))
		case p.killed:
			stats.kills++
			stats.killsBy[k.kind]++
			killed = true
			continue
		case p.code != 0:
			c.fail("%s\nstderr:\n%s\n%s", p, p.stderr, c.context(st.journal))
		}
		stdout = p.stdout
		break
	}
	c.verify(stdout, printed, stats)
}

// verify checks a completed run: its answer; every agent of the tree
// started once and finished well; each child's report reached its parent
// exactly once; the onboarding answer and the asker's question and answer
// each reached their agent once; each command appended its line once.
func (c *soakRun) verify(stdout string, printed bool, stats *soakStats) {
	for _, p := range c.model.takeProblems() {
		c.fail("the model saw: %s\n%s", p, c.context(""))
	}
	var bad []string
	bad1 := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	if printed && strings.TrimSpace(stdout) != soakAnswer {
		bad1("stdout %q, want the answer %q", stdout, soakAnswer)
	}
	st, err := inspectStore(c.db, 201, soakName)
	if err != nil {
		c.fail("reading the store: %v", err)
	}
	ctx := context.Background()
	s, err := openStore(ctx, c.db, c.db, slog.Default())
	if err != nil {
		c.fail("open the store: %v", err)
	}
	defer s.Close()
	run := st.run
	if run == nil {
		c.fail("no run in the store\n%s", c.context(""))
	}
	if run.Status != cadre.StatusDone || run.Answer != soakAnswer {
		c.fail("the run record: status %s, answer %q, error %q\n%s", run.Status, run.Answer, run.Error, c.context(st.journal))
	}
	agents, err := s.ListAgents(ctx, run.ID)
	if err != nil {
		c.fail("list agents: %v", err)
	}
	tree := soakTree()
	states := map[cadre.AgentID]*loop.State{}
	succeeded := map[string]int{} // run_command call ID -> successful results
	rd := &journal.Reader{Store: s, Run: run.ID}
	for _, a := range agents {
		entries, err := s.Journal(ctx, run.ID, a.ID)
		if err != nil {
			c.fail("journal of %s: %v", a.ID, err)
		}
		rep, err := replayAgent(ctx, rd, entries, "run_command")
		if err != nil {
			c.fail("journal of %s, %v", a.ID, err)
		}
		for id, n := range rep.succeeded {
			if n > 0 {
				succeeded[string(a.ID)+" "+id] += n
			}
		}
		stats.interrupted += rep.interrupted
		states[a.ID] = rep.state
	}
	if len(states) != soakAgents || len(tree) != soakAgents {
		var ids []string
		for id := range states {
			ids = append(ids, string(id))
		}
		sort.Strings(ids)
		bad1("the run has %d agents, want %d: %v", len(states), soakAgents, ids)
	}
	// count counts s in the messages an agent received.
	count := func(st *loop.State, s string) int {
		n := 0
		for _, m := range st.Messages() {
			if m.Role != cadre.RoleAssistant {
				n += strings.Count(m.Content, s)
			}
		}
		return n
	}
	keys := make([]string, 0, len(tree))
	for k := range tree {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		ag := tree[key]
		st, ok := states[ag.id]
		if !ok {
			bad1("%s (%s) never started", ag.id, key)
			continue
		}
		if fin, ok := st.Finished(); !ok || fin.Failed || fin.Cancelled {
			bad1("%s (%s) did not finish well: %+v", ag.id, key, fin)
		}
		var first []string
		for _, m := range st.Messages() {
			if m.Role == cadre.RoleAssistant {
				break
			}
			first = append(first, m.Content)
		}
		if got := soakKeyOf(first); got != key {
			bad1("%s is the agent %q, want %q", ag.id, got, key)
		}
		if key == "root" || key == "b6o" {
			continue
		}
		parent := states[tree[ag.parent].id]
		if parent == nil {
			continue
		}
		if n := count(parent, soakReport(key)); n != 1 {
			bad1("the report of %s reached %s %d times, want once", ag.id, parent.ID(), n)
		}
		stats.reports++
	}
	// The wake: it reached b1 once, and b1's second report the root once.
	if root, b1 := states[cadre.RootID], states[tree["b1"].id]; root != nil && b1 != nil {
		if n := count(b1, soakWake); n != 1 {
			bad1("the root's wake reached %s %d times, want once", b1.ID(), n)
		}
		if n := count(root, soakSecond); n != 1 {
			bad1("the second report of %s reached the root %d times, want once", b1.ID(), n)
		}
		stats.reports++
	}
	// The onboarding: one question reached the root, one answer b6o, and
	// the call b6 started with it.
	if root, b6o, b6 := states[cadre.RootID], states[tree["b6o"].id], states[tree["b6"].id]; root != nil && b6o != nil && b6 != nil {
		if n := count(root, soakQuestion("b6")); n != 1 {
			bad1("the onboarding question reached the root %d times, want once", n)
		}
		if n := count(b6o, soakReply("b6")); n != 1 {
			bad1("the onboarding answer reached %s %d times, want once", b6o.ID(), n)
		}
		if n := count(root, `"ready":true`); n != 1 {
			bad1("the root was told %d times that its handle is ready, want once", n)
		}
		stats.questions++
	}
	if b5, asker := states[tree["b5"].id], states[tree["b5.1"].id]; b5 != nil && asker != nil {
		if n := count(b5, soakQuestion("b5.1")); n != 1 {
			bad1("the question of %s reached %s %d times, want once", asker.ID(), b5.ID(), n)
		}
		if n := count(asker, soakReply("b5.1")); n != 1 {
			bad1("the answer of %s reached %s %d times, want once", b5.ID(), asker.ID(), n)
		}
		stats.questions++
	}

	// Commands: each appended its line once, and none succeeded twice.
	data, err := os.ReadFile(filepath.Join(c.dir, soakLog))
	if err != nil {
		bad1("the commands' file: %v", err)
	}
	lines := map[string]int{}
	for _, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		lines[l]++
	}
	want := 0
	for _, key := range keys {
		if tree[key].def != "cmdleaf" {
			continue
		}
		want++
		if n := lines[soakLine(key)]; n != 1 {
			bad1("the command of %s ran %d times (its line is %d times in %s), want once", key, n, n, soakLog)
		}
		stats.commands++
	}
	if len(lines) != want {
		bad1("%s holds %d different lines, want %d:\n%s", soakLog, len(lines), want, data)
	}
	for id, n := range succeeded {
		if n > 1 {
			bad1("the command call %s succeeded %d times", id, n)
		}
	}
	evs, err := s.Events(ctx, run.ID, 0)
	if err != nil {
		c.fail("events: %v", err)
	}
	called := map[string]int{}
	for _, ev := range evs {
		if tc, ok := ev.Data.(cadre.ToolCalled); ok && tc.Tool == "run_command" {
			called[string(ev.Agent)+" "+tc.CallID]++
		}
	}
	for id, n := range called {
		if n > 1 {
			bad1("the command call %s ran %d times", id, n)
		}
	}
	if !printed {
		p := c.exec(nil, append(c.resumeArgs(), run.ID)...)
		if p.code == 0 || !strings.Contains(p.stderr, "nothing to resume") {
			bad1("cadre resume after the run was done: %s\nstderr:\n%s", p, p.stderr)
		}
	}
	if len(bad) > 0 {
		c.fail("%s\n%s", strings.Join(bad, "\n"), c.context(st.journal))
	}
}

// soakSeed is CADRE_SOAK_SEED when set, so that a failure can be looked at
// again with the same kill points (the timing of a run still varies).
func soakSeed(t *testing.T) uint64 {
	if v := os.Getenv("CADRE_SOAK_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("CADRE_SOAK_SEED=%s: give a number", v)
		}
		return n
	}
	return uint64(time.Now().UnixNano())
}

// TestSoakKillAndResume kills the real binary with SIGKILL at random points
// of a run of 50 agents (see soakRootTask) and resumes it until it
// completes, trial after trial, until it has been killed CADRE_SOAK times
// (5 by default; make soak kills it 100 times). A kill comes when the
// process sends its Nth model request (the call is then in flight), right
// after the Nth reply reaches it, or after a random delay. After each
// process it checks that no model call whose result was journaled before
// the process started was made again; after each trial, that the run
// completed with the answer, that each of its 49 reports (48 children's
// and the second of the woken b1) reached its parent exactly once, that the questions and answers reached their agents
// once, and that each command ran once.
//
// CADRE_SOAK_SEED sets the seed of the kill points; CADRE_SOAK_TRIAL runs
// only that trial of the seed. With CADRE_SOAK_STORE=postgres the runs are
// kept in PostgreSQL (a schema per trial of the database
// CADRE_TEST_POSTGRES names) instead of a SQLite file.
func TestSoakKillAndResume(t *testing.T) {
	target := 5
	if v := os.Getenv("CADRE_SOAK"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CADRE_SOAK=%s: give the number of kills, a positive number", v)
		}
		target = n
	}
	only := -1
	if v := os.Getenv("CADRE_SOAK_TRIAL"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			t.Fatalf("CADRE_SOAK_TRIAL=%s: give a trial number, 0 or more", v)
		}
		only = n
	}
	seed := soakSeed(t)
	t.Logf("seed %d (CADRE_SOAK_SEED=%d uses it again), %d kills", seed, seed, target)
	bin := cadreBinary(t)
	model := newSoakModel(t)
	phase := 0
	began := time.Now()

	// A run nobody kills shows that the script works, how long a run takes
	// and how many model requests it makes: the kills are spread over
	// those.
	ref := newSoakRun(t, bin, model, &phase)
	fmt.Fprintf(&ref.log, "the run nobody kills:\n")
	stats := soakStats{killsBy: map[string]int{}, at: map[string]int{}}
	var span time.Duration
	var calls int
	func() {
		defer func() {
			if f, ok := recover().(soakFail); ok {
				t.Fatalf("the run nobody killed: %s", f.msg)
			} else if ok {
				panic(f)
			}
		}()
		p := ref.exec(nil, ref.runArgs()...)
		if p.hung || p.code != 0 {
			ref.fail("%s\nstderr:\n%s\n%s", p, p.stderr, ref.context(""))
		}
		for key, n := range model.phaseCalls(p.phase) {
			if n != 1 {
				ref.fail("it made the call %s %d times", key, n)
			}
		}
		calls, span = model.phaseServed(p.phase), p.took
		ref.verify(p.stdout, true, &stats)
	}()
	t.Logf("a whole run takes %v and %d model requests", span.Round(time.Millisecond), calls)
	stats = soakStats{killsBy: map[string]int{}, at: map[string]int{}}

	for trial := 0; stats.kills < target; trial++ {
		if only >= 0 && trial != only {
			continue
		}
		rng := rand.New(rand.NewPCG(seed, uint64(trial)))
		c := newSoakRun(t, bin, model, &phase)
		if rng.IntN(3) == 0 {
			c.limits = append(c.limits, "--max-concurrent", "3")
		}
		fmt.Fprintf(&c.log, "trial %d of seed %d (%s):\n", trial, seed, strings.Join(c.limits, " "))
		stats.trials++
		func() {
			defer func() {
				r := recover()
				if r == nil {
					return
				}
				f, ok := r.(soakFail)
				if !ok {
					panic(r)
				}
				stats.failures = append(stats.failures, fmt.Sprintf("trial %d", trial))
				t.Errorf("trial %d of seed %d (CADRE_SOAK_SEED=%d CADRE_SOAK_TRIAL=%d runs it alone): %s", trial, seed, seed, trial, f.msg)
			}()
			c.trial(rng, span, calls, &stats)
		}()
		if only >= 0 || len(stats.failures) >= 3 {
			break
		}
	}

	var where []string
	for k, n := range stats.at {
		where = append(where, fmt.Sprintf("%s: %d", k, n))
	}
	sort.Strings(where)
	t.Logf("soak of seed %d: %d trials, %d processes, %d kills (%d at a request, %d after a reply, %d after a delay), %d resumes, "+
		"%d kills in the middle of a run; %d reports, %d questions and %d commands checked; %d model calls served, "+
		"%d of them made again after a kill had lost them, %d commands told they were interrupted; %d failures %v; %v",
		seed, stats.trials, stats.procs, stats.kills, stats.killsBy["request"], stats.killsBy["reply"], stats.killsBy["delay"], stats.resumes,
		stats.mid, stats.reports, stats.questions, stats.commands, stats.served, stats.again, stats.interrupted, len(stats.failures), stats.failures,
		time.Since(began).Round(time.Second))
	t.Logf("the kills left: %s", strings.Join(where, "; "))
	if len(stats.failures) == 0 && only < 0 && stats.mid == 0 {
		t.Errorf("none of the %d kills left a run in its middle: the kills miss the runs", stats.kills)
	}
}
