package scripted

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model"
)

// DefaultRecordLimit is how many requests a new Model keeps for
// [Model.Requests].
const DefaultRecordLimit = 1000

const providerName = "scripted"

// Model plays a Script, or calls a function ([Func]).
type Model struct {
	script *Script
	exact  map[string]*entry // keys without glob characters
	globs  []*entry          // most specific first
	star   *entry
	fn     func(context.Context, *cadre.Request) (*cadre.Response, error)

	mu       sync.Mutex
	calls    map[CallKey]int
	counted  map[cadre.AgentID]int // model calls of agents whose requests carry no Turn
	limit    int
	requests []cadre.Request
}

var _ cadre.Model = (*Model)(nil)

// entry is one key's replies, split by kind.
type entry struct {
	key    string
	turns  []*Reply
	whens  []*Reply
	repeat bool
}

// A CallKey identifies one model call: which agent, which turn.
type CallKey struct {
	Agent cadre.AgentID
	Turn  int
}

// New returns a model that plays s. It checks s as [Parse] does.
func New(s *Script) (*Model, error) {
	if s == nil {
		return nil, &ParseError{Msg: "nil script"}
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	m := newModel()
	m.script = s
	m.exact = map[string]*entry{}
	for _, key := range sortedKeys(s.Agents) {
		e := &entry{key: key}
		replies := s.Agents[key]
		for i := range replies {
			r := &replies[i]
			if r.When != "" {
				e.whens = append(e.whens, r)
			} else {
				e.turns = append(e.turns, r)
			}
		}
		e.repeat = len(e.turns) > 0 && e.turns[len(e.turns)-1].Repeat
		switch {
		case key == "*":
			m.star = e
		case strings.ContainsAny(key, `*?[\`):
			m.globs = append(m.globs, e)
		default:
			m.exact[key] = e
		}
	}
	slices.SortStableFunc(m.globs, func(a, b *entry) int {
		if la, lb := literals(a.key), literals(b.key); la != lb {
			return lb - la
		}
		return strings.Compare(a.key, b.key)
	})
	return m, nil
}

// Func returns a model whose replies f computes. The text of each reply is
// streamed in a few chunks; a reply without a role is an assistant's; a zero
// Usage is replaced by the estimate scripts use. f must be safe for
// concurrent use.
func Func(f func(ctx context.Context, req *cadre.Request) (*cadre.Response, error)) *Model {
	m := newModel()
	m.fn = f
	return m
}

func newModel() *Model {
	return &Model{calls: map[CallKey]int{}, counted: map[cadre.AgentID]int{}, limit: DefaultRecordLimit}
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// literals counts a pattern's characters that match only themselves.
func literals(p string) int {
	n := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '*', '?':
		case '\\':
			i++
			n++
		case '[':
			if j := strings.IndexByte(p[i:], ']'); j > 0 {
				i += j
			}
		default:
			n++
		}
	}
	return n
}

// SetRecordLimit sets how many requests the model keeps: the first n it
// receives. Zero or less keeps none. Requests kept so far stay.
func (m *Model) SetRecordLimit(n int) {
	m.mu.Lock()
	m.limit = n
	m.mu.Unlock()
}

// Requests returns copies of the requests kept so far, in the order they
// arrived.
func (m *Model) Requests() []cadre.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.requests)
}

// RequestsOf returns the kept requests of one agent, in turn order.
func (m *Model) RequestsOf(agent cadre.AgentID) []cadre.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []cadre.Request
	for _, r := range m.requests {
		if r.Agent == agent {
			out = append(out, r)
		}
	}
	return out
}

// Calls returns how many times each (agent, turn) was called.
func (m *Model) Calls() map[CallKey]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.calls)
}

// TotalCalls returns the number of calls so far.
func (m *Model) TotalCalls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, c := range m.calls {
		n += c
	}
	return n
}

// record counts the call and keeps a copy of req; it returns the turn.
func (m *Model) record(req *cadre.Request) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	turn := req.Turn
	if turn <= 0 {
		m.counted[req.Agent]++
		turn = m.counted[req.Agent]
	}
	m.calls[CallKey{req.Agent, turn}]++
	if len(m.requests) < m.limit {
		c := *req
		c.Turn = turn
		c.Messages = slices.Clone(req.Messages)
		c.Tools = slices.Clone(req.Tools)
		m.requests = append(m.requests, c)
	}
	return turn
}

// Stream implements [cadre.Model].
func (m *Model) Stream(ctx context.Context, req *cadre.Request) iter.Seq2[*cadre.Chunk, error] {
	return func(yield func(*cadre.Chunk, error) bool) {
		if req == nil {
			yield(nil, &cadre.ModelError{Provider: providerName, Err: errors.New("nil request")})
			return
		}
		turn := m.record(req)
		if m.fn != nil {
			m.playFunc(ctx, req, yield)
			return
		}
		r, err := m.choose(req, turn)
		if err != nil {
			yield(nil, err)
			return
		}
		m.play(ctx, req, turn, r, yield)
	}
}

func (m *Model) playFunc(ctx context.Context, req *cadre.Request, yield func(*cadre.Chunk, error) bool) {
	resp, err := m.fn(ctx, req)
	if err != nil {
		yield(nil, err)
		return
	}
	if resp == nil {
		yield(nil, &cadre.ModelError{Provider: providerName, Err: fmt.Errorf("the reply function returned no response for agent %q: %w", req.Agent, cadre.ErrIncompleteStream)})
		return
	}
	out := *resp
	if out.Message.Role == "" {
		out.Message.Role = cadre.RoleAssistant
	}
	if out.Usage == (cadre.Usage{}) {
		out.Usage = model.EstimateUsage(req, &out.Message)
	}
	if !streamText(out.Message.Content, yield) {
		return
	}
	yield(&cadre.Chunk{Response: &out}, nil)
}

func (m *Model) play(ctx context.Context, req *cadre.Request, turn int, r *Reply, yield func(*cadre.Chunk, error) bool) {
	if r.Delay > 0 {
		t := time.NewTimer(r.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			yield(nil, m.ctxErr(ctx, req, turn))
			return
		}
	}
	if err := ctx.Err(); err != nil {
		yield(nil, m.ctxErr(ctx, req, turn))
		return
	}
	if !streamText(r.Text, yield) {
		return
	}
	switch {
	case r.Hang:
		<-ctx.Done()
		yield(nil, m.ctxErr(ctx, req, turn))
		return
	case r.Status != 0 || r.Error != "":
		msg := r.Error
		if msg == "" {
			msg = http.StatusText(r.Status)
		}
		yield(nil, &cadre.ModelError{
			Provider: providerName, Status: r.Status, Err: errors.New(msg),
			Hint: fmt.Sprintf("scripted failure for agent %q turn %d in %s", req.Agent, turn, m.scriptName()),
		})
		return
	}
	msg := cadre.Message{Role: cadre.RoleAssistant, Content: r.Text}
	for i, tc := range r.ToolCalls {
		id := tc.ID
		if id == "" {
			id = "call_" + strconv.Itoa(turn) + "_" + strconv.Itoa(i+1)
		}
		args := string(tc.Arguments)
		if args == "" {
			args = "{}"
		}
		msg.ToolCalls = append(msg.ToolCalls, cadre.ToolCall{ID: id, Name: tc.Name, Arguments: args})
	}
	resp := &cadre.Response{Message: msg, StopReason: r.StopReason}
	if resp.StopReason == "" {
		resp.StopReason = "stop"
		if len(msg.ToolCalls) > 0 {
			resp.StopReason = "tool_calls"
		}
	}
	if r.Usage != nil {
		resp.Usage = cadre.Usage{InputTokens: r.Usage.Input, OutputTokens: r.Usage.Output, CachedInputTokens: r.Usage.Cached}
	} else {
		resp.Usage = model.EstimateUsage(req, &msg)
	}
	yield(&cadre.Chunk{Response: resp}, nil)
}

func (m *Model) ctxErr(ctx context.Context, req *cadre.Request, turn int) error {
	return &cadre.ModelError{Provider: providerName, Err: fmt.Errorf("agent %q turn %d: call abandoned: %w", req.Agent, turn, ctx.Err())}
}

func (m *Model) scriptName() string {
	if m.script == nil || m.script.Name == "" {
		return "the script"
	}
	return m.script.Name
}

// streamText yields text in up to three chunks split at rune boundaries.
// It reports whether the caller wants more.
func streamText(text string, yield func(*cadre.Chunk, error) bool) bool {
	if text == "" {
		return true
	}
	const pieces = 3
	size := len(text) / pieces
	if size < 8 {
		return yield(&cadre.Chunk{Text: text}, nil)
	}
	for rest := text; rest != ""; {
		n := min(size, len(rest))
		if len(rest)-n < size/2 {
			n = len(rest) // no tiny last piece
		}
		for n < len(rest) && !utf8.RuneStart(rest[n]) {
			n++
		}
		if !yield(&cadre.Chunk{Text: rest[:n]}, nil) {
			return false
		}
		rest = rest[n:]
	}
	return true
}

// DefinitionName returns the definition name in an agent ID: its last
// segment without the ".N" suffix ("root/researcher.2" → "researcher").
func DefinitionName(id cadre.AgentID) string {
	s := string(id)
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	if i := strings.LastIndexByte(s, '.'); i > 0 {
		if _, err := strconv.Atoi(s[i+1:]); err == nil {
			s = s[:i]
		}
	}
	return s
}

// choose finds the reply for a request, as the package documentation says.
func (m *Model) choose(req *cadre.Request, turn int) (*Reply, error) {
	id, name := string(req.Agent), DefinitionName(req.Agent)
	e := m.exact[id]
	if e == nil {
		e = m.exact[name]
	}
	if e == nil {
		for _, g := range m.globs {
			if ok, _ := path.Match(g.key, id); ok {
				e = g
				break
			}
			if ok, _ := path.Match(g.key, name); ok {
				e = g
				break
			}
		}
	}
	if e == nil {
		e = m.star
	}
	if e == nil {
		return nil, &NoReplyError{Script: m.scriptName(), Agent: req.Agent, Turn: turn}
	}
	if len(e.whens) > 0 {
		input := newInput(req.Messages)
		for _, r := range e.whens {
			if input.contains(r.When) {
				return r, nil
			}
		}
	}
	if turn <= len(e.turns) {
		return e.turns[turn-1], nil
	}
	if e.repeat {
		return e.turns[len(e.turns)-1], nil
	}
	return nil, &NoReplyError{Script: m.scriptName(), Agent: req.Agent, Turn: turn, Key: e.key, Turns: len(e.turns)}
}

// newInput returns the messages after the last assistant message.
func newInput(msgs []cadre.Message) input {
	i := len(msgs)
	for i > 0 && msgs[i-1].Role != cadre.RoleAssistant {
		i--
	}
	return input(msgs[i:])
}

type input []cadre.Message

func (in input) contains(s string) bool {
	for _, m := range in {
		if strings.Contains(m.Content, s) {
			return true
		}
	}
	return false
}

// A NoReplyError reports a call the script has no reply for.
type NoReplyError struct {
	Script string
	Agent  cadre.AgentID
	Turn   int
	// Key is the key chosen for the agent, "" when none matched; Turns is
	// how many turn replies it has.
	Key   string
	Turns int
}

func (e *NoReplyError) Error() string {
	who := fmt.Sprintf("agent %q (definition %q) at turn %d", e.Agent, DefinitionName(e.Agent), e.Turn)
	if e.Key == "" {
		return fmt.Sprintf("scripted: %s has no reply for %s: no key matches it; add a key for %q or %q, or a \"*\" key", e.Script, who, e.Agent, DefinitionName(e.Agent))
	}
	have := "no turn replies"
	if e.Turns == 1 {
		have = "a reply for turn 1 only"
	} else if e.Turns > 1 {
		have = fmt.Sprintf("replies for turns 1-%d", e.Turns)
	}
	return fmt.Sprintf("scripted: %s has no reply for %s: key %q has %s; add one more reply, or repeat: true on its last", e.Script, who, e.Key, have)
}
