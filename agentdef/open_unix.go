//go:build unix

package agentdef

import (
	"os"
	"syscall"
)

// openFile opens a file to read without waiting for a writer: a FIFO in
// a repository's agent folders must not hang the loader.
func openFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
