//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package cli

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// answersCursor asks the terminal on in and out where its cursor is, as
// the line editor does before each prompt, and reports whether it
// answered within wait. The editor waits for that answer without a
// limit: on a terminal that never gives one, the prompt would take no
// line at all. What is typed during the question is read with the answer
// and lost, as the editor would lose it.
func answersCursor(in, out *os.File, wait time.Duration) bool {
	if out == nil {
		return true
	}
	fd := int(in.Fd())
	old, err := term.MakeRaw(fd)
	if err != nil {
		return true // the editor sets the same mode, and says so if it cannot
	}
	defer term.Restore(fd, old)
	if _, err := out.Write([]byte("\x1b[6n")); err != nil {
		return false
	}
	deadline := time.Now().Add(wait)
	var got []byte
	buf := make([]byte, 64)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left/time.Millisecond)+1)
		if errors.Is(err, unix.EINTR) || err == nil && n == 0 {
			continue
		}
		if err != nil {
			return false
		}
		k, err := unix.Read(fd, buf)
		if err != nil || k <= 0 {
			return false
		}
		got = append(got, buf[:k]...)
		if cursorReport(got) {
			return true
		}
		if len(got) > 1024 {
			got = got[len(got)-32:]
		}
	}
}
