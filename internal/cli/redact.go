package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"strings"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/journal"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/redact"
	"github.com/cadre-ai/cadre/tool"
)

// This file keeps cadre's secrets out of what it shows and keeps: the API
// keys it reads, the passwords in the URLs it is given, the credentials of
// MCP servers.
//
// What an agent is fed is redacted before it becomes the agent's input
// (tool results, model replies and errors), so the journal, which resume
// replays, holds exactly what the agent saw. Known secret values are
// hidden there; the patterns of package redact (any URL's userinfo, any
// Authorization header) are not, since they would change files a model
// reads and edits. Everything cadre reports or keeps about a run besides
// — events, run and agent records, the run's settings, errors, exports,
// the transcripts shown — is redacted in full.

// keyVars are the variables whose values are API keys, besides the
// apiKeyEnv of each provider.
var keyVars = []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OLLAMA_API_KEY"}

// urlVars are the variables that hold URLs cadre connects to.
var urlVars = []string{"OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "OLLAMA_HOST", "CADRE_STORE"}

// redactor returns the Redactor for cfg: it hides the API keys cadre
// reads, the userinfo of the URLs it is given, the values MCP servers'
// entries take from the environment (${VAR}) and their headers, and the
// values of variables whose names say they are secret (GITHUB_TOKEN,
// AWS_SECRET_ACCESS_KEY…) or that are URLs with a password.
func (a *app) redactor(cfg *config) *redact.Redactor {
	var secrets []string
	env := a.io.Getenv
	for _, k := range keyVars {
		secrets = append(secrets, env(k))
	}
	for _, k := range urlVars {
		secrets = append(secrets, redact.URLSecrets(env(k))...)
	}
	secrets = append(secrets, redact.URLSecrets(cfg.Store)...)
	for _, p := range cfg.Providers {
		if p.APIKeyEnv != "" {
			secrets = append(secrets, env(p.APIKeyEnv))
		}
		secrets = append(secrets, redact.URLSecrets(p.BaseURL)...)
	}
	for _, e := range cfg.MCPServers {
		fields := append([]string{e.Command, e.URL, e.Cwd}, e.Args...)
		for k, v := range e.Env {
			fields = append(fields, v)
			if redact.SecretName(k) && !strings.Contains(v, "${") {
				secrets = append(secrets, v)
			}
		}
		for _, v := range e.Headers {
			fields = append(fields, v)
			if !strings.Contains(v, "${") {
				// A header's value is a credential, with or without a
				// scheme word before it.
				secrets = append(secrets, v)
				if _, tok, ok := strings.Cut(v, " "); ok {
					secrets = append(secrets, strings.TrimSpace(tok))
				}
			}
		}
		for _, f := range fields {
			secrets = append(secrets, varValues(f, env)...)
		}
		if u, err := expandVars(e.URL, env); err == nil {
			secrets = append(secrets, redact.URLSecrets(u)...)
		}
	}
	if a.io.Environ != nil {
		for _, kv := range a.io.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			if redact.SecretName(k) {
				secrets = append(secrets, v)
			}
			secrets = append(secrets, redact.URLSecrets(v)...)
		}
	}
	return redact.New(secrets...)
}

// varValues returns the values the ${VAR} references of s stand for.
func varValues(s string, getenv func(string) string) []string {
	var out []string
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			return out
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return out
		}
		name, _, _ := strings.Cut(s[i+2:i+j], ":-")
		out = append(out, getenv(name))
		s = s[i+j+1:]
	}
}

// redactModel hides known secrets in a model's replies before they reach
// the agent, and everything secret in its errors.
type redactModel struct {
	cadre.Model
	r *redact.Redactor
}

func (m redactModel) Stream(ctx context.Context, req *cadre.Request) iter.Seq2[*cadre.Chunk, error] {
	return func(yield func(*cadre.Chunk, error) bool) {
		for ch, err := range m.Model.Stream(ctx, req) {
			if err != nil {
				err = m.r.Error(err)
			}
			if ch != nil {
				ch = m.chunk(ch)
			}
			if !yield(ch, err) {
				return
			}
		}
	}
}

