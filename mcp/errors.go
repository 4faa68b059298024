package mcp

import (
	"errors"
	"fmt"
	"strings"
)

// ErrServerStopped is wrapped by the errors of calls to a server that has
// stopped (its process exited, or its connection broke) during a run.
var ErrServerStopped = errors.New("mcp: the server has stopped")

// ErrClosed is returned by calls made after the Client was closed.
var ErrClosed = errors.New("mcp: the client is closed")

// A ServerError says why an MCP server could not be used.
type ServerError struct {
	// Server is the server's configured name.
	Server string
	// Op is what was being done: "start", "connect", "list tools",
	// "call TOOL".
	Op string
	// Err is the cause.
	Err error
	// Stderr is the end of what a stdio server wrote on its stderr, if
	// anything.
	Stderr string
	// Hint says what to check or do about it.
	Hint string
}

func (e *ServerError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mcp server %q: %s: %v", e.Server, e.Op, e.Err)
	if e.Stderr != "" {
		fmt.Fprintf(&b, "; the end of its stderr: %q", e.Stderr)
	}
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

func (e *ServerError) Unwrap() error { return e.Err }

// A ToolError is a result that an MCP server marked as an error (isError).
// Its message is the result's content, for the model to read.
type ToolError struct {
	// Tool is the cadre name of the tool, mcp__SERVER__TOOL.
	Tool string
	// Message is the text of the result.
	Message string
}

func (e *ToolError) Error() string {
	if strings.TrimSpace(e.Message) == "" {
		return e.Tool + " failed without saying why"
	}
	return e.Message
}
