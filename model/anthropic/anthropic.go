// Package anthropic is cadre's provider for the Anthropic Messages API,
// through github.com/anthropics/anthropic-sdk-go.
//
// Each call streams: text_delta events are yielded as they arrive,
// tool_use blocks are assembled from their input_json_delta pieces, the
// usage comes from message_start (input, cache reads and writes counted as
// input) and message_delta (output, and input when it is given there); a
// compatible server that reports no usage gets an estimate
// ([model.EstimateUsage]). A reply is complete at message_stop; a stream
// that ends before, or sends an event that is not JSON, is an error wrapping
// [cadre.ErrIncompleteStream]. A reply cut by stop_reason "max_tokens" is
// passed on with that StopReason, unless it holds neither text nor a tool
// call: that is an error wrapping [model.ErrMaxTokens].
//
// An error event inside the stream is a *[model.ServerError] with the
// status its type stands for (529 for overloaded_error, 429 for
// rate_limit_error…), retried as that status would be while no text was
// yielded, and an error wrapping [cadre.ErrIncompleteStream] after.
//
// Requests: Request.System becomes the system prompt; tool messages become
// tool_result blocks (is_error kept) holding their text and their PNG,
// JPEG, GIF and WebP images as base64 image blocks, unless Config.Input
// says the model takes no images (sounds never: the API takes none) or
// they are the oldest past Config.MediaLimit; the text then says what was
// left out and why. Consecutive tool results and
// user messages are merged into one user message, as the API requires; an
// assistant tool call whose arguments are not a JSON object is sent with an
// empty input, since the API accepts nothing else there. No tools in the
// request means no tools are sent.
//
// Failures are retried by cadre's policy ([model.Stream]); the SDK's own
// retries are off. A server that sends nothing, not even a ping, for
// Config.StallTimeout is abandoned ([model.ErrStalled]). A Provider reads no
// environment variables or configuration files: the caller passes the base
// URL and key.
//
// Errors never show the API key or the password of the base URL, even
// when the server quotes them back.
//
// A Provider is safe for concurrent use.
package anthropic

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model"
	"github.com/cadre-ai/cadre/redact"
)

// Defaults of Config.
const (
	DefaultBaseURL   = "https://api.anthropic.com"
	DefaultMaxTokens = 8192
)

// Config configures a Provider. Only Model is required.
type Config struct {
	// BaseURL of the API, without the "/v1"; empty means DefaultBaseURL.
	BaseURL string
	// APIKey is sent as x-api-key.
	APIKey string
	// Model is the model name, such as "claude-sonnet-4-5".
	Model string
	// MaxTokens bounds each reply when the request does not; zero means
	// DefaultMaxTokens.
	MaxTokens int
	// HTTPClient makes the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Retry is the retry policy; its zero value is the default.
	Retry model.RetryPolicy
	// KeyEnv is the environment variable the key came from, named in hints.
	// Empty means ANTHROPIC_API_KEY.
	KeyEnv string
	// StallTimeout abandons a try when the server sends nothing for this
	// long, before the response or within the stream (Anthropic's pings
	// count). Zero means model.DefaultStallTimeout; a negative value means
	// no limit.
	StallTimeout time.Duration
	// Logger, when not nil, hears about retries.
	Logger *slog.Logger
	// Input are the kinds of media the model takes besides text. Nil
	// means images, which every current Claude model takes; an empty
	// slice means none. The API takes no sounds, whatever Input says.
	Input []cadre.MediaKind
	// MediaLimit bounds the images one request sends; its zero value is
	// model.DefaultMaxRequestMediaBytes and
	// model.DefaultMaxRequestMediaItems.
	MediaLimit model.MediaLimit
}

// Provider is a [cadre.Model] speaking the Anthropic Messages API.
type Provider struct {
	cfg Config
	// redactor hides the key and the base URL's password in errors;
	// where is the base URL as errors show it.
	redactor *redact.Redactor
	where    string
	svc      anthropic.MessageService
}

var _ cadre.Model = (*Provider)(nil)

const providerName = "anthropic"

