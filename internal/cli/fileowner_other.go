//go:build !unix

package cli

import "io/fs"

// ownedByOther is false where files have no owner cadre can compare.
func ownedByOther(fs.FileInfo) bool { return false }
