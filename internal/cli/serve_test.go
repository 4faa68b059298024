package cli

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/tool"
)

// serveFailsafe turns a hang into a failure.
const serveFailsafe = 60 * time.Second

// serveProject writes a project with a scripted model and a helper agent
// and returns its folder, the model flag and the environment.
func serveProject(t *testing.T, script string) (string, string, map[string]string) {
	t.Helper()
	dir, home := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "script.yaml"), script)
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "helper.md"), "---\nname: helper\ndescription: Helps with one part.\ntools: []\n---\nYou help.\n")
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "lead.md"), "---\nname: lead\ndescription: Leads; asks the user.\naskCaller: true\n---\nYou lead.\n")
	return dir, "scripted:" + filepath.Join(dir, "script.yaml"), map[string]string{"HOME": home}
}

// background is cadre running in a goroutine; what it writes is kept
// line by line.
type background struct {
	stdout, stderr *lines
	sig            chan os.Signal
	code           chan int
}

// lines keeps what a stream wrote, a line at a time.
type lines struct {
	mu    sync.Mutex
	all   []string
	added chan struct{} // closed at the next line
}

func pump(r io.Reader) *lines {
	l := &lines{added: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l.mu.Lock()
			l.all = append(l.all, sc.Text())
			close(l.added)
			l.added = make(chan struct{})
			l.mu.Unlock()
		}
	}()
	return l
}

// find returns the first line that matches, failing after the failsafe.
func (l *lines) find(t *testing.T, match func(string) bool) string {
	t.Helper()
	deadline := time.After(serveFailsafe)
	for {
		l.mu.Lock()
		for _, s := range l.all {
			if match(s) {
				l.mu.Unlock()
				return s
			}
		}
		added := l.added
		all := strings.Join(l.all, "\n")
		l.mu.Unlock()
		select {
		case <-added:
		case <-deadline:
			t.Fatalf("gave up waiting for cadre's output; it wrote:\n%s", all)
		}
	}
}

func startCadre(t *testing.T, dir string, env map[string]string, args ...string) *background {
	t.Helper()
	or, ow := io.Pipe()
	er, ew := io.Pipe()
	b := &background{stdout: pump(or), stderr: pump(er), sig: make(chan os.Signal, 2), code: make(chan int, 1)}
	go func() {
		code := Main(context.Background(), args, IO{Dir: dir, Stdout: ow, Stderr: ew, Stdin: strings.NewReader(""),
			Getenv: func(k string) string { return env[k] }, Interrupts: b.sig})
		ow.Close()
		ew.Close()
		b.code <- code
	}()
	t.Cleanup(func() {
		b.sig <- os.Interrupt
		select {
		case <-b.code:
		case <-time.After(serveFailsafe):
			t.Error("cadre did not stop")
		}
	})
	return b
}

