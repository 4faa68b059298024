package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/model/scripted"
	"github.com/cadre-ai/cadre/tool"
)

// failsafe turns a hang into a failure; no assertion depends on it.
const failsafe = 60 * time.Second

// The definitions of the test runs: the root ("lead") asks the user,
// mids delegate to two leaves each, leaves wait for the gate.
var (
	leadDef = &cadre.Definition{Name: "lead", Description: "Leads the work; asks the user.", Prompt: "You lead.", AskCaller: true}
	midDef  = &cadre.Definition{Name: "mid", Description: "Splits its part between two leaves.", Prompt: "You split work.", Visibility: cadre.VisibilityUserFacing}
	leafDef = &cadre.Definition{Name: "leaf", Description: "Does one unit of work.", Prompt: "You work.", Visibility: cadre.VisibilityUserFacing}
)

// touchTool is a tool that changes something, so each call needs approval.
type touchTool struct {
	mu    sync.Mutex
	calls int
	paths []string
}

func (t *touchTool) Spec() cadre.ToolSpec {
	return cadre.ToolSpec{Name: "touch", Description: "Touches the file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}
}

func (t *touchTool) Call(_ context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Path string `json:"path"`
	}
	_ = json.Unmarshal(args, &a)
	t.mu.Lock()
	t.calls++
	t.paths = append(t.paths, a.Path)
	t.mu.Unlock()
	return "touched", nil
}

// touched returns the paths touched, in order.
func (t *touchTool) touched() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.paths)
}

func (t *touchTool) Mutates() bool { return true }

func (t *touchTool) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls
}

// hasCall reports whether an assistant message of msgs called the tool.
func hasCall(msgs []cadre.Message, name string) bool {
	for _, m := range msgs {
		if slices.ContainsFunc(m.ToolCalls, func(c cadre.ToolCall) bool { return c.Name == name }) {
			return true
		}
	}
	return false
}

func calls(name string, args ...string) *cadre.Response {
	m := cadre.Message{Role: cadre.RoleAssistant}
	for i, a := range args {
		m.ToolCalls = append(m.ToolCalls, cadre.ToolCall{ID: fmt.Sprintf("c%d", i+1), Name: name, Arguments: a})
	}
	return &cadre.Response{Message: m, Usage: cadre.Usage{InputTokens: 100, OutputTokens: 20}}
}

func text(s string) *cadre.Response {
	return &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: s}, Usage: cadre.Usage{InputTokens: 50, OutputTokens: 10}}
}

// steerModel plays the steered run: the root starts two mids in the
// background, asks the user a colour, touches a file (an approval), and
// answers; each mid spawns two leaves and reports; each leaf waits for the
// gate to close, then reports.
func steerModel(gate <-chan struct{}) *scripted.Model {
	return scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch scripted.DefinitionName(req.Agent) {
		case "root":
			switch {
			case !hasCall(req.Messages, loop.ToolStartBackground):
				return calls(loop.ToolStartBackground, `{"agent":"mid","prompt":"first half"}`, `{"agent":"mid","prompt":"second half"}`), nil
			case !hasCall(req.Messages, "ask_caller"):
				return calls("ask_caller", `{"question":"Which colour should the report use?"}`), nil
			case !hasCall(req.Messages, "touch"):
				return calls("touch", `{"path":"report.txt"}`), nil
			}
			return text("Final answer: the report is blue."), nil
		case "mid":
			switch {
			case !hasCall(req.Messages, loop.ToolSpawnAgent):
				return calls(loop.ToolSpawnAgent, fmt.Sprintf(`{"agent":"leaf","task":"unit 1 of %s"}`, req.Agent), fmt.Sprintf(`{"agent":"leaf","task":"unit 2 of %s"}`, req.Agent)), nil
			case !hasCall(req.Messages, loop.ToolSendAgentMessage):
				return calls(loop.ToolSendAgentMessage, `{"text":"My half is done."}`), nil
			}
			return text("Done."), nil
		case "leaf":
			if !hasCall(req.Messages, loop.ToolSendAgentMessage) {
				select {
				case <-gate:
				case <-ctx.Done():
					return nil, context.Cause(ctx)
				}
				return calls(loop.ToolSendAgentMessage, `{"text":"Unit done."}`), nil
			}
			return text("Done."), nil
		}
		return nil, fmt.Errorf("no reply for %s", req.Agent)
	})
}

// fixture is a server over a local engine with a memory store.
type fixture struct {
	t      *testing.T
	eng    *engineSet
	store  cadre.Store
	appr   *Approvals
	touch  *touchTool
	server *Server
	srv    *httptest.Server
	gate   chan struct{}
	once   sync.Once
}

