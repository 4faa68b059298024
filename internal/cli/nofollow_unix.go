//go:build unix

package cli

import "syscall"

// noFollow makes an open fail on a symbolic link at the path instead of
// opening the file the link names, and return at once on a named pipe
// instead of waiting for its other end (which the caller then refuses as
// not a regular file).
const noFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