// postJSON posts body with the token (when not empty) and decodes the
// answer into out; it returns the status.
func postJSON(t *testing.T, url, token string, body any, out any) int {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest("POST", url, strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if out != nil {
		json.NewDecoder(res.Body).Decode(out)
	}
	return res.StatusCode
}

func getJSON(t *testing.T, url, token string, out any) int {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	json.NewDecoder(res.Body).Decode(out)
	return res.StatusCode
}

// TestServe starts cadre serve, starts a run through its API with settings
// of its own, follows it to its end, and stops the server.
func TestServe(t *testing.T) {
	dir, model, env := serveProject(t, `
root:
  - tool_calls:
      - name: spawn_agent
        arguments: {agent: helper, task: "Count the files."}
  - text: "There are three files."
helper:
  - tool_calls:
      - name: send_agent_message
        arguments: {text: "Three."}
  - text: "Done."
`)
	b := startCadre(t, dir, env, "serve", "--listen", "127.0.0.1:0", "--model", model)
	url, tok := pageAddress(t, b.stdout.find(t, func(string) bool { return true }))

	var created struct{ ID string }
	if st := postJSON(t, url+"api/runs", tok, map[string]any{"task": "Count the files.", "approve": "none", "limits": map[string]any{"max_agents": 5}}, &created); st != 201 {
		t.Fatalf("POST /api/runs: %d", st)
	}
	deadline := time.Now().Add(serveFailsafe)
	var view struct {
		Run struct {
			Status, Answer string
			Config         json.RawMessage
		}
		Tree struct{ Agents []struct{ ID, Status string } }
	}
	for {
		getJSON(t, url+"api/runs/"+created.ID, tok, &view)
		if view.Run.Status == "done" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not end: %+v", view)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if view.Run.Answer != "There are three files." || len(view.Tree.Agents) != 2 || view.Tree.Agents[1].ID != "root/helper.1" {
		t.Errorf("the run ended as %+v", view)
	}
	if len(view.Run.Config) != 0 {
		t.Errorf("the run's settings are shown: %s", view.Run.Config)
	}
	// The run's record keeps the request's settings, for cadre resume.
	a := &app{io: IO{Dir: dir, Getenv: func(k string) string { return env[k] }}}
	cfg, err := a.loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	st, err := openStore(context.Background(), a.storePath(cfg), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.GetRun(context.Background(), created.ID)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	var settings runSettings
	if err := json.Unmarshal(rec.Config, &settings); err != nil || settings.Limits.MaxAgents != 5 || settings.Model != model {
		t.Errorf("the run's settings %s (%v), want max_agents 5 and the model", rec.Config, err)
	}

	// Settings the server cannot use are 400s that say why.
	var e struct{ Error string }
	if st := postJSON(t, url+"api/runs", tok, map[string]any{"task": "x", "agent": "ghost"}, &e); st != 400 || !strings.Contains(e.Error, "helper") {
		t.Errorf("an unknown root agent: %d %q, want 400 listing the agents", st, e.Error)
	}
	if st := postJSON(t, url+"api/runs", tok, map[string]any{"task": "x", "model": "nosuch:model"}, &e); st != 400 || !strings.Contains(e.Error, "nosuch") {
		t.Errorf("an unknown model: %d %q, want 400 naming it", st, e.Error)
	}
	// The page is served.
	res, err := http.Get(url + "runs/" + created.ID)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(page), "/ui/app.js") {
		t.Errorf("the page: %d", res.StatusCode)
	}

	b.sig <- os.Interrupt
	select {
	case code := <-b.code:
		if code != 0 {
			t.Errorf("cadre serve exited %d after Ctrl+C, want 0", code)
		}
		b.code <- code
	case <-time.After(serveFailsafe):
		t.Fatal("cadre serve did not stop on Ctrl+C")
	}
}

// TestRunServe runs a task with --serve and no terminal: the root's
// question is answered through the run's page API.
func TestRunServe(t *testing.T) {
	dir, model, env := serveProject(t, `
root:
  - tool_calls:
      - name: ask_caller
        arguments: {question: "Which colour?"}
  - text: "Green it is."
`)
	b := startCadre(t, dir, env, "run", "--serve=127.0.0.1:0", "--agent", "lead", "--model", model, "Paint the shed.")
	line := b.stderr.find(t, func(l string) bool { return strings.Contains(l, "watch and steer this run at") })
	i := strings.Index(line, "http://")
	if i < 0 {
		t.Fatalf("no address in %q", line)
	}
	runURL, tok := pageAddress(t, line[i:])
	base, id, ok := strings.Cut(runURL, "/runs/")
	if !ok {
		t.Fatalf("no run in %q", runURL)
	}
	deadline := time.Now().Add(serveFailsafe)
	for {
		st := postJSON(t, base+"/api/runs/"+id+"/answer", tok, map[string]string{"agent": "root", "answer": "green"}, nil)
		if st == 200 {
			break
		}
		if st != 409 || time.Now().After(deadline) {
			t.Fatalf("answer: %d", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	answer := b.stdout.find(t, func(l string) bool { return strings.TrimSpace(l) != "" })
	if answer != "Green it is." {
		t.Errorf("stdout %q, want the answer", answer)
	}
	select {
	case code := <-b.code:
		if code != 0 {
			t.Errorf("cadre run exited %d", code)
		}
		b.code <- code
	case <-time.After(serveFailsafe):
		t.Fatal("cadre run did not end")
	}
}

// pageAddress splits the address cadre prints into the page's address and
// the token after #token=, failing when there is none.
func pageAddress(t *testing.T, link string) (string, string) {
	t.Helper()
	page, tok, ok := strings.Cut(link, "#token=")
	if !ok || !strings.HasPrefix(page, "http://127.0.0.1:") {
		t.Fatalf("%q is not the page's address with its token", link)
	}
	if b, err := base64.RawURLEncoding.DecodeString(tok); err != nil || len(b) != 32 {
		t.Fatalf("the token %q is not 32 random bytes in URL-safe base64 (%v)", tok, err)
	}
	return page, tok
}

// TestServeMakesToken checks that cadre serve with no token makes one,
// prints the address to open with it, and answers no request without it:
// a process of this machine can no longer start a run that runs commands.
func TestServeMakesToken(t *testing.T) {
	dir, model, env := serveProject(t, "\"*\":\n  - text: hi\n")
	b := startCadre(t, dir, env, "serve", "--listen", "127.0.0.1:0", "--model", model)
	url, tok := pageAddress(t, b.stdout.find(t, func(string) bool { return true }))
	b.stderr.find(t, func(l string) bool { return strings.Contains(l, "#token="+tok) })

	var e struct{ Error string }
	if st := postJSON(t, url+"api/runs", "", map[string]any{"task": "Delete the files.", "approve": "all"}, &e); st != http.StatusUnauthorized {
		t.Errorf("a run started without the token: %d %q, want 401", st, e.Error)
	}
	if st := getJSON(t, url+"api/runs", "", &e); st != http.StatusUnauthorized {
		t.Errorf("the runs listed without the token: %d, want 401", st)
	}
	if st := postJSON(t, url+"api/runs", "wrong", map[string]any{"task": "Delete the files."}, &e); st != http.StatusUnauthorized {
		t.Errorf("a run started with a wrong token: %d, want 401", st)
	}
	var runs struct{ Runs []json.RawMessage }
	if st := getJSON(t, url+"api/runs", tok, &runs); st != http.StatusOK || len(runs.Runs) != 0 {
		t.Errorf("the runs with the token: %d %d runs, want 200 and none", st, len(runs.Runs))
	}

	// Another server gets another token.
	b2 := startCadre(t, dir, env, "serve", "--listen", "127.0.0.1:0", "--model", model)
	if _, tok2 := pageAddress(t, b2.stdout.find(t, func(string) bool { return true })); tok2 == tok {
		t.Errorf("two servers made the same token %q", tok)
	}
}

// TestServeGivenToken checks that a token given in CADRE_TOKEN is the one
// required and is not printed.
func TestServeGivenToken(t *testing.T) {
	dir, model, env := serveProject(t, "\"*\":\n  - text: hi\n")
	env["CADRE_TOKEN"] = "given-token-of-the-user"
	b := startCadre(t, dir, env, "serve", "--listen", "127.0.0.1:0", "--model", model)
	url := b.stdout.find(t, func(string) bool { return true })
	if strings.Contains(url, "token") {
		t.Errorf("the first line %q shows the token", url)
	}
	b.stderr.find(t, func(l string) bool { return strings.Contains(l, "Authorization: Bearer") })
	var e struct{ Error string }
	if st := getJSON(t, url+"api/runs", "", &e); st != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", st)
	}
	if st := getJSON(t, url+"api/runs", "given-token-of-the-user", &e); st != http.StatusOK {
		t.Errorf("with the token: %d %q, want 200", st, e.Error)
	}
}

// TestServeTokenFlagWarns checks that a token given with --token, which
// every user of the machine can read in the process list, is warned
// about, and still works.
func TestServeTokenFlagWarns(t *testing.T) {
	dir, model, env := serveProject(t, "\"*\":\n  - text: hi\n")
	b := startCadre(t, dir, env, "serve", "--listen", "127.0.0.1:0", "--model", model, "--token", "flag-token-of-the-user")
	url := b.stdout.find(t, func(string) bool { return true })
	b.stderr.find(t, func(l string) bool {
		return strings.Contains(l, "can be read by every user of this machine") && strings.Contains(l, "CADRE_TOKEN")
	})
	var e struct{ Error string }
	if st := getJSON(t, url+"api/runs", "flag-token-of-the-user", &e); st != http.StatusOK {
		t.Errorf("with the token: %d %q, want 200", st, e.Error)
	}
}

// TestServeNoToken checks the opt-out: only on a loopback address, and
// with a warning.
func TestServeNoToken(t *testing.T) {
	dir, model, env := serveProject(t, "\"*\":\n  - text: hi\n")
	b := startCadre(t, dir, env, "serve", "--listen", "127.0.0.1:0", "--no-token", "--model", model)
	url := b.stdout.find(t, func(string) bool { return true })
	b.stderr.find(t, func(l string) bool {
		return strings.Contains(l, "any user or program of this machine can start runs here")
	})
	var runs struct{ Runs []json.RawMessage }
	if st := getJSON(t, url+"api/runs", "", &runs); st != http.StatusOK {
		t.Errorf("without a token: %d, want 200", st)
	}

	for _, c := range []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"beyond this machine", []string{"--listen", "0.0.0.0:0", "--no-token"}, "", "--no-token is only for an address of this machine"},
		{"with a token", []string{"--listen", "127.0.0.1:0", "--no-token", "--token", "x"}, "", "drop one or the other"},
		{"with CADRE_TOKEN", []string{"--listen", "127.0.0.1:0", "--no-token"}, "x", "drop one or the other"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stderr strings.Builder
			e := map[string]string{"HOME": env["HOME"], "CADRE_TOKEN": c.env}
			code := Main(context.Background(), append([]string{"serve", "--model", model}, c.args...), IO{Dir: dir, Stdout: io.Discard, Stderr: &stderr,
				Getenv: func(k string) string { return e[k] }})
			if code == 0 || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("exit %d, stderr %q: want a refusal saying %q", code, stderr.String(), c.want)
			}
		})
	}
}

