package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/journal"
	"github.com/cadre-ai/cadre/loop"
)

// What the tests that kill the binary and resume its runs share (the crash
// test and the soak): the model server's bookkeeping, the processes, and
// reading the store between them.

// phasedModel is the bookkeeping of an OpenAI-compatible server that plays
// a script to the processes of a kill test. Each process talks to it under
// its own path prefix /pN/, its phase, so the server knows which process
// made each call even when a request of a killed process is read late.
type phasedModel struct {
	*httptest.Server
	mu       sync.Mutex
	seq      int
	calls    map[int]map[string]int // phase -> agent#turn -> calls
	problems []string
}

// start serves serve until the test ends.
func (m *phasedModel) start(t *testing.T, serve http.HandlerFunc) {
	t.Helper()
	m.calls = map[int]map[string]int{}
	m.Server = httptest.NewServer(serve)
	t.Cleanup(m.Close)
}

// baseURL is the OPENAI_BASE_URL of the process of phase.
func (m *phasedModel) baseURL(phase int) string {
	return fmt.Sprintf("%s/p%d/v1", m.URL, phase)
}

// problem records something the script found wrong.
func (m *phasedModel) problem(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.problems = append(m.problems, fmt.Sprintf(format, args...))
}

// takeProblems returns the problems recorded since the last call.
func (m *phasedModel) takeProblems() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.problems
	m.problems = nil
	return p
}

// phaseCalls returns the calls made in phase, by agent#turn.
func (m *phasedModel) phaseCalls(phase int) map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int{}
	for k, n := range m.calls[phase] {
		out[k] = n
	}
	return out
}

// countLocked counts the call of phase and returns the ID of its reply.
// m.mu must be held.
func (m *phasedModel) countLocked(phase int, call string) string {
	if m.calls[phase] == nil {
		m.calls[phase] = map[string]int{}
	}
	m.calls[phase][call]++
	m.seq++
	return fmt.Sprintf("chatcmpl-%d", m.seq)
}

// readPhased reads a chat completion request made under /pN/. When r is not
// one, it answers it with an error and returns false.
func readPhased(w http.ResponseWriter, r *http.Request) (phase int, req chatRequest, ok bool) {
	if _, err := fmt.Sscanf(r.URL.Path, "/p%d/", &phase); err != nil || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, "not found", http.StatusNotFound)
		return 0, req, false
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return 0, req, false
	}
	return phase, req, true
}

// holdReply waits least milliseconds plus up to spread-1 more, the same for
// every request of call, so that a run lasts long enough to be killed in
// the middle of it. It returns false when the client went away first.
func holdReply(r *http.Request, call string, least, spread uint32) bool {
	h := fnv.New32a()
	h.Write([]byte(call))
	select {
	case <-time.After(time.Duration(least+h.Sum32()%spread) * time.Millisecond):
		return true
	case <-r.Context().Done():
		return false
	}
}

// scriptCall is a call of the tool name with args, for a scripted reply.
func scriptCall(name string, args map[string]string) toolCall {
	b, _ := json.Marshal(args)
	return toolCall{Name: name, Args: string(b)}
}

// killProject is a project folder of a kill test, its store and the
// processes the test ran in it.
type killProject struct {
	t      *testing.T
	bin    string
	server *phasedModel
	phase  *int // the last phase used, shared by every project of the test
	dir    string
	home   string
	db     string
	log    strings.Builder // what happened, for failure messages
}

// crashProc is what one process did.
type crashProc struct {
	phase          int
	args           []string
	stdout, stderr string
	code           int
	killed         bool // by the test, with SIGKILL
	hung           bool // it outlived its time limit
	took           time.Duration
}

func (p crashProc) String() string {
	what := fmt.Sprintf("exit %d", p.code)
	switch {
	case p.hung:
		what = "stuck"
	case p.killed:
		what = "killed"
	}
	return fmt.Sprintf("phase %d: cadre %s: %s after %v", p.phase, p.args[0], what, p.took.Round(time.Millisecond))
}

// nextProc is the process of the next phase, to run with args.
func (c *killProject) nextProc(args []string) crashProc {
	*c.phase++
	return crashProc{phase: *c.phase, args: args}
}

// run runs the binary with p's args in the project, talking to the model
// server under p's phase, and fills in what it did. It kills the process
// with SIGKILL when kill is closed (a nil kill never is) unless it has
// ended by then, and stops it when it outlives limit.
func (c *killProject) run(p *crashProc, limit time.Duration, kill <-chan struct{}) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, p.args...)
	cmd.Dir = c.dir
	// The race detector waits a second before a process exits, for reports
	// of other goroutines; without that wait, the kills land in the run
	// rather than after it.
	cmd.Env = []string{"HOME=" + c.home, "PATH=" + os.Getenv("PATH"), "GORACE=atexit_sleep_ms=0",
		"OPENAI_BASE_URL=" + c.server.baseURL(p.phase), "OPENAI_API_KEY=test-key"}
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	cmd.Stdin = strings.NewReader("")
	cmd.WaitDelay = 10 * time.Second
	began := time.Now()
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-kill:
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err = <-done
		ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
		p.killed = ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
	}
	p.took = time.Since(began)
	p.stdout, p.stderr = so.String(), se.String()
	p.hung = ctx.Err() != nil
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		p.code = ee.ExitCode()
	} else if err != nil && !p.hung {
		c.t.Fatalf("%v: %v", p.args, err)
	}
	if strings.Contains(p.stderr, "DATA RACE") {
		c.t.Errorf("%s: the race detector found a data race:\n%s", p, p.stderr)
	}
}