// New returns a Provider for cfg. It makes no request.
func New(cfg Config) *Provider {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	cfg.BaseURL = strings.TrimSuffix(strings.TrimRight(cfg.BaseURL, "/"), "/v1")
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	if cfg.KeyEnv == "" {
		cfg.KeyEnv = "ANTHROPIC_API_KEY"
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	// The service is built from explicit options only: anthropic.NewClient
	// would read ANTHROPIC_* variables and profile files.
	opts := []option.RequestOption{
		option.WithEnvironmentProduction(),
		option.WithBaseURL(cfg.BaseURL + "/"),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	r := redact.New(append(redact.URLSecrets(cfg.BaseURL), cfg.APIKey)...)
	return &Provider{cfg: cfg, svc: anthropic.NewMessageService(opts...), redactor: r, where: r.String(cfg.BaseURL)}
}

// Stream implements [cadre.Model].
func (p *Provider) Stream(ctx context.Context, req *cadre.Request) iter.Seq2[*cadre.Chunk, error] {
	params, err := p.params(req)
	if err != nil {
		return func(yield func(*cadre.Chunk, error) bool) {
			yield(nil, &cadre.ModelError{Provider: providerName, Err: err, Hint: "fix the request: this is a bug in the caller"})
		}
	}
	return model.Stream(ctx, model.Call{
		Provider:     providerName,
		Policy:       p.cfg.Retry,
		StallTimeout: p.cfg.StallTimeout,
		Logger:       p.cfg.Logger,
		Redactor:     p.redactor,
		Hint:         model.RefusedMedia(p.hint, mediaSent(params), p.cfg.Model),
		Attempt: func(ctx context.Context, t *model.Try) (*cadre.Response, error) {
			return p.attempt(ctx, req, params, t)
		},
	})
}

// block is one content block of the reply being streamed.
type block struct {
	kind     string // "text", "tool_use", or another type, ignored
	text     strings.Builder
	id, name string
	input    strings.Builder
	start    any // the input given in content_block_start
}

func (p *Provider) attempt(ctx context.Context, req *cadre.Request, params anthropic.MessageNewParams, t *model.Try) (*cadre.Response, error) {
	stream := p.svc.NewStreaming(ctx, params, option.WithMiddleware(t.Middleware))
	defer stream.Close()
	var (
		blocks  = map[int64]*block{}
		usage   cadre.Usage
		stop    string
		started bool
		done    bool
		// answered is the model the server says answered.
		answered string
	)
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "message_start":
			started = true
			answered = string(ev.Message.Model)
			u := ev.Message.Usage
			usage.InputTokens = u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
			usage.CachedInputTokens = u.CacheReadInputTokens
			usage.OutputTokens = u.OutputTokens
		case "content_block_start":
			cb := ev.ContentBlock
			b := &block{kind: cb.Type, id: cb.ID, name: cb.Name, start: cb.Input}
			b.text.WriteString(cb.Text)
			blocks[ev.Index] = b
			if cb.Type == "text" && cb.Text != "" && !t.Emit(cb.Text) {
				return nil, context.Canceled
			}
		case "content_block_delta":
			b := blocks[ev.Index]
			if b == nil {
				return nil, fmt.Errorf("content_block_delta for block %d, which never started: %w", ev.Index, cadre.ErrIncompleteStream)
			}
			switch ev.Delta.Type {
			case "text_delta":
				b.text.WriteString(ev.Delta.Text)
				if !t.Emit(ev.Delta.Text) {
					return nil, context.Canceled
				}
			case "input_json_delta":
				b.input.WriteString(ev.Delta.PartialJSON)
			}
		case "message_delta":
			if ev.Delta.StopReason != "" {
				stop = string(ev.Delta.StopReason)
			}
			u := ev.Usage
			if in := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens; in > 0 {
				usage.InputTokens = in
				usage.CachedInputTokens = u.CacheReadInputTokens
			}
			if u.OutputTokens > 0 {
				usage.OutputTokens = u.OutputTokens
			}
		case "message_stop":
			done = true
		}
	}
	if err := stream.Err(); err != nil {
		return nil, convertError(err)
	}
	if !started || !done {
		return nil, fmt.Errorf("stream ended before message_stop: %w", cadre.ErrIncompleteStream)
	}
	idx := make([]int64, 0, len(blocks))
	for i := range blocks {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	msg := cadre.Message{Role: cadre.RoleAssistant}
	var text strings.Builder
	for _, i := range idx {
		b := blocks[i]
		switch b.kind {
		case "text":
			text.WriteString(b.text.String())
		case "tool_use":
			if b.name == "" {
				// No agent could answer it: the reply is asked for again.
				return nil, fmt.Errorf("tool_use block %d of the reply (id %q) has no name: %w", i+1, b.id, model.ErrInvalidReply)
			}
			args := b.input.String()
			if strings.TrimSpace(args) == "" {
				args = "{}"
				if b.start != nil {
					if raw, err := json.Marshal(b.start); err == nil && string(raw) != "null" {
						args = string(raw)
					}
				}
			}
			msg.ToolCalls = append(msg.ToolCalls, cadre.ToolCall{ID: b.id, Name: b.name, Arguments: args})
		}
	}
	msg.Content = text.String()
	if stop == "max_tokens" && msg.Content == "" && len(msg.ToolCalls) == 0 {
		return nil, fmt.Errorf("stop_reason %q with no text and no tool call: %w", stop, model.ErrMaxTokens)
	}
	if usage == (cadre.Usage{}) {
		// A compatible server that counts nothing: estimate, so that token
		// budgets still see the call.
		usage = model.EstimateUsage(req, &msg)
	}
	return &cadre.Response{Message: msg, Usage: usage, StopReason: stop, Model: answered}, nil
}

// params maps a cadre request to a Messages API request.
func (p *Provider) params(req *cadre.Request) (anthropic.MessageNewParams, error) {
	params := anthropic.MessageNewParams{Model: p.cfg.Model, MaxTokens: int64(p.cfg.MaxTokens)}
	if req == nil {
		return params, errors.New("nil request")
	}
	if req.MaxTokens > 0 {
		params.MaxTokens = int64(req.MaxTokens)
	}
	if req.Temperature != nil {
		params.Temperature = anthropic.Float(*req.Temperature)
	}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	msgs, err := p.messages(req.Messages)
	if err != nil {
		return params, err
	}
	params.Messages = msgs
	for _, t := range req.Tools {
		schema, err := inputSchema(t.Parameters)
		if err != nil {
			return params, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		tp := anthropic.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tp})
	}
	return params, nil
}