// TestServeCeiling checks that the server's approval mode and limits are
// the most a request may ask for: a request may tighten them, and one
// asking for more is refused with what the server allows, starting no run.
func TestServeCeiling(t *testing.T) {
	dir, model, env := serveProject(t, "\"*\":\n  - text: hi\n")
	b := startCadre(t, dir, env, "serve", "--listen", "127.0.0.1:0", "--model", model, "--approve", "none",
		"--max-agents", "10", "--budget-tokens", "1000", "--timeout", "5m")
	url, tok := pageAddress(t, b.stdout.find(t, func(string) bool { return true }))
	for _, c := range []struct {
		name string
		req  map[string]any
		want []string
	}{
		{"approve all", map[string]any{"approve": "all"}, []string{`approve "all"`, "approval mode is none"}},
		{"approve ask", map[string]any{"approve": "ask"}, []string{`approve "ask"`, "may use none"}},
		{"more agents", map[string]any{"limits": map[string]any{"max_agents": 11}}, []string{"limits.max_agents 11", "at most 10"}},
		{"more depth", map[string]any{"limits": map[string]any{"max_depth": 4}}, []string{"limits.max_depth 4", "at most 3"}},
		{"more concurrent", map[string]any{"limits": map[string]any{"max_concurrent": 17}}, []string{"limits.max_concurrent 17", "at most 16"}},
		{"more turns", map[string]any{"limits": map[string]any{"max_turns": 26}}, []string{"limits.max_turns 26", "at most 25"}},
		{"more tokens", map[string]any{"limits": map[string]any{"budget_tokens": 1001}}, []string{"limits.budget_tokens 1001", "at most 1000"}},
		{"no budget", map[string]any{"limits": map[string]any{"budget_tokens": -1}}, []string{"no budget", "at most 1000"}},
		{"more time", map[string]any{"limits": map[string]any{"timeout": "6m"}}, []string{"limits.timeout 6m0s", "at most 5m0s"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.req["task"] = "Delete the files."
			var e struct{ Error string }
			st := postJSON(t, url+"api/runs", tok, c.req, &e)
			if st != http.StatusForbidden {
				t.Fatalf("%v: %d %q, want 403", c.req, st, e.Error)
			}
			for _, w := range c.want {
				if !strings.Contains(e.Error, w) {
					t.Errorf("the refusal %q does not say %q", e.Error, w)
				}
			}
		})
	}
	var runs struct{ Runs []json.RawMessage }
	if getJSON(t, url+"api/runs", tok, &runs); len(runs.Runs) != 0 {
		t.Errorf("%d runs started by refused requests", len(runs.Runs))
	}
	// Tighter settings, and the server's own, are taken.
	for _, req := range []map[string]any{
		{"task": "Say hi.", "approve": "none", "limits": map[string]any{"max_agents": 10, "budget_tokens": 500, "timeout": "1m", "max_depth": 1}},
		{"task": "Say hi."},
	} {
		var e struct{ Error string }
		if st := postJSON(t, url+"api/runs", tok, req, &e); st != http.StatusCreated {
			t.Errorf("%v: %d %q, want 201", req, st, e.Error)
		}
	}
}

