//go:build windows

package builtin

import (
	"io/fs"
	"os"
	"syscall"
)

// openNonblock is 0: Windows has no named pipes in the file tree.
const openNonblock = 0

// linkCount returns the number of hard links of the open file f, asked of
// its handle.
func linkCount(f *os.File, _ fs.FileInfo) (uint64, error) {
	var d syscall.ByHandleFileInformation
	if err := syscall.GetFileInformationByHandle(syscall.Handle(f.Fd()), &d); err != nil {
		return 0, err
	}
	return uint64(d.NumberOfLinks), nil
}

// keepOwner does nothing: a new file gets the directory's permissions.
func keepOwner(*os.File, fs.FileInfo) error { return nil }
