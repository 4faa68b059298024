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
// line at all. typed is what was typed meanwhile, for the reader of the
// lines to take first.
func answersCursor(in, out *os.File, wait time.Duration) (ok bool, typed []byte) {
	fd := int(in.Fd())
	old, err := term.MakeRaw(fd)
	if err != nil {
		return true, nil // the editor sets the same mode, and says so if it cannot
	}
	defer term.Restore(fd, old)
	if _, err := out.Write([]byte("\x1b[6n")); err != nil {
		return false, nil
	}
	deadline := time.Now().Add(wait)
	buf := make([]byte, 256)
	for len(typed) < 64<<10 {
		left := time.Until(deadline)
		if left <= 0 {
			return false, typed
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left/time.Millisecond)+1)
		switch {
		case errors.Is(err, unix.EINTR) || err == nil && n == 0:
			continue
		case err != nil:
			return false, typed
		case fds[0].Revents&(unix.POLLNVAL|unix.POLLERR) != 0:
			// A terminal this system cannot poll (macOS's /dev/tty): a
			// read could wait for ever, so it is left to the editor.
			return true, typed
		case fds[0].Revents&unix.POLLIN == 0:
			return false, typed
		}
		k, err := unix.Read(fd, buf)
		if err != nil || k <= 0 {
			return false, typed
		}
		typed = append(typed, buf[:k]...)
		if rest, ok := cutCursorReport(typed); ok {
			return true, rest
		}
	}
	return false, typed
}
