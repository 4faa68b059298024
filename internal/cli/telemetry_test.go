//go:build unix

package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/otlptest"
)

// telemetryScript: the root starts a researcher and reads a file that is
// not there; the researcher reports.
const telemetryScript = `
root:
  - tool_calls:
      - {id: c1, name: spawn_agent, arguments: {agent: researcher, task: "Find the release date."}}
      - {id: c2, name: read_file, arguments: {path: "missing.txt"}}
    usage: {input: 1000, output: 100, cached: 500}
  - text: "It is on 3 March."
    usage: {input: 100, output: 10}
researcher:
  - tool_calls:
      - {id: r1, name: send_agent_message, arguments: {text: "3 March"}}
    usage: {input: 100, output: 10}
`

func telemetryProject(t *testing.T, script, config string) (dir, model string) {
	t.Helper()
	dir = t.TempDir()
	writeFile(t, filepath.Join(dir, "script.yaml"), script)
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "researcher.md"), "---\nname: researcher\ndescription: Finds facts.\n---\nYou find facts.\n")
	if config != "" {
		writeFile(t, filepath.Join(dir, ".cadre", "config.yaml"), config)
	}
	return dir, "scripted:" + filepath.Join(dir, "script.yaml")
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func spansOf(spans []otlptest.Span, op string) map[string]otlptest.Span {
	out := map[string]otlptest.Span{}
	for _, s := range spans {
		if s.Attrs["gen_ai.operation.name"] != op {
			continue
		}
		k := s.Attrs["gen_ai.agent.id"]
		if op == "execute_tool" {
			k = s.Attrs["gen_ai.tool.call.id"]
		}
		key, _ := k.(string)
		out[key] = s
	}
	return out
}

// The CLI configured by the standard variables sends the run's trace and
// metrics over OTLP/HTTP before it exits, and the prices of its config
// give the run's cost.
func TestTelemetryFromEnvironment(t *testing.T) {
	rec := otlptest.NewReceiver()
	url := otlptest.HTTP(t, rec)
	dir, script := telemetryProject(t, telemetryScript, "")
	// Prices are looked up by the model's name: a named model's, here.
	writeFile(t, filepath.Join(dir, ".cadre", "config.yaml"),
		"models:\n  fast:\n    model: "+strconvQuote(script)+"\nprices:\n  fast:\n    input: 2\n    cachedInput: 1\n    output: 10\n")
	model := "fast"
	res := runBinary(t, dir, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + url, "OTEL_SERVICE_NAME=cadre-e2e",
		"OTEL_RESOURCE_ATTRIBUTES=deployment.environment=test,team=search%20tools"},
		"run", "--trust-project", "--json", "--store", "none", "--approve", "all", "-m", model, "When is the release?")
	if res.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", res.code, res.stderr)
	}
	evs := res.events(t)
	last := evs[len(evs)-1]
	// 500 input at 2, 500 cached at 1, 100 output at 10; then 100 at 2 and
	// 10 at 10; the researcher, which ends with its report, 100 at 2 and
	// 10 at 10.
	want := (500*2 + 500*1 + 100*10 + 100*2 + 10*10 + 100*2 + 10*10) / 1e6
	if last["type"] != "run_completed" || last["cost"] != want {
		t.Errorf("the last event is %v; want run_completed with cost %v", last, want)
	}

	spans, metrics := rec.Got()
	if len(spans) == 0 {
		t.Fatalf("no span was received; stderr: %s", res.stderr)
	}
	agents, tools := spansOf(spans, "invoke_agent"), spansOf(spans, "execute_tool")
	root, child := agents["root"], agents["root/researcher.1"]
	if root.ID == "" || child.ID == "" {
		t.Fatalf("invoke_agent spans: %v", agents)
	}
	if spawn := tools["c1"]; child.Parent != spawn.ID || spawn.Parent != root.ID || spawn.Attrs["gen_ai.tool.name"] != "spawn_agent" {
		t.Errorf("the researcher's span has parent %s; the spawn_agent call's span is %s (parent %s, attributes %v), the root's %s",
			child.Parent, spawn.ID, spawn.Parent, spawn.Attrs, root.ID)
	}
	if read := tools["c2"]; read.Status != 2 || read.Attrs["error.type"] != "tool_error" || read.Parent != root.ID {
		t.Errorf("the failed read_file call's span: status %v, attributes %v, parent %s", read.Status, read.Attrs, read.Parent)
	}
	for _, s := range spans {
		if s.Trace != root.Trace {
			t.Errorf("span %s is in another trace", s.Name)
		}
		if s.Resource["service.name"] != "cadre-e2e" || s.Resource["deployment.environment"] != "test" || s.Resource["team"] != "search tools" {
			t.Errorf("span %s has the resource %v", s.Name, s.Resource)
		}
		if s.Attrs["gen_ai.operation.name"] == "chat" && (s.Attrs["gen_ai.provider.name"] != "scripted" || s.Attrs["gen_ai.input.messages"] != nil) {
			t.Errorf("chat span attributes %v (provider scripted, no content without the variable)", s.Attrs)
		}
	}
	if root.Attrs["cadre.cost"] == nil {
		t.Errorf("the root's span has no cost: %v", root.Attrs)
	}
	if !metrics["gen_ai.client.token.usage"] || !metrics["gen_ai.client.operation.duration"] {
		t.Errorf("metrics received: %v", metrics)
	}

	// OTEL_SDK_DISABLED turns it off.
	before := len(spans)
	off := runBinary(t, dir, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + url, "OTEL_SDK_DISABLED=true"},
		"run", "--trust-project", "--json", "--store", "none", "--approve", "all", "-m", model, "When is the release?")
	if off.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", off.code, off.stderr)
	}
	if spans, _ := rec.Got(); len(spans) != before {
		t.Errorf("%d spans arrived with OTEL_SDK_DISABLED=true", len(spans)-before)
	}

	// A protocol cadre does not speak is an error that says what to set.
	bad := runBinary(t, dir, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + url, "OTEL_EXPORTER_OTLP_PROTOCOL=http/json"},
		"run", "--trust-project", "--store", "none", "-m", model, "When is the release?")
	if bad.code == 0 || !strings.Contains(bad.stderr, "OTEL_EXPORTER_OTLP_PROTOCOL") || !strings.Contains(bad.stderr, "grpc") {
		t.Errorf("http/json: exit %d, stderr %s", bad.code, bad.stderr)
	}
}