// messages maps the conversation, merging consecutive messages that go to
// the API with the same role: tool results and user text are all "user".
func (p *Provider) messages(in []cadre.Message) ([]anthropic.MessageParam, error) {
	var out []anthropic.MessageParam
	add := func(role anthropic.MessageParamRole, blocks ...anthropic.ContentBlockParamUnion) {
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, anthropic.MessageParam{Role: role, Content: blocks})
	}
	held, heldWhy := p.cfg.MediaLimit.Held(in, func(md cadre.Media) bool { return p.refuse(md) == "" })
	for i, m := range in {
		switch m.Role {
		case cadre.RoleUser:
			add(anthropic.MessageParamRoleUser, anthropic.NewTextBlock(nonEmpty(m.Content)))
		case cadre.RoleTool:
			add(anthropic.MessageParamRoleUser, p.toolResult(m, func(j int) bool { return held[[2]int{i, j}] }, heldWhy))
		case cadre.RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.Content != "" || len(m.ToolCalls) == 0 {
				blocks = append(blocks, anthropic.NewTextBlock(nonEmpty(m.Content)))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, toolInput(tc.Arguments), tc.Name))
			}
			add(anthropic.MessageParamRoleAssistant, blocks...)
		default:
			return nil, fmt.Errorf("message %d has role %q: want user, assistant or tool", i, m.Role)
		}
	}
	return out, nil
}

// mediaSent counts the images params sends.
func mediaSent(params anthropic.MessageNewParams) int {
	n := 0
	for _, m := range params.Messages {
		for _, b := range m.Content {
			if r := b.OfToolResult; r != nil {
				for _, c := range r.Content {
					if c.OfImage != nil {
						n++
					}
				}
			}
		}
	}
	return n
}

// toolResult is a tool message as a tool_result block: its text, then its
// images. What the model cannot take, and the images held for the
// request's media limit (held, heldWhy), are left out, and the text says
// so.
func (p *Provider) toolResult(m cadre.Message, held func(j int) bool, heldWhy string) anthropic.ContentBlockParamUnion {
	text := nonEmpty(m.Content)
	var images []anthropic.ToolResultBlockParamContentUnion
	for j, md := range m.Media {
		if why := p.refuse(md); why != "" {
			text = cadre.LeaveOut(text, md, why)
			continue
		}
		if held(j) {
			text = cadre.LeaveOut(text, md, heldWhy)
			continue
		}
		images = append(images, anthropic.ToolResultBlockParamContentUnion{OfImage: &anthropic.ImageBlockParam{
			Source: anthropic.ImageBlockParamSourceUnion{OfBase64: &anthropic.Base64ImageSourceParam{
				Data: base64.StdEncoding.EncodeToString(md.Data), MediaType: anthropic.Base64ImageSourceMediaType(md.MIMEType),
			}},
		}})
	}
	block := anthropic.ToolResultBlockParam{
		ToolUseID: m.ToolCallID,
		Content:   append([]anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: text}}}, images...),
		IsError:   anthropic.Bool(m.IsError),
	}
	return anthropic.ContentBlockParamUnion{OfToolResult: &block}
}

