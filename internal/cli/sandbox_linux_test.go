package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cadre-ai/cadre/tool/builtin"
)

// requireBwrap skips a test where bubblewrap cannot run, except in CI (CI
// set, or CADRE_REQUIRE_SANDBOX=1), where it fails.
func requireBwrap(t *testing.T) {
	t.Helper()
	if err := (&builtin.Sandbox{}).Probe(context.Background()); err != nil {
		if os.Getenv("CI") != "" || os.Getenv("CADRE_REQUIRE_SANDBOX") == "1" {
			t.Fatalf("bubblewrap must run in CI (apt-get install bubblewrap): %v", err)
		}
		t.Skipf("bubblewrap cannot run here: %v", err)
	}
}

// commandModel is a model server whose root runs command with run_command,
// then answers with what it got back.
func commandModel(t *testing.T, command string) *openaiServer {
	args, _ := json.Marshal(map[string]string{"command": command})
	return newOpenAIServer(t, func(req *chatRequest) chatReply {
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			return chatReply{Text: "RESULT<<" + contentText(last.Content) + ">>"}
		}
		return chatReply{Text: "Running it.", Calls: []toolCall{{Name: "run_command", Args: string(args)}}}
	})
}

// unconfinedLines returns the lines of s that say commands are unconfined.
func unconfinedLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "unconfined") {
			out = append(out, l)
		}
	}
	return out
}

// With the sandbox on (auto, bubblewrap here), a command the model runs
// cannot read beside the workspace, write there, see the provider's key,
// read the run store or change the config; nothing says unconfined.
func TestE2ESandboxConfinesCommands(t *testing.T) {
	requireBwrap(t)
	base := t.TempDir()
	dir := filepath.Join(base, "project")
	writeFile(t, filepath.Join(base, "outside", "secret.txt"), "OUTSIDE-SECRET\n")
	writeFile(t, filepath.Join(dir, ".cadre", "config.yaml"), "approve: all\n")
	command := "cat ../outside/secret.txt; echo x > ../outside/x; echo key=${OPENAI_API_KEY:-none}; " +
		"head -c 16 .cadre/cadre.db; echo 'sandbox: off' > .cadre/config.yaml; echo made > made.txt; echo end"
	srv := commandModel(t, command)
	res := runBinary(t, dir, []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=sk-key-marker"},
		"run", "--trust-project", "--json", "-m", "openai:test-model", "run the command")
	if res.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", res.code, res.stderr)
	}
	out := ""
	for _, ev := range res.events(t) {
		if ev["type"] == "run_completed" {
			out, _ = ev["answer"].(string)
		}
		if ev["type"] == "warning" {
			t.Errorf("warning event %v", ev)
		}
	}
	for _, never := range []string{"OUTSIDE-SECRET", "sk-key-marker", "SQLite format"} {
		if strings.Contains(out, never) {
			t.Errorf("the command got %q:\n%s", never, out)
		}
	}
	if !strings.Contains(out, "key=none") || !strings.Contains(out, "end") {
		t.Errorf("the command's output:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(base, "outside", "x")); err == nil {
		t.Error("the command wrote beside the workspace")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".cadre", "config.yaml")); string(b) != "approve: all\n" {
		t.Errorf("the command changed the config: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "made.txt")); string(b) != "made\n" {
		t.Errorf("the command could not write the workspace: %q", b)
	}
	if l := unconfinedLines(res.stderr); len(l) != 0 {
		t.Errorf("stderr says unconfined: %q", l)
	}
}

// With sandbox: off, cadre says once, on stderr, that commands are
// unconfined, and records a warning event; the command is not confined.
func TestE2EUnconfinedWarning(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "project")
	writeFile(t, filepath.Join(base, "outside", "secret.txt"), "OUTSIDE-SECRET\n")
	writeFile(t, filepath.Join(dir, ".cadre", "config.yaml"), "approve: all\nsandbox: off\n")
	srv := commandModel(t, "cat ../outside/secret.txt")
	env := []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"}
	for _, json := range []bool{false, true} {
		args := []string{"run", "--trust-project", "--store", "none", "-m", "openai:test-model", "run the command"}
		if json {
			args = append([]string{"run", "--json"}, args[1:]...)
		}
		res := runBinary(t, dir, env, args...)
		if res.code != 0 {
			t.Fatalf("exit %d\nstderr: %s", res.code, res.stderr)
		}
		lines := unconfinedLines(res.stderr)
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "cadre: warning: run_command is unconfined: sandbox: off (set in ") {
			t.Errorf("json %v: the lines saying unconfined: %q\nstderr:\n%s", json, lines, res.stderr)
		}
		if !json {
			if !strings.Contains(res.stdout, "OUTSIDE-SECRET") {
				t.Errorf("sandbox: off should not confine the command: %s", res.stdout)
			}
			continue
		}
		warnings := 0
		for _, ev := range res.events(t) {
			if ev["type"] == "warning" && strings.Contains(fmt.Sprint(ev["message"]), "run_command is unconfined") {
				warnings++
			}
		}
		if warnings != 1 {
			t.Errorf("%d warning events saying unconfined, want 1", warnings)
		}
	}
	// With --approve=none no command runs, and there is nothing to say.
	res := runBinary(t, dir, env, "run", "--store", "none", "--approve", "none", "-m", "openai:test-model", "run the command")
	if l := unconfinedLines(res.stderr); res.code != 0 || len(l) != 0 {
		t.Errorf("--approve=none: exit %d, lines saying unconfined %q", res.code, l)
	}
}