// The telemetry: section sends over gRPC, with content when the variable
// asks for it, and what was made is sent when the user interrupts the
// run.
func TestTelemetryConfigGRPCInterrupted(t *testing.T) {
	rec := otlptest.NewReceiver()
	addr := otlptest.GRPC(t, rec)
	dir, model := telemetryProject(t, hangScript, "telemetry:\n  endpoint: http://"+addr+"\n  protocol: grpc\n")
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "alpha.md"), "---\nname: alpha\ndescription: Counts apples.\n---\nYou count.\n")
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "beta.md"), "---\nname: beta\ndescription: Counts pears.\n---\nYou count.\n")

	cmd := exec.Command(cadreBinary(t), "run", "--trust-project", "--json", "--store", "none", "--approve", "all", "-m", model, "Count the fruit.")
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + testHome(t), "PATH=" + os.Getenv("PATH"), "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	exited := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		n := 0
		for sc.Scan() {
			var ev map[string]any
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev["type"] == "agent_started" {
				if n++; n == len(hangAgents) {
					close(started)
				}
			}
		}
		exited <- cmd.Wait()
	}()
	select {
	case <-started:
	case err := <-exited:
		t.Fatalf("cadre exited before its agents started: %v\n%s", err, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatal("the agents did not start within 60 s")
	}
	syscall.Kill(cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		t.Fatal("cadre did not exit within 60 s of SIGINT")
	}

	spans, _ := rec.Got()
	agents := spansOf(spans, "invoke_agent")
	for _, id := range hangAgents {
		if _, ok := agents[id]; !ok {
			t.Errorf("no invoke_agent span of %s arrived after the interrupt; got %v\nstderr: %s", id, agents, stderr.String())
		}
	}
	var content bool
	for _, s := range spans {
		if v, ok := s.Attrs["gen_ai.input.messages"].(string); ok && strings.Contains(v, "Count the fruit.") {
			content = true
		}
	}
	if !content {
		t.Error("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, but no span has the task in gen_ai.input.messages")
	}
}

// With prices in the config, runs list and runs show say what a run and
// each of its agents cost, from the stored events.
func TestRunsCost(t *testing.T) {
	dir, script := telemetryProject(t, telemetryScript, "")
	writeFile(t, filepath.Join(dir, ".cadre", "config.yaml"),
		"models:\n  fast:\n    model: "+strconvQuote(script)+"\nprices:\n  fast: {input: 2, cachedInput: 1, output: 10}\n")
	// A scripted model named by the project's config is a setting that
	// needs trust.
	res := runBinary(t, dir, nil, "run", "--trust-project", "--json", "--approve", "all", "-m", "fast", "When is the release?")
	if res.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", res.code, res.stderr)
	}
	evs := res.events(t)
	run, _ := evs[0]["run"].(string)
	// The root: 500 at 2, 500 cached at 1, 100 at 10, 100 at 2, 10 at 10.
	// The researcher, which ends with its report: 100 at 2, 10 at 10.
	rootCost, childCost := costText((500*2+500*1+100*10+100*2+10*10)/1e6), costText((100*2+10*10)/1e6)
	total := costText((500*2 + 500*1 + 100*10 + 100*2 + 10*10 + 100*2 + 10*10) / 1e6)

	list := runBinary(t, dir, nil, "runs", "list")
	if list.code != 0 || !strings.Contains(list.stdout, "COST") || !strings.Contains(lineContaining(t, list.stdout, run), total) {
		t.Errorf("runs list: exit %d, want a COST column with %s:\n%s%s", list.code, total, list.stdout, list.stderr)
	}
	show := runBinary(t, dir, nil, "runs", "show", run)
	if show.code != 0 || !strings.Contains(show.stdout, "Cost") || !strings.Contains(show.stdout, total) ||
		!strings.Contains(lineContaining(t, show.stdout, "researcher"), childCost) || !strings.Contains(lineContaining(t, show.stdout, "root  "), rootCost) {
		t.Errorf("runs show: exit %d, want the cost %s, the root's %s and the researcher's %s:\n%s%s", show.code, total, rootCost, childCost, show.stdout, show.stderr)
	}
}

func TestTreeShowsCost(t *testing.T) {
	f := treeFrame{Used: 1234, Cost: 0.0123}
	if got := f.budgetLine(); !strings.Contains(got, "cost 0.012") {
		t.Errorf("budget line %q does not show the cost", got)
	}
	a := cadre.AgentInfo{ID: "root", Definition: "root", Status: cadre.StatusDone, Cost: 0.5, Started: time.Now()}
	if got := f.agentStats(a, 10, false); !strings.Contains(got, "0.500") {
		t.Errorf("agent line %q does not show the agent's cost", got)
	}
}
