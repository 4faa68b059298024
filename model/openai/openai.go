// Package openai is cadre's provider for the OpenAI chat completions API and
// every server that speaks it: OpenAI itself, Ollama, vLLM, llama.cpp, LM
// Studio and the like. It streams through github.com/openai/openai-go/v3.
//
// Each call streams with stream_options.include_usage set: text is yielded
// as it arrives; tool calls, whose arguments come in pieces, are assembled by
// their index, in the order they first appeared. Servers that send no index,
// or number every call 0, are followed too: a piece with another id, or with
// a new name and no id, starts a new call. A call that never gets an id gets
// "call_N", N its position. The usage is read from whichever chunk carries it, usually
// the last; a server that reports none, or only zeros, gets an estimate
// ([model.EstimateUsage]) instead of an error.
//
// A reply is complete when a finish_reason arrived; a stream that ends
// before is an error wrapping [cadre.ErrIncompleteStream], and so is an
// event that is not JSON. A reply cut by finish_reason "length" is passed on
// with that StopReason, unless it holds neither text nor a tool call: that
// is an error wrapping [model.ErrMaxTokens]. An error event inside the
// stream ({"error": …}) is a *[model.ServerError], retried while no text was
// yielded. Tool-call arguments are passed on as the model wrote them, even
// when they are not valid JSON (the agent loop reports that to the model);
// empty arguments become "{}".
//
// A tool message takes text only: the images and sounds of the tool
// messages answering one reply follow the last of them in one user
// message, as image_url parts (data URLs) and input_audio parts (WAV and
// MP3), each result's introduced by a text part naming its call. What
// the model cannot take (see Config.Input), and the oldest items past
// Config.MediaLimit, are left out, and the tool message's text says so
// and why.
//
// Failures are retried by cadre's policy ([model.Stream]); the SDK's own
// retries are off. A server that sends nothing for Config.StallTimeout is
// abandoned ([model.ErrStalled]). A Provider reads no environment
// variables: the caller passes the base URL and key. An empty key sends no
// Authorization header, which is what local servers such as Ollama want.
//
// Errors never show the API key or the password of the base URL, even
// when the server quotes them back.
//
// A Provider is safe for concurrent use.
package openai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model"
	"github.com/cadre-ai/cadre/redact"
)

// Default base URLs.
const (
	DefaultBaseURL       = "https://api.openai.com/v1"
	DefaultOllamaBaseURL = "http://127.0.0.1:11434/v1"
)

// Config configures a Provider. Only Model is required.
type Config struct {
	// BaseURL of the API, up to and including the version ("…/v1").
	// Empty means DefaultBaseURL, or DefaultOllamaBaseURL when Provider is
	// "ollama".
	BaseURL string
	// APIKey is sent as a bearer token; empty sends none.
	APIKey string
	// Model is the model name the server knows, such as "gpt-4o".
	Model string
	// HTTPClient makes the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Retry is the retry policy; its zero value is the default.
	Retry model.RetryPolicy
	// Provider names the provider in errors and chooses their hints:
	// "openai" (the default) or "ollama".
	Provider string
	// KeyEnv is the environment variable the key came from, named in hints.
	// Empty means OPENAI_API_KEY, or OLLAMA_API_KEY for Ollama.
	KeyEnv string
	// StallTimeout abandons a try when the server sends nothing for this
	// long, before the response or within the stream. Zero means
	// model.DefaultStallTimeout; a negative value means no limit.
	StallTimeout time.Duration
	// Logger, when not nil, hears about retries.
	Logger *slog.Logger
	// Input are the kinds of media the model takes besides text. Nil
	// means images when BaseURL is OpenAI's own API (api.openai.com),
	// whose current models take them, and none for other servers, whose
	// models may not; an empty slice means none.
	Input []cadre.MediaKind
	// MediaLimit bounds the images and sounds one request sends; its
	// zero value is model.DefaultMaxRequestMediaBytes and
	// model.DefaultMaxRequestMediaItems.
	MediaLimit model.MediaLimit
}

