//go:build unix

package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// hangScript is a run whose agents never finish: the root spawns alpha and
// beta, beta spawns an alpha of its own, and every alpha's model call
// blocks until it is cancelled.
const hangScript = `
root:
  - text: "Splitting the work."
    tool_calls:
      - name: spawn_agent
        arguments: {agent: alpha, task: "Count the apples in the basket."}
      - name: spawn_agent
        arguments: {agent: beta, task: "Count the pears in the basket."}
root/beta.1:
  - tool_calls:
      - name: spawn_agent
        arguments: {agent: alpha, task: "Count the apples among the pears."}
alpha:
  - text: "Counting"
    hang: true
`

// hangAgents are the agents of hangScript.
var hangAgents = []string{"root", "root/alpha.1", "root/beta.1", "root/beta.1/alpha.1"}

// bgRun is the cadre binary running in the background, in a process group
// of its own as a job started from a shell is, with --json events on a
// pipe.
type bgRun struct {
	cmd    *exec.Cmd
	events chan map[string]any // closed when stdout is
	stderr *lockedBuffer
	exited chan error
	got    []map[string]any // the events read so far
}

func startBinary(t *testing.T, dir string, args ...string) *bgRun {
	t.Helper()
	cmd := exec.Command(cadreBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + testHome(t), "PATH=" + os.Getenv("PATH")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &bgRun{cmd: cmd, events: make(chan map[string]any, 100), stderr: &lockedBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var done atomic.Bool
	t.Cleanup(func() {
		if !done.Load() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer close(r.events)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var ev map[string]any
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				ev = map[string]any{"type": "not JSON", "line": sc.Text()}
			}
			r.events <- ev
		}
	}()
	go func() {
		<-read // Wait closes stdout: read it all first
		err := cmd.Wait()
		done.Store(true)
		r.exited <- err
	}()
	return r
}

// waitFor reads events until ok says yes. It fails the test if the run
// ends first or a minute passes.
func (r *bgRun) waitFor(t *testing.T, what string, ok func([]map[string]any) bool) {
	t.Helper()
	deadline := time.After(time.Minute)
	for !ok(r.got) {
		select {
		case ev, open := <-r.events:
			if !open {
				t.Fatalf("the run ended before %s; stderr:\n%s", what, r.stderr)
			}
			r.got = append(r.got, ev)
		case <-deadline:
			t.Fatalf("no %s within a minute; events %v", what, eventTypes(r.got))
		}
	}
}

// interrupt sends Ctrl+C's signal to the run's process group, as a
// terminal does. It reports false when the process has already gone.
func (r *bgRun) interrupt(t *testing.T) bool {
	t.Helper()
	err := syscall.Kill(-r.cmd.Process.Pid, syscall.SIGINT)
	if errors.Is(err, syscall.ESRCH) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

// wait reads the rest of the events and returns the exit status. A run
// that has not exited a minute later fails the test: it would hang.
func (r *bgRun) wait(t *testing.T) int {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case ev, open := <-r.events:
			if open {
				r.got = append(r.got, ev)
				continue
			}
			select {
			case err := <-r.exited:
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					return ee.ExitCode()
				}
				if err != nil {
					t.Fatal(err)
				}
				return 0
			case <-deadline:
				t.Fatal("cadre closed stdout but did not exit within a minute")
			}
		case <-deadline:
			t.Fatalf("cadre did not exit within a minute of Ctrl+C; events %v; stderr:\n%s", eventTypes(r.got), r.stderr)
		}
	}
}

func eventTypes(evs []map[string]any) []string {
	var out []string
	for _, ev := range evs {
		s, _ := ev["type"].(string)
		if a, _ := ev["agent"].(string); a != "" {
			s += " " + a
		}
		out = append(out, s)
	}
	return out
}

// allStarted reports whether every agent of hangScript has started.
func allStarted(evs []map[string]any) bool {
	started := map[string]bool{}
	for _, ev := range evs {
		if ev["type"] == "agent_started" {
			started[ev["agent"].(string)] = true
		}
	}
	for _, a := range hangAgents {
		if !started[a] {
			return false
		}
	}
	return true
}

// checkCancelled checks the events of a run stopped by Ctrl+C: every agent
// cancelled once, each after its descendants, none completed, and the run
// failed as cancelled.
func checkCancelled(t *testing.T, evs []map[string]any) {
	t.Helper()
	at := map[string]int{}
	for i, ev := range evs {
		agent, _ := ev["agent"].(string)
		switch ev["type"] {
		case "not JSON":
			t.Errorf("stdout line is not JSON: %q", ev["line"])
		case "agent_cancelled":
			if _, dup := at[agent]; dup {
				t.Errorf("%s cancelled twice", agent)
			}
			at[agent] = i
			if r, _ := ev["reason"].(string); !strings.Contains(r, "Ctrl+C") {
				t.Errorf("%s was cancelled for %q, want the reason to name Ctrl+C", agent, r)
			}
		case "agent_completed", "agent_failed", "run_completed":
			t.Errorf("a run stopped by Ctrl+C has %s %s", ev["type"], agent)
		}
	}
	for _, a := range hangAgents {
		i, ok := at[a]
		if !ok {
			t.Errorf("no agent_cancelled for %s; events %v", a, eventTypes(evs))
			continue
		}
		for _, d := range hangAgents {
			if j, ok := at[d]; ok && strings.HasPrefix(d, a+"/") && j > i {
				t.Errorf("%s was cancelled after its ancestor %s; events %v", d, a, eventTypes(evs))
			}
		}
	}
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	last := evs[len(evs)-1]
	if last["type"] != "run_failed" || last["status"] != "cancelled" {
		t.Errorf("the last event is %v, want run_failed with status cancelled", last)
	}
}

// One Ctrl+C stops a run whose agents are stuck in model calls: every
// agent is cancelled, children first, and cadre exits 130.
func TestInterruptCancelsRun(t *testing.T) {
	dir, model := scriptedProject(t, hangScript)
	r := startBinary(t, dir, "run", "--json", "--store", "none", "--approve", "none", "-m", model, "Count the fruit")
	r.waitFor(t, "start of every agent", allStarted)
	if !r.interrupt(t) {
		t.Fatal("cadre exited before Ctrl+C though its agents hang")
	}
	code := r.wait(t)
	if code != 130 {
		t.Errorf("exit status %d after Ctrl+C, want 130; stderr:\n%s", code, r.stderr)
	}
	checkCancelled(t, r.got)
	stderr := r.stderr.String()
	for _, want := range []string{"stopping the run (press Ctrl+C again to abort at once)", "cadre: interrupted by Ctrl+C"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// A second Ctrl+C, pressed as soon as cadre says it is stopping, does not
// keep it from exiting, nor from recording the cancellation.
//
// Cancelling is quick here, so the second Ctrl+C may come after the run
// has ended; either way cadre must exit promptly with the same outcome.
func TestInterruptTwice(t *testing.T) {
	dir, model := scriptedProject(t, hangScript)
	r := startBinary(t, dir, "run", "--json", "--store", "none", "--approve", "none", "-m", model, "Count the fruit")
	r.waitFor(t, "start of every agent", allStarted)
	if !r.interrupt(t) {
		t.Fatal("cadre exited before Ctrl+C though its agents hang")
	}
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(r.stderr.String(), "stopping the run") && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	t.Logf("the second Ctrl+C was sent before cadre exited: %v", r.interrupt(t))
	code := r.wait(t)
	if code != 130 {
		t.Errorf("exit status %d after two Ctrl+C, want 130; stderr:\n%s", code, r.stderr)
	}
	checkCancelled(t, r.got)
}