// TestWithinServer checks the comparison of a request's settings with the
// server's, where a zero means the default and -1 no budget.
func TestWithinServer(t *testing.T) {
	srv := cadre.Limits{MaxAgents: 10, BudgetTokens: -1}
	for _, c := range []struct {
		name       string
		serverMode tool.ApprovalMode
		server     cadre.Limits
		mode       tool.ApprovalMode
		req        cadre.Limits
		ok         bool
	}{
		{"same", tool.ApproveAsk, srv, tool.ApproveAsk, cadre.Limits{}, true},
		{"stricter mode", tool.ApproveAll, srv, tool.ApproveAsk, cadre.Limits{}, true},
		{"none under ask", tool.ApproveAsk, srv, tool.ApproveNone, cadre.Limits{}, true},
		{"looser mode", tool.ApproveAsk, srv, tool.ApproveAll, cadre.Limits{}, false},
		{"no budget under no budget", tool.ApproveAsk, srv, tool.ApproveAsk, cadre.Limits{BudgetTokens: -1}, true},
		{"a budget under no budget", tool.ApproveAsk, srv, tool.ApproveAsk, cadre.Limits{BudgetTokens: 10}, true},
		{"default budget", tool.ApproveAsk, cadre.Limits{}, tool.ApproveAsk, cadre.Limits{BudgetTokens: cadre.DefaultBudgetTokens + 1}, false},
		{"any time under none", tool.ApproveAsk, srv, tool.ApproveAsk, cadre.Limits{Timeout: time.Hour}, true},
		{"depth under no subagents", tool.ApproveAsk, cadre.Limits{MaxDepth: cadre.NoSubagents}, tool.ApproveAsk, cadre.Limits{MaxDepth: 1}, false},
		{"fewer agents", tool.ApproveAsk, srv, tool.ApproveAsk, cadre.Limits{MaxAgents: 10}, true},
		{"more agents", tool.ApproveAsk, srv, tool.ApproveAsk, cadre.Limits{MaxAgents: 11}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			msg := withinServer(c.serverMode, c.server, c.mode, c.req)
			if (msg == "") != c.ok {
				t.Errorf("withinServer = %q, want ok %v", msg, c.ok)
			}
		})
	}
}

