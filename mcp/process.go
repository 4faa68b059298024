package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// stderrKeep is how many bytes of a server's stderr are kept for error
// messages; stderrShow is how many of them an error shows.
const (
	stderrKeep = 8 << 10
	stderrShow = 600
)

// A process is a stdio server's running program. One goroutine waits for
// it to exit; stop ends it.
type process struct {
	cmd    *exec.Cmd
	stderr *tail
	pipes  []io.Closer   // cadre's ends of its stdin and stdout
	exited chan struct{} // closed when the process has exited and been reaped
	err    error         // what cmd.Wait returned; set before exited is closed
}

// startProcess starts the command of sc with pipes for MCP on its stdin and
// stdout, and returns the transport that talks to it. The process's
// environment is taken from environ (nil: this process's), as serverEnv
// says.
func startProcess(sc ServerConfig, environ []string) (*process, sdk.Transport, error) {
	if sc.Dir != "" {
		// Checked here: with a process group, a missing directory would be
		// reported as a missing command.
		if fi, err := os.Stat(sc.Dir); err != nil || !fi.IsDir() {
			if err == nil {
				err = errors.New("not a directory")
			}
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, nil, &fs.PathError{Op: "chdir", Path: sc.Dir, Err: err}
		}
	}
	cmd := exec.Command(sc.Command, sc.Args...)
	cmd.Dir = sc.Dir
	if environ == nil {
		environ = os.Environ()
	}
	cmd.Env = serverEnv(environ, sc)
	p := &process{cmd: cmd, stderr: &tail{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	// The server's grandchildren may keep stderr open after it exits.
	cmd.WaitDelay = time.Second
	setGroup(cmd)

	// Pipes of our own rather than StdinPipe and StdoutPipe: Wait closes
	// those, and may do so before the last answer has been read.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, nil, err
	}
	p.pipes = []io.Closer{inW, outR}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, &sdk.IOTransport{Reader: outR, Writer: inW}, nil
}

// hasExited reports whether the process has exited, waiting up to d for it.
func (p *process) hasExited(d time.Duration) bool {
	select {
	case <-p.exited:
		return true
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// exitStatus describes how the process ended, such as "exit status 2" or
// "signal: killed". It must be called after exited is closed.
func (p *process) exitStatus() string {
	if p.err == nil {
		return "exit status 0"
	}
	return p.err.Error()
}

// stop ends the process, whose stdin the caller has closed: it waits up to
// grace for the process to exit, then sends SIGTERM and waits as long
// again, then kills it. When ctx ends first, it kills at once. It returns
// when the process has been reaped, and kills what is left of its group.
func (p *process) stop(ctx context.Context, grace time.Duration) {
	defer kill(p.cmd)
	// The session closes them too; closing them here as well covers a
	// handshake that failed half way.
	for _, c := range p.pipes {
		_ = c.Close()
	}
	wait := func() bool {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-p.exited:
			return true
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
	if wait() {
		return
	}
	if ctx.Err() == nil {
		terminate(p.cmd)
		if wait() {
			return
		}
	}
	kill(p.cmd)
	<-p.exited
}

// startError turns a failure to start the command of sc into a ServerError
// that says what to check.
func startError(name string, sc ServerConfig, err error) *ServerError {
	se := &ServerError{Server: name, Op: "start", Err: err}
	var pe *fs.PathError
	switch {
	case errors.Is(err, exec.ErrNotFound):
		se.Err = fmt.Errorf("command %q not found", sc.Command)
		se.Hint = fmt.Sprintf("install it, or give its full path as the command of mcpServers.%s", name)
	case errors.As(err, &pe) && pe.Op == "chdir":
		se.Err = fmt.Errorf("cannot enter the working directory %s: %w", sc.Dir, pe.Err)
		se.Hint = fmt.Sprintf("check the cwd of mcpServers.%s", name)
	case errors.Is(err, fs.ErrNotExist):
		se.Err = fmt.Errorf("command %q not found", sc.Command)
		se.Hint = fmt.Sprintf("check the command of mcpServers.%s", name)
	case errors.Is(err, fs.ErrPermission):
		se.Err = fmt.Errorf("command %q cannot be run: %w", sc.Command, err)
		se.Hint = "check that it is an executable file"
	}
	return se
}

// A tail keeps the last stderrKeep bytes written to it. It is safe for
// concurrent use.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - stderrKeep; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String returns the last stderrShow bytes, from the start of a line where
// possible, trimmed.
func (t *tail) String() string {
	t.mu.Lock()
	s := string(t.buf)
	t.mu.Unlock()
	s = strings.TrimSpace(s)
	if len(s) > stderrShow {
		s = s[len(s)-stderrShow:]
		if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
			s = s[i+1:]
		}
		s = "…" + strings.ToValidUTF8(s, "")
	}
	return s
}