func (m redactModel) chunk(ch *cadre.Chunk) *cadre.Chunk {
	text := m.r.Values(ch.Text)
	if ch.Response == nil {
		if text == ch.Text {
			return ch
		}
		return &cadre.Chunk{Text: text, Restart: ch.Restart}
	}
	resp := *ch.Response
	resp.Message.Content = m.r.Values(resp.Message.Content)
	if len(resp.Message.ToolCalls) > 0 {
		calls := make([]cadre.ToolCall, len(resp.Message.ToolCalls))
		for i, c := range resp.Message.ToolCalls {
			args := m.r.Values(c.Arguments)
			if args != c.Arguments && json.Valid([]byte(c.Arguments)) && !json.Valid([]byte(args)) {
				args = "{}" // a secret spelled across the JSON's structure
			}
			c.Arguments = args
			calls[i] = c
		}
		resp.Message.ToolCalls = calls
	}
	return &cadre.Chunk{Text: text, Response: &resp}
}

// redactRunner hides known secrets in tool results before they reach the
// agent: a command that prints the environment, a page that echoes a
// header, an MCP server's answer.
type redactRunner struct {
	next local.ToolRunner
	r    *redact.Redactor
}

func (rr redactRunner) RunTool(ctx context.Context, agent cadre.AgentID, t cadre.Tool, call cadre.ToolCall) (string, bool) {
	out, isErr := rr.next.RunTool(ctx, agent, t, call)
	return rr.r.Values(out), isErr
}

// Approve passes approvals to the wrapped runner, so rules that ask before
// an agent starts still reach the approval policy through the wrapper.
func (rr redactRunner) Approve(ctx context.Context, req tool.ApprovalRequest) (bool, string, error) {
	ap, ok := rr.next.(local.Approver)
	if !ok {
		return false, "this runner has no approval policy", nil
	}
	return ap.Approve(ctx, req)
}

// redactEvent hides every secret in an event's payload. The payload is
// redacted in its JSON form and read back into its type only when it held
// a secret.
func redactEvent(r *redact.Redactor, ev cadre.Event) cadre.Event {
	if ev.Data == nil {
		return ev
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return ev
	}
	red := r.JSON(b)
	if bytes.Equal(red, b) {
		return ev
	}
	var out cadre.Event
	if err := json.Unmarshal(red, &out); err != nil {
		return ev
	}
	out.Seq, out.Time = ev.Seq, ev.Time
	return out
}

// redactHandler passes h events with their secrets hidden.
func redactHandler(r *redact.Redactor, h func(cadre.Event)) func(cadre.Event) {
	return func(ev cadre.Event) { h(redactEvent(r, ev)) }
}

// redactStore hides secrets in what it writes to a store and reads from
// it: run and agent records (the run's settings included) and events.
// Journal entries pass unchanged, so that a resumed run replays what its
// agents were fed, unless journal is set: then what is read is redacted,
// for commands that show a run and never resume it.
type redactStore struct {
	cadre.Store
	r       *redact.Redactor
	journal bool
}

func (s *redactStore) run(r *cadre.RunRecord) *cadre.RunRecord {
	if r == nil {
		return nil
	}
	c := *r
	c.Task, c.Answer, c.Error = s.r.String(c.Task), s.r.String(c.Answer), s.r.String(c.Error)
	if len(c.Config) > 0 {
		c.Config = s.r.JSON(c.Config)
	}
	return &c
}

func (s *redactStore) agent(a *cadre.AgentRecord) *cadre.AgentRecord {
	if a == nil {
		return nil
	}
	c := *a
	c.Task, c.Result, c.Error = s.r.String(c.Task), s.r.String(c.Result), s.r.String(c.Error)
	return &c
}

func (s *redactStore) CreateRun(ctx context.Context, r *cadre.RunRecord) error {
	return s.Store.CreateRun(ctx, s.run(r))
}

func (s *redactStore) UpdateRun(ctx context.Context, r *cadre.RunRecord) error {
	return s.Store.UpdateRun(ctx, s.run(r))
}

