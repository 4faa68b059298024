package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

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
		s.add(&sdk.Tool{Name: name, Title: d.Name, Description: desc, InputSchema: agentInputSchema,
			Annotations: &sdk.ToolAnnotations{Title: d.Name}}, d.Name, cfg.Run)
		agents = append(agents, d.Name)
	}
	desc := "Runs cadre's root agent on the task and returns its answer. It delegates to subagents as it sees fit"
	if len(agents) > 0 {
		desc += " (" + strings.Join(agents, ", ") + ")"
	}
	desc += "; to run one agent directly, use its " + AgentToolPrefix + "NAME tool."
	s.add(&sdk.Tool{Name: RunTaskTool, Title: "Run a cadre task", Description: desc, InputSchema: agentInputSchema,
		Annotations: &sdk.ToolAnnotations{Title: "Run a cadre task"}}, "", cfg.Run)
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
		answer, err := run(ctx, agent, in.Task, in.Context)
		if err != nil {
			return fail(err.Error())
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: answer}}}, nil
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
func (s *AgentServer) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	rc, ok := in.(io.ReadCloser)
	if !ok {
		rc = io.NopCloser(in)
	}
	return s.Run(ctx, &sdk.IOTransport{Reader: rc, Writer: nopWriteCloser{out}})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
