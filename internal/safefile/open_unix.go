//go:build unix

package safefile

import (
	"os"
	"syscall"
)

// openFile opens a file to read without waiting for a writer: a FIFO in
// a repository must not hang cadre.
func openFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