func (s *redactStore) GetRun(ctx context.Context, id string) (*cadre.RunRecord, error) {
	r, err := s.Store.GetRun(ctx, id)
	return s.run(r), err
}

func (s *redactStore) ListRuns(ctx context.Context, limit int) ([]*cadre.RunRecord, error) {
	runs, err := s.Store.ListRuns(ctx, limit)
	for i, r := range runs {
		runs[i] = s.run(r)
	}
	return runs, err
}

func (s *redactStore) PutAgent(ctx context.Context, a *cadre.AgentRecord) error {
	return s.Store.PutAgent(ctx, s.agent(a))
}

// AppendAgent writes a new agent's record, redacted, and its first
// entries, as fed, in one transaction when the store beneath can (the SQL
// stores: one commit for both, and SQLite keeps the record in the first
// entry's row), one after the other otherwise.
func (s *redactStore) AppendAgent(ctx context.Context, a *cadre.AgentRecord, entries []cadre.JournalEntry) error {
	if aa, ok := s.Store.(interface {
		AppendAgent(context.Context, *cadre.AgentRecord, []cadre.JournalEntry) error
	}); ok {
		return aa.AppendAgent(ctx, s.agent(a), entries)
	}
	if err := s.Store.PutAgent(ctx, s.agent(a)); err != nil {
		return err
	}
	return s.Store.Append(ctx, entries)
}

func (s *redactStore) ListAgents(ctx context.Context, run string) ([]*cadre.AgentRecord, error) {
	agents, err := s.Store.ListAgents(ctx, run)
	for i, a := range agents {
		agents[i] = s.agent(a)
	}
	return agents, err
}

func (s *redactStore) AppendEvents(ctx context.Context, events []cadre.Event) error {
	red := make([]cadre.Event, len(events))
	for i, ev := range events {
		red[i] = redactEvent(s.r, ev)
	}
	err := s.Store.AppendEvents(ctx, red)
	for i := range events {
		events[i].Seq = red[i].Seq // the numbers the store gave
	}
	return err
}

func (s *redactStore) Events(ctx context.Context, run string, after int64) ([]cadre.Event, error) {
	evs, err := s.Store.Events(ctx, run, after)
	for i, ev := range evs {
		evs[i] = redactEvent(s.r, ev)
	}
	return evs, err
}

func (s *redactStore) Journal(ctx context.Context, run string, agent cadre.AgentID) ([]cadre.JournalEntry, error) {
	entries, err := s.Store.Journal(ctx, run, agent)
	s.redactJournal(entries)
	return entries, err
}

// RunJournals reads all of a run's journals at once when the store beneath
// can (see internal/journal's Reader.Load), redacted for a display as
// Journal's are; errors.ErrUnsupported says it cannot.
func (s *redactStore) RunJournals(ctx context.Context, run string) (map[cadre.AgentID][]cadre.JournalEntry, error) {
	rj, ok := s.Store.(journal.RunJournaler)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	all, err := rj.RunJournals(ctx, run)
	for _, entries := range all {
		s.redactJournal(entries)
	}
	return all, err
}

// redactJournal hides secrets in entries for a display; the engine's view
// is what was fed.
func (s *redactStore) redactJournal(entries []cadre.JournalEntry) {
	if !s.journal {
		return
	}
	for i, e := range entries {
		entries[i].Data = s.r.JSON(e.Data)
		// An intact entry stays intact once redacted; a damaged one keeps
		// the checksum it does not match.
		if e.Sum != 0 && e.Verify() == nil {
			entries[i].Sum = entries[i].Checksum()
		}
	}
}

// redactWriter hides secrets in each write: for writers that get whole
// lines or records at a time, such as a log handler's.
type redactWriter struct {
	w io.Writer
	r *redact.Redactor
}

func (w redactWriter) Write(p []byte) (int, error) {
	red := w.r.String(string(p))
	if _, err := io.WriteString(w.w, red); err != nil {
		return 0, err
	}
	return len(p), nil
}
