//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package cli

import (
	"os"
	"time"
)

// answersCursor reports true: on these systems cadre does not ask, and
// the line editor is used as it is.
func answersCursor(in, out *os.File, wait time.Duration) (bool, []byte) { return true, nil }