// TestServeRefusesScriptedModel checks that a request cannot make a server
// of another model play a scripted model, which reads a file the request
// names.
func TestServeRefusesScriptedModel(t *testing.T) {
	dir, model, env := serveProject(t, "\"*\":\n  - text: hi\n")
	// No run starts: the model is never called.
	env["OPENAI_API_KEY"], env["OPENAI_BASE_URL"] = "sk-test", "http://127.0.0.1:1/v1"
	b := startCadre(t, dir, env, "serve", "--listen", "127.0.0.1:0", "--model", "openai:gpt-4o-mini")
	url, tok := pageAddress(t, b.stdout.find(t, func(string) bool { return true }))
	// However the name is spelt: the provider is read as the models read it.
	for _, m := range []string{model, " " + model, "\t" + model, strings.Replace(model, "scripted:", "scripted :", 1)} {
		var e struct{ Error string }
		if st := postJSON(t, url+"api/runs", tok, map[string]any{"task": "Say hi.", "model": m}, &e); st != http.StatusForbidden || !strings.Contains(e.Error, "scripted") {
			t.Errorf("the scripted model %q asked of an OpenAI server: %d %q, want 403", m, st, e.Error)
		}
	}
}

// TestServeOnTimeouts checks that the listening server bounds a request's
// headers and an idle connection (bodies and streams are the server
// package's, tested there).
func TestServeOnTimeouts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := serveOn(ln, http.NotFoundHandler())
	defer hs.close()
	if hs.srv.ReadHeaderTimeout != headerTimeout || hs.srv.IdleTimeout != idleTimeout || idleTimeout <= 0 {
		t.Errorf("ReadHeaderTimeout %s, IdleTimeout %s: want %s and %s", hs.srv.ReadHeaderTimeout, hs.srv.IdleTimeout, headerTimeout, idleTimeout)
	}
}
