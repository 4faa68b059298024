package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/journal"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/tool"
)

// maxBody is the largest request body the API reads.
const maxBody = 1 << 20

// decode reads a JSON request body into v, refusing unknown fields. It
// writes the 400 and returns false when the body is not acceptable.
func decode(w http.ResponseWriter, r *http.Request, v any, what string) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if dec.Decode(&struct{}{}) != io.EOF {
			err = errors.New("there is more after the JSON object")
		}
	}
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body of %s is larger than %d bytes", what, maxBody))
		case errors.Is(err, io.EOF):
			writeError(w, http.StatusBadRequest, "the body of "+what+" is empty: send a JSON object")
		default:
			writeError(w, http.StatusBadRequest, "the body of "+what+" is not the JSON object it should be: "+err.Error())
		}
		return false
	}
	return true
}

// A runCreated is the answer to POST /api/runs.
type runCreated struct {
	ID string `json:"id"`
}

func (s *Server) startRun(w http.ResponseWriter, r *http.Request) {
	var req RunRequest
	if !decode(w, r, &req, "POST /api/runs") {
		return
	}
	if strings.TrimSpace(req.Task) == "" {
		writeError(w, http.StatusBadRequest, `the task is empty: send {"task": "what the agent should do"}`)
		return
	}
	if req.Approve != "" {
		if _, err := tool.ParseApprovalMode(req.Approve); err != nil {
			writeError(w, http.StatusBadRequest, "approve "+quote(req.Approve)+" is not a mode: use ask, all or none")
			return
		}
	}
	if _, err := req.Limits.Limits(); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var (
		id  string
		err error
	)
	if s.opts.Start != nil {
		id, err = s.opts.Start(r.Context(), req)
	} else {
		if req.Model != "" || req.Agent != "" || req.Limits != nil || req.Approve != "" {
			writeError(w, http.StatusBadRequest, "this server starts every run with its own settings: send only the task")
			return
		}
		id, err = s.eng.Start(r.Context(), req.Task, cadre.StartOptions{})
	}
	if err != nil {
		s.fail(w, err, "start the run")
		return
	}
	w.Header().Set("Location", "/api/runs/"+id)
	writeJSON(w, http.StatusCreated, runCreated{ID: id})
}

// fail answers with err's status and message.
func (s *Server) fail(w http.ResponseWriter, err error, what string) {
	st := errorStatus(err)
	if st == http.StatusInternalServerError {
		s.log.Error("server: "+what, "error", err)
	}
	writeError(w, st, what+": "+err.Error())
}

// A runList is the answer to GET /api/runs.
type runList struct {
	Runs []*cadre.RunRecord `json:"runs"`
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	if s.store == nil {
		writeJSON(w, http.StatusOK, runList{Runs: []*cadre.RunRecord{}})
		return
	}
	runs, err := s.store.ListRuns(r.Context(), 200)
	if err != nil {
		s.fail(w, err, "list the runs")
		return
	}
	for _, rec := range runs {
		rec.Config = nil // settings are for resuming, not for the page
	}
	if runs == nil {
		runs = []*cadre.RunRecord{}
	}
	writeJSON(w, http.StatusOK, runList{Runs: runs})
}

// A runView is the answer to GET /api/runs/{run}.
type runView struct {
	// Run is the run's record, when there is a store.
	Run *cadre.RunRecord `json:"run,omitempty"`
	// Tree is the run's agents.
	Tree *cadre.Tree `json:"tree"`
	// Pending are the approvals waiting for an answer.
	Pending []Pending `json:"pending"`
}

