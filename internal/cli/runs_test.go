package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/journal"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/sqlite"
)

// The fixture's runs: done, running, failed, oldest first.
const (
	runDone    = "20250314-150926-a1b2c3"
	runRunning = "20250315-101500-d4e5f6"
	runFailed  = "20250315-120000-a1b2ff"
)

var (
	fixtureOwner = cadre.LeaseOwner{Host: "build-7", PID: 4242, Process: "elsewhere:1", Token: "fixture-token"}
	runsT0       = time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	fixtureChild = cadre.RootID.Child("research-assistant", 1)
	fixtureDeep  = fixtureChild.Child("critic", 1)
)

// emptyProject makes a repository without a .cadre folder and returns its
// directory and a home directory.
func emptyProject(t *testing.T) (dir, home string) {
	t.Helper()
	dir, home = t.TempDir(), t.TempDir()
	runsMust(t, os.MkdirAll(filepath.Join(dir, ".git"), 0o755))
	runsMust(t, os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
	return dir, home
}

// runsProject makes a project with an empty run store in .cadre/cadre.db
// and returns its directory, a home directory and the store, open for
// the test to write into.
func runsProject(t *testing.T) (dir, home string, s *sqlite.Store) {
	t.Helper()
	dir, home = emptyProject(t)
	s, err := sqlite.Open(t.Context(), filepath.Join(dir, ".cadre", "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return dir, home, s
}

// journal marshals loop inputs as an agent's journal entries.
func fixtureJournal(t *testing.T, run string, agent cadre.AgentID, at time.Time, ins ...loop.Input) []cadre.JournalEntry {
	t.Helper()
	out := make([]cadre.JournalEntry, len(ins))
	for i, in := range ins {
		data, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = cadre.JournalEntry{Run: run, Agent: agent, Seq: int64(i + 1), Kind: in.Kind(), Data: data, Time: at.Add(time.Duration(i) * time.Second)}
	}
	return out
}

func fixtureStart(id cadre.AgentID, system, task string) loop.Start {
	return loop.Start{
		Config:   loop.Config{ID: id, Parent: id.Parent(), Depth: id.Depth(), System: system},
		Task:     task,
		Messages: []cadre.Message{{Role: cadre.RoleUser, Content: task}},
	}
}

func fixtureReply(text string) loop.ModelResult {
	return loop.ModelResult{Response: &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: text}, Usage: cadre.Usage{InputTokens: 900, OutputTokens: 40}}}
}

func runsMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// writeRuns records three runs: one done with three agents (one failed, a
// finding), one running, one failed.
func writeRuns(t *testing.T, s cadre.Store) {
	t.Helper()
	ctx := t.Context()
	runsMust(t, s.CreateRun(ctx, &cadre.RunRecord{
		ID: runDone, Task: "Summarise the README\nand check the build", Status: cadre.StatusDone, Model: "openai:gpt-4o-mini",
		Started: runsT0, Ended: runsT0.Add(72 * time.Second), Usage: cadre.Usage{InputTokens: 10000, OutputTokens: 2345},
		Answer: "The README explains how to build cadre.", Agents: 3,
	}))
	agents := []*cadre.AgentRecord{
		{Run: runDone, ID: cadre.RootID, Definition: "default", Model: "openai:gpt-4o-mini", Task: "Summarise the README", Status: cadre.StatusDone,
			Turns: 4, Usage: cadre.Usage{InputTokens: 8000, OutputTokens: 1500}, Started: runsT0, Ended: runsT0.Add(72 * time.Second), Result: "The README explains how to build cadre."},
		{Run: runDone, ID: fixtureChild, Parent: cadre.RootID, Depth: 1, Definition: "research-assistant", Model: "openai:gpt-4o-mini", Task: "Find how cadre is built",
			Status: cadre.StatusDone, Turns: 2, Usage: cadre.Usage{InputTokens: 1500, OutputTokens: 600}, Started: runsT0.Add(5 * time.Second), Ended: runsT0.Add(25 * time.Second), Result: "Builds need Go 1.26."},
		{Run: runDone, ID: fixtureDeep, Parent: fixtureChild, Depth: 2, Definition: "critic", Model: "openai:gpt-4o-mini", Task: "Check the claim",
			Status: cadre.StatusFailed, Turns: 1, Usage: cadre.Usage{InputTokens: 500, OutputTokens: 245}, Started: runsT0.Add(10 * time.Second), Ended: runsT0.Add(12 * time.Second), Error: "tool crashed"},
	}
	for _, a := range agents {
		runsMust(t, s.PutAgent(ctx, a))
	}
	runsMust(t, s.Append(ctx, fixtureJournal(t, runDone, cadre.RootID, runsT0,
		fixtureStart(cadre.RootID, "You are the root agent.", "Summarise the README"),
		fixtureReply("The README explains how to build cadre."))))
	runsMust(t, s.Append(ctx, fixtureJournal(t, runDone, fixtureChild, runsT0.Add(5*time.Second),
		fixtureStart(fixtureChild, "You research.", "Find how cadre is built"),
		fixtureReply("Builds need Go 1.26."))))
	runsMust(t, s.Append(ctx, fixtureJournal(t, runDone, fixtureDeep, runsT0.Add(10*time.Second),
		fixtureStart(fixtureDeep, "You criticise.", "Check the claim"))))
	ev := func(agent cadre.AgentID, d time.Duration, data cadre.Payload) cadre.Event {
		return cadre.Event{Type: data.EventType(), Run: runDone, Agent: agent, Parent: agent.Parent(), Depth: agent.Depth(), Time: runsT0.Add(d), Data: data}
	}
	runsMust(t, s.AppendEvents(ctx, []cadre.Event{
		ev("", 0, cadre.RunStarted{Task: "Summarise the README"}),
		ev(cadre.RootID, 0, cadre.AgentStarted{Definition: "default", Model: "openai:gpt-4o-mini"}),
		ev(fixtureChild, 5*time.Second, cadre.AgentSpawned{Definition: "research-assistant", Mode: "sync", Task: "Find how cadre is built"}),
		ev(fixtureChild, 6*time.Second, cadre.ModelDelta{Text: "Builds"}),
		ev(fixtureChild, 7*time.Second, cadre.ToolCalled{Tool: "read_file", Arguments: `{"path":"README.md"}`}),
		ev(fixtureDeep, 12*time.Second, cadre.AgentFailed{Error: "tool crashed"}),
		ev(fixtureChild, 25*time.Second, cadre.FindingReported{Title: "subagent:research-assistant", Content: "Builds need Go 1.26."}),
		ev("", 72*time.Second, cadre.RunCompleted{Answer: "The README explains how to build cadre."}),
	}))

	// The running run is carried on by a process of another machine, whose
	// lease holds for the test.
	runsMust(t, s.CreateRun(ctx, &cadre.RunRecord{ID: runRunning, Task: "Refactor the store", Status: cadre.StatusRunning, Model: "openai:gpt-4o-mini", Started: runsT0.Add(19 * time.Hour)}))
	_, err := s.AcquireLease(ctx, cadre.LeaseRequest{Run: runRunning, Owner: fixtureOwner, TTL: time.Hour})
	runsMust(t, err)
	runsMust(t, s.PutAgent(ctx, &cadre.AgentRecord{Run: runRunning, ID: cadre.RootID, Definition: "default", Task: "Refactor the store", Status: cadre.StatusRunning,
		Usage: cadre.Usage{InputTokens: 3000, OutputTokens: 400}, Started: runsT0.Add(19 * time.Hour)}))

	runsMust(t, s.CreateRun(ctx, &cadre.RunRecord{ID: runFailed, Task: "Write the changelog", Status: cadre.StatusFailed, Model: "openai:gpt-4o-mini",
		Started: runsT0.Add(21 * time.Hour), Ended: runsT0.Add(21*time.Hour + 4200*time.Millisecond), Error: "model unavailable: 503 from the provider", Agents: 1}))
	runsMust(t, s.PutAgent(ctx, &cadre.AgentRecord{Run: runFailed, ID: cadre.RootID, Definition: "default", Task: "Write the changelog", Status: cadre.StatusFailed,
		Started: runsT0.Add(21 * time.Hour), Ended: runsT0.Add(21*time.Hour + 4200*time.Millisecond), Error: "model unavailable: 503 from the provider"}))
}

// lineWith returns the first line of out containing s.
func lineContaining(t *testing.T, out, s string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	t.Fatalf("no line contains %q in:\n%s", s, out)
	return ""
}

func TestRunsList(t *testing.T) {
	dir, home, s := runsProject(t)
	writeRuns(t, s)
	res := runCadre(t, dir, home, "runs", "list")
	if res.code != 0 {
		t.Fatalf("cadre runs list exited %d: %s", res.code, res.stderr)
	}
	lines := strings.Split(strings.TrimRight(res.stdout, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("got %d lines, want a header and 3 runs:\n%s", len(lines), res.stdout)
	}
	header := lines[0]
	if got := strings.Fields(header); !cmp.Equal(got, []string{"ID", "STARTED", "STATUS", "TASK", "AGENTS", "TOKENS", "DURATION"}) {
		t.Errorf("header columns %q", got)
	}
	for i, id := range []string{runFailed, runRunning, runDone} {
		if !strings.HasPrefix(lines[i+1], id+"  ") {
			t.Errorf("line %d is %q, want run %s (newest first)", i+1, lines[i+1], id)
		}
	}
	done := lineContaining(t, res.stdout, runDone)
	for _, want := range []string{startedText(runsT0), "✓ done", "Summarise the README and check the build", "12.3k", "1m12s"} {
		if !strings.Contains(done, want) {
			t.Errorf("the done run's line %q lacks %q", done, want)
		}
	}
	// A run in progress counts its agents and tokens from their records.
	running := lineContaining(t, res.stdout, runRunning)
	if f := strings.Fields(running); !strings.Contains(running, "▶ running") || !slicesContain(f, "1") || !slicesContain(f, "3.4k") {
		t.Errorf("the running run's line %q does not show ▶ running, 1 agent and 3.4k tokens", running)
	}
	if failed := lineContaining(t, res.stdout, runFailed); !strings.Contains(failed, "✗ failed") || !strings.Contains(failed, "4.2s") {
		t.Errorf("the failed run's line %q does not show ✗ failed and 4.2s", failed)
	}

	res = runCadre(t, dir, home, "runs", "list", "--limit", "1")
	if !strings.Contains(res.stdout, runFailed) || strings.Contains(res.stdout, runDone) || !strings.Contains(res.stdout, "the 1 newest of 3 runs") {
		t.Errorf("runs list --limit 1:\n%s", res.stdout)
	}

	res = runCadre(t, dir, home, "runs", "list", "--json")
	var got []struct {
		ID     string      `json:"id"`
		Agents int         `json:"agents"`
		Usage  cadre.Usage `json:"usage"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &got); err != nil {
		t.Fatalf("runs list --json: %v\n%s", err, res.stdout)
	}
	if len(got) != 3 || got[0].ID != runFailed || got[1].Agents != 1 || got[1].Usage.Total() != 3400 || got[2].Usage.Total() != 12345 {
		t.Errorf("runs list --json: %+v", got)
	}
}

func utf8Len(s string) int { return len([]rune(s)) }

func slicesContain(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestRunsColumnsAligned checks that every column starts at the same
// place on every line of the list.
func TestRunsColumnsAligned(t *testing.T) {
	dir, home, s := runsProject(t)
	writeRuns(t, s)
	res := runCadre(t, dir, home, "runs", "list")
	lines := strings.Split(strings.TrimRight(res.stdout, "\n"), "\n")
	// STATUS starts where every status mark does.
	col := utf8Len(lines[0][:strings.Index(lines[0], "STATUS")])
	for _, l := range lines[1:] {
		r := []rune(l)
		if len(r) <= col || !strings.ContainsRune("✓▶✗", r[col]) {
			t.Errorf("line %q has no status mark at column %d, where STATUS is", l, col)
		}
	}
	// DURATION ends where every duration does.
	end := utf8Len(lines[0])
	for _, l := range lines[1:] {
		if utf8Len(l) != end {
			t.Errorf("line %q ends at column %d, DURATION at %d", l, utf8Len(l), end)
		}
	}
}

func TestRunsNoStore(t *testing.T) {
	dir, home := emptyProject(t)
	db := filepath.Join(dir, ".cadre", "cadre.db")
	res := runCadre(t, dir, home, "runs", "list")
	if res.code != 0 || !strings.Contains(res.stdout, "no runs recorded yet in .cadre/cadre.db") {
		t.Errorf("runs list without a store: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	for _, args := range [][]string{{"runs", "show", "last"}, {"runs", "export", runDone}} {
		res := runCadre(t, dir, home, args...)
		if res.code == 0 || !strings.Contains(res.stderr, "no runs recorded yet in .cadre/cadre.db") {
			t.Errorf("%s without a store: exit %d, stderr %q", strings.Join(args, " "), res.code, res.stderr)
		}
	}
	if res := runCadre(t, dir, home, "runs", "list", "--json"); res.code != 0 || strings.TrimSpace(res.stdout) != "[]" {
		t.Errorf("runs list --json without a store: exit %d, stdout %q", res.code, res.stdout)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("reading the runs created %s (stat: %v)", db, err)
	}
	if res := runCadre(t, dir, home, "runs", "list", "--store", "none"); res.code == 0 || !strings.Contains(res.stderr, "turned off") {
		t.Errorf("runs list --store none: exit %d, stderr %q", res.code, res.stderr)
	}
}

// TestRunsStoreLocation reads a store named by --store and by CADRE_STORE.
func TestRunsStoreLocation(t *testing.T) {
	dir, home := emptyProject(t)
	s, err := sqlite.Open(t.Context(), filepath.Join(dir, "elsewhere", "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	writeRuns(t, s)
	s.Close()
	if res := runCadre(t, dir, home, "runs", "list", "--store", "elsewhere/runs.db"); res.code != 0 || !strings.Contains(res.stdout, runDone) {
		t.Errorf("runs list --store elsewhere/runs.db: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	var out, errb bytes.Buffer
	env := map[string]string{"HOME": home, "CADRE_STORE": filepath.Join(dir, "elsewhere", "runs.db")}
	code := Main(context.Background(), []string{"runs", "show", "last"}, IO{Stdout: &out, Stderr: &errb, Dir: dir, Getenv: func(k string) string { return env[k] }})
	if code != 0 || !strings.Contains(out.String(), runFailed) {
		t.Errorf("runs show last with CADRE_STORE: exit %d\n%s%s", code, out.String(), errb.String())
	}
}

func TestRunsShow(t *testing.T) {
	dir, home, s := runsProject(t)
	writeRuns(t, s)
	res := runCadre(t, dir, home, "runs", "show", runDone)
	if res.code != 0 {
		t.Fatalf("runs show exited %d: %s", res.code, res.stderr)
	}
	out := res.stdout
	for _, want := range []string{
		"Run      " + runDone,
		"Status   ✓ done",
		"Task     Summarise the README and check the build",
		"Took     1m12s",
		"Tokens   12.3k (10k in, 2.3k out)",
		"\nFindings\n  subagent:research-assistant (root/research-assistant.1)\n    Builds need Go 1.26.\n",
		"\nAnswer\nThe README explains how to build cadre.\n",
		"✗ root/research-assistant.1/critic.1 failed: tool crashed",
		"cadre runs show " + runDone + " --agent root/research-assistant.1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("runs show lacks %q:\n%s", want, out)
		}
	}
	// The tree: indented by depth, with marks, turns, tokens and times.
	for _, tc := range []struct {
		prefix string
		fields []string
	}{
		{"✓ root ", []string{"done", "4", "9.5k", "1m12s"}},
		{"  ✓ research-assistant.1 ", []string{"done", "2", "2.1k", "20s"}},
		{"    ✗ critic.1 ", []string{"failed", "1", "745", "2s"}},
	} {
		line := lineContaining(t, out, tc.prefix)
		if !strings.HasPrefix(line, tc.prefix) {
			t.Errorf("tree line %q does not start with %q", line, tc.prefix)
		}
		for _, f := range tc.fields {
			if !slicesContain(strings.Fields(line), f) {
				t.Errorf("tree line %q lacks %q", line, f)
			}
		}
	}
	if strings.Index(out, "✓ root") > strings.Index(out, "research-assistant.1 ") || strings.Index(out, "research-assistant.1 ") > strings.Index(out, "critic.1") {
		t.Errorf("the tree is not in parent-then-child order:\n%s", out)
	}

	res = runCadre(t, dir, home, "runs", "show", runFailed)
	if !strings.Contains(res.stdout, "The run failed: model unavailable: 503 from the provider") {
		t.Errorf("runs show of a failed run does not say why:\n%s", res.stdout)
	}
	if n := strings.Count(res.stdout, "model unavailable"); n != 1 {
		t.Errorf("runs show of a failed run gives its error %d times, want once:\n%s", n, res.stdout)
	}
	res = runCadre(t, dir, home, "runs", "show", runRunning)
	if !strings.Contains(res.stdout, "cadre runs show --follow "+runRunning) {
		t.Errorf("runs show of a running run does not say how to follow it:\n%s", res.stdout)
	}
}

func TestRunsShowJSON(t *testing.T) {
	dir, home, s := runsProject(t)
	writeRuns(t, s)
	res := runCadre(t, dir, home, "runs", "show", runDone, "--json")
	var got struct {
		Run      cadre.RunRecord      `json:"run"`
		Agents   []*cadre.AgentRecord `json:"agents"`
		Findings []cadre.Finding      `json:"findings"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &got); err != nil {
		t.Fatalf("runs show --json: %v\n%s", err, res.stdout)
	}
	wantRun, err := s.GetRun(t.Context(), runDone)
	runsMust(t, err)
	wantAgents, err := s.ListAgents(t.Context(), runDone)
	runsMust(t, err)
	if d := cmp.Diff(*wantRun, got.Run); d != "" {
		t.Errorf("run (-want +got):\n%s", d)
	}
	if d := cmp.Diff(wantAgents, got.Agents); d != "" {
		t.Errorf("agents (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]cadre.Finding{{Agent: fixtureChild, Title: "subagent:research-assistant", Content: "Builds need Go 1.26."}}, got.Findings); d != "" {
		t.Errorf("findings (-want +got):\n%s", d)
	}
}

func TestRunsShowAgent(t *testing.T) {
	dir, home, s := runsProject(t)
	writeRuns(t, s)
	res := runCadre(t, dir, home, "runs", "show", runDone, "--agent", "root")
	if res.code != 0 {
		t.Fatalf("runs show --agent root exited %d: %s", res.code, res.stderr)
	}
	want := "\n── system ──\nYou are the root agent.\n\n── user ──\nSummarise the README\n\n── assistant ──\nThe README explains how to build cadre.\n"
	if !strings.Contains(res.stdout, want) {
		t.Errorf("root's transcript lacks\n%s\ngot:\n%s", want, res.stdout)
	}
	if !strings.HasPrefix(res.stdout, "✓ root  done  default  openai:gpt-4o-mini\n4 turns, 9.5k tokens, 1m12s") {
		t.Errorf("root's transcript header:\n%s", res.stdout)
	}

	// The last part of an id names the agent when it is unique.
	res = runCadre(t, dir, home, "runs", "show", runDone, "--agent", "research-assistant.1")
	if res.code != 0 || !strings.Contains(res.stdout, "── system ──\nYou research.\n") || !strings.Contains(res.stdout, "── report ──\nBuilds need Go 1.26.") {
		t.Errorf("runs show --agent research-assistant.1: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	res = runCadre(t, dir, home, "runs", "show", runDone, "--agent", "critic.1")
	if !strings.Contains(res.stdout, "── user ──\nCheck the claim") || !strings.Contains(res.stdout, "✗ failed: tool crashed") {
		t.Errorf("a failed agent's transcript:\n%s", res.stdout)
	}

	res = runCadre(t, dir, home, "runs", "show", runDone, "--agent", "writer.1")
	if res.code == 0 || !strings.Contains(res.stderr, `has no agent "writer.1"`) || !strings.Contains(res.stderr, "  root/research-assistant.1/critic.1") {
		t.Errorf("an unknown agent: exit %d, stderr %q", res.code, res.stderr)
	}

	res = runCadre(t, dir, home, "runs", "show", runDone, "--agent", string(fixtureChild), "--json")
	var tr struct {
		Agent    cadre.AgentRecord `json:"agent"`
		System   string            `json:"system"`
		Messages []cadre.Message   `json:"messages"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &tr); err != nil {
		t.Fatalf("--agent --json: %v\n%s", err, res.stdout)
	}
	wantMsgs := []cadre.Message{{Role: cadre.RoleUser, Content: "Find how cadre is built"}, {Role: cadre.RoleAssistant, Content: "Builds need Go 1.26."}}
	// The loop may add messages of its own (a reminder to report) after
	// the journaled ones.
	if tr.Agent.ID != fixtureChild || tr.System != "You research." || len(tr.Messages) < len(wantMsgs) {
		t.Fatalf("--agent --json: %+v", tr)
	}
	if d := cmp.Diff(wantMsgs, tr.Messages[:len(wantMsgs)], cmpopts.EquateEmpty()); d != "" {
		t.Errorf("--agent --json messages (-want +got):\n%s", d)
	}
}

func TestRunsResolve(t *testing.T) {
	dir, home, s := runsProject(t)
	writeRuns(t, s)
	for _, tc := range []struct {
		name, arg string
		want      string   // the run shown
		errs      []string // or what the error says
	}{
		{"Full", runDone, runDone, nil},
		{"Prefix", "20250314", runDone, nil},
		{"Last", "last", runFailed, nil},
		{"Ambiguous", "20250315-1", "", []string{`"20250315-1" is the start of 2 runs`, runRunning, runFailed, "give more of the id"}},
		{"Unknown", "20250316", "", []string{`unknown run "20250316" in .cadre/cadre.db; the closest are:`, runFailed, "run `cadre runs list` to see every run"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runCadre(t, dir, home, "runs", "show", tc.arg)
			if tc.want != "" {
				if res.code != 0 || !strings.HasPrefix(res.stdout, "Run      "+tc.want+"\n") {
					t.Errorf("runs show %s: exit %d, want run %s\n%s%s", tc.arg, res.code, tc.want, res.stdout, res.stderr)
				}
				return
			}
			if res.code == 0 {
				t.Fatalf("runs show %s succeeded:\n%s", tc.arg, res.stdout)
			}
			for _, e := range tc.errs {
				if !strings.Contains(res.stderr, e) {
					t.Errorf("runs show %s: the error lacks %q:\n%s", tc.arg, e, res.stderr)
				}
			}
		})
	}
}

func TestRunsExport(t *testing.T) {
	dir, home, s := runsProject(t)
	writeRuns(t, s)
	res := runCadre(t, dir, home, "runs", "export", "20250314")
	if res.code != 0 {
		t.Fatalf("runs export exited %d: %s", res.code, res.stderr)
	}
	var got runExport
	if err := json.Unmarshal([]byte(res.stdout), &got); err != nil {
		t.Fatalf("the export is not JSON: %v\n%s", err, res.stdout)
	}
	ctx := t.Context()
	wantRun, err := s.GetRun(ctx, runDone)
	runsMust(t, err)
	wantAgents, err := s.ListAgents(ctx, runDone)
	runsMust(t, err)
	wantEvents, err := s.Events(ctx, runDone, 0)
	runsMust(t, err)
	if got.Format != "cadre.run" || got.Version != 2 {
		t.Errorf("format %q version %d, want cadre.run 2", got.Format, got.Version)
	}
	if d := cmp.Diff(wantRun, got.Run); d != "" {
		t.Errorf("run (-want +got):\n%s", d)
	}
	if d := cmp.Diff(wantEvents, got.Events); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	if len(got.Agents) != len(wantAgents) {
		t.Fatalf("%d agents exported, want %d", len(got.Agents), len(wantAgents))
	}
	stored := 0 // journal entries
	for i, ag := range got.Agents {
		if d := cmp.Diff(*wantAgents[i], ag.AgentRecord); d != "" {
			t.Errorf("agent %d (-want +got):\n%s", i, d)
		}
		entries, err := s.Journal(ctx, runDone, ag.ID)
		runsMust(t, err)
		stored += len(entries)
		// One item per input, an entry of several giving each its part.
		type stored struct {
			cadre.JournalEntry
			part int
			in   loop.Input
		}
		var inputs []stored
		rd := &journal.Reader{Store: s, Run: runDone}
		for _, e := range entries {
			ins, err := rd.Inputs(ctx, e)
			runsMust(t, err)
			for k, in := range ins {
				it := stored{JournalEntry: e, in: in}
				if e.Kind == loop.KindInputs {
					it.part = k + 1
				}
				inputs = append(inputs, it)
			}
		}
		if len(ag.Journal) != len(inputs) {
			t.Errorf("%s: %d journal inputs exported, want %d", ag.ID, len(ag.Journal), len(inputs))
			continue
		}
		for j, e := range inputs {
			x := ag.Journal[j]
			if x.Seq != e.Seq || x.Part != e.part || x.Kind != e.in.Kind() || !x.Time.Equal(e.Time) || x.Error != "" {
				t.Errorf("%s item %d: exported %d/%d %s %v %q, stored %d/%d %s %v", ag.ID, j, x.Seq, x.Part, x.Kind, x.Time, x.Error, e.Seq, e.part, e.in.Kind(), e.Time)
			}
			// The input decodes to what was journaled.
			want := e.in
			back, err := loop.Decode(x.Kind, x.Input)
			if err != nil {
				t.Errorf("%s entry %d: the exported input does not decode: %v", ag.ID, j, err)
				continue
			}
			if d := cmp.Diff(want, back); d != "" {
				t.Errorf("%s entry %d: input (-stored +exported):\n%s", ag.ID, j, d)
			}
		}
	}
	if !strings.Contains(res.stdout, `"system": "You are the root agent."`) {
		t.Errorf("the export does not show the decoded inputs as JSON objects")
	}

	// Over a file other users could read, as the file it writes.
	if err := os.WriteFile(filepath.Join(dir, "run.json"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	res = runCadre(t, dir, home, "runs", "export", "last", "-o", "run.json")
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if res.code != 0 || err != nil {
		t.Fatalf("runs export -o run.json: exit %d, %v: %s", res.code, err, res.stderr)
	}
	var file runExport
	if err := json.Unmarshal(b, &file); err != nil || file.Run.ID != runFailed {
		t.Errorf("run.json: %v, run %+v", err, file.Run)
	}
	if !strings.Contains(res.stderr, "wrote run "+runFailed+" to run.json: 1 agent, 0 journal entries, 0 events") {
		t.Errorf("runs export -o says %q", res.stderr)
	}
	// It holds what the store holds, and is kept as privately.
	if fi, err := os.Stat(filepath.Join(dir, "run.json")); err != nil {
		t.Error(err)
	} else if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("run.json has mode %v; want 0600", fi.Mode().Perm())
	}
	// The count is of journal entries, whatever the number of inputs in each.
	root, err := s.Journal(ctx, runDone, cadre.RootID)
	runsMust(t, err)
	two := `{"inputs":[{"kind":"child_ended","data":{"child":"root/a.1","status":"done"}},{"kind":"child_ended","data":{"child":"root/b.1","status":"done"}}]}`
	runsMust(t, s.Append(ctx, []cadre.JournalEntry{{Run: runDone, Agent: cadre.RootID, Seq: int64(len(root) + 1), Kind: loop.KindInputs, Data: []byte(two), Time: runsT0}}))
	stored++
	res = runCadre(t, dir, home, "runs", "export", "20250314", "-o", "done.json")
	if want := countText(stored, "journal entry"); !strings.Contains(res.stderr, ", "+want+", ") {
		t.Errorf("runs export -o says %q, want %s", res.stderr, want)
	}
}

// lockedBuffer is a bytes.Buffer that a command may write while a test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *lockedBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *lockedBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until the buffer holds want.
func waitForOutput(b *lockedBuffer, want string) {
	for !strings.Contains(b.String(), want) {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

// following runs cadre runs show --follow in the background.
func followInBackground(t *testing.T, dir, home string, interrupts chan os.Signal, args ...string) (stdout, stderr *lockedBuffer, code <-chan int) {
	t.Helper()
	stdout, stderr = &lockedBuffer{}, &lockedBuffer{}
	c := make(chan int, 1)
	env := map[string]string{"HOME": home}
	go func() {
		c <- Main(context.Background(), append([]string{"runs", "show", "--follow", "--interval", "2ms"}, args...), IO{
			Stdout: stdout, Stderr: stderr, Dir: dir, Getenv: func(k string) string { return env[k] }, Interrupts: interrupts,
		})
	}()
	return stdout, stderr, c
}

// TestRunsFollow follows a run while another goroutine, standing in for
// the process that runs it, records its progress and its end.
func TestRunsFollow(t *testing.T) {
	dir, home, s := runsProject(t)
	ctx := t.Context()
	const id = "20250320-090000-0f0f0f"
	began := time.Now().Add(-time.Minute)
	runsMust(t, s.CreateRun(ctx, &cadre.RunRecord{ID: id, Task: "Count the Go files", Status: cadre.StatusRunning, Started: began}))
	_, err := s.AcquireLease(ctx, cadre.LeaseRequest{Run: id, Owner: fixtureOwner, TTL: time.Hour})
	runsMust(t, err)
	root := &cadre.AgentRecord{Run: id, ID: cadre.RootID, Definition: "default", Task: "Count the Go files", Status: cadre.StatusRunning, Started: began}
	runsMust(t, s.PutAgent(ctx, root))
	runsMust(t, s.AppendEvents(ctx, []cadre.Event{
		{Type: cadre.EventRunStarted, Run: id, Time: began, Data: cadre.RunStarted{Task: "Count the Go files"}},
		{Type: cadre.EventAgentStarted, Run: id, Agent: cadre.RootID, Time: began, Data: cadre.AgentStarted{Definition: "default", Model: "openai:gpt-4o-mini"}},
	}))

	stdout, _, code := followInBackground(t, dir, home, nil, "last")
	waitForOutput(stdout, "started default openai:gpt-4o-mini")

	// The run goes on in "another process".
	runsMust(t, s.AppendEvents(ctx, []cadre.Event{
		{Type: cadre.EventToolCalled, Run: id, Agent: cadre.RootID, Time: time.Now(), Data: cadre.ToolCalled{Tool: "list_files", Arguments: `{"path":"."}`}},
		{Type: cadre.EventModelDelta, Run: id, Agent: cadre.RootID, Time: time.Now(), Data: cadre.ModelDelta{Text: "There are"}},
	}))
	waitForOutput(stdout, `→ list_files {"path":"."}`)
	root.Status, root.Ended, root.Turns, root.Result = cadre.StatusDone, time.Now(), 2, "There are 42 Go files."
	runsMust(t, s.PutAgent(ctx, root))
	runsMust(t, s.AppendEvents(ctx, []cadre.Event{
		{Type: cadre.EventAgentCompleted, Run: id, Agent: cadre.RootID, Time: time.Now(), Data: cadre.AgentCompleted{Result: "There are 42 Go files."}},
		{Type: cadre.EventRunCompleted, Run: id, Time: time.Now(), Data: cadre.RunCompleted{Answer: "There are 42 Go files."}},
	}))
	runsMust(t, s.UpdateRun(ctx, &cadre.RunRecord{ID: id, Task: "Count the Go files", Status: cadre.StatusDone, Ended: time.Now(), Answer: "There are 42 Go files.", Agents: 1}))
	runsMust(t, s.ReleaseLease(ctx, id, fixtureOwner.Token))

	if c := <-code; c != 0 {
		t.Errorf("following a run that completed exited %d", c)
	}
	out := stdout.String()
	var order []int
	for _, want := range []string{
		"Following run " + id + ": Count the Go files",
		"run started: Count the Go files",
		fmt.Sprintf("%-28s  %s", "root", `→ list_files {"path":"."}`),
		fmt.Sprintf("%-28s  %s", "root", "done: There are 42 Go files."),
		"run completed: There are 42 Go files.",
		"Status   ✓ done",
		"\nAnswer\nThere are 42 Go files.\n",
	} {
		i := strings.Index(out, want)
		if i < 0 {
			t.Errorf("the followed output lacks %q:\n%s", want, out)
		}
		order = append(order, i)
	}
	for i := 1; i < len(order); i++ {
		if order[i] < order[i-1] {
			t.Errorf("the followed output is out of order:\n%s", out)
			break
		}
	}
	if strings.Contains(out, "There are\n") || strings.Contains(out, "model_delta") {
		t.Errorf("streamed text was printed as events:\n%s", out)
	}
}

// TestRunsFollowEnded follows runs that are over: it prints them and exits
// at once, with the status cadre run would have.
func TestRunsFollowEnded(t *testing.T) {
	dir, home, s := runsProject(t)
	writeRuns(t, s)
	stdout, stderr, code := followInBackground(t, dir, home, nil, runFailed)
	if c := <-code; c != 1 {
		t.Errorf("following a failed run exited %d, want 1", c)
	}
	if !strings.Contains(stderr.String(), "run "+runFailed+" failed: model unavailable") {
		t.Errorf("stderr %q does not say the run failed and why", stderr.String())
	}
	if !strings.Contains(stdout.String(), "The run failed: model unavailable") {
		t.Errorf("stdout:\n%s", stdout.String())
	}

	stdout, _, code = followInBackground(t, dir, home, nil, runDone, "--json")
	if c := <-code; c != 0 {
		t.Errorf("following a done run exited %d", c)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 7 { // 8 events, less the streamed text
		t.Errorf("--follow --json printed %d lines, want 7:\n%s", len(lines), stdout.String())
	}
	for _, l := range lines {
		var e cadre.Event
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.Run != runDone {
			t.Errorf("line %q is not an event of the run: %v", l, err)
		}
	}
}

// TestRunsFollowInterrupted stops following on Ctrl+C; the run is left as
// it was.
func TestRunsFollowInterrupted(t *testing.T) {
	dir, home, s := runsProject(t)
	writeRuns(t, s)
	sig := make(chan os.Signal, 1)
	stdout, stderr, code := followInBackground(t, dir, home, sig, runRunning)
	waitForOutput(stdout, "Following run "+runRunning)
	sig <- os.Interrupt
	if c := <-code; c != 0 {
		t.Errorf("interrupted following exited %d", c)
	}
	if !strings.Contains(stderr.String(), "stopped following run "+runRunning+"; it goes on") {
		t.Errorf("stderr %q", stderr.String())
	}
	if r, err := s.GetRun(t.Context(), runRunning); err != nil || r.Status != cadre.StatusRunning {
		t.Errorf("the run changed: %+v, %v", r, err)
	}
}

func TestRunsFormats(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1k"}, {12345, "12.3k"}, {99_949, "99.9k"}, {123_456, "123k"}, {999_499, "999k"}, {999_500, "1M"}, {1_250_000, "1.2M"}} {
		if got := tokensText(tc.n); got != tc.want {
			t.Errorf("tokensText(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{{0, "0s"}, {850 * time.Millisecond, "850ms"}, {4230 * time.Millisecond, "4.2s"}, {72 * time.Second, "1m12s"}, {72*time.Second + 600*time.Millisecond, "1m13s"}, {2*time.Hour + 3*time.Minute, "2h3m0s"}, {50*time.Hour + 20*time.Minute, "2d2h"}} {
		if got := durationText(tc.d); got != tc.want {
			t.Errorf("durationText(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// TestExportEntryOfSeveralInputs: an entry holding several inputs is
// exported an input at a time, each with the entry's seq and time and its
// part; an entry of one input has no part.
func TestExportEntryOfSeveralInputs(t *testing.T) {
	ins := []loop.Input{
		loop.ChildReport{Child: "root/worker.1", Text: "Unit done."},
		loop.ChildEnded{Child: "root/worker.1", Status: cadre.StatusDone},
	}
	data := []byte(`{"inputs":[`)
	for i, in := range ins {
		b, err := json.Marshal(in)
		runsMust(t, err)
		if i > 0 {
			data = append(data, ',')
		}
		data = append(append(append(append(data, `{"kind":"`...), in.Kind()...), `","data":`...), b...)
		data = append(data, '}')
	}
	data = append(data, "]}"...)
	e := cadre.JournalEntry{Run: "r", Agent: cadre.RootID, Seq: 7, Kind: loop.KindInputs, Data: data, Time: runsT0}
	e.Sum = e.Checksum()
	got := exportEntry(t.Context(), &journal.Reader{}, e)
	if len(got) != 2 {
		t.Fatalf("%d items exported, want 2: %+v", len(got), got)
	}
	for i, x := range got {
		if x.Seq != 7 || x.Part != i+1 || x.Kind != ins[i].Kind() || !x.Time.Equal(runsT0) || x.Error != "" || x.Damaged {
			t.Errorf("item %d: %+v", i, x)
		}
		back, err := loop.Decode(x.Kind, x.Input)
		if err != nil || !reflect.DeepEqual(back, ins[i]) {
			t.Errorf("item %d reads back as %#v (%v), want %#v", i, back, err, ins[i])
		}
	}
	one := cadre.JournalEntry{Run: "r", Agent: cadre.RootID, Seq: 8, Kind: ins[0].Kind(), Data: got[0].Input, Time: runsT0}
	if x := exportEntry(t.Context(), &journal.Reader{}, one); len(x) != 1 || x[0].Part != 0 || x[0].Kind != "child_report" {
		t.Errorf("an entry of one input exported as %+v", x)
	}
	bad := e
	bad.Data = []byte(`{"inputs":[{"kind":"nonsense","data":{}}]}`)
	bad.Sum = bad.Checksum()
	if x := exportEntry(t.Context(), &journal.Reader{}, bad); len(x) != 1 || x[0].Kind != loop.KindInputs || !strings.Contains(x[0].Error, `unknown journal entry kind "nonsense"`) || string(x[0].Input) != string(bad.Data) {
		t.Errorf("an entry that cannot be read exported as %+v", x)
	}
}

// TestExportStartThatNamesAConfiguration: a child's start that names the
// configuration of a sibling's is exported with that configuration whole.
func TestExportStartThatNamesAConfiguration(t *testing.T) {
	s := memstore.New()
	ctx := t.Context()
	runsMust(t, s.CreateRun(ctx, &cadre.RunRecord{ID: "r", Task: "t", Status: cadre.StatusDone, Started: runsT0}))
	w1, w2 := cadre.RootID.Child("worker", 1), cadre.RootID.Child("worker", 2)
	for _, id := range []cadre.AgentID{w1, w2} {
		runsMust(t, s.PutAgent(ctx, &cadre.AgentRecord{Run: "r", ID: id, Parent: cadre.RootID, Depth: 1, Status: cadre.StatusDone, Started: runsT0}))
	}
	whole := fixtureStart(w1, "You are a worker.", "unit 1")
	whole.Config.MaxTurns = 9
	short := loop.Start{Config: loop.Config{ID: w2, Parent: cadre.RootID, Definition: "worker"}, Task: "unit 2", ConfigFrom: w1}
	runsMust(t, s.Append(ctx, fixtureJournal(t, "r", w1, runsT0, whole)))
	runsMust(t, s.Append(ctx, fixtureJournal(t, "r", w2, runsT0, short)))
	rec, err := s.GetRun(ctx, "r")
	runsMust(t, err)
	x, err := exportRun(ctx, s, rec)
	runsMust(t, err)
	for _, ag := range x.Agents {
		if ag.ID != w2 {
			continue
		}
		if len(ag.Journal) != 1 || ag.Journal[0].Error != "" {
			t.Fatalf("the journal of %s exported as %+v", w2, ag.Journal)
		}
		var got loop.Start
		runsMust(t, json.Unmarshal(ag.Journal[0].Input, &got))
		if got.ConfigFrom != "" || got.Config.System != "You are a worker." || got.Config.MaxTurns != 9 || got.Config.ID != w2 || got.Task != "unit 2" {
			t.Errorf("the start of %s exported as %s", w2, ag.Journal[0].Input)
		}
		return
	}
	t.Fatalf("%s was not exported", w2)
}

// TestRunsShowAgentWhoseStartNamesAConfiguration: cadre runs show --agent
// prints the system prompt of a child whose start names a sibling's
// configuration.
func TestRunsShowAgentWhoseStartNamesAConfiguration(t *testing.T) {
	dir, home, s := runsProject(t)
	ctx := t.Context()
	const run = "20250320-101010-c0ffee"
	runsMust(t, s.CreateRun(ctx, &cadre.RunRecord{ID: run, Task: "t", Status: cadre.StatusDone, Started: runsT0}))
	w1, w2 := cadre.RootID.Child("worker", 1), cadre.RootID.Child("worker", 2)
	for _, id := range []cadre.AgentID{w1, w2} {
		runsMust(t, s.PutAgent(ctx, &cadre.AgentRecord{Run: run, ID: id, Parent: cadre.RootID, Depth: 1, Definition: "worker", Status: cadre.StatusDone, Started: runsT0}))
	}
	runsMust(t, s.Append(ctx, fixtureJournal(t, run, w1, runsT0, fixtureStart(w1, "You are a worker.", "unit 1"))))
	short := loop.Start{Config: loop.Config{ID: w2, Parent: cadre.RootID, Definition: "worker"}, Task: "unit 2",
		Messages: []cadre.Message{{Role: cadre.RoleUser, Content: "unit 2"}}, ConfigFrom: w1}
	runsMust(t, s.Append(ctx, fixtureJournal(t, run, w2, runsT0, short)))
	res := runCadre(t, dir, home, "runs", "show", run, "--agent", "worker.2")
	if res.code != 0 || !strings.Contains(res.stdout, "── system ──\nYou are a worker.\n\n── user ──\nunit 2") {
		t.Errorf("runs show --agent worker.2: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}
