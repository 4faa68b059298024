//go:build unix

package cli

import "syscall"

// noFollow makes an open fail on a symbolic link at the path instead of
// opening the file the link names.
const noFollow = syscall.O_NOFOLLOW
