//go:build unix

package builtin

import (
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

	"github.com/cadre-ai/cadre/tool"
)

func TestRunCommand(t *testing.T) {
	ws, root, _ := newWorkspace(t)
	rc := NewRunCommand(ws, Options{})
	tests := []struct {
		name    string
		tool    *RunCommand
		args    map[string]any
		want    string
		wantErr string
	}{
		{name: "output_and_exit_code", args: map[string]any{"command": "echo out; echo err >&2; exit 3"}, want: "out\nerr\n\nexit code: 3\n"},
		{name: "runs_in_root", args: map[string]any{"command": "pwd"}, want: root + "\n\nexit code: 0\n"},
		{name: "no_output", args: map[string]any{"command": "true"}, want: "(no output)\n\nexit code: 0\n"},
		{name: "stdin_is_empty", args: map[string]any{"command": `if read x; then echo "got:$x"; else echo eof; fi`}, want: "eof\n\nexit code: 0\n"},
		{name: "killed_by_signal", args: map[string]any{"command": "kill -9 $$"}, want: "(no output)\n\nexit code: -1 (signal: killed)\n"},
		{name: "env", tool: NewRunCommand(ws, Options{Env: []string{"GREETING=hi"}}), args: map[string]any{"command": `echo "$GREETING"`}, want: "hi\n\nexit code: 0\n"},
		{name: "timeout_clamped", tool: NewRunCommand(ws, Options{MaxCommandTimeout: 5 * time.Second}), args: map[string]any{"command": "echo hi", "timeout_seconds": 50},
			want: "hi\n\nexit code: 0\n(timeout_seconds 50 is above the limit; the command ran with 5)\n"},
		{name: "empty", args: map[string]any{"command": "  "}, wantErr: "the command is empty"},
		{name: "bad_shell", tool: NewRunCommand(ws, Options{Shell: filepath.Join(root, "no-such-shell")}), args: map[string]any{"command": "true"}, wantErr: "run_command: start"},
		{name: "bad_timeout_type", args: map[string]any{"command": "true", "timeout_seconds": "10"}, wantErr: `argument "timeout_seconds": expected integer, got string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := tt.tool
			if tl == nil {
				tl = rc
			}
			got, err := call(t, tl, tt.args)
			checkResult(t, got, err, tt.want, tt.wantErr)
		})
	}
	if got := tool.Summarize(rc, json.RawMessage(`{"command":"go test ./..."}`)); got != "run: go test ./..." {
		t.Errorf("Summary = %q", got)
	}
}

func TestRunCommandOutputCap(t *testing.T) {
	ws, _, _ := newWorkspace(t)
	rc := NewRunCommand(ws, Options{MaxCommandOutput: 100})
	got, err := call(t, rc, map[string]any{"command": "seq 1 2000"})
	if err != nil {
		t.Fatal(err)
	}
	// seq 1 2000 writes 8893 bytes; 50 from the head and 50 from the tail
	// are kept, cut back to whole lines: 1-19 and 1992-2000.
	if !strings.HasPrefix(got, "1\n2\n3\n") || !strings.HasSuffix(got, "1999\n2000\n\nexit code: 0\n") ||
		!strings.Contains(got, "\n19\n[… 8800 bytes of output left out (8893 in all) …]\n1992\n") || len(got) > 250 {
		t.Errorf("capped output (%d bytes):\n%s", len(got), got)
	}
}

func TestCapBuffer(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{name: "fits", max: 10, writes: []string{"abc", "def"}, want: "abcdef"},
		{name: "exactly", max: 6, writes: []string{"abcdef"}, want: "abcdef"},
		{name: "one_big_write", max: 6, writes: []string{"abcdefghij"}, want: "abc\n[… 4 bytes of output left out (10 in all) …]\nhij"},
		{name: "many_small_writes", max: 6, writes: []string{"ab", "cd", "ef", "gh", "ij"}, want: "abc\n[… 4 bytes of output left out (10 in all) …]\nhij"},
		{name: "tail_rolls", max: 4, writes: []string{"a", "b", "c", "d", "e", "f", "g"}, want: "ab\n[… 3 bytes of output left out (7 in all) …]\nfg"},
		{name: "whole_lines", max: 8, writes: []string{"aa\nbb\ncc\n", "dd\nee\n"}, want: "aa\n[… 9 bytes of output left out (15 in all) …]\nee\n"},
		{name: "long_lines_cut_anyway", max: 8, writes: []string{"a\nbbbbbbbbbbbbbbbbbb\nc"}, want: "a\nbb\n[… 14 bytes of output left out (22 in all) …]\nbb\nc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newCapBuffer(tt.max)
			for _, w := range tt.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := b.String(); got != tt.want {
				t.Errorf("String = %q, want %q", got, tt.want)
			}
		})
	}
}

// readPid reads a process id the command wrote to a file, waiting for it.
func readPid(t *testing.T, file string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(file)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was never written", file)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitGone waits until pid has exited (a zombie waiting for its reaper
// counts as exited), and fails the test if it never does.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		gone := errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			// The state is the field after the parenthesised command name.
			if i := strings.LastIndexByte(string(b), ')'); i >= 0 && strings.HasPrefix(string(b[i:]), ") Z") {
				gone = true
			}
		}
		if gone {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still running", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRunCommandTimeoutKillsGroup(t *testing.T) {
	ws, root, _ := newWorkspace(t)
	rc := NewRunCommand(ws, Options{CommandTimeout: 300 * time.Millisecond})
	got, err := call(t, rc, map[string]any{"command": "sleep 60 & echo $! > child.pid; echo started; sleep 60"})
	if err == nil || !strings.Contains(err.Error(), "timed out after 300ms and was killed") || !strings.Contains(err.Error(), "started") {
		t.Fatalf("got %q, %v; want a timeout error with the output so far", got, err)
	}
	waitGone(t, readPid(t, filepath.Join(root, "child.pid")))
}

func TestRunCommandKillsBackgroundLeftovers(t *testing.T) {
	ws, root, _ := newWorkspace(t)
	rc := NewRunCommand(ws, Options{})
	// The background sleep keeps the output pipe open; the call must still
	// return when the shell exits, and the sleep must not outlive it.
	got, err := call(t, rc, map[string]any{"command": "sleep 60 & echo $! > bg.pid; echo done"})
	if err != nil || got != "done\n\nexit code: 0\n" {
		t.Fatalf("got %q, %v", got, err)
	}
	waitGone(t, readPid(t, filepath.Join(root, "bg.pid")))
}

func TestRunCommandCancel(t *testing.T) {
	ws, root, _ := newWorkspace(t)
	rc := NewRunCommand(ws, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := rc.Call(ctx, json.RawMessage(`{"command": "echo $$ > shell.pid; sleep 60 & echo $! > child.pid; wait"}`))
		done <- result{out, err}
	}()
	shell := readPid(t, filepath.Join(root, "shell.pid"))
	child := readPid(t, filepath.Join(root, "child.pid"))
	cancel()
	r := <-done
	if r.err == nil || !strings.Contains(r.err.Error(), "the call was cancelled and the command killed") {
		t.Fatalf("got %q, %v; want a cancellation error", r.out, r.err)
	}
	waitGone(t, shell)
	waitGone(t, child)
}

func TestRunCommandProcessLeavingTheGroup(t *testing.T) {
	ws, root, _ := newWorkspace(t)
	rc := NewRunCommand(ws, Options{})
	rc.grace = 50 * time.Millisecond // the call waits this long for the output to close
	pidFile := filepath.Join(root, "leaver.pid")
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	// The leaver starts a session of its own, writes its pid once it has,
	// and sleeps holding the output pipe; the shell waits for the pid file
	// so that the leaver is out of the group before the shell ends.
	const script = `setsid sh -c 'echo $$ > leaver.pid.tmp; mv leaver.pid.tmp leaver.pid; exec sleep 60' &
while [ ! -s leaver.pid ]; do :; done
echo done`
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid is not installed")
	}
	got, err := call(t, rc, map[string]any{"command": script})
	want := "done\n\nexit code: 0\n(a process the command started left its process group and kept the output open; " +
		"it was not waited for, may still be running, and later output is lost)\n"
	checkResult(t, got, err, want, "")
}
