//go:build unix

package builtin

import (
	"io/fs"
	"os"
	"syscall"
)

// openNonblock opens without waiting: a named pipe put where a regular
// file was checked cannot block the open. It changes nothing for regular
// files.
const openNonblock = syscall.O_NONBLOCK

// linkCount returns the number of hard links of the open file f, which fi
// (f's Stat) describes: the count of the file opened, not of whatever a
// path names now.
func linkCount(_ *os.File, fi fs.FileInfo) (uint64, error) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink), nil
	}
	return 1, nil
}

// keepOwner gives tmp, a new file, the owner and group of the file old
// describes, when they differ.
func keepOwner(tmp *os.File, old fs.FileInfo) error {
	st, ok := old.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	fi, err := tmp.Stat()
	if err != nil {
		return err
	}
	cur, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || cur.Uid == st.Uid && cur.Gid == st.Gid {
		return nil
	}
	return tmp.Chown(int(st.Uid), int(st.Gid))
}
