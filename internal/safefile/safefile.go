// Package safefile reads files a repository may hold, which cadre reads
// outside any sandbox (agent files, skills, plugin manifests, configs):
// only regular files, judged on the open file, and no more than a limit.
// A repository can hold a link to /dev/zero (read until memory runs out),
// a FIFO (an open that waits for a writer for ever) or a device in their
// place.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
)

var (
	// ErrFolder is returned for a folder.
	ErrFolder = errors.New("is a folder")
	// ErrTooLarge is returned for a file of more bytes than the limit.
	ErrTooLarge = errors.New("is too large")
)

// ReadRegular reads path when it is a regular file of at most limit
// bytes. It opens the file without waiting for a writer, judges the open
// file (not the path, which could change), and reads no more than limit
// bytes whatever the file says its size is. A missing file gives an error
// that wraps fs.ErrNotExist.
func ReadRegular(path string, limit int64) ([]byte, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case fi.IsDir():
		return nil, ErrFolder
	case !fi.Mode().IsRegular():
		kind := "a special file"
		switch t := fi.Mode().Type(); {
		case t&fs.ModeNamedPipe != 0:
			kind = "a FIFO"
		case t&fs.ModeDevice != 0:
			kind = "a device (such as a link to /dev/zero)"
		case t&fs.ModeSocket != 0:
			kind = "a socket"
		}
		return nil, fmt.Errorf("is not a regular file but %s, which is not read", kind)
	case fi.Size() > limit:
		return nil, ErrTooLarge
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, ErrTooLarge
	}
	return data, nil
}
