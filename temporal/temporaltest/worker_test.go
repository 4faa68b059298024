package temporaltest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/sqlite"
	"github.com/cadre-ai/cadre/temporal"
)

// The run the worker-loss test shares between two workers: the root
// spawns killChildren workers in one reply; each reports its part and
// ends; the root answers with the number of distinct reports it got.
const (
	killTask     = "fan out to every worker and count their reports"
	killChildren = 99
	// killAfter is the number of child model calls served, in all, after
	// which the first worker dies at its next call.
	killAfter = 45
)

// buildCadre builds the cadre binary of the module under test.
func buildCadre(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cadre")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/cadre")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/cadre: %v\n%s", err, out)
	}
	return bin
}

// chatMessage is a message of an OpenAI chat request, as far as the test
// reads it.
type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func (m chatMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// callKey names a model call as both the server and Temporal's history
// see it: the agent's task (its first user message) and the turn.
type callKey struct {
	task string
	turn int
}

// killServer is an OpenAI-compatible server scripting the run. Each
// process talks to it under its own path prefix, so it knows which worker
// made each call; it kills the first worker, with SIGKILL, at that
// worker's first child call after killAfter child calls were served.
type killServer struct {
	*httptest.Server
	mu       sync.Mutex
	served   map[callKey][]string // the prefixes of the processes that made the call
	children int                  // child calls served
	victim   *exec.Cmd
	killedAt time.Time
}

func newKillServer(t *testing.T) *killServer {
	s := &killServer{served: map[callKey][]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

func (s *killServer) handle(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string        `json:"model"`
		Messages []chatMessage `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	who := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")[0]
	var k callKey
	k.turn = 1
	var tools []string
	for _, m := range req.Messages {
		switch {
		case m.Role == "user" && k.task == "":
			k.task = m.text()
		case m.Role == "assistant":
			k.turn++
		case m.Role == "tool":
			tools = append(tools, m.text())
		}
	}
	s.mu.Lock()
	s.served[k] = append(s.served[k], who)
	child := k.task != killTask
	kill := false
	if child {
		if who == "w1" && s.victim != nil && s.killedAt.IsZero() && s.children >= killAfter {
			kill = true
			s.killedAt = time.Now()
		}
		s.children++
	}
	victim := s.victim
	s.mu.Unlock()
	if kill {
		// The call in flight dies with its worker: it was never answered.
		_ = victim.Process.Kill()
		return
	}
	switch {
	case !child && k.turn == 1:
		var calls []openaiCall
		for i := range killChildren {
			args, _ := json.Marshal(map[string]string{"agent": "worker", "task": fmt.Sprintf("part %d", i)})
			calls = append(calls, openaiCall{name: "spawn_agent", args: string(args)})
		}
		writeOpenAI(w, req.Model, "", calls)
	case !child:
		seen := map[string]bool{}
		for _, text := range tools {
			for _, line := range strings.Split(text, "\n") {
				if i := strings.Index(line, "report of part "); i >= 0 {
					seen[strings.TrimSpace(line[i:])] = true
				}
			}
		}
		writeOpenAI(w, req.Model, fmt.Sprintf("%d distinct reports", len(seen)), nil)
	case k.turn == 1:
		// A child works a little, so that the run is still going when
		// the first worker dies.
		select {
		case <-time.After(50 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		args, _ := json.Marshal(map[string]string{"text": "report of " + k.task})
		writeOpenAI(w, req.Model, "", []openaiCall{{name: "send_agent_message", args: string(args)}})
	default:
		writeOpenAI(w, req.Model, "reported", nil)
	}
}

type openaiCall struct{ name, args string }

// writeOpenAI answers a chat completion as a stream of chunks.
func writeOpenAI(w http.ResponseWriter, model, text string, calls []openaiCall) {
	w.Header().Set("Content-Type", "text/event-stream")
	emit := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-kill", "object": "chat.completion.chunk", "created": 1, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	emit(map[string]any{"role": "assistant", "content": text}, nil)
	for i, c := range calls {
		emit(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": fmt.Sprintf("call_%d", i), "type": "function",
			"function": map[string]any{"name": c.name, "arguments": c.args}}}}, nil)
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	emit(map[string]any{}, finish)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// A run of 100 agents shared by two worker processes goes on when one of
// them is killed with SIGKILL halfway: the other completes it, each
// child's report reaches the root once, and no model call whose result
// Temporal recorded is made again (the server counts every call, and
// each must have been made at most once per attempt Temporal gave it).
func TestWorkerKilledMidRun(t *testing.T) {
	bin := buildCadre(t)
	dir := t.TempDir()
	agents := filepath.Join(dir, ".cadre", "agents")
	if err := os.MkdirAll(agents, 0o755); err != nil {
		t.Fatal(err)
	}
	def := "---\nname: worker\ndescription: Works on one part of a job and reports it.\n---\nYou work on the part you are given and report it.\n"
	if err := os.WriteFile(filepath.Join(agents, "worker.md"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := newKillServer(t)
	storePath := filepath.Join(dir, "runs.db")
	q := queue()
	common := []string{"--address", server.GetFrontendHostPort(), "--namespace", server.GetDefaultNamespace(),
		"--task-queue", q, "--store", storePath, "-m", "openai:scripted"}
	start := func(who string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "OPENAI_API_KEY=test-key",
			"OPENAI_BASE_URL=" + srv.URL + "/" + who + "/v1"}
		var so, se bytes.Buffer
		cmd.Stdout, cmd.Stderr = &so, &se
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		})
		return cmd, &so, &se
	}
	w1, _, w1err := start("w1", append([]string{"worker"}, common...)...)
	srv.mu.Lock()
	srv.victim = w1
	srv.mu.Unlock()
	w2, _, w2err := start("w2", append([]string{"worker"}, common...)...)
	run, out, errOut := start("run", append([]string{"run", "--engine", "temporal", "--no-tree", "--approve", "none",
		"--max-agents", fmt.Sprint(killChildren + 1), "--max-concurrent", "16", "--budget-tokens", "-1"}, append(common, killTask)...)...)

	ended := make(chan error, 1)
	go func() { ended <- run.Wait() }()
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("cadre run: %v\nstdout: %s\nstderr: %s\nworker 1: %s\nworker 2: %s", err, out, errOut, w1err, w2err)
		}
	case <-time.After(10 * time.Minute):
		_ = run.Process.Kill()
		t.Fatalf("the run did not end within 10 minutes\nstderr: %s\nworker 2: %s", errOut, w2err)
	}
	finished := time.Now()
	_ = w1.Wait()
	if w2.ProcessState != nil {
		t.Fatalf("the second worker ended: %s", w2err)
	}

	srv.mu.Lock()
	killedAt := srv.killedAt
	served := srv.served
	srv.mu.Unlock()
	if killedAt.IsZero() {
		t.Fatalf("the run ended before the first worker was killed; worker calls: %v", perWorker(served))
	}
	if got, want := strings.TrimSpace(out.String()), fmt.Sprintf("%d distinct reports", killChildren); got != want {
		t.Fatalf("answer %q, want %q\nstderr: %s", got, want, errOut)
	}

	// Each child's report reached the root once.
	st, err := sqlite.Open(context.Background(), storePath)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.ListRuns(context.Background(), 1)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs in the store: %v %v", runs, err)
	}
	id := runs[0].ID
	evs, err := st.Events(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	reports := map[cadre.AgentID]int{}
	for _, ev := range evs {
		if r, ok := ev.Data.(cadre.AgentReported); ok {
			reports[r.Child]++
		}
	}
	ags, err := st.ListAgents(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(ags) != killChildren+1 {
		t.Errorf("%d agents in the store, want %d", len(ags), killChildren+1)
	}
	for _, a := range ags {
		if a.ID != cadre.RootID && reports[a.ID] != 1 {
			t.Errorf("the report of %s reached the root %d times, want once", a.ID, reports[a.ID])
		}
	}

	// No recorded model call was made again: every call Temporal completed
	// was served at most as many times as it was attempted.
	c := testClient(t)
	completed := map[callKey]int{}
	repeats := 0
	for _, a := range ags {
		for _, mc := range completedModelCalls(t, c, temporal.AgentWorkflowID(id, a.ID)) {
			k, attempt := mc.key, mc.attempt
			completed[k]++
			if n := len(served[k]); n > int(attempt) {
				t.Errorf("model call %q turn %d was made %d times (%v) but completed on attempt %d: a recorded call was made again", k.task, k.turn, n, served[k], attempt)
			}
			if len(served[k]) > 1 {
				repeats++
			}
		}
	}
	for k, n := range completed {
		if n != 1 {
			t.Errorf("model call %q turn %d completed %d times", k.task, k.turn, n)
		}
	}
	if len(completed) != killChildren+2 {
		t.Errorf("%d model calls completed, want %d (two of the root, one per child)", len(completed), killChildren+2)
	}
	calls := perWorker(served)
	if calls["w2"] == 0 || calls["w1"] == 0 {
		t.Errorf("both workers should have served calls: %v", calls)
	}
	t.Logf("%d agents; model calls by worker %v; %d calls made again after the kill; the run ended %v after the first worker died",
		len(ags), calls, repeats, finished.Sub(killedAt).Round(time.Second))
}

func perWorker(served map[callKey][]string) map[string]int {
	n := map[string]int{}
	for _, ws := range served {
		for _, w := range ws {
			n[w]++
		}
	}
	return n
}

type completedCall struct {
	key     callKey
	attempt int32
}

// completedModelCalls reads an agent workflow's history and returns its
// completed model calls with the attempt that completed each.
func completedModelCalls(t *testing.T, c client.Client, wid string) []completedCall {
	t.Helper()
	scheduled := map[int64]callKey{}
	attempts := map[int64]int32{}
	var out []completedCall
	for _, ev := range history(t, c, wid).Events {
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := ev.GetActivityTaskScheduledEventAttributes()
			if a.GetActivityType().GetName() != "CallModel" {
				continue
			}
			var args struct {
				Request cadre.Request `json:"request"`
			}
			if err := json.Unmarshal(a.GetInput().GetPayloads()[0].GetData(), &args); err != nil {
				t.Fatalf("%s: the input of model call %d: %v", wid, ev.GetEventId(), err)
			}
			k := callKey{turn: args.Request.Turn}
			for _, m := range args.Request.Messages {
				if m.Role == cadre.RoleUser {
					k.task = m.Content
					break
				}
			}
			scheduled[ev.GetEventId()] = k
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			a := ev.GetActivityTaskStartedEventAttributes()
			attempts[a.GetScheduledEventId()] = a.GetAttempt()
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			id := ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()
			if k, ok := scheduled[id]; ok {
				out = append(out, completedCall{k, attempts[id]})
			}
		}
	}
	return out
}