// Provider is a [cadre.Model] speaking the chat completions API.
type Provider struct {
	cfg Config
	// redactor hides the key and the base URL's password in errors;
	// where is the base URL as errors show it.
	redactor *redact.Redactor
	where    string
	svc      openai.ChatCompletionService
}

var _ cadre.Model = (*Provider)(nil)

// New returns a Provider for cfg. It makes no request.
func New(cfg Config) *Provider {
	if cfg.Provider == "" {
		cfg.Provider = "openai"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
		if cfg.Provider == "ollama" {
			cfg.BaseURL = DefaultOllamaBaseURL
		}
	}
	if cfg.KeyEnv == "" {
		cfg.KeyEnv = "OPENAI_API_KEY"
		if cfg.Provider == "ollama" {
			cfg.KeyEnv = "OLLAMA_API_KEY"
		}
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	// The service is built from explicit options only: openai.NewClient
	// would read OPENAI_* variables from the environment.
	opts := []option.RequestOption{
		option.WithEnvironmentProduction(),
		option.WithBaseURL(strings.TrimRight(cfg.BaseURL, "/") + "/"),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.Input == nil && isOpenAI(cfg.BaseURL) {
		cfg.Input = []cadre.MediaKind{cadre.MediaImage}
	}
	r := redact.New(append(redact.URLSecrets(cfg.BaseURL), cfg.APIKey)...)
	return &Provider{cfg: cfg, svc: openai.NewChatCompletionService(opts...), redactor: r, where: r.String(cfg.BaseURL)}
}

// isOpenAI reports whether base is OpenAI's own API.
func isOpenAI(base string) bool {
	u, err := url.Parse(base)
	return err == nil && strings.EqualFold(u.Hostname(), "api.openai.com")
}

// Stream implements [cadre.Model].
func (p *Provider) Stream(ctx context.Context, req *cadre.Request) iter.Seq2[*cadre.Chunk, error] {
	params, err := p.params(req)
	if err != nil {
		return func(yield func(*cadre.Chunk, error) bool) {
			yield(nil, &cadre.ModelError{Provider: p.cfg.Provider, Err: err, Hint: "fix the request: this is a bug in the caller"})
		}
	}
	return model.Stream(ctx, model.Call{
		Provider:     p.cfg.Provider,
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

func (p *Provider) attempt(ctx context.Context, req *cadre.Request, params openai.ChatCompletionNewParams, t *model.Try) (*cadre.Response, error) {
	stream := p.svc.NewStreaming(ctx, params, option.WithMiddleware(t.Middleware))
	defer stream.Close()
	var (
		text     strings.Builder
		calls    []*callBuilder
		finish   string
		finished bool
		usage    cadre.Usage
		answered string // the model the server says answered
	)
	for stream.Next() {
		ch := stream.Current()
		if answered == "" {
			answered = ch.Model
		}
		if ch.JSON.Usage.Valid() {
			usage = cadre.Usage{InputTokens: ch.Usage.PromptTokens, OutputTokens: ch.Usage.CompletionTokens,
				CachedInputTokens: ch.Usage.PromptTokensDetails.CachedTokens}
		}
		for _, c := range ch.Choices {
			if c.Index != 0 {
				continue
			}
			d := c.Delta.Content
			if d == "" {
				// A refusal is the model's answer too: keep it as text.
				d = c.Delta.Refusal
			}
			if d != "" {
				text.WriteString(d)
				if !t.Emit(d) {
					return nil, context.Canceled
				}
			}
			for _, tc := range c.Delta.ToolCalls {
				calls = addToolDelta(calls, tc)
			}
			if c.FinishReason != "" {
				finish, finished = c.FinishReason, true
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, convertError(err)
	}
	if !finished {
		return nil, fmt.Errorf("the stream ended without a finish_reason: %w", cadre.ErrIncompleteStream)
	}
	msg := cadre.Message{Role: cadre.RoleAssistant, Content: text.String()}
	for i, c := range calls {
		id := c.id
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		if c.name == "" {
			// No agent could answer it: the reply is asked for again.
			return nil, fmt.Errorf("tool call %d of the reply (id %q) has no function name: %w", i+1, id, model.ErrInvalidReply)
		}
		args := c.args.String()
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		msg.ToolCalls = append(msg.ToolCalls, cadre.ToolCall{ID: id, Name: c.name, Arguments: args})
	}
	if finish == "length" && msg.Content == "" && len(msg.ToolCalls) == 0 {
		return nil, fmt.Errorf("finish_reason %q with no text and no tool call: %w", finish, model.ErrMaxTokens)
	}
	if usage == (cadre.Usage{}) {
		// The server counted nothing (it ignored stream_options or reports
		// zeros): estimate, so that token budgets still see the call.
		usage = model.EstimateUsage(req, &msg)
	}
	return &cadre.Response{Message: msg, Usage: usage, StopReason: finish, Model: answered}, nil
}

// callBuilder gathers the pieces of one streamed tool call.
type callBuilder struct {
	index    int64
	id, name string
	args     strings.Builder
}

// addToolDelta adds one streamed piece of a tool call to calls, which stay
// in the order the calls first appeared. A piece belongs to the latest call
// with its index or, from a server that sends no index, to the last call,
// unless it plainly starts another call (see startsCall).
func addToolDelta(calls []*callBuilder, tc openai.ChatCompletionChunkChoiceDeltaToolCall) []*callBuilder {
	var cur *callBuilder
	if tc.JSON.Index.Valid() {
		for i := len(calls) - 1; i >= 0; i-- {
			if calls[i].index == tc.Index {
				cur = calls[i]
				break
			}
		}
	} else if n := len(calls); n > 0 {
		cur = calls[n-1]
	}
	if cur == nil || startsCall(cur, tc) {
		idx := tc.Index
		if !tc.JSON.Index.Valid() {
			idx = int64(len(calls))
		}
		cur = &callBuilder{index: idx}
		calls = append(calls, cur)
	}
	if tc.ID != "" && cur.id == "" {
		cur.id = tc.ID
	}
	if tc.Function.Name != "" && cur.name == "" {
		cur.name = tc.Function.Name
	}
	cur.args.WriteString(tc.Function.Arguments)
	return calls
}

// startsCall reports whether piece tc begins a call other than cur although
// it has cur's index (servers that number every call 0) or no index: it has
// another id, or no id and another name, or no id and a name after cur's
// arguments are complete.
func startsCall(cur *callBuilder, tc openai.ChatCompletionChunkChoiceDeltaToolCall) bool {
	if tc.ID != "" {
		return cur.id != "" && tc.ID != cur.id
	}
	if tc.Function.Name == "" || cur.name == "" {
		return false
	}
	return tc.Function.Name != cur.name || cur.args.Len() > 0 && json.Valid([]byte(cur.args.String()))
}

// params maps a cadre request to the chat completions request.
func (p *Provider) params(req *cadre.Request) (openai.ChatCompletionNewParams, error) {
	params := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(p.cfg.Model),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if req == nil {
		return params, errors.New("nil request")
	}
	if req.System != "" {
		params.Messages = append(params.Messages, openai.SystemMessage(req.System))
	}
	var media []openai.ChatCompletionContentPartUnionParam // of the tool messages since the last reply
	held, heldWhy := p.cfg.MediaLimit.Held(req.Messages, func(md cadre.Media) bool { return p.refuse(md) == "" })
	for i, m := range req.Messages {
		switch m.Role {
		case cadre.RoleUser:
			params.Messages = append(params.Messages, openai.UserMessage(m.Content))
		case cadre.RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, tc := range m.ToolCalls {
				args := tc.Arguments
				if strings.TrimSpace(args) == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args},
					},
				})
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case cadre.RoleTool:
			content := m.Content
			if m.IsError && !strings.HasPrefix(strings.ToLower(content), "error") {
				// The API has no error flag on tool results: say it in the text.
				content = "Error: " + content
			}
			var parts []openai.ChatCompletionContentPartUnionParam
			for j, md := range m.Media {
				if why := p.refuse(md); why != "" {
					content = cadre.LeaveOut(content, md, why)
				} else if held[[2]int{i, j}] {
					content = cadre.LeaveOut(content, md, heldWhy)
				} else {
					parts = append(parts, mediaPart(md))
				}
			}
			params.Messages = append(params.Messages, openai.ToolMessage(content, m.ToolCallID))
			if len(parts) > 0 {
				intro := openai.TextContentPart(fmt.Sprintf("The images and sounds of the result of %s (tool call %s), which its text describes:", m.ToolName, m.ToolCallID))
				media = append(media, append([]openai.ChatCompletionContentPartUnionParam{intro}, parts...)...)
			}
			if len(media) > 0 && (i+1 == len(req.Messages) || req.Messages[i+1].Role != cadre.RoleTool) {
				// A tool message takes text only, and the tool messages
				// answering one reply must follow it together: their media
				// come after the last of them, in a user message.
				params.Messages = append(params.Messages, openai.UserMessage(media))
				media = nil
			}
		default:
			return params, fmt.Errorf("message %d has role %q: want user, assistant or tool", i, m.Role)
		}
	}
	for _, t := range req.Tools {
		fn := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		schema, err := schemaObject(t.Parameters)
		if err != nil {
			return params, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		fn.Parameters = shared.FunctionParameters(schema)
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	if req.MaxTokens > 0 {
		if p.cfg.Provider == "openai" {
			params.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
		} else {
			params.MaxTokens = openai.Int(int64(req.MaxTokens))
		}
	}
	if req.Temperature != nil {
		params.Temperature = openai.Float(*req.Temperature)
	}
	return params, nil
}

// mediaSent counts the images and sounds params sends.
func mediaSent(params openai.ChatCompletionNewParams) int {
	n := 0
	for _, m := range params.Messages {
		if u := m.OfUser; u != nil {
			for _, part := range u.Content.OfArrayOfContentParts {
				if part.OfImageURL != nil || part.OfInputAudio != nil {
					n++
				}
			}
		}
	}
	return n
}

// refuse says why md cannot be sent to the model, or "" when it can:
// images (PNG, JPEG, GIF, WebP) and WAV and MP3 sounds, for a model whose
// Config.Input takes them.
func (p *Provider) refuse(md cadre.Media) string {
	if !slices.Contains(p.cfg.Input, md.Kind) {
		switch md.Kind {
		case cadre.MediaImage:
			return "this model does not take images"
		case cadre.MediaAudio:
			return "this model does not take sounds"
		}
		return fmt.Sprintf("this model does not take %s", md.Kind)
	}
	switch md.Kind {
	case cadre.MediaImage:
		switch md.MIMEType {
		case "image/png", "image/jpeg", "image/gif", "image/webp":
			return ""
		}
		return fmt.Sprintf("the chat completions API takes PNG, JPEG, GIF and WebP images, not %s", md.MIMEType)
	case cadre.MediaAudio:
		if audioFormat(md.MIMEType) != "" {
			return ""
		}
		return fmt.Sprintf("the chat completions API takes WAV and MP3 sounds, not %s", md.MIMEType)
	}
	return fmt.Sprintf("the chat completions API does not take %s", md.Kind)
}

// mediaPart is md, which refuse allows, as a content part of a user
// message: an image as a data URL, a sound as input_audio.
func mediaPart(md cadre.Media) openai.ChatCompletionContentPartUnionParam {
	data := base64.StdEncoding.EncodeToString(md.Data)
	if md.Kind == cadre.MediaAudio {
		return openai.InputAudioContentPart(openai.ChatCompletionContentPartInputAudioInputAudioParam{Data: data, Format: audioFormat(md.MIMEType)})
	}
	return openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:" + md.MIMEType + ";base64," + data})
}

// audioFormat is the input_audio format of a sound's type, or "".
func audioFormat(mime string) string {
	switch mime {
	case "audio/wav", "audio/x-wav", "audio/wave":
		return "wav"
	case "audio/mpeg", "audio/mp3":
		return "mp3"
	}
	return ""
}

// schemaObject decodes a tool's JSON Schema; no schema means an object with
// no properties.
func schemaObject(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("parameters are not a JSON Schema object: %w", err)
	}
	return m, nil
}

// convertError turns the SDK's errors into *model.ServerError, which the
// retry policy reads, and an event that is not JSON into an error wrapping
// model.ErrInvalidReply; other errors pass unchanged.
func convertError(err error) error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		se := &model.ServerError{Status: apiErr.StatusCode, Type: apiErr.Type, Message: apiErr.Message, Header: http.Header{}}
		if apiErr.Code != "" && se.Type == "" {
			se.Type = apiErr.Code
		}
		if apiErr.Response != nil && apiErr.Response.Header != nil {
			se.Header = apiErr.Response.Header
		}
		if se.Message == "" {
			se.Message = shorten(apiErr.RawJSON())
		}
		if se.Message == "" && apiErr.Response != nil && apiErr.Response.Body != nil {
			// Not the API's error shape: a proxy's page or a plain text
			// such as "404 page not found". The SDK left it readable.
			b, _ := io.ReadAll(io.LimitReader(apiErr.Response.Body, 4<<10))
			se.Message = shorten(string(b))
		}
		return se
	}
	var streamErr *ssestream.StreamError
	if errors.As(err, &streamErr) {
		return streamError(streamErr.Event.Data)
	}
	var syntax *json.SyntaxError
	var shape *json.UnmarshalTypeError
	if errors.As(err, &syntax) || errors.As(err, &shape) {
		return fmt.Errorf("the server sent an event that is not valid JSON (%v): %w", err, model.ErrInvalidReply)
	}
	return err
}

// streamError reads an error event of a stream: {"error": {"message",
// "type", "code"}}, where OpenAI-compatible servers put an HTTP status,
// a name or nothing in "code", and some send the error as a bare string.
func streamError(data []byte) *model.ServerError {
	var ev struct {
		Error json.RawMessage `json:"error"`
	}
	se := &model.ServerError{}
	if json.Unmarshal(data, &ev) != nil {
		se.Message = shorten(string(data))
		return se
	}
	var msg string
	if json.Unmarshal(ev.Error, &msg) == nil {
		se.Message = shorten(msg)
		return se
	}
	var body struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(ev.Error, &body) != nil {
		se.Message = shorten(string(ev.Error))
		return se
	}
	se.Message, se.Type = shorten(body.Message), body.Type
	var code any
	_ = json.Unmarshal(body.Code, &code)
	switch c := code.(type) {
	case float64:
		if c >= 400 && c <= 599 {
			se.Status = int(c)
		}
	case string:
		if se.Type == "" {
			se.Type = c
		}
	}
	if se.Message == "" {
		se.Message = shorten(string(ev.Error))
	}
	return se
}

// hint says what to check after a failure; "" leaves it to model.Stream.
func (p *Provider) hint(err error, status int) string {
	ollama := p.cfg.Provider == "ollama"
	switch status {
	case http.StatusUnauthorized:
		if p.cfg.APIKey == "" {
			return fmt.Sprintf("no API key was sent: set %s", p.cfg.KeyEnv)
		}
		return fmt.Sprintf("the server at %s refused the API key: check %s", p.where, p.cfg.KeyEnv)
	case http.StatusForbidden:
		if p.cfg.APIKey == "" {
			return fmt.Sprintf("no API key was sent: set %s", p.cfg.KeyEnv)
		}
		return fmt.Sprintf("the API key may not use model %q: check %s and the model name", p.cfg.Model, p.cfg.KeyEnv)
	case http.StatusNotFound:
		if ollama {
			return fmt.Sprintf("model %q is not available: pull it with `ollama pull %s`, or check the base URL %s", p.cfg.Model, p.cfg.Model, p.where)
		}
		return fmt.Sprintf("check the model name %q and the base URL %s (it usually ends in /v1)", p.cfg.Model, p.where)
	}
	if model.Unreachable(err) {
		if ollama {
			return fmt.Sprintf("is Ollama running at %s? start it with `ollama serve`, or set OLLAMA_HOST", p.where)
		}
		return fmt.Sprintf("could not reach %s: check the base URL and the network", p.where)
	}
	return ""
}

// shorten trims a server's text to a length fit for an error message.
func shorten(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= 300 {
		return s
	}
	cut := 300
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
