package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cadre-ai/cadre"
)

// RunTaskTool is the name of the AgentServer's generic tool, which runs
// cadre's root agent on a task.
const RunTaskTool = "run_task"

// AgentToolPrefix starts the names of the AgentServer's tools that run one
// agent definition: agent_NAME.
const AgentToolPrefix = "agent_"

// RunFunc runs cadre on task and returns the final answer. agent is the
// definition the root runs as, or "" for the generic root; context is
// background the caller gave, possibly empty. It is called concurrently,
// once per tool call, and should return when ctx ends.
type RunFunc func(ctx context.Context, agent, task, context string) (answer string, err error)

// AgentServerConfig configures an AgentServer. Run is required.
type AgentServerConfig struct {
	// Name and Version are how the server introduces itself; empty means
	// "cadre" and "dev".
	Name, Version string
	// Agents are the definitions to offer, one tool each. Internal ones
	// (not user-facing) are left out.
	Agents []*cadre.Definition
	// Run runs each call.
	Run RunFunc
	// Logger receives the SDK's records. Nil means no logging.
	Logger *slog.Logger
}

// An AgentServer offers cadre's agents as MCP tools: agent_NAME for each
// user-facing definition and run_task for the root agent. Their input is
// a task and an optional context; their result is the run's answer, or an
// error result saying why the run failed.
type AgentServer struct {
	srv   *sdk.Server
	names []string
}

// agentInput is the arguments of every AgentServer tool.
type agentInput struct {
	Task    string `json:"task"`
	Context string `json:"context"`
}

var agentInputSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "task": {"type": "string", "description": "What to do, stated completely: the agent knows nothing of your conversation."},
    "context": {"type": "string", "description": "Background the agent needs: facts, constraints, file paths, what has been tried."}
  },
  "required": ["task"],
  "additionalProperties": false
}`)

// agentOutputSchema is the structured result of every AgentServer tool.
var agentOutputSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "answer": {"type": "string", "description": "The agent's answer."}
  },
  "required": ["answer"]
}`)

// agentOutput is the structured result of every AgentServer tool.
type agentOutput struct {
	Answer string `json:"answer"`
}

// agentAnnotations tell a client what an agent's tool may do: agents read
// and write files, run commands and reach the web as their definitions
// allow, so the tool is neither read-only nor idempotent, and its world is
// open.
func agentAnnotations(title string) *sdk.ToolAnnotations {
	yes := true
	return &sdk.ToolAnnotations{Title: title, ReadOnlyHint: false, DestructiveHint: &yes, IdempotentHint: false, OpenWorldHint: &yes}
}

// A Progress tells the client of a tool call how the call is going, when
// the client asked for progress (it gave a progress token); otherwise it
// does nothing. ProgressFrom returns the one of a call's context.
type Progress func(message string)

type progressKey struct{}

// ProgressFrom returns the Progress of the tool call ctx belongs to: a
// RunFunc reports through it (agents started, reports received). It is
// never nil.
func ProgressFrom(ctx context.Context) Progress {
	if p, ok := ctx.Value(progressKey{}).(Progress); ok {
		return p
	}
	return func(string) {}
}

