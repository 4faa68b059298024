package builtin

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/cadre-ai/cadre/tool"
)

// A target is the file write_file or edit_file changes. The directory that
// holds it is held open (a tool.Dir), so that the file is checked, read
// and replaced in that one directory whatever happens to the tree around
// it.
type target struct {
	tool  string      // the tool changing it
	shown string      // its path relative to the workspace root
	dir   *tool.Dir   // the directory that holds it
	name  string      // its name in dir
	f     *os.File    // the file as it is, open for reading and writing; nil when it does not exist yet
	fi    fs.FileInfo // f's Stat
	links uint64      // f's number of hard links
}

// openTarget opens the file at rel, a path resolve returned, for tool
// name to change. With create, a file that does not exist is fine, and its
// missing parent directories are made. The file must be a regular file,
// writable, with one hard link unless allowLinks.
//
// A control path (see protectedPaths) is refused with a *ProtectedError,
// judged on rel, whose links are resolved; and so that a folder swapped
// for a symbolic link meanwhile cannot lead the change elsewhere, the
// folder opened must be the one rel names with no link on the way, and so
// must the file.
func openTarget(ws tool.Workspace, name, rel string, create, allowLinks bool) (*target, error) {
	if err := checkProtected(ws, name, rel); err != nil {
		return nil, err
	}
	parent, base := path.Dir(rel), path.Base(rel)
	dir, err := ws.OpenDir(parent)
	if create && errors.Is(err, fs.ErrNotExist) {
		if err := ws.MkdirAll(parent, 0o755); err != nil {
			return nil, fileError(name, "create the directories of", rel, forPath(rel, err))
		}
		dir, err = ws.OpenDir(parent)
	}
	if err != nil {
		return nil, statError(name, rel, forPath(rel, err))
	}
	t := &target{tool: name, shown: rel, dir: dir, name: base}
	if err := t.checkPlace(ws, nil); err != nil {
		t.close()
		return nil, err
	}
	fi, err := dir.Stat(base)
	switch {
	case create && errors.Is(err, fs.ErrNotExist):
		return t, nil
	case err != nil:
		err = statError(name, rel, err)
	case create && fi.IsDir():
		err = fmt.Errorf("%s: %s is a directory: give the path of a file", name, rel)
	default:
		err = regularFile(name, rel, fi)
	}
	if err == nil {
		t.f, err = dir.OpenFile(base, os.O_RDWR|openNonblock, 0)
		if err != nil {
			err = fileError(name, "write", rel, err)
		} else {
			t.fi, t.links, err = checkOpen(t.f, name, "write", rel, allowLinks)
		}
	}
	if err == nil {
		err = t.checkPlace(ws, t.fi)
	}
	if err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// checkPlace makes sure that the folder held is the one t.shown names,
// reached from the root of ws with no symbolic link on the way, and, when
// fi is not nil, that the file t.shown names is not a link either and is
// the file fi describes. The tree may change while a tool works (a command
// run at the same time can swap a folder for a link to .git/hooks): what
// is judged is the path, so the path must be where the change goes.
func (t *target) checkPlace(ws tool.Workspace, fi fs.FileInfo) error {
	root, err := ws.Dir()
	if err != nil {
		return fileError(t.tool, "write", t.shown, err)
	}
	held, err := t.dir.Stat(".")
	if err != nil {
		return fileError(t.tool, "write", t.shown, err)
	}
	rel := path.Dir(t.shown)
	if t.dir.Rel() != rel {
		return t.moved() // OpenDir resolved the path anew and found another folder
	}
	cur := root
	if rel != "." {
		for _, c := range strings.Split(rel, "/") {
			cur = filepath.Join(cur, c)
			if st, err := os.Lstat(cur); err != nil || st.Mode()&fs.ModeSymlink != 0 {
				return t.moved()
			}
		}
	}
	if st, err := os.Lstat(cur); err != nil || !os.SameFile(st, held) {
		return t.moved()
	}
	if fi == nil {
		return nil
	}
	if st, err := os.Lstat(filepath.Join(cur, t.name)); err != nil || st.Mode()&fs.ModeSymlink != 0 || !os.SameFile(st, fi) {
		return t.moved()
	}
	return nil
}

// moved reports a path that changed while it was used.
func (t *target) moved() error {
	return fmt.Errorf("%s: %s changed while it was being opened (a folder or the file on its way was moved or replaced, maybe by a symbolic link): nothing was changed; look at the path again with list_files and retry", t.tool, t.shown)
}

// readText reads the whole file, refusing a binary one and one larger
// than limit bytes.
func (t *target) readText(limit int64) ([]byte, error) {
	if t.fi.Size() > limit {
		return nil, t.tooLarge(t.fi.Size(), limit)
	}
	b, err := readUpTo(io.NewSectionReader(t.f, 0, limit+1), t.fi.Size(), limit)
	if errors.Is(err, errTooLarge) {
		return nil, t.tooLarge(limit+1, limit)
	}
	if err != nil {
		return nil, fileError(t.tool, "read", t.shown, err)
	}
	if looksBinary(b[:min(len(b), sniffLen)]) {
		return nil, fmt.Errorf("%s: %s is a binary file (%s), not text: %s changes text files only", t.tool, t.shown, size(int64(len(b))), t.tool)
	}
	return b, nil
}

// tooLarge refuses a file of n bytes, over limit.
func (t *target) tooLarge(n, limit int64) error {
	over := size(n)
	if n == limit+1 {
		over = "more than " + size(limit) // it grew while it was read
	}
	return fmt.Errorf("%s: %s is %s, larger than the %s that %s reads at most: "+
		"change it with a command such as sed through run_command, if you have it, or ask the user to", t.tool, t.shown, over, size(limit), t.tool)
}

// maxTempTries bounds the names replace tries for its temporary file.
const maxTempTries = 10

// replace makes data the content of the file. It writes a temporary file
// beside it and renames it over the file, so that a reader sees the old
// content or the new, and a failed write leaves the old; the new file gets
// the old one's mode and, where it can, its owner. A file with several
// hard links (allowed) is written in place instead, so that every name
// sees the change; so is one whose owner cannot be kept.
func (t *target) replace(data []byte) error {
	if t.f != nil && t.links > 1 {
		return t.inPlace(data)
	}
	perm := fs.FileMode(0o644) // less the umask, as for any new file
	if t.f != nil {
		perm = t.fi.Mode().Perm()
	}
	var (
		tmp  *os.File
		name string
		err  error
	)
	for range maxTempTries {
		name = tempName(t.name, rand.Uint64())
		tmp, err = t.dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return fileError(t.tool, "write", t.shown, err)
	}
	closed, renamed := false, false
	defer func() {
		if !closed {
			tmp.Close()
		}
		if !renamed {
			_ = t.dir.Remove(name)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fileError(t.tool, "write", t.shown, err)
	}
	if t.f != nil {
		if err := keepOwner(tmp, t.fi); err != nil {
			// Renaming would hand the file to another owner: change it
			// where it is instead.
			return t.inPlace(data)
		}
		// The mode last: writing and changing the owner clear the
		// set-user-ID and set-group-ID bits.
		if err := tmp.Chmod(t.fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)); err != nil {
			return fileError(t.tool, "write", t.shown, err)
		}
	}
	closed = true
	if err := tmp.Close(); err != nil {
		return fileError(t.tool, "write", t.shown, err)
	}
	if err := t.dir.Rename(name, t.name); err != nil {
		return fileError(t.tool, "write", t.shown, err)
	}
	renamed = true
	return nil
}

// maxNameLen is the longest file name most file systems take, in bytes.
const maxNameLen = 255

// tempName returns the name of a temporary file beside the file named
// name: ".NAME.<16 hex digits>.tmp", with NAME cut short, on a character
// boundary, where the whole would be longer than maxNameLen.
func tempName(name string, r uint64) string {
	const extra = len(".") + len(".0123456789abcdef.tmp")
	if len(name)+extra > maxNameLen {
		n := maxNameLen - extra
		for n > 0 && !utf8.RuneStart(name[n]) {
			n--
		}
		name = name[:n]
	}
	return fmt.Sprintf(".%s.%016x.tmp", name, r)
}

// inPlace writes data over the open file.
func (t *target) inPlace(data []byte) error {
	if _, err := t.f.WriteAt(data, 0); err != nil {
		return fileError(t.tool, "write", t.shown, err)
	}
	if err := t.f.Truncate(int64(len(data))); err != nil {
		return fileError(t.tool, "write", t.shown, err)
	}
	return nil
}

// close lets go of the file and its directory.
func (t *target) close() {
	if t.f != nil {
		t.f.Close()
	}
	t.dir.Close()
}

// forPath makes an *EscapeError about the directory of rel one about rel,
// the path the model gave.
func forPath(rel string, err error) error {
	if ee, ok := errors.AsType[*tool.EscapeError](err); ok {
		c := *ee
		c.Path = rel
		return &c
	}
	return err
}
