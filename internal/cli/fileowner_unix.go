//go:build unix

package cli

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedByOther tells whether another user than the one running cadre owns
// the file fi describes.
func ownedByOther(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) != os.Getuid()
}
