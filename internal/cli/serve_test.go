package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
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

func postJSON(t *testing.T, url string, body any, out any) int {
	t.Helper()
	b, _ := json.Marshal(body)
	res, err := http.Post(url, "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if out != nil {
		json.NewDecoder(res.Body).Decode(out)
	}
	return res.StatusCode
}

func getJSON(t *testing.T, url string, out any) int {
	t.Helper()
	res, err := http.Get(url)
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
	url := b.stdout.find(t, func(string) bool { return true })
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/") {
		t.Fatalf("the first line is %q, want the server's address", url)
	}

	var created struct{ ID string }
	if st := postJSON(t, url+"api/runs", map[string]any{"task": "Count the files.", "approve": "none", "limits": map[string]any{"max_agents": 5}}, &created); st != 201 {
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
		getJSON(t, url+"api/runs/"+created.ID, &view)
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
	if st := postJSON(t, url+"api/runs", map[string]any{"task": "x", "agent": "ghost"}, &e); st != 400 || !strings.Contains(e.Error, "helper") {
		t.Errorf("an unknown root agent: %d %q, want 400 listing the agents", st, e.Error)
	}
	if st := postJSON(t, url+"api/runs", map[string]any{"task": "x", "model": "nosuch:model"}, &e); st != 400 || !strings.Contains(e.Error, "nosuch") {
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

// TestServeNeedsToken checks that an address beyond this machine needs a
// token.
func TestServeNeedsToken(t *testing.T) {
	dir, model, env := serveProject(t, "\"*\":\n  - text: hi\n")
	var stderr strings.Builder
	code := Main(context.Background(), []string{"serve", "--listen", "0.0.0.0:0", "--model", model}, IO{Dir: dir, Stdout: io.Discard, Stderr: &stderr,
		Getenv: func(k string) string { return env[k] }})
	if code == 0 || !strings.Contains(stderr.String(), "CADRE_TOKEN") {
		t.Errorf("exit %d, stderr %q: want a refusal naming CADRE_TOKEN", code, stderr.String())
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
	runURL := line[i:]
	base, id, ok := strings.Cut(runURL, "/runs/")
	if !ok {
		t.Fatalf("no run in %q", runURL)
	}
	deadline := time.Now().Add(serveFailsafe)
	for {
		st := postJSON(t, base+"/api/runs/"+id+"/answer", map[string]string{"agent": "root", "answer": "green"}, nil)
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