type fixtureOptions struct {
	token string
	model cadre.Model
	// eventBuffer is the engine's ring of events for watchers.
	eventBuffer int
	hosts       []string
	redact      func(cadre.Event) cadre.Event
	redactText  func(string) string
	// The server's bounds (Options).
	bodyTimeout, writeTimeout time.Duration
	maxStreams                int
}

func newFixture(t *testing.T, fo fixtureOptions) *fixture {
	t.Helper()
	f := &fixture{t: t, store: memstore.New(), appr: &Approvals{}, touch: &touchTool{}, gate: make(chan struct{})}
	m := fo.model
	if m == nil {
		m = steerModel(f.gate)
	}
	// Each run gets an approver whose prompts wait in f.appr; the engine is
	// made per run, as the command line does it, so the run's ID is known.
	engines := &engineSet{}
	base := local.Config{
		Models: local.OneModel{Name: "scripted:steer", Model: m}, RootModel: "scripted:steer",
		Definitions: []*cadre.Definition{midDef, leafDef}, RootDefinition: leadDef,
		Tools: []cadre.Tool{f.touch}, Store: f.store, AskUser: local.AwaitAnswer,
		Limits:      cadre.Limits{MaxAgents: 2000, MaxConcurrent: 2000, BudgetTokens: -1},
		EventBuffer: fo.eventBuffer,
	}
	engines.base = local.New(base)
	f.eng = engines
	start := func(ctx context.Context, req RunRequest) (string, error) {
		cfg := base
		lim, err := req.Limits.Limits()
		if err != nil {
			return "", err
		}
		if lim != (cadre.Limits{}) {
			cfg.Limits = lim
			cfg.Limits.BudgetTokens = -1
		}
		if req.Model != "" && req.Model != base.RootModel {
			return "", &RequestError{Msg: "unknown model " + quote(req.Model)}
		}
		mode, _ := tool.ParseApprovalMode(req.Approve)
		id := local.NewRunID()
		cfg.Runner = &tool.Executor{Approver: &tool.Approver{Mode: mode, Prompt: f.appr.Prompt(id)}}
		eng := local.New(cfg)
		engines.add(id, eng)
		return eng.Start(ctx, req.Task, cadre.StartOptions{ID: id})
	}
	s := New(engines, f.store, Options{Start: start, Approvals: f.appr, Token: fo.token, Hosts: fo.hosts, Redact: fo.redact, RedactText: fo.redactText,
		BodyTimeout: fo.bodyTimeout, StreamWriteTimeout: fo.writeTimeout, MaxStreams: fo.maxStreams})
	f.server = s
	f.srv = httptest.NewServer(s)
	t.Cleanup(func() {
		f.open()
		f.srv.Close()
		engines.cancelAll()
	})
	return f
}

// open lets the leaves finish.
func (f *fixture) open() { f.once.Do(func() { close(f.gate) }) }

// engineSet routes each run to the engine that started it, and what it
// does not hold to the base engine (which reads the store).
type engineSet struct {
	base *local.Engine
	mu   sync.Mutex
	runs map[string]*local.Engine
}

func (s *engineSet) add(id string, e *local.Engine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runs == nil {
		s.runs = map[string]*local.Engine{}
	}
	s.runs[id] = e
}

func (s *engineSet) of(id string) *local.Engine {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.runs[id]; e != nil {
		return e
	}
	return s.base
}

func (s *engineSet) cancelAll() {
	s.mu.Lock()
	runs := make(map[string]*local.Engine, len(s.runs))
	for id, e := range s.runs {
		runs[id] = e
	}
	s.mu.Unlock()
	for id, e := range runs {
		_ = e.Cancel(context.Background(), id, cadre.CancelOptions{Abort: true})
		ctx, cancel := context.WithTimeout(context.Background(), failsafe)
		e.Wait(ctx, id)
		cancel()
	}
}

func (s *engineSet) Start(ctx context.Context, task string, o cadre.StartOptions) (string, error) {
	return s.base.Start(ctx, task, o)
}
func (s *engineSet) Resume(ctx context.Context, run string) error { return s.of(run).Resume(ctx, run) }
func (s *engineSet) Wait(ctx context.Context, run string) (*cadre.Result, error) {
	return s.of(run).Wait(ctx, run)
}
func (s *engineSet) Cancel(ctx context.Context, run string, o cadre.CancelOptions) error {
	return s.of(run).Cancel(ctx, run, o)
}
func (s *engineSet) Tree(ctx context.Context, run string) (*cadre.Tree, error) {
	return s.of(run).Tree(ctx, run)
}
func (s *engineSet) Events(ctx context.Context, run string) iter.Seq2[cadre.Event, error] {
	return s.of(run).Events(ctx, run)
}
func (s *engineSet) Answer(ctx context.Context, run string, a cadre.AgentID, text string) error {
	return s.of(run).Answer(ctx, run, a, text)
}

