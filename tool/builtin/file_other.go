//go:build !unix && !windows

package builtin

import (
	"io/fs"
	"os"
)

const openNonblock = 0

// linkCount returns 1: this system does not report hard links.
func linkCount(*os.File, fs.FileInfo) (uint64, error) { return 1, nil }

func keepOwner(*os.File, fs.FileInfo) error { return nil }