// tree returns the run's tree with its texts redacted.
func (s *Server) tree(ctx context.Context, run string) (*cadre.Tree, error) {
	t, err := s.eng.Tree(ctx, run)
	if err != nil || s.opts.RedactText == nil {
		return t, err
	}
	c := *t
	c.Agents = slices.Clone(t.Agents)
	for i := range c.Agents {
		a := &c.Agents[i]
		a.Task, a.Result, a.Error = s.opts.RedactText(a.Task), s.opts.RedactText(a.Result), s.opts.RedactText(a.Error)
	}
	return &c, nil
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("run")
	tree, err := s.tree(r.Context(), id)
	if err != nil {
		s.fail(w, err, "run "+id)
		return
	}
	v := runView{Tree: tree}
	if s.store != nil {
		if rec, err := s.store.GetRun(r.Context(), id); err == nil {
			rec.Config = nil
			v.Run = rec
		}
	}
	v.Pending, _ = s.pending(id)
	writeJSON(w, http.StatusOK, v)
}

// pending returns the run's approvals waiting for an answer, their texts
// redacted as the agents' are (a command can hold a token the model read),
// and the channel closed when they change.
func (s *Server) pending(run string) ([]Pending, <-chan struct{}) {
	p, changed := s.opts.Approvals.Pending(run)
	if s.opts.RedactText == nil {
		return p, changed
	}
	p = slices.Clone(p)
	for i := range p {
		p[i].Summary, p[i].Detail, p[i].Rule = s.opts.RedactText(p[i].Summary), s.opts.RedactText(p[i].Detail), s.opts.RedactText(p[i].Rule)
	}
	return p, changed
}

// A transcript is the answer to GET /api/runs/{run}/agents/{agent}.
type transcript struct {
	Run   string          `json:"run"`
	Agent cadre.AgentInfo `json:"agent"`
	// System is the agent's system prompt, when the journal is kept.
	System string `json:"system,omitempty"`
	// Messages are the agent's conversation, from its journal.
	Messages []cadre.Message `json:"messages"`
}

func (s *Server) getAgent(w http.ResponseWriter, r *http.Request) {
	id, agent := r.PathValue("run"), cadre.AgentID(r.PathValue("agent"))
	info, ok := s.findAgent(w, r, id, agent)
	if !ok {
		return
	}
	t := transcript{Run: id, Agent: info, Messages: []cadre.Message{}}
	if s.store != nil {
		entries, err := s.store.Journal(r.Context(), id, agent)
		if err != nil && !errors.Is(err, cadre.ErrNotFound) {
			s.fail(w, err, "read the journal of "+string(agent))
			return
		}
		rd := &journal.Reader{Store: s.store, Run: id}
		ins, err := rd.InputsOf(r.Context(), entries)
		if err != nil {
			s.fail(w, err, "rebuild the conversation of "+string(agent))
			return
		}
		if len(ins) > 0 {
			st := loop.Replay(ins)
			t.System = st.Config().System
			if m := st.Messages(); m != nil {
				t.Messages = m
			}
		}
	}
	writeJSON(w, http.StatusOK, t)
}

// findAgent returns the agent's snapshot, or writes the error: 404 for a
// run or agent that does not exist.
func (s *Server) findAgent(w http.ResponseWriter, r *http.Request, run string, agent cadre.AgentID) (cadre.AgentInfo, bool) {
	tree, err := s.tree(r.Context(), run)
	if err != nil {
		s.fail(w, err, "run "+run)
		return cadre.AgentInfo{}, false
	}
	i := slices.IndexFunc(tree.Agents, func(a cadre.AgentInfo) bool { return a.ID == agent })
	if i < 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("run %s has no agent %s: agent ids are like root or root/researcher.1 (see GET /api/runs/%s)", run, quote(string(agent)), run))
		return cadre.AgentInfo{}, false
	}
	return tree.Agents[i], true
}

// A cancelRequest is the body of POST /api/runs/{run}/cancel.
type cancelRequest struct {
	// Agent is the agent whose subtree to cancel; empty cancels the run.
	Agent cadre.AgentID `json:"agent,omitempty"`
	// Reason is told to the agents.
	Reason string `json:"reason,omitempty"`
}

