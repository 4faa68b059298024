package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/model/scripted"
)

// chromium returns the path of the browser the page tests drive. They
// are skipped when there is none, unless CI is set: then they fail.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("CADRE_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium to test the page with: install Debian's chromium package (.ci/run does), or name a browser with CADRE_CHROMIUM")
	}
	t.Skip("no chromium: the page tests need Debian's chromium package (or CADRE_CHROMIUM naming a browser)")
	return ""
}

// browser starts a headless Chromium for the test and returns its context.
// A browser that dies while it starts (a busy machine) is started again,
// up to three times.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromium(t)
	var err error
	for try := 1; try <= 3; try++ {
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1440, 1000),
			chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()))
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
		ctx, cancelTime := context.WithTimeout(ctx, 3*failsafe)
		stop := func() {
			cancelTime()
			cancel()
			cancelAlloc()
		}
		if err = chromedp.Do(ctx); err == nil {
			t.Cleanup(stop)
			return ctx
		}
		stop()
		t.Logf("chromium did not start (try %d of 3): %v", try, err)
	}
	t.Fatalf("start chromium (%s): %v", path, err)
	return nil
}

// artifacts is where the page tests save their screenshots.
func artifacts(t *testing.T) string {
	if d := os.Getenv("CADRE_ARTIFACTS"); d != "" {
		d = filepath.Join(d, t.Name())
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.ArtifactDir()
}

func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// run runs browser actions, failing the test with what it was doing.
func run(t *testing.T, ctx context.Context, what string, acts ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, acts...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression into a T.
func eval[T any](t *testing.T, ctx context.Context, what, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// waitJS polls a JavaScript condition until it is true.
func waitJS(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	deadline := time.Now().Add(failsafe)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](cond))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
			t.Fatalf("gave up waiting for %s; the page shows:\n%s", what, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rowStatus is JavaScript giving an agent row's status text.
func rowStatus(id cadre.AgentID) string {
	return fmt.Sprintf(`(document.querySelector('[data-agent=%q] .pill')||{}).textContent`, string(id))
}

func statusIs(id cadre.AgentID, st cadre.Status) string {
	return fmt.Sprintf(`%s === %q`, rowStatus(id), string(st))
}

// TestPage drives the page in Chromium: a run started from the form grows
// its tree, a middle agent's Stop cancels exactly its subtree, the root's
// question and approval are answered in their forms, and the finished run
// is shown again after a reload and in the list.
func TestPage(t *testing.T) {
	ctx := browser(t)
	dir := artifacts(t)
	f := newFixture(t, fixtureOptions{})

	run(t, ctx, "open the page", chromedp.Navigate(f.srv.URL+"/"), chromedp.WaitVisible(`#start`))
	waitJS(t, ctx, "the empty list", `!!document.querySelector('#runs .empty')`)
	screenshot(t, ctx, dir, "1-runs-empty")

	run(t, ctx, "start a run from the form",
		chromedp.SendKeys(`#task`, "Write the quarterly report, with a chart per team."),
		chromedp.SetValue(`#approve`, "ask"),
		chromedp.Click(`#start-button`))
	waitJS(t, ctx, "the run's page", `location.pathname.startsWith('/runs/')`)
	path := eval[string](t, ctx, "read the URL", `location.pathname`)
	id := strings.TrimPrefix(path, "/runs/")

	all := []cadre.AgentID{"root", "root/mid.1", "root/mid.2", "root/mid.1/leaf.1", "root/mid.1/leaf.2", "root/mid.2/leaf.1", "root/mid.2/leaf.2"}
	for _, a := range all {
		waitJS(t, ctx, string(a)+" in the tree", fmt.Sprintf(`!!document.querySelector('[data-agent=%q]')`, string(a)))
	}
	// Rows are in tree order: every agent after its parent's subtree.
	order := eval[[]string](t, ctx, "read the rows", `[...document.querySelectorAll('#agents [data-agent]')].map(r => r.dataset.agent)`)
	if want := []string{"root", "root/mid.1", "root/mid.1/leaf.1", "root/mid.1/leaf.2", "root/mid.2", "root/mid.2/leaf.1", "root/mid.2/leaf.2"}; strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("rows in the order %v, want %v", order, want)
	}
	// The tree's lines: ├ for a child with more siblings below, └ for the
	// last, │ leading past a subtree to the next sibling.
	lines := eval[[]string](t, ctx, "read the tree's lines", `[...document.querySelectorAll('#agents [data-agent] .tw')].map(e => e.textContent)`)
	if want := []string{"", "├ ", "│ ├ ", "│ └ ", "└ ", "  ├ ", "  └ "}; strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("the tree's lines are %q, want %q", lines, want)
	}
	waitJS(t, ctx, "the root's question", `!!document.querySelector('form[data-question="root"]')`)
	waitJS(t, ctx, "the leaves running", statusIs("root/mid.2/leaf.2", cadre.StatusRunning)+" && "+statusIs("root/mid.1/leaf.2", cadre.StatusRunning))
	screenshot(t, ctx, dir, "2-tree-and-question")

	// Stop the first mid: it and its leaves end, nothing else does.
	run(t, ctx, "press Stop on root/mid.1", chromedp.Click(`button[data-stop="root/mid.1"]`))
	for _, a := range []cadre.AgentID{"root/mid.1", "root/mid.1/leaf.1", "root/mid.1/leaf.2"} {
		waitJS(t, ctx, string(a)+" cancelled", statusIs(a, cadre.StatusCancelled))
	}
	for _, a := range []cadre.AgentID{"root", "root/mid.2", "root/mid.2/leaf.1", "root/mid.2/leaf.2"} {
		st := eval[string](t, ctx, "read "+string(a), rowStatus(a))
		if cadre.Status(st).Terminal() {
			t.Errorf("%s shows %s after stopping root/mid.1", a, st)
		}
	}
	waitJS(t, ctx, "the header counting four agents working", `document.querySelector('#run-facts').textContent.includes('7 agents4 working')`)
	v := f.waitFor(id, "the subtree cancelled", func(v *runView) bool { return status(v, "root/mid.1/leaf.2") == cadre.StatusCancelled })
	if st := status(v, "root/mid.2/leaf.1"); st.Terminal() {
		t.Errorf("the engine has root/mid.2/leaf.1 %s", st)
	}
	screenshot(t, ctx, dir, "3-mid-stopped")

	// Answer the question; the approval follows.
	run(t, ctx, "answer the question",
		chromedp.SendKeys(`form[data-question="root"] textarea`, "Blue, please."),
		chromedp.Click(`form[data-question="root"] button[type=submit]`))
	waitJS(t, ctx, "the approval", `!!document.querySelector('[data-approval="root"]')`)
	waitJS(t, ctx, "the question gone", `!document.querySelector('form[data-question="root"]')`)
	screenshot(t, ctx, dir, "4-approval")
	pending := f.waitFor(id, "the approval", func(v *runView) bool { return len(v.Pending) == 1 }).Pending
	if got := eval[string](t, ctx, "read the approval's id", `document.querySelector('[data-approval="root"]').dataset.approvalId`); got != pending[0].ID {
		t.Errorf("the page shows approval %q, the server has %q", got, pending[0].ID)
	}
	// Drawn just after the answer, its buttons wait a moment before they take a click.
	run(t, ctx, "allow the call", chromedp.WaitEnabled(`[data-approval="root"] button[data-answer="yes"]`), chromedp.Click(`[data-approval="root"] button[data-answer="yes"]`))
	waitJS(t, ctx, "the approval gone", `!document.querySelector('[data-approval="root"]')`)

	f.open()
	waitJS(t, ctx, "the run done", `document.querySelector('#run-status').textContent === 'done'`)
	waitJS(t, ctx, "the answer", `document.querySelector('#answer').textContent === 'Final answer: the report is blue.'`)
	if n := f.touch.count(); n != 1 {
		t.Errorf("touch ran %d times, want once", n)
	}
	waitJS(t, ctx, "the header counting none working", `document.querySelector('#run-facts').textContent.includes('7 agents0 working')`)
	screenshot(t, ctx, dir, "5-done")

	// A reload shows the finished run from the store.
	run(t, ctx, "reload", chromedp.Reload())
	waitJS(t, ctx, "the finished run", `document.querySelector('#run-status').textContent === 'done' && document.querySelectorAll('#agents [data-agent]').length === 7`)
	for a, want := range map[cadre.AgentID]cadre.Status{"root": cadre.StatusDone, "root/mid.1": cadre.StatusCancelled, "root/mid.1/leaf.2": cadre.StatusCancelled,
		"root/mid.2": cadre.StatusDone, "root/mid.2/leaf.1": cadre.StatusDone} {
		waitJS(t, ctx, fmt.Sprintf("%s %s after the reload", a, want), statusIs(a, want))
	}
	waitJS(t, ctx, "the answer after the reload", `document.querySelector('#answer').textContent === 'Final answer: the report is blue.'`)
	screenshot(t, ctx, dir, "6-reloaded")

	run(t, ctx, "open the list", chromedp.Navigate(f.srv.URL+"/"))
	waitJS(t, ctx, "the run in the list", fmt.Sprintf(`(document.querySelector('[data-run=%q] .pill')||{}).textContent === 'done'`, id))
	screenshot(t, ctx, dir, "7-runs")
}

// TestPageStaleApproval clicks Allow on an approval that was answered
// elsewhere after the page drew it, while another approval of the same
// agent waits: the click must not allow the other call.
func TestPageStaleApproval(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, fixtureOptions{model: twoTouchModel()})
	id := f.start(RunRequest{Task: "Touch both files.", Approve: "ask"})
	first := f.pendingOne(id, "")
	run(t, ctx, "open the run", chromedp.Navigate(f.srv.URL+"/runs/"+id))
	waitJS(t, ctx, "the first approval", fmt.Sprintf(`!!document.querySelector('[data-approval-id=%q]')`, first.ID))
	eval[bool](t, ctx, "keep the first Allow button", `!!(window.staleAllow = document.querySelector('[data-approval] button[data-answer="yes"]'))`)

	// Another page denies the first; the second call asks.
	if st := f.do("POST", "/api/runs/"+id+"/answer", map[string]string{"id": first.ID, "answer": "no"}, nil); st != http.StatusOK {
		t.Fatalf("deny %s: %d", first.ID, st)
	}
	second := f.pendingOne(id, first.ID)
	waitJS(t, ctx, "the second approval", fmt.Sprintf(`!!document.querySelector('[data-approval-id=%q]')`, second.ID))

	// The click that was meant for the first arrives late.
	eval[bool](t, ctx, "click the stale Allow", `(window.staleAllow.click(), true)`)
	waitJS(t, ctx, "the stale click refused", `window.staleAllow.closest('.ask').querySelector('.error').textContent.includes('not waiting')`)
	if v := f.waitFor(id, "the run", func(*runView) bool { return true }); len(v.Pending) != 1 || v.Pending[0].ID != second.ID {
		t.Errorf("after the stale click, waiting: %+v, want %s", v.Pending, second.ID)
	}
	if got := f.touch.touched(); len(got) != 0 {
		t.Errorf("the stale click touched %v", got)
	}

	allowSecond := fmt.Sprintf(`[data-approval-id=%q] button[data-answer="yes"]`, second.ID)
	run(t, ctx, "allow the second", chromedp.WaitEnabled(allowSecond), chromedp.Click(allowSecond))
	waitJS(t, ctx, "the run done", `document.querySelector('#run-status').textContent === 'done'`)
	if got := f.touch.touched(); len(got) != 1 || !strings.Contains(second.Summary, got[0]) {
		t.Errorf("touched %v, want only the second call's file (%s)", got, second.Summary)
	}
}