// refuse says why md cannot be sent to the model, or "" when it can.
func (p *Provider) refuse(md cadre.Media) string {
	switch {
	case md.Kind == cadre.MediaAudio:
		return "the Anthropic API does not take sounds"
	case md.Kind != cadre.MediaImage:
		return fmt.Sprintf("the Anthropic API does not take %s", md.Kind)
	case p.cfg.Input != nil && !slices.Contains(p.cfg.Input, cadre.MediaImage):
		return "this model does not take images"
	}
	switch md.MIMEType {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return ""
	}
	return fmt.Sprintf("the Anthropic API takes PNG, JPEG, GIF and WebP images, not %s", md.MIMEType)
}

// nonEmpty stands in for empty text, which the API refuses.
func nonEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(empty)"
	}
	return s
}

// toolInput is a tool call's arguments as the API takes them: a JSON
// object, or an empty one when the model wrote something else.
func toolInput(args string) json.RawMessage {
	raw := json.RawMessage(strings.TrimSpace(args))
	var obj map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &obj) != nil || obj == nil {
		return json.RawMessage("{}")
	}
	return raw
}

// inputSchema splits a tool's JSON Schema into the SDK's fields.
func inputSchema(raw json.RawMessage) (anthropic.ToolInputSchemaParam, error) {
	var s anthropic.ToolInputSchemaParam
	if len(raw) == 0 || string(raw) == "null" {
		s.Properties = map[string]any{}
		return s, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return s, fmt.Errorf("parameters are not a JSON Schema object: %w", err)
	}
	extra := map[string]any{}
	for k, v := range m {
		switch k {
		case "type":
		case "properties":
			s.Properties = v
		case "required":
			if err := json.Unmarshal(v, &s.Required); err != nil {
				return s, fmt.Errorf("parameters: required is not a list of names: %w", err)
			}
		default:
			extra[k] = v
		}
	}
	if s.Properties == nil {
		s.Properties = map[string]any{}
	}
	if len(extra) > 0 {
		s.ExtraFields = extra
	}
	return s, nil
}

// convertError turns the SDK's errors into *model.ServerError, which the
// retry policy reads, and an event that is not JSON into an error wrapping
// model.ErrInvalidReply; other errors pass unchanged. It never calls the SDK error's Error
// method, which needs the request and response set.
func convertError(err error) error {
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		var syntax *json.SyntaxError
		var shape *json.UnmarshalTypeError
		if errors.As(err, &syntax) || errors.As(err, &shape) {
			return fmt.Errorf("the server sent an event that is not valid JSON (%v): %w", err, model.ErrInvalidReply)
		}
		return err
	}
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	raw := apiErr.RawJSON()
	_ = json.Unmarshal([]byte(raw), &body)
	se := &model.ServerError{Status: apiErr.StatusCode, Type: body.Error.Type, Message: body.Error.Message}
	if se.Message == "" {
		se.Message = strings.TrimSpace(raw)
		if len(se.Message) > 300 {
			se.Message = se.Message[:300] + "…"
		}
	}
	if apiErr.StatusCode >= 200 && apiErr.StatusCode < 300 {
		// An error event inside a stream: its type says what it stands for.
		se.Status = eventStatus(se.Type)
		return se
	}
	se.Header = http.Header{}
	if apiErr.Response != nil && apiErr.Response.Header != nil {
		se.Header = apiErr.Response.Header
	}
	return se
}

// eventStatus maps an error event's type to the HTTP status it stands for.
func eventStatus(typ string) int {
	switch typ {
	case "overloaded_error":
		return 529
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "api_error":
		return http.StatusInternalServerError
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	}
	return 0
}

// hint says what to check after a failure; "" leaves it to model.Stream.
func (p *Provider) hint(err error, status int) string {
	switch status {
	case http.StatusUnauthorized:
		if p.cfg.APIKey == "" {
			return fmt.Sprintf("no API key was sent: set %s", p.cfg.KeyEnv)
		}
		return fmt.Sprintf("the API key was refused: check %s", p.cfg.KeyEnv)
	case http.StatusForbidden:
		if p.cfg.APIKey == "" {
			return fmt.Sprintf("no API key was sent: set %s", p.cfg.KeyEnv)
		}
		return fmt.Sprintf("the API key may not use model %q: check %s and the model name", p.cfg.Model, p.cfg.KeyEnv)
	case http.StatusNotFound:
		return fmt.Sprintf("check the model name %q and the base URL %s", p.cfg.Model, p.where)
	case 529:
		return "Anthropic's servers are overloaded: try again in a few minutes"
	}
	if model.Unreachable(err) {
		return fmt.Sprintf("could not reach %s: check the base URL and the network", p.where)
	}
	return ""
}