// NewAgentServer returns a server offering cfg.Agents through cfg.Run.
func NewAgentServer(cfg AgentServerConfig) *AgentServer {
	if cfg.Name == "" {
		cfg.Name = DefaultClientName
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &AgentServer{srv: sdk.NewServer(&sdk.Implementation{Name: cfg.Name, Version: cfg.Version}, &sdk.ServerOptions{
		Logger:       logger,
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
		Instructions: "Each tool runs a cadre agent on a task, with its own tools and subagents, and returns its answer. " +
			"Give the task in full and put what the agent needs to know in context.",
	})}
	var agents []string
	for _, d := range cfg.Agents {
		if d == nil || !d.UserFacing() {
			continue
		}
		name := AgentToolPrefix + badNameChars.ReplaceAllString(d.Name, "_")
		if len(name) > 128 || slices.Contains(s.names, name) {
			logger.Warn("agent not offered: its tool name is too long or taken", "agent", d.Name, "tool", name)
			continue
		}
		desc := strings.TrimSpace(d.Description)
		if desc == "" {
			desc = "The cadre agent " + d.Name + "."
		}
		desc += "\n\nRuns the cadre agent " + d.Name + " on the task and returns its answer."
		s.add(&sdk.Tool{Name: name, Title: d.Name, Description: desc, InputSchema: agentInputSchema, OutputSchema: agentOutputSchema,
			Annotations: agentAnnotations(d.Name)}, d.Name, cfg.Run)
		agents = append(agents, d.Name)
	}
	desc := "Runs cadre's root agent on the task and returns its answer. It delegates to subagents as it sees fit"
	if len(agents) > 0 {
		desc += " (" + strings.Join(agents, ", ") + ")"
	}
	desc += "; to run one agent directly, use its " + AgentToolPrefix + "NAME tool."
	s.add(&sdk.Tool{Name: RunTaskTool, Title: "Run a cadre task", Description: desc, InputSchema: agentInputSchema, OutputSchema: agentOutputSchema,
		Annotations: agentAnnotations("Run a cadre task")}, "", cfg.Run)
	slices.Sort(s.names)
	return s
}

// add registers one tool that runs agent ("" for the root) through run.
func (s *AgentServer) add(t *sdk.Tool, agent string, run RunFunc) {
	s.names = append(s.names, t.Name)
	s.srv.AddTool(t, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		fail := func(msg string) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: msg}}}, nil
		}
		var in agentInput
		if raw := req.Params.Arguments; len(raw) > 0 {
			dec := json.NewDecoder(strings.NewReader(string(raw)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&in); err != nil {
				return fail(fmt.Sprintf("invalid arguments for %s: %v; give {\"task\": \"…\", \"context\": \"…\"}", t.Name, err))
			}
		}
		if strings.TrimSpace(in.Task) == "" {
			return fail(fmt.Sprintf("%s needs a task: say what to do in the task argument", t.Name))
		}
		if run == nil {
			return fail("this server cannot run tasks: it was set up without a way to run them")
		}
		if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
			var (
				mu sync.Mutex
				n  float64
			)
			ctx = context.WithValue(ctx, progressKey{}, Progress(func(msg string) {
				mu.Lock()
				defer mu.Unlock()
				n++
				_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: n, Message: msg})
			}))
		}
		answer, err := run(ctx, agent, in.Task, in.Context)
		if err != nil {
			return fail(err.Error())
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: answer}}, StructuredContent: agentOutput{Answer: answer}}, nil
	})
}

// ToolNames returns the names of the server's tools, sorted.
func (s *AgentServer) ToolNames() []string { return slices.Clone(s.names) }

// Run serves one client over t until the client disconnects or ctx ends.
// A client that disconnects is not an error.
func (s *AgentServer) Run(ctx context.Context, t sdk.Transport) error {
	err := s.srv.Run(ctx, t)
	if errors.Is(err, io.EOF) || errors.Is(err, sdk.ErrConnectionClosed) {
		return nil
	}
	return err
}

// ServeStdio serves one client speaking MCP on in and out (a process's
// stdin and stdout) until in ends or ctx does. Nothing else may write to
// out meanwhile. When in is an io.Closer, it is closed when serving ends;
// out is not.
//
// Each line of in is one message. A line that is not JSON is answered with
// the JSON-RPC parse error (-32700) and serving goes on, as the protocol
// asks; a line longer than MaxLine is answered the same way. A request the
// client cancels (notifications/cancelled) before its response is written
// gets no response.
func (s *AgentServer) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	rc, ok := in.(io.ReadCloser)
	if !ok {
		rc = io.NopCloser(in)
	}
	w := &responseFilter{w: out}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(forwardLines(rc, pw, w)) }()
	err := s.Run(ctx, &sdk.IOTransport{Reader: pr, Writer: nopWriteCloser{w}})
	rc.Close()
	pr.Close()
	return err
}