// do sends a request and decodes the JSON answer into out (when not nil);
// it returns the status.
func (f *fixture) do(method, path string, body any, out any, hdr ...string) int {
	f.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			f.t.Fatal(err)
		}
		rd = strings.NewReader(string(b))
	}
	if s, ok := body.(rawBody); ok {
		rd = strings.NewReader(string(s))
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := f.srv.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if ct := res.Header.Get("Content-Type"); strings.HasPrefix(path, "/api/") && !strings.HasPrefix(ct, "application/json") {
		f.t.Errorf("%s %s: Content-Type %q, want JSON", method, path, ct)
	}
	if res.StatusCode >= 400 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			f.t.Errorf("%s %s: %d without a JSON error: %s", method, path, res.StatusCode, b)
		}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			f.t.Fatalf("%s %s: %d %s: %v", method, path, res.StatusCode, b, err)
		}
	}
	return res.StatusCode
}

// rawBody is a request body sent as it is.
type rawBody string

// start starts the steered run through the API.
func (f *fixture) start(req RunRequest) string {
	f.t.Helper()
	var c runCreated
	if st := f.do("POST", "/api/runs", req, &c); st != http.StatusCreated {
		f.t.Fatalf("POST /api/runs: %d, want 201", st)
	}
	return c.ID
}

// waitFor polls the run's tree until ok says so, failing after failsafe.
func (f *fixture) waitFor(run, what string, ok func(*runView) bool) *runView {
	f.t.Helper()
	deadline := time.Now().Add(failsafe)
	for {
		var v runView
		f.do("GET", "/api/runs/"+run, nil, &v)
		if ok(&v) {
			return &v
		}
		if time.Now().After(deadline) {
			b, _ := json.MarshalIndent(v, "", " ")
			f.t.Fatalf("run %s: gave up waiting for %s; last seen:\n%s", run, what, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func status(v *runView, id cadre.AgentID) cadre.Status {
	for _, a := range v.Tree.Agents {
		if a.ID == id {
			return a.Status
		}
	}
	return ""
}

// sseEvent is one event of a stream as a client reads it.
type sseEvent struct {
	id, event, data string
}

// readSSE reads events from an SSE body until it ends or stop says so.
// Give it the same *bufio.Reader to read on where it stopped.
func readSSE(r io.Reader, stop func(sseEvent) bool) ([]sseEvent, error) {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReader(r)
	}
	var (
		out []sseEvent
		cur sseEvent
	)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return out, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if cur.event != "" || cur.data != "" {
				out = append(out, cur)
				if stop != nil && stop(cur) {
					return out, nil
				}
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			cur.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data += line[6:]
		}
	}
}

// seqs returns the ids of the events that have one, as numbers.
func seqs(t *testing.T, evs []sseEvent) []int64 {
	t.Helper()
	var out []int64
	for _, e := range evs {
		if e.id == "" {
			continue
		}
		n, err := strconv.ParseInt(e.id, 10, 64)
		if err != nil {
			t.Fatalf("event id %q is not a number", e.id)
		}
		out = append(out, n)
	}
	return out
}

// fanModel plays a run whose root spawns n workers at once; each waits
// for the gate, then reports.
func fanModel(n int, gate <-chan struct{}) *scripted.Model {
	return scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		switch scripted.DefinitionName(req.Agent) {
		case "root":
			if !hasCall(req.Messages, loop.ToolSpawnAgent) {
				args := make([]string, n)
				for i := range args {
					args[i] = fmt.Sprintf(`{"agent":"leaf","task":"unit %d"}`, i+1)
				}
				return calls(loop.ToolSpawnAgent, args...), nil
			}
			return text("All units are done."), nil
		case "leaf":
			if !hasCall(req.Messages, loop.ToolSendAgentMessage) {
				select {
				case <-gate:
				case <-ctx.Done():
					return nil, context.Cause(ctx)
				}
				return calls(loop.ToolSendAgentMessage, `{"text":"Unit done."}`), nil
			}
			return text("Done."), nil
		}
		return nil, fmt.Errorf("no reply for %s", req.Agent)
	})
}

// storedSeqs returns the seqs of the run's stored events.
func (f *fixture) storedSeqs(run string) []int64 {
	f.t.Helper()
	evs, err := f.store.Events(context.Background(), run, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	out := make([]int64, len(evs))
	for i, ev := range evs {
		out[i] = ev.Seq
	}
	return out
}

// stream opens the run's event stream, after lastID when it is not empty.
func (f *fixture) stream(ctx context.Context, run, lastID string) *http.Response {
	f.t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/api/runs/"+run+"/events", nil)
	if err != nil {
		f.t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := f.srv.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		f.t.Fatalf("GET events: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	return res
}