// A done is the answer of the writes that return nothing else.
type done struct {
	OK bool `json:"ok"`
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("run")
	var req cancelRequest
	if r.ContentLength != 0 && !decode(w, r, &req, "the cancel request") {
		return
	}
	if req.Agent != "" {
		info, ok := s.findAgent(w, r, id, req.Agent)
		if !ok {
			return
		}
		if info.Status.Terminal() {
			writeError(w, http.StatusConflict, fmt.Sprintf("agent %s of run %s has already ended (%s)", req.Agent, id, info.Status))
			return
		}
	}
	reason := req.Reason
	if reason == "" {
		reason = "stopped from the web page or API"
	}
	err := s.eng.Cancel(r.Context(), id, cadre.CancelOptions{Agent: req.Agent, Reason: reason})
	if err != nil {
		if req.Agent != "" && errorStatus(err) == http.StatusInternalServerError {
			// The agent was there a moment ago: it has ended since.
			writeError(w, http.StatusConflict, "cancel: "+err.Error())
			return
		}
		s.fail(w, err, "cancel")
		return
	}
	writeJSON(w, http.StatusOK, done{OK: true})
}

// An answerRequest is the body of POST /api/runs/{run}/answer: either an
// approval's id and yes or no, or an agent and the answer to its question.
type answerRequest struct {
	// ID is the approval answered (Pending.ID). Without it, the answer is
	// for the agent's question.
	ID string `json:"id,omitempty"`
	// Agent is the agent that asks; with an ID, it need not be given.
	Agent cadre.AgentID `json:"agent,omitempty"`
	// Answer is the answer: yes or no to an approval, free text to a
	// question.
	Answer string `json:"answer"`
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("run")
	var req answerRequest
	if !decode(w, r, &req, "the answer") {
		return
	}
	if req.ID != "" {
		s.answerApproval(w, r, id, req)
		return
	}
	if req.Agent == "" {
		writeError(w, http.StatusBadRequest, `say what the answer is for: {"agent": "root", "answer": "…"} for an agent's question, {"id": "<the approval's id, as listed in pending>", "answer": "yes"} for an approval`)
		return
	}
	if _, ok := s.findAgent(w, r, id, req.Agent); !ok {
		return
	}
	ans, ok := s.eng.(cadre.Answerer)
	if !ok {
		writeError(w, http.StatusConflict, `this engine takes no answers to questions; an approval is answered with its id, as listed in pending: {"id": "<its id>", "answer": "yes"}`)
		return
	}
	if err := ans.Answer(r.Context(), id, req.Agent, req.Answer); err != nil {
		if errors.Is(err, cadre.ErrNoQuestion) && s.opts.Approvals.waiting(id, req.Agent) {
			writeError(w, http.StatusConflict, fmt.Sprintf("agent %s has no question waiting, only approvals: answer one with its id, as {\"id\": \"<its id>\", \"answer\": \"yes\"} (GET /api/runs/%s lists them)", req.Agent, id))
			return
		}
		s.fail(w, err, "answer")
		return
	}
	writeJSON(w, http.StatusOK, done{OK: true})
}

// answerApproval answers exactly the approval req.ID names, which must
// still be waiting.
func (s *Server) answerApproval(w http.ResponseWriter, r *http.Request, run string, req answerRequest) {
	p, ok := s.opts.Approvals.get(run, req.ID)
	if !ok {
		// Not waiting: the run is looked up only to tell a run that does
		// not exist (404) from an approval that no longer waits (409).
		if _, err := s.tree(r.Context(), run); err != nil {
			s.fail(w, err, "run "+run)
			return
		}
	}
	var yes bool
	switch strings.ToLower(strings.TrimSpace(req.Answer)) {
	case "yes", "y":
		yes = true
	case "no", "n":
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%s is an approval: answer yes or no, not %s", quote(req.ID), quote(req.Answer)))
		return
	}
	if ok && req.Agent != "" && p.Agent != req.Agent {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("approval %s is of agent %s, not %s: check the id", quote(req.ID), p.Agent, req.Agent))
		return
	}
	if err := s.opts.Approvals.answer(run, req.ID, p, yes); err != nil {
		s.fail(w, err, "answer")
		return
	}
	writeJSON(w, http.StatusOK, done{OK: true})
}