// sandbox: bwrap where there is no bubblewrap refuses to start the run,
// says what to install, and calls no model.
func TestE2ESandboxBwrapMissing(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".cadre", "config.yaml"), "approve: all\nsandbox: bwrap\n")
	srv := commandModel(t, "true")
	res := runBinary(t, dir, []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k", "PATH=" + t.TempDir()},
		"run", "--store", "none", "-m", "openai:test-model", "run the command")
	if res.code != 1 {
		t.Errorf("exit %d, want 1", res.code)
	}
	for _, want := range []string{"cadre: sandbox: bwrap (set in " + filepath.Join(dir, ".cadre", "config.yaml") + ":2)",
		"bubblewrap (bwrap) is not installed", "apt-get install bubblewrap", "set sandbox: auto or off"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}
	if n := len(srv.all()); n != 0 {
		t.Errorf("%d model calls, want none", n)
	}
}

// sleepsOf returns the live processes whose command line is sleep token.
func sleepsOf(token string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Equal(b, []byte("sleep\x00"+token+"\x00")) {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); err == nil && i >= 0 && !bytes.HasPrefix(stat[i:], []byte(") Z")) {
			out = append(out, pid)
		}
	}
	return out
}

// waitSleeps waits, at most a minute, until ok says yes to the sleeps of
// token.
func waitSleeps(t *testing.T, token, what string, ok func([]int) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ok(sleepsOf(token)) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the sleeps of %s are %v", what, token, sleepsOf(token))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killedCadre starts cadre on a model that runs command, waits until the
// command has started n sleeps of token, and kills cadre with SIGKILL.
func killedCadre(t *testing.T, dir string, env []string, command, token string, n int) {
	t.Helper()
	cmd := exec.Command(cadreBinary(t), "run", "--trust-project", "--json", "-m", "openai:test-model", "run the command")
	cmd.Dir = dir
	cmd.Env = append([]string{"HOME=" + testHome(t), "PATH=" + os.Getenv("PATH")}, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pid := range sleepsOf(token) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	waitSleeps(t, token, "before the kill", func(p []int) bool { return len(p) >= n })
	// An unconfined command is recorded just after it starts: wait for the
	// record, which a resume reads, before the kill.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		procs, _ := os.ReadDir(filepath.Join(dir, ".cadre", "procs"))
		if len(procs) > 0 || !strings.Contains(command, "shell.pid") || time.Now().After(deadline) {
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatalf("cadre was not killed:\n%s", out.String())
	}
}

// kill -9 of cadre while a sandboxed command runs leaves nothing of the
// command running: not its background processes, not one in a session of
// its own.
func TestE2EKilledCadreLeavesNoSandboxedCommand(t *testing.T) {
	requireBwrap(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".cadre", "config.yaml"), "approve: all\n")
	token := fmt.Sprintf("%d.%d", 700+os.Getpid()%100, time.Now().UnixNano()%1_000_000)
	command := "setsid sleep " + token + " > /dev/null 2>&1 < /dev/null & sleep " + token + " & sleep " + token
	srv := commandModel(t, command)
	killedCadre(t, dir, []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"}, command, token, 3)
	waitSleeps(t, token, "after the kill", func(p []int) bool { return len(p) == 0 })
}

// kill -9 of cadre while an unconfined command runs kills the command's
// shell at once; cadre resume kills what the shell left in its process
// group, and says so.
func TestE2EResumeKillsLeftoverCommands(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".cadre", "config.yaml"), "approve: all\nsandbox: off\n")
	token := fmt.Sprintf("%d.%d", 800+os.Getpid()%100, time.Now().UnixNano()%1_000_000)
	command := "echo $$ > shell.pid; sleep " + token + " & sleep " + token + "; echo done"
	srv := commandModel(t, command)
	env := []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"}
	killedCadre(t, dir, env, command, token, 2)
	b, err := os.ReadFile(filepath.Join(dir, "shell.pid"))
	if err != nil {
		t.Fatal(err)
	}
	shell, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", shell))
		if i := bytes.LastIndexByte(stat, ')'); errors.Is(err, os.ErrNotExist) || (i >= 0 && bytes.HasPrefix(stat[i:], []byte(") Z"))) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command's shell %d outlived cadre", shell)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if left := sleepsOf(token); len(left) != 2 {
		t.Fatalf("the sleeps left in the shell's group: %v, want 2", left)
	}
	res := runBinaryWithin(t, 2*time.Minute, dir, env, "resume", "--trust-project", "--approve", "all")
	if res.code != 0 {
		t.Fatalf("resume: exit %d\nstderr:\n%s", res.code, res.stderr)
	}
	if !strings.Contains(res.stderr, "cadre: killed 2 processes left running by a command of cadre process") || !strings.Contains(res.stderr, token) {
		t.Errorf("resume does not say what it killed:\n%s", res.stderr)
	}
	waitSleeps(t, token, "after resume", func(p []int) bool { return len(p) == 0 })
}