// TestPageToken drives the page of a server with a token: opened from
// the address with #token=, it takes the token out of the address, keeps
// it for the tab, starts a run and follows its events with it, and sets no
// cookie, so another server of the host (another port) is sent nothing.
// An older ?token= link works too, and a tab without the token says how to
// get it.
func TestPageToken(t *testing.T) {
	const tok = "page-token_0123456789-abcdefghijklmnopqrstuvw"
	ctx := browser(t)
	f := newFixture(t, fixtureOptions{token: tok})
	var (
		mu      sync.Mutex
		cookies []string
	)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		cookies = append(cookies, r.Header.Values("Cookie")...)
		mu.Unlock()
		w.Write([]byte("another server of this host"))
	}))
	defer other.Close()

	run(t, ctx, "open the page from its address", chromedp.Navigate(f.srv.URL+"/#token="+tok), chromedp.WaitVisible(`#start`))
	waitJS(t, ctx, "the empty list", `!!document.querySelector('#runs .empty')`)
	if href := eval[string](t, ctx, "read the address", `location.href`); strings.Contains(href, "token") {
		t.Errorf("the address still holds the token: %s", href)
	}
	if got := eval[string](t, ctx, "read sessionStorage", `sessionStorage.getItem('cadre_token')`); got != tok {
		t.Errorf("sessionStorage holds %q, want the token", got)
	}
	run(t, ctx, "start a run from the form",
		chromedp.SendKeys(`#task`, "Write the quarterly report."),
		chromedp.Click(`#start-button`))
	waitJS(t, ctx, "the run's page", `location.pathname.startsWith('/runs/')`)
	id := strings.TrimPrefix(eval[string](t, ctx, "read the URL", `location.pathname`), "/runs/")
	waitJS(t, ctx, "the tree from the event stream", `document.querySelectorAll('#agents [data-agent]').length === 7`)
	waitJS(t, ctx, "the root's question", `!!document.querySelector('form[data-question="root"]')`)
	run(t, ctx, "reload", chromedp.Reload())
	waitJS(t, ctx, "the tree after the reload", `document.querySelectorAll('#agents [data-agent]').length === 7`)
	if c := eval[string](t, ctx, "read document.cookie", `document.cookie`); c != "" {
		t.Errorf("the page has the cookies %q", c)
	}

	// An older link with ?token=, in a tab of its own.
	tab, cancel := chromedp.NewContext(ctx)
	defer cancel()
	run(t, tab, "open an old link", chromedp.Navigate(f.srv.URL+"/runs/"+id+"?token="+tok))
	waitJS(t, tab, "the tree in the new tab", `document.querySelectorAll('#agents [data-agent]').length === 7`)
	if href := eval[string](t, tab, "read the address", `location.href`); strings.Contains(href, "token") {
		t.Errorf("the address still holds the token: %s", href)
	}

	// A tab opened without the token says how to get it.
	bare, cancelBare := chromedp.NewContext(ctx)
	defer cancelBare()
	run(t, bare, "open the run without the token", chromedp.Navigate(f.srv.URL+"/runs/"+id))
	waitJS(t, bare, "the message", `document.querySelector('#run-error').textContent.includes('#token=')`)

	// Another server of the host is sent no cookie.
	run(t, ctx, "open another server of the host", chromedp.Navigate(other.URL+"/"))
	waitJS(t, ctx, "its page", `document.body.textContent.includes('another server')`)
	mu.Lock()
	if len(cookies) != 0 {
		t.Errorf("another server of the host was sent the cookies %q", cookies)
	}
	mu.Unlock()

	// An agent's transcript, which a link cannot fetch with the token's
	// header, opens in a tab of its own. (Last: the tab it opens comes to
	// the front, and the pages behind it draw nothing.)
	run(t, tab, "open the root's transcript", chromedp.Click(`[data-agent="root"] a[data-transcript]`))
	deadline := time.Now().Add(failsafe)
	var transcript context.Context
	for transcript == nil {
		targets, err := chromedp.Targets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, tg := range targets {
			if strings.HasPrefix(tg.URL, "blob:") {
				var cancelTab context.CancelFunc
				transcript, cancelTab = chromedp.NewContext(ctx, chromedp.WithTargetID(tg.TargetID))
				defer cancelTab()
			}
		}
		if transcript == nil && time.Now().After(deadline) {
			t.Fatal("no tab opened with the transcript")
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitJS(t, transcript, "the transcript", `document.body.textContent.includes('"run": "`+id+`"')`)
}

// treeModel plays a run of 1+10+100+1000 agents: the root and mids spawn
// ten children each; workers wait for the gate, then report.
func treeModel(gate <-chan struct{}) *scripted.Model {
	return scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		depth := strings.Count(string(req.Agent), "/")
		if depth < 3 {
			if !hasCall(req.Messages, loop.ToolSpawnAgent) {
				def := "mid"
				if depth == 2 {
					def = "leaf"
				}
				args := make([]string, 10)
				for i := range args {
					args[i] = fmt.Sprintf(`{"agent":%q,"task":"part %d of %s"}`, def, i+1, req.Agent)
				}
				return calls(loop.ToolSpawnAgent, args...), nil
			}
			if depth > 0 && !hasCall(req.Messages, loop.ToolSendAgentMessage) {
				return calls(loop.ToolSendAgentMessage, `{"text":"My part is done."}`), nil
			}
			return text("All parts are done."), nil
		}
		if !hasCall(req.Messages, loop.ToolSendAgentMessage) {
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
			return calls(loop.ToolSendAgentMessage, `{"text":"Unit done."}`), nil
		}
		return text("Done."), nil
	})
}

