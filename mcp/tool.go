package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cadre-ai/cadre"
)

// A Tool is one tool of an MCP server, offered as a cadre tool named
// mcp__SERVER__TOOL. It is safe for concurrent use.
type Tool struct {
	spec     cadre.ToolSpec
	server   *server
	remote   string
	readOnly bool
}

var (
	_ cadre.Tool      = (*Tool)(nil)
	_ cadre.MediaTool = (*Tool)(nil)
	_ cadre.Mutator   = (*Tool)(nil)
)

// errNoAnswer is why a call was given up at Config.CallTimeout.
var errNoAnswer = errors.New("the server did not answer in time")

// emptySchema is the parameters of a tool whose server gave none.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// Limits on what a server's list of tools may hold. Each tool's name,
// description and schema go into every request of every agent that has
// it, so a server offering more would make the agents' requests fail or
// cost for nothing, and one reading them without limit could fill the
// memory of cadre (a list is read page after page, each up to 16 MB).
const (
	// MaxTools is the most tools a server may offer: a server offering
	// more is not used.
	MaxTools = 1000
	// MaxToolDescription is the longest description of a tool that is
	// kept; a longer one is cut.
	MaxToolDescription = 8 << 10
	// MaxToolSchema is the largest input schema of a tool, as JSON: a
	// server with a larger one is not used.
	MaxToolSchema = 64 << 10
	// maxToolName is the longest tool name model APIs take (OpenAI's
	// limit): a server with a longer mcp__SERVER__TOOL is not used.
	maxToolName = 64
)

// newTool makes the cadre tool of a server's tool, with what the server
// says of it redacted of cadre's secrets; it refuses a tool whose name
// holds one, or whose schema is too large to offer.
func newTool(s *server, st *sdk.Tool) (*Tool, error) {
	red := s.client.cfg.Redactor
	if red.Values(st.Name) != st.Name {
		return nil, fmt.Errorf("the name of its tool %q holds a secret cadre passes the server (a credential of its configuration)", red.Values(st.Name))
	}
	params := emptySchema
	if st.InputSchema != nil {
		if b, err := json.Marshal(st.InputSchema); err == nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
			params = b
		}
	}
	if len(params) > MaxToolSchema {
		return nil, fmt.Errorf("the input schema of its tool %q has %d bytes, more than the %d cadre offers a model", st.Name, len(params), MaxToolSchema)
	}
	if r := red.Values(string(params)); r != string(params) {
		if !json.Valid([]byte(r)) {
			return nil, fmt.Errorf("the input schema of its tool %q holds a secret cadre passes the server (a credential of its configuration)", st.Name)
		}
		params = json.RawMessage(r)
	}
	desc := strings.TrimSpace(st.Description)
	if desc == "" {
		desc = st.Title
	}
	if desc == "" && st.Annotations != nil {
		desc = st.Annotations.Title
	}
	if desc == "" {
		desc = fmt.Sprintf("The tool %s of the MCP server %s.", st.Name, s.name)
	}
	// Redacted before it is cut: a cut through a secret would leave most
	// of it for the redactor not to know.
	desc = red.Values(desc)
	if len(desc) > MaxToolDescription {
		cut := MaxToolDescription
		for cut > 0 && !utf8.RuneStart(desc[cut]) {
			cut--
		}
		desc = desc[:cut] + "…"
	}
	name := toolName(s.name, st.Name)
	if len(name) > maxToolName {
		// Shortened, the name would escape the rules of agent files,
		// which name tools by their full names (mcp__x__*_page, a deny of
		// the whole name): the server is not used rather than have a
		// tool it was told to take away callable.
		return nil, fmt.Errorf("its tool %q becomes %s, a name of %d characters, more than the %d model APIs take (a shorter name for the server's entry in the config may bring it within)", st.Name, name, len(name), maxToolName)
	}
	return &Tool{
		spec:     cadre.ToolSpec{Name: name, Description: desc, Parameters: params},
		server:   s,
		remote:   st.Name,
		readOnly: st.Annotations != nil && st.Annotations.ReadOnlyHint,
	}, nil
}

// Spec implements cadre.Tool: the name mcp__SERVER__TOOL, the server's
// description and input schema.
func (t *Tool) Spec() cadre.ToolSpec { return t.spec }

// Mutates implements cadre.Mutator: true unless the server annotated the
// tool with readOnlyHint: true.
func (t *Tool) Mutates() bool { return !t.readOnly }

// Server returns the configured name of the tool's server.
func (t *Tool) Server() string { return t.server.name }

// RemoteName returns the tool's name on its server.
func (t *Tool) RemoteName() string { return t.remote }

// Call implements cadre.Tool: it calls the tool on its server with args
// and returns the text of the result, in which images and sounds are
// described in brackets. A result the server marks as an error is a
// *ToolError; a server that has stopped gives a *ServerError wrapping
// ErrServerStopped.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	out, err := t.CallMedia(ctx, args)
	return out.Text, err
}

