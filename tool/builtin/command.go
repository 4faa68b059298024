package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/tool"
)

// defaultOutputGrace is how long run_command keeps reading output after
// the command's process group is gone, for a process that left the group
// but still holds the output open.
const defaultOutputGrace = 2 * time.Second

// commandWaitDelay is how long after a command's time is up, or its call
// cancelled, Wait waits for its process before killing it once more (the
// cancellation kills the process and its group first; a process that
// cannot die, stuck in the kernel, is still waited for).
const commandWaitDelay = 5 * time.Second

// RunCommand is the run_command tool: it runs a shell command line in the
// workspace root. It is a mutating tool.
//
// The command runs as Shell -c command in its own process group, with
// standard input empty and standard output and error combined. When it
// ends, times out or the call is cancelled, the whole group is killed, so
// what the command started in the background does not outlive the call;
// on a time-out or cancel the shell's own process is killed too, even if
// it moved to another group. A process the shell started that leaves the
// group on purpose (setsid) is out of reach: if
// it keeps the output open, the call returns shortly after the command
// ends and says so.
//
// The command's environment is cleaned of secrets (see CleanEnv); call
// ProtectProcess at start-up so that an unconfined command cannot read
// the environment of the process that runs it either. With
// Options.Sandbox it runs inside bubblewrap, confined as Sandbox says, and
// nothing it starts outlives the call, setsid or not. Without one it is
// confined by nothing but its working directory. On Linux the command is
// killed when the process that runs it (cadre) dies; without a sandbox,
// what it started in its process group is recorded in
// Options.ProcessDir for KillLeftovers to stop.
type RunCommand struct {
	ws     tool.Workspace
	opts   Options
	grace  time.Duration // how long to drain output after the group is killed
	nested nestedStock   // the nested repositories before the first command (see plantedPrograms)
}

var (
	_ cadre.Mutator   = (*RunCommand)(nil)
	_ tool.Summarizer = (*RunCommand)(nil)
)

// NewRunCommand returns the run_command tool, running commands in ws's
// root.
func NewRunCommand(ws tool.Workspace, opts Options) *RunCommand {
	return &RunCommand{ws: ws, opts: opts.withDefaults(), grace: defaultOutputGrace}
}

type commandArgs struct {
	Command        string `json:"command"`
	TimeoutSeconds int    `json:"timeout_seconds"`
}

// Spec implements cadre.Tool.
func (t *RunCommand) Spec() cadre.ToolSpec {
	return cadre.ToolSpec{
		Name: NameRunCommand,
		Description: fmt.Sprintf("Run a shell command (%s -c) in the workspace root and return its combined output and exit code. "+
			"Standard input is empty, so interactive commands fail. The command is killed, with everything it started, after "+
			"timeout_seconds (default %d, at most %d) and processes left in the background are killed when it returns. "+
			"Output over %d bytes is cut in the middle.%s",
			t.opts.Shell, int(t.opts.CommandTimeout/time.Second), int(t.opts.MaxCommandTimeout/time.Second), t.opts.MaxCommandOutput,
			t.sandboxNote()),
		Parameters: json.RawMessage(`{
	"type": "object",
	"properties": {
		"command": {"type": "string", "description": "The command line to run."},
		"timeout_seconds": {"type": "integer", "description": "Seconds before the command is killed."}
	},
	"required": ["command"],
	"additionalProperties": false
}`),
	}
}

// sandboxNote tells the model what the sandbox allows, so that it does not
// take a refusal for a fault of the command.
func (t *RunCommand) sandboxNote() string {
	sb := t.opts.Sandbox
	if sb == nil {
		return ""
	}
	net := " There is no network."
	if sb.Network {
		net = ""
	}
	return " The command runs in a sandbox: it can change files only inside the workspace (not .cadre, .claude, .opencode, " +
		".mcp.json, or git's hooks and configuration; a command that leaves one of those in a subfolder, or a repository " +
		"whose hooks or settings run programs, fails), sees the rest of the file system read-only with some private " +
		"folders empty, and has an empty /tmp of its own that is gone when it ends." + net
}

// Mutates implements cadre.Mutator.
func (t *RunCommand) Mutates() bool { return true }

// Summary implements tool.Summarizer.
func (t *RunCommand) Summary(raw json.RawMessage) string {
	var a commandArgs
	if json.Unmarshal(raw, &a) != nil {
		return NameRunCommand + " " + string(raw)
	}
	s, cut := cutLine(a.Command, 1000)
	if cut {
		s += " …"
	}
	return "run: " + s
}