// TestPageThousandAgents opens a run of 1,111 agents and lets them all
// finish while the page watches, and reports what rendering cost. It
// asserts only what the page shows, never a time.
func TestPageThousandAgents(t *testing.T) {
	const agents = 1111
	ctx := browser(t)
	dir := artifacts(t)
	gate := make(chan struct{})
	f := newFixture(t, fixtureOptions{model: treeModel(gate)})
	defer f.open()
	id := f.start(RunRequest{Task: "Split the audit across a thousand workers.", Limits: &RunLimits{MaxAgents: 2000, MaxConcurrent: 2000, MaxDepth: 3}})
	f.waitFor(id, "all the agents", func(v *runView) bool { return len(v.Tree.Agents) == agents })

	// Opened while every worker is busy: the page replays the run.
	run(t, ctx, "open the run", chromedp.Navigate(f.srv.URL+"/runs/"+id))
	waitJS(t, ctx, "every row", fmt.Sprintf(`document.querySelectorAll('#agents [data-agent]').length === %d`, agents))
	type replayFigures struct {
		FirstRenderMs   float64 `json:"firstRenderMs"`
		FirstRenderRows int     `json:"firstRenderRows"`
		AllRowsMs       float64 `json:"allRowsMs"`
		Flushes         int     `json:"flushes"`
		FlushTotalMs    float64 `json:"flushTotalMs"`
		FlushMaxMs      float64 `json:"flushMaxMs"`
		Events          int     `json:"events"`
		EventMs         float64 `json:"eventMs"`
	}
	first := eval[replayFigures](t, ctx, "read the figures", `window.cadreStats`)
	screenshot(t, ctx, dir, "1-thousand-running")

	// Then every worker finishes while the page is live; a frame sampler
	// records how long the page's frames took.
	eval[bool](t, ctx, "start the frame sampler", `(() => {
		const s = window.frameSampler = { frames: 0, longest: 0, over50: 0, last: performance.now() };
		const loop = (now) => { const d = now - s.last; s.last = now; s.frames++; s.longest = Math.max(s.longest, d); if (d > 50) s.over50++; s.raf = requestAnimationFrame(loop); };
		s.raf = requestAnimationFrame(loop);
		const st = window.cadreStats; s.flushes0 = st.flushes; s.total0 = st.flushTotalMs; s.events0 = st.events; s.eventMs0 = st.eventMs; st.flushMaxMs = 0;
		return true; })()`)
	close(gate)
	waitJS(t, ctx, "the run done", `document.querySelector('#run-status').textContent === 'done'`)
	waitJS(t, ctx, "every row done", `[...document.querySelectorAll('#agents .pill')].every(p => p.textContent === 'done')`)
	type liveFigures struct {
		Frames  int     `json:"frames"`
		Longest float64 `json:"longest"`
		Over50  int     `json:"over50"`
		Flushes int     `json:"flushes"`
		TotalMs float64 `json:"totalMs"`
		MaxMs   float64 `json:"maxMs"`
		Events  int     `json:"events"`
		EventMs float64 `json:"eventMs"`
	}
	live := eval[liveFigures](t, ctx, "read the live figures", `(() => { const s = window.frameSampler, st = window.cadreStats; cancelAnimationFrame(s.raf);
		return { frames: s.frames, longest: s.longest, over50: s.over50, flushes: st.flushes - s.flushes0, totalMs: st.flushTotalMs - s.total0, maxMs: st.flushMaxMs, events: st.events - s.events0, eventMs: st.eventMs - s.eventMs0 }; })()`)
	screenshot(t, ctx, dir, "2-thousand-done")

	t.Logf("replay of %d agents (%d events, %.0f ms handling them): first rows drawn %.0f ms after the script started (%d rows), all rows %.0f ms; %d frames drew, %.1f ms of drawing in all, the longest %.1f ms",
		agents, first.Events, first.EventMs, first.FirstRenderMs, first.FirstRenderRows, first.AllRowsMs, first.Flushes, first.FlushTotalMs, first.FlushMaxMs)
	mean := 0.0
	if live.Flushes > 0 {
		mean = live.TotalMs / float64(live.Flushes)
	}
	t.Logf("live, as %d agents finish (%d events, %.0f ms handling them): %d page frames, the longest %.0f ms apart, %d over 50 ms; %d drawing passes, %.2f ms on average, the longest %.1f ms",
		agents, live.Events, live.EventMs, live.Frames, live.Longest, live.Over50, live.Flushes, mean, live.MaxMs)
}