// context is what a failure message needs: the processes of the project,
// what the model saw that was wrong, and journal (the journals before the
// process that failed) when it is not empty.
func (c *killProject) context(journal string) string {
	var b strings.Builder
	b.WriteString(c.log.String())
	for _, p := range c.server.takeProblems() {
		fmt.Fprintf(&b, "the model saw: %s\n", p)
	}
	if journal != "" {
		fmt.Fprintf(&b, "journals:\n%s", journal)
	}
	return b.String()
}

// killState is what the store holds between two processes.
type killState struct {
	run         *cadre.RunRecord // the newest run, or nil
	rootStarted bool             // the newest run's root has a journal
	journaled   map[string]bool  // agent#turn of every model call whose result is journaled, in any run
	journal     string           // the newest run's journals, for failure messages
}

// inspectStore reads the store at db while no process is using it. name
// names the agent a journal starts, as the model server's calls name it,
// or returns "" for an agent the script does not know; an entry's data is
// clipped to clip characters in the dump of the journals.
func inspectStore(db string, clip int, name func(loop.Start) string) (killState, error) {
	st := killState{journaled: map[string]bool{}}
	if _, err := os.Stat(db); !isPostgres(db) && errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	ctx := context.Background()
	s, err := openStore(ctx, db, db, slog.Default())
	if err != nil {
		return st, err
	}
	defer s.Close()
	runs, err := s.ListRuns(ctx, 0)
	if err != nil {
		return st, err
	}
	for i, r := range runs {
		agents, err := s.ListAgents(ctx, r.ID)
		if err != nil {
			return st, err
		}
		var dump strings.Builder
		rd := &journal.Reader{Store: s, Run: r.ID}
		for _, a := range agents {
			entries, err := s.Journal(ctx, r.ID, a.ID)
			if err != nil {
				return st, err
			}
			if i == 0 && a.ID == cadre.RootID && len(entries) > 0 {
				st.rootStarted = true
			}
			fmt.Fprintf(&dump, "    %s (%s):\n", a.ID, a.Status)
			agent, turn := "", 0
			for _, e := range entries {
				fmt.Fprintf(&dump, "      %d %s %s\n", e.Seq, e.Kind, clipText(string(e.Data), clip))
				ins, err := rd.Inputs(ctx, e)
				if err != nil {
					return st, fmt.Errorf("run %s, %s, entry %d: %w", r.ID, a.ID, e.Seq, err)
				}
				for _, in := range ins {
					switch in := in.(type) {
					case loop.Start:
						if agent = name(in); agent == "" {
							return st, fmt.Errorf("run %s: the journal of %s starts an agent the script does not know", r.ID, a.ID)
						}
					case loop.ModelResult:
						if in.Response != nil {
							turn++
							st.journaled[fmt.Sprintf("%s#%d", agent, turn)] = true
						}
					}
				}
			}
		}
		if i == 0 {
			st.run = r
			st.journal = dump.String()
		}
	}
	return st, nil
}

// progress says how far a killed process had got, counting the journaled
// calls in steps of step.
func (st killState) progress(step int) string {
	switch {
	case st.run == nil:
		return "no run"
	case st.run.Status.Terminal():
		return "the run " + string(st.run.Status)
	case !st.rootStarted:
		return "no root"
	}
	return fmt.Sprintf("%02d calls journaled", len(st.journaled)/step*step)
}

// agentReplay is an agent's journal replayed, with what its calls of one
// tool did.
type agentReplay struct {
	state *loop.State
	// succeeded holds every call of the tool, by call ID, with the number
	// of its successful results.
	succeeded map[string]int
	// interrupted is the number of tool results that told the agent a call
	// was in progress when the process died.
	interrupted int
}

// replayAgent replays an agent's journal, following its calls of tool; rd
// reads the configurations Starts take from others.
func replayAgent(ctx context.Context, rd *journal.Reader, entries []cadre.JournalEntry, tool string) (agentReplay, error) {
	rep := agentReplay{succeeded: map[string]int{}}
	ins, err := rd.InputsOf(ctx, entries)
	if err != nil {
		return rep, err
	}
	for _, in := range ins {
		switch in := in.(type) {
		case loop.ModelResult:
			if in.Response != nil {
				for _, tc := range in.Response.Message.ToolCalls {
					if tc.Name == tool {
						rep.succeeded[tc.ID] += 0
					}
				}
			}
		case loop.ToolResults:
			for _, r := range in.Results {
				if _, ok := rep.succeeded[r.CallID]; ok && !r.IsError {
					rep.succeeded[r.CallID]++
				}
				if strings.Contains(r.Content, interruptedText) {
					rep.interrupted++
				}
			}
		}
	}
	rep.state = loop.Replay(ins)
	return rep, nil
}
