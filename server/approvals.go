package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/tool"
)

// Approvals holds the approval requests of runs (a write, a command, a
// rule that asks) while they wait for a person to answer them through the
// API. Prompt gives a run's tool.Approver a Prompt that puts its requests
// here; the server lists them (GET /api/runs/{run}, the "pending" events
// of the stream) and answers them (POST /api/runs/{run}/answer). The zero
// value is ready to use, and it is safe for concurrent use.
type Approvals struct {
	mu      sync.Mutex
	tag     string // random, made with the first request: see add
	next    int
	pending map[string][]*approval // by run, oldest first
	changed map[string]chan struct{}
}

// A Pending is an approval request waiting for an answer.
type Pending struct {
	// ID names the request, never reused, by this server or another one
	// (it holds a random tag): an answer names it, so it answers this
	// request and no other.
	ID string `json:"id"`
	// Agent is the agent making the call.
	Agent cadre.AgentID `json:"agent"`
	// Tool is the tool it calls.
	Tool string `json:"tool"`
	// Summary says what the call would do.
	Summary string `json:"summary"`
	// Detail, when set, is what the call would do that Summary does not
	// say (a write's text, a long command, arguments Summary cuts): see
	// tool.ApprovalDetail. A page must show it before it lets a person
	// allow the call.
	Detail string `json:"detail,omitempty"`
	// Rule, when set, is the rule of the agent's definition that asks.
	Rule string `json:"rule,omitempty"`
	// Asked is when the request was made.
	Asked time.Time `json:"asked"`
}

type approval struct {
	Pending
	answer chan bool // buffered: takes the one answer
}

// Prompt returns a tool.Approver Prompt for the run: each request waits
// here until Answer answers it or ctx ends.
func (a *Approvals) Prompt(run string) func(ctx context.Context, req tool.ApprovalRequest) (bool, error) {
	return func(ctx context.Context, req tool.ApprovalRequest) (bool, error) {
		ap := a.add(run, req)
		defer a.remove(run, ap)
		select {
		case yes := <-ap.answer:
			return yes, nil
		case <-ctx.Done():
			return false, context.Cause(ctx)
		}
	}
}

func (a *Approvals) add(run string, req tool.ApprovalRequest) *approval {
	a.mu.Lock()
	defer a.mu.Unlock()
	// The ids of one Approvals count up after a random tag, so that an
	// answer to a request of an earlier server (a page left open across a
	// restart) never names a request of this one.
	if a.tag == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		a.tag = hex.EncodeToString(b[:])
	}
	a.next++
	ap := &approval{
		Pending: Pending{ID: "approval-" + a.tag + "-" + strconv.Itoa(a.next), Agent: req.Agent, Tool: req.Tool,
			Summary: req.Summary, Detail: tool.ApprovalDetail(req), Rule: req.Rule, Asked: time.Now().UTC()},
		answer: make(chan bool, 1),
	}
	if a.pending == nil {
		a.pending = map[string][]*approval{}
	}
	a.pending[run] = append(a.pending[run], ap)
	a.changedLocked(run)
	return ap
}

func (a *Approvals) remove(run string, ap *approval) {
	a.mu.Lock()
	defer a.mu.Unlock()
	list := a.pending[run]
	if i := slices.Index(list, ap); i >= 0 {
		list = slices.Delete(list, i, i+1)
		if len(list) == 0 {
			delete(a.pending, run)
		} else {
			a.pending[run] = list
		}
		a.changedLocked(run)
	}
}

// changedLocked wakes those waiting for a change of run's requests.
func (a *Approvals) changedLocked(run string) {
	if ch := a.changed[run]; ch != nil {
		close(ch)
		delete(a.changed, run)
	}
}

// Pending returns the run's requests waiting for an answer, oldest first,
// and a channel closed at the next change of them.
func (a *Approvals) Pending(run string) ([]Pending, <-chan struct{}) {
	if a == nil {
		return []Pending{}, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Pending, 0, len(a.pending[run]))
	for _, ap := range a.pending[run] {
		out = append(out, ap.Pending)
	}
	if a.changed == nil {
		a.changed = map[string]chan struct{}{}
	}
	ch := a.changed[run]
	if ch == nil {
		ch = make(chan struct{})
		a.changed[run] = ch
	}
	return out, ch
}

// Answer answers the run's request with the id (Pending.ID): yes allows
// the call. It fails with an error wrapping cadre.ErrNoQuestion when that
// request is not waiting (answered already, or its call has ended), and
// never answers another.
func (a *Approvals) Answer(run, id string, yes bool) error {
	found, _ := a.get(run, id)
	return a.answer(run, id, found, yes)
}

// answer answers found, the run's request with the id as get found it
// (nil when it was not waiting).
func (a *Approvals) answer(run, id string, found *approval, yes bool) error {
	if found == nil {
		return fmt.Errorf("approval %s is not waiting in run %s: it was answered, or its call has ended (GET /api/runs/%s lists those waiting): %w", quote(id), run, run, cadre.ErrNoQuestion)
	}
	select {
	case found.answer <- yes:
		a.remove(run, found)
		return nil
	default:
		return fmt.Errorf("approval %s of agent %s was answered already: %w", id, found.Agent, cadre.ErrNoQuestion)
	}
}

// get returns the run's request with the id, if it is waiting.
func (a *Approvals) get(run, id string) (*approval, bool) {
	if a == nil {
		return nil, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	i := slices.IndexFunc(a.pending[run], func(ap *approval) bool { return ap.ID == id })
	if i < 0 {
		return nil, false
	}
	return a.pending[run][i], true
}

// waiting reports whether the agent has a request waiting.
func (a *Approvals) waiting(run string, agent cadre.AgentID) bool {
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.ContainsFunc(a.pending[run], func(ap *approval) bool { return ap.Agent == agent })
}