// MaxLine is the longest message ServeStdio reads.
const MaxLine = 32 << 20

// parseError is the response to a line that is not JSON.
const parseError = `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: the line is not a JSON-RPC message"}}` + "\n"

// forwardLines copies the JSON lines of in to to, and answers the others
// on out with a parse error; it tells out of cancelled requests.
func forwardLines(in io.Reader, to io.Writer, out *responseFilter) error {
	br := bufio.NewReaderSize(in, 64<<10)
	var line []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > MaxLine {
				tooLong, line = true, line[:0]
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if t := bytes.TrimSpace(line); len(t) > 0 || tooLong {
			if !tooLong && json.Valid(t) {
				out.seen(t)
				if _, werr := to.Write(append(t, '\n')); werr != nil {
					return werr
				}
			} else if _, werr := io.WriteString(out, parseError); werr != nil {
				return werr
			}
		}
		line, tooLong = line[:0], false
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// responseFilter writes the server's messages whole, one at a time, and
// drops the responses to requests the client cancelled. It keeps the IDs
// of the client's requests until they are answered, and marks only those:
// a cancellation of a request that is not in flight is ignored, so what it
// holds is bounded by the requests in flight, whatever a client sends.
type responseFilter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
	// inFlight are the client's requests not yet answered, by ID as
	// compact JSON: true once cancelled.
	inFlight map[string]bool
}

// rpcHead is what the filter reads of a message.
type rpcHead struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// maxInFlight is the most requests the filter keeps track of at once;
// past it, a new request's response is written even if it is cancelled.
const maxInFlight = 10_000

// idKey is a request's ID as the filter keys it: the ID as decoded, so
// that the response the server writes (with the ID written its own way:
// "\u0061" as "a", 1.0 as 1) finds it. IDs of other kinds than strings and
// whole numbers, which JSON-RPC does not give, are not kept track of.
func idKey(id json.RawMessage) (string, bool) {
	d := json.NewDecoder(bytes.NewReader(id))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return "", false
	}
	switch v := v.(type) {
	case string:
		return "s" + v, true
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return "n" + strconv.FormatInt(i, 10), true
		}
		if f, err := v.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return "n" + strconv.FormatInt(int64(f), 10), true
		}
	}
	return "", false
}

// seen notes a message from the client: a request is in flight until its
// response is written, and a cancellation marks its request when it is.
func (f *responseFilter) seen(msg []byte) {
	if !bytes.Contains(msg, []byte(`"id"`)) && !bytes.Contains(msg, []byte("notifications/cancelled")) {
		return
	}
	var h rpcHead
	if json.Unmarshal(msg, &h) != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case h.Method == "notifications/cancelled" && len(h.Params.RequestID) > 0:
		id, ok := idKey(h.Params.RequestID)
		if _, held := f.inFlight[id]; ok && held {
			f.inFlight[id] = true
		}
	case len(h.ID) > 0 && h.Method != "":
		id, ok := idKey(h.ID)
		if !ok || len(f.inFlight) >= maxInFlight {
			return
		}
		if f.inFlight == nil {
			f.inFlight = map[string]bool{}
		}
		f.inFlight[id] = false
	}
}

func (f *responseFilter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buf = append(f.buf, p...)
	for {
		i := bytes.IndexByte(f.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		msg := f.buf[:i+1]
		if len(f.inFlight) > 0 {
			var h rpcHead
			if json.Unmarshal(msg, &h) == nil && h.Method == "" && len(h.ID) > 0 {
				id, _ := idKey(h.ID)
				cancelled, ok := f.inFlight[id]
				delete(f.inFlight, id)
				if ok && cancelled {
					f.buf = f.buf[i+1:]
					continue
				}
			}
		}
		if _, err := f.w.Write(msg); err != nil {
			return 0, err
		}
		f.buf = f.buf[i+1:]
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