// Call implements cadre.Tool.
func (t *RunCommand) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	a, err := tool.Decode[commandArgs](t.Spec(), raw)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(a.Command) == "" {
		return "", errors.New("run_command: the command is empty: give a shell command line")
	}
	timeout, note := t.opts.CommandTimeout, ""
	if a.TimeoutSeconds > 0 {
		timeout = time.Duration(a.TimeoutSeconds) * time.Second
		if timeout > t.opts.MaxCommandTimeout {
			timeout = t.opts.MaxCommandTimeout
			note = fmt.Sprintf("(timeout_seconds %d is above the limit; the command ran with %d)\n", a.TimeoutSeconds, int(timeout/time.Second))
		}
	}
	dir, err := t.ws.Dir()
	if err != nil {
		return "", fmt.Errorf("run_command: %w", err)
	}
	res, err := t.run(ctx, a.Command, dir, timeout)
	if err != nil {
		return "", err
	}
	if len(res.lapsed) > 0 {
		return "", fmt.Errorf("run_command: while the command ran, %s was replaced (by git or another program on this machine, most likely), "+
			"which lifts the sandbox's read-only protection of it for the rest of the command: the command may have changed it. "+
			"The user should review it before running git or cadre there again (git config --list --show-origin shows git's settings). Output:\n%s",
			strings.Join(res.lapsed, ", "), res.out)
	}
	if len(res.planted) > 0 {
		return "", fmt.Errorf("run_command: the workspace holds what commands in the sandbox made or changed and programs on this machine act on "+
			"outside any sandbox: git repositories with settings, hooks or a layout that could make git run a program when it looks at them "+
			"(git status does once a repository is in the index, git submodule update acts on its remotes, and editors look into folders by themselves), "+
			"or agent folders and MCP server lists in subfolders, which cadre and other agent tools load when run there: %s. This is told after every "+
			"command until they are gone: the user should review or remove them before git or an agent tool runs there. Output:\n%s",
			strings.Join(res.planted, "; "), res.out)
	}
	out := res.out
	if out == "" {
		out = "(no output)\n"
	} else if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	if res.abandoned {
		note += "(a process the command started left its process group and kept the output open; " +
			"it was not waited for, may still be running, and later output is lost)\n"
	}
	switch {
	case res.cancelled:
		return "", fmt.Errorf("run_command: the call was cancelled and the command killed (%v). Output so far:\n%s", context.Cause(ctx), out)
	case res.timedOut:
		return "", fmt.Errorf("run_command: the command timed out after %s and was killed with the processes it started. "+
			"Give a larger timeout_seconds, or make the command faster or run it on less. Output so far:\n%s%s", timeout, out, note)
	}
	if res.status != "" {
		return fmt.Sprintf("%s\nexit code: %d (%s)\n%s", out, res.exitCode, res.status, note), nil
	}
	return fmt.Sprintf("%s\nexit code: %d\n%s", out, res.exitCode, note), nil
}

type runResult struct {
	out       string
	exitCode  int
	status    string
	timedOut  bool
	cancelled bool
	abandoned bool // a process outside the group kept the output open
	// lapsed are the read-only control paths replaced while the command
	// ran (see controlIDs).
	lapsed []string
	// planted are what nested repositories made or changed since the
	// first command hold that is not plainly inert (see plantedPrograms).
	planted []string
}

