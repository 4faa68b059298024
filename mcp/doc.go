// Package mcp connects cadre to the Model Context Protocol, both ways.
//
// As a client, a Client starts or reaches the configured MCP servers — a
// program speaking MCP on its stdin and stdout, or a streamable HTTP
// endpoint — lists their tools and offers each as a cadre.Tool named
// mcp__SERVER__TOOL, the names Claude Code uses and agent files refer to.
// Calling such a tool calls the server's tool. Its text content becomes the
// result, cut at Config.MaxResultBytes; other content (images, audio,
// resources) is described in a few words; a result the server marks as an
// error becomes a *ToolError. Tools are cadre.MediaTools: images and
// sounds also travel as they are, for the models that take them, within
// Config.MaxMediaBytes each and Config.MaxResultMediaBytes and 100 items
// per result. A call gets Config.CallTimeout (or its server's
// ServerConfig.CallTimeout), 10 minutes by default, to answer.
//
// What a server says of its tools goes into every request of the agents
// that have them, and is held to limits: a server offering more than
// MaxTools tools, one whose input schema is past MaxToolSchema, one whose
// name mcp__SERVER__TOOL is longer than the 64 characters model APIs take,
// or one whose tool takes the name of another server's, is not used (its
// ServerError says why); a description is cut at MaxToolDescription.
// Descriptions and schemas are cleared of Config.Redactor's secrets, and a
// server whose tool's name holds one is not used.
//
// As a server, an AgentServer offers cadre's agents to other MCP clients
// (Claude Code, editors): one tool per user-facing agent definition and a
// generic run_task, each running a cadre run through a function the caller
// provides.
//
// # Approval
//
// An MCP tool is a cadre.Mutator that mutates unless its server annotates
// it with readOnlyHint: true, so calls of other tools go through the
// approval policy like writes and commands do. The annotation is the
// server's claim; configure only servers you trust.
//
// # Environment and secrets
//
// A stdio server does not inherit cadre's environment, which holds API
// keys: it gets the few variables programs need (DefaultEnv: PATH, HOME,
// USER, the locale…), the variables its ServerConfig.EnvPassthrough names,
// and its ServerConfig.Env. Config.Redactor hides secrets in what the
// servers' tools return and in the errors of servers (their stderr
// included).
//
// # Lifecycle and goroutines
//
// NewClient starts nothing. Connect starts every server at once and waits
// for each to answer or fail; a server that fails does not stop the others.
// A stdio server is one process (on Unix, in a process group of its own, so
// a Ctrl+C meant for cadre does not reach it), with one goroutine waiting
// for it to exit. Close stops every server: it cancels the calls in flight,
// closes each process's stdin, waits for it to exit, then sends SIGTERM and
// finally SIGKILL to its group, and returns only when every process has
// been reaped and every goroutine of the Client has ended. The tools of a
// server are those it listed when it connected; later changes to its list
// are not followed.
//
// # Concurrency
//
// A Client and its tools are safe for concurrent use once Connect has
// returned: the tool calls of one reply run at the same time over the
// server's one session. An AgentServer runs the calls it receives
// concurrently, each through the caller's function.
//
// # Errors
//
// A server that cannot be started, connected or listed gives a *ServerError
// naming the server and saying what to check: a command not found, the
// exit status and last lines of stderr of a server that stopped, the HTTP
// status of an endpoint that refused. Connect joins one such error per
// failed server. A server that stops during a run makes each later call of
// its tools fail with a *ServerError wrapping ErrServerStopped, a text the
// model can read and act on. Calls after Close fail with ErrClosed.
package mcp