// TestPageApprovalDoubleClick: the second click of a double click on
// Allow does not answer the approval drawn in the place of the one it
// allowed: a model's calls queued behind a harmless one were allowed by
// a double click, unseen.
func TestPageApprovalDoubleClick(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, fixtureOptions{model: twoTouchModel()})
	id := f.start(RunRequest{Task: "Touch both files.", Approve: "ask"})
	first := f.pendingOne(id, "")
	run(t, ctx, "open the run", chromedp.Navigate(f.srv.URL+"/runs/"+id))
	allowFirst := fmt.Sprintf(`[data-approval-id=%q] button[data-answer="yes"]`, first.ID)
	run(t, ctx, "allow the first", chromedp.WaitEnabled(allowFirst), chromedp.Click(allowFirst))
	second := f.pendingOne(id, first.ID)
	allowSecond := fmt.Sprintf(`[data-approval-id=%q] button[data-answer="yes"]`, second.ID)
	run(t, ctx, "the second, clickable", chromedp.WaitEnabled(allowSecond))
	// The second click of a double click lands on it.
	eval[bool](t, ctx, "double click's second click", fmt.Sprintf(`(document.querySelector(%q).dispatchEvent(new MouseEvent("click", {detail: 2, bubbles: true})), true)`, allowSecond))
	if v := f.waitFor(id, "the run", func(*runView) bool { return true }); len(v.Pending) != 1 || v.Pending[0].ID != second.ID {
		t.Fatalf("after a double click's second click, waiting: %+v, want %s", v.Pending, second.ID)
	}
	if got := f.touch.touched(); len(got) != 1 {
		t.Errorf("touched %v, want the first file only", got)
	}
	run(t, ctx, "allow the second", chromedp.Click(allowSecond))
	waitJS(t, ctx, "the run done", `document.querySelector('#run-status').textContent === 'done'`)
}