func (t *RunCommand) run(ctx context.Context, command, dir string, timeout time.Duration) (res runResult, err error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var cmd *exec.Cmd
	if sb := t.opts.Sandbox; sb != nil {
		prog, err := sb.program()
		if err != nil {
			return runResult{}, fmt.Errorf("run_command: the sandbox cannot run: %w; install bubblewrap", err)
		}
		var hidden []string
		if d := t.opts.ProcessDir; d != "" && os.MkdirAll(d, 0o700) == nil {
			hidden = append(hidden, d)
		}
		args, ids, err := sb.prepare(dir, hidden)
		if err != nil {
			return runResult{}, fmt.Errorf("run_command: %w", err)
		}
		before := t.nested.baseline(dir)
		defer func() {
			res.lapsed = ids.replaced(dir)
			res.planted = planted(before, plantedPrograms(dir))
		}()
		cmd = exec.CommandContext(cctx, prog, append(args, "--", t.opts.Shell, "-c", command)...)
	} else {
		cmd = exec.CommandContext(cctx, t.opts.Shell, "-c", command)
	}
	cmd.Dir = dir
	env := t.opts.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = CleanEnv(env, t.opts.SecretEnv, t.opts.PassEnv)
	// The output goes to a pipe of our own, not one exec makes, so Wait
	// returns when the shell exits even if a background process still
	// holds the pipe; the group is then killed and the pipe drained.
	pr, pw, err := os.Pipe()
	if err != nil {
		return runResult{}, fmt.Errorf("run_command: make a pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	setGroup(cmd)
	cmd.WaitDelay = commandWaitDelay
	wait, err := startLocked(cmd)
	if err != nil {
		pr.Close()
		pw.Close()
		return runResult{}, fmt.Errorf("run_command: start %s: %w", cmd.Path, err)
	}
	pw.Close()
	unrecord := func() {}
	if t.opts.Sandbox == nil {
		unrecord = recordCommand(t.opts.ProcessDir, cmd.Process.Pid, command)
	}
	buf := newCapBuffer(t.opts.MaxCommandOutput)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = io.Copy(buf, pr) // ends at EOF, or when pr is closed below
	}()
	waitErr := wait()
	killGroup(cmd)
	unrecord()
	timer := time.NewTimer(t.grace)
	abandoned := false
	select {
	case <-drained:
	case <-timer.C:
		abandoned = true
	}
	timer.Stop()
	pr.Close()
	<-drained

	res = runResult{out: buf.String(), abandoned: abandoned}
	if waitErr == nil {
		return res, nil
	}
	switch {
	case ctx.Err() != nil:
		res.cancelled = true
		return res, nil
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		res.timedOut = true
		return res, nil
	}
	var exitErr *exec.ExitError
	if !errors.As(waitErr, &exitErr) {
		return runResult{}, fmt.Errorf("run_command: %w", waitErr)
	}
	res.exitCode = exitErr.ExitCode()
	if res.exitCode < 0 {
		res.status = exitErr.String() // "signal: killed" and the like
	}
	return res, nil
}

// startLocked starts cmd from a goroutine locked to an OS thread of its
// own, which waits for the command there; the returned function gives the
// result of cmd.Wait.
//
// On Linux the command's parent-death signal (SIGKILL) fires when the
// thread that started it ends, not the process. The Go runtime ends a
// thread when a goroutine locked to it exits, so a command started from
// an ordinary goroutine would be killed whenever some unrelated goroutine
// that had locked that thread exited. Here the thread stays locked to its
// goroutine until the command has been waited for, and ends with it, so
// the signal fires only when cadre itself dies.
func startLocked(cmd *exec.Cmd) (wait func() error, err error) {
	started := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Never unlocked: the thread ends with this goroutine.
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		done <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return func() error { return <-done }, nil
}

// A capBuffer keeps the first and last bytes written to it, up to max in
// all, and counts the rest. It is safe for one writer and one reader.
type capBuffer struct {
	mu      sync.Mutex
	headMax int
	tailMax int
	head    []byte
	tail    []byte
	total   int64
}

func newCapBuffer(max int) *capBuffer {
	return &capBuffer{headMax: max / 2, tailMax: max - max/2}
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	if room := c.headMax - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if len(p) >= c.tailMax {
		c.tail = append(c.tail[:0], p[len(p)-c.tailMax:]...)
		return n, nil
	}
	if drop := len(c.tail) + len(p) - c.tailMax; drop > 0 {
		c.tail = append(c.tail[:0], c.tail[drop:]...)
	}
	c.tail = append(c.tail, p...)
	return n, nil
}

// String returns what was kept, with a note where bytes were left out.
// Where it can do so without losing much, it cuts at line ends, so that
// the head and the tail hold whole lines.
func (c *capBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	head, tail := c.head, c.tail
	if int64(len(head)+len(tail)) == c.total {
		return strings.ToValidUTF8(string(head)+string(tail), "\uFFFD")
	}
	if i := bytes.LastIndexByte(head, '\n'); i >= 0 && i+1 >= len(head)*3/4 {
		head = head[:i+1]
	}
	if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < len(tail)/4 {
		tail = tail[i+1:]
	}
	var b strings.Builder
	b.WriteString(strings.ToValidUTF8(string(head), "\uFFFD"))
	if len(head) > 0 && head[len(head)-1] != '\n' {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[… %d bytes of output left out (%d in all) …]\n", c.total-int64(len(head)+len(tail)), c.total)
	b.WriteString(strings.ToValidUTF8(string(tail), "\uFFFD"))
	return b.String()
}