// CallMedia implements cadre.MediaTool: Call, with the images and sounds
// of the result besides the text that describes them. It passes on PNG,
// JPEG, GIF and WebP images and WAV and MP3 sounds, by what their bytes
// are, within Config.MaxMediaBytes each and Config.MaxResultMediaBytes in
// all, and 100 of them at most; the text says why any other was not passed
// on.
func (t *Tool) CallMedia(ctx context.Context, args json.RawMessage) (cadre.ToolOutput, error) {
	s := t.server
	if !s.client.beginCall() {
		return cadre.ToolOutput{}, &ServerError{Server: s.name, Op: "call " + t.remote, Err: ErrClosed}
	}
	defer s.client.calls.Done()
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage("{}")
	}
	// Close aborts the calls in flight, and a call gets no more than
	// CallTimeout: a server that never answers must not hold the agent.
	limit := s.client.cfg.CallTimeout
	if s.cfg.CallTimeout > 0 {
		limit = s.cfg.CallTimeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, limit, errNoAnswer)
	defer cancel()
	stop := context.AfterFunc(s.client.ctx, cancel)
	defer stop()

	res, err := s.session.CallTool(ctx, &sdk.CallToolParams{Name: t.remote, Arguments: args})
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, errNoAnswer) {
			return cadre.ToolOutput{}, &ServerError{Server: s.name, Op: "call " + t.remote,
				Err:  fmt.Errorf("no answer within %s", limit),
				Hint: "the call was given up; whether the tool did anything is not known: check before calling it again"}
		} else if cause != nil && !s.client.isClosed() {
			return cadre.ToolOutput{}, fmt.Errorf("call %s: %w", t.spec.Name, cause)
		}
		return cadre.ToolOutput{}, s.callFailure(t.remote, err)
	}
	s.client.logger.Debug("mcp tool called", "server", s.name, "tool", t.remote, "error", res.IsError)
	cfg := s.client.cfg
	budget := &mediaBudget{perItem: cfg.MaxMediaBytes, total: cfg.MaxResultMediaBytes}
	// What the server says reaches the model: no secret of cadre's may be
	// in it, whatever the server read from its environment or config.
	text := clip(cfg.Redactor.Values(resultText(res, budget)), cfg.MaxResultBytes)
	if res.IsError {
		return cadre.ToolOutput{}, &ToolError{Tool: t.spec.Name, Message: text}
	}
	return cadre.ToolOutput{Text: text, Media: budget.media}, nil
}

// Summary implements tool.Summarizer: the tool's name, its server and the
// arguments, for the person asked to approve the call.
func (t *Tool) Summary(args json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, args) != nil {
		buf.Reset()
		buf.Write(args)
	}
	a := buf.String()
	if len(a) > 300 {
		a = strings.ToValidUTF8(a[:300], "") + "…"
	}
	return fmt.Sprintf("%s (MCP server %s) %s", oneLine(t.remote), t.server.name, a)
}

// oneLine is a server's name for something as one line of text, for a
// person to read: its control characters (line ends, escapes) become
// spaces, so that it cannot add lines to what they are shown.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// resultText joins the content of a result: text as it is, other kinds
// described in brackets. Images and sounds go to media, which says which
// are passed on. A result with structured content only gives that content
// as JSON.
func resultText(res *sdk.CallToolResult, media *mediaBudget) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.ImageContent:
			parts = append(parts, media.add(cadre.MediaImage, c.MIMEType, c.Data))
		case *sdk.AudioContent:
			parts = append(parts, media.add(cadre.MediaAudio, c.MIMEType, c.Data))
		default:
			parts = append(parts, contentText(c))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

// clip cuts text to at most max bytes on a line or rune boundary, saying
// how much was left out.
func clip(text string, max int) string {
	if len(text) <= max {
		return text
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	if nl := strings.LastIndexByte(text[:cut], '\n'); nl > cut/2 {
		cut = nl
	}
	return fmt.Sprintf("%s\n[… the result was cut: it has %d bytes, of which the first %d are shown]", text[:cut], len(text), cut)
}

// contentText renders one content item for a model.
func contentText(c sdk.Content) string {
	switch c := c.(type) {
	case *sdk.TextContent:
		return c.Text
	case *sdk.ResourceLink:
		s := "[resource link: " + c.URI
		if c.Name != "" && c.Name != c.URI {
			s += " (" + c.Name + ")"
		}
		if c.MIMEType != "" {
			s += ", " + c.MIMEType
		}
		if c.Description != "" {
			s += ": " + c.Description
		}
		return s + "]"
	case *sdk.EmbeddedResource:
		r := c.Resource
		if r == nil {
			return "[resource]"
		}
		if r.Text != "" {
			return fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text)
		}
		return fmt.Sprintf("[resource %s: %s, %s]", r.URI, orUnknown(r.MIMEType), cadre.ByteSize(len(r.Blob)))
	case nil:
		return ""
	}
	return fmt.Sprintf("[content of kind %T]", c)
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}
