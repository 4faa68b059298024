//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package cli

import (
	"os"
	"time"
)

// answersCursor reports true: the terminals of these systems are left to
// the line editor, which handles them without asking where the cursor is
// or with its own means.
func answersCursor(in, out *os.File, wait time.Duration) bool { return true }
