package tool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
)

// ErrOutsideWorkspace is matched (with errors.Is) by every *EscapeError.
var ErrOutsideWorkspace = errors.New("tool: path is outside the workspace root")

// ErrClosed is returned by the file operations of a Workspace after Close.
var ErrClosed = errors.New("tool: the workspace is closed")

// An EscapeError reports a path that leads outside the workspace root.
type EscapeError struct {
	Path   string // the path as it was given
	Root   string // the workspace root, symbolic links resolved
	Reason string // how it leaves the root
}

func (e *EscapeError) Error() string {
	return fmt.Sprintf("path %q is outside the workspace root %s: %s; use a path inside %s (relative paths start there)",
		e.Path, e.Root, e.Reason, e.Root)
}

// Unwrap returns ErrOutsideWorkspace.
func (e *EscapeError) Unwrap() error { return ErrOutsideWorkspace }

// maxLinkHops bounds how many symbolic links one resolution follows before
// it gives up, as the kernel does with ELOOP.
const maxLinkHops = 40

// A Workspace confines the paths tools use to a directory tree.
//
// Root is the directory; an empty Root means the current directory.
//
// A Workspace made by NewWorkspace holds the root directory open (an
// os.Root) and does every file operation through it, so that a path is
// resolved and opened in one step: a directory swapped for a symbolic link
// while a tool works cannot lead it outside. Copies of such a Workspace
// share the open directory; whoever made it calls Close once, when no tool
// uses it any more. The directory held is the one opened: if it is moved
// or replaced meanwhile, file operations go on in it. A Workspace built as
// a literal resolves Root and opens it anew for every operation, and needs
// no Close.
//
// Symbolic links are followed while they stay inside the root, whether
// their target is relative or absolute; a link that leads outside, or
// above the root with "..", makes the path an *EscapeError. Hard links are
// not judged here: a file with several links is inside by its path; the
// tools of package builtin refuse such files unless told otherwise.
type Workspace struct {
	Root string

	real string  // Root made absolute with symbolic links resolved, when known
	h    *handle // the open root, shared by copies; nil for a literal
}

// handle is the root directory a Workspace made by NewWorkspace holds.
type handle struct {
	root   *os.Root
	closed atomic.Bool
}

// NewWorkspace returns a workspace rooted at root, which must be an existing
// directory. Root is made absolute, its symbolic links are resolved and
// the directory is opened once, here; call Close to let it go.
func NewWorkspace(root string) (Workspace, error) {
	w := Workspace{Root: root}
	real, err := w.realRoot()
	if err != nil {
		return Workspace{}, err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return Workspace{}, fmt.Errorf("workspace root %s: %w", root, err)
	}
	if !fi.IsDir() {
		return Workspace{}, fmt.Errorf("workspace root %s is not a directory: give a directory", root)
	}
	r, err := os.OpenRoot(real)
	if err != nil {
		return Workspace{}, fmt.Errorf("workspace root %s: %w", root, err)
	}
	return Workspace{Root: real, real: real, h: &handle{root: r}}, nil
}

// Close lets go of the root directory a Workspace made by NewWorkspace
// holds; file operations afterwards fail with ErrClosed. Closing again, or
// closing a Workspace literal, does nothing.
func (w Workspace) Close() error {
	if w.h == nil {
		return nil
	}
	if !w.h.closed.CompareAndSwap(false, true) {
		return nil
	}
	return w.h.root.Close()
}

// Dir returns the root directory, absolute and with symbolic links
// resolved.
func (w Workspace) Dir() (string, error) { return w.realRoot() }

func (w Workspace) realRoot() (string, error) {
	if w.real != "" {
		return w.real, nil
	}
	root := w.Root
	if root == "" {
		root = "."
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("workspace root %s: %w", root, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("workspace root %s: %w (create the directory or choose another workspace)", root, err)
	}
	return real, nil
}

// open returns the root directory held open, its resolved path, and the
// function to call when done with it.
func (w Workspace) open() (*os.Root, string, func(), error) {
	real, err := w.realRoot()
	if err != nil {
		return nil, "", nil, err
	}
	if w.h != nil {
		if w.h.closed.Load() {
			return nil, "", nil, fmt.Errorf("workspace %s: %w", real, ErrClosed)
		}
		return w.h.root, real, func() {}, nil
	}
	r, err := os.OpenRoot(real)
	if err != nil {
		return nil, "", nil, fmt.Errorf("workspace root %s: %w", w.Root, err)
	}
	return r, real, func() { r.Close() }, nil
}

// Resolve returns the absolute path, with symbolic links resolved, that p
// names inside the workspace. A relative p is taken from the root. The
// result is refused with an *EscapeError when p climbs above the root with
// "..", is an absolute path elsewhere, or goes through a symbolic link —
// anywhere along the path, the last component included — that leads
// outside. A path that does not exist yet is checked through its nearest
// existing ancestor, so a file about to be created under a linked
// directory is judged by where the link leads.
//
// The answer describes the tree as it was when Resolve looked; to act on
// the file, use the methods that resolve and act in one step (OpenFile,
// Stat, MkdirAll, OpenDir, WalkDir).
func (w Workspace) Resolve(p string) (string, error) {
	rel, err := w.Local(p)
	if err != nil {
		return "", err
	}
	real, _ := w.realRoot() // Local succeeded, so this does
	return filepath.Join(real, filepath.FromSlash(rel)), nil
}

// Local resolves p as Resolve does and returns it relative to the root,
// slash-separated and free of symbolic links: "." for the root itself,
// "a/b.txt" below it. Such a path is what the other methods, os.Root and
// io/fs take, and what tools show a model.
func (w Workspace) Local(p string) (string, error) {
	r, real, release, err := w.open()
	if err != nil {
		return "", err
	}
	defer release()
	return w.local(r, real, p)
}

// local is Local with the root held open.
func (w Workspace) local(r *os.Root, real, p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path: give a path relative to the workspace root")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	}
	var rel string
	if filepath.IsAbs(p) {
		var ok bool
		if rel, ok = w.under(real, filepath.Clean(p)); !ok {
			return "", &EscapeError{Path: p, Root: real, Reason: "it is an absolute path that is not under the root"}
		}
	} else {
		rel = filepath.Clean(p)
		if !filepath.IsLocal(rel) && rel != "." {
			if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return "", &EscapeError{Path: p, Root: real, Reason: `it climbs above the root with ".."`}
			}
			// A path filepath.IsLocal refuses for another reason, such as
			// a Windows drive or device name.
			return "", &EscapeError{Path: p, Root: real, Reason: "it is not a plain path relative to the root"}
		}
	}
	return w.follow(r, real, p, rel)
}

// under returns abs, a clean absolute path, relative to the root when it
// lies in it. The root may have been given through a link, as /tmp is on
// some systems: paths spelled that way are inside too.
func (w Workspace) under(real, abs string) (string, bool) {
	if Within(real, abs) {
		rel, err := filepath.Rel(real, abs)
		return rel, err == nil
	}
	if w.Root == "" {
		return "", false
	}
	given, err := filepath.Abs(w.Root)
	if err != nil || given == real || !Within(given, abs) {
		return "", false
	}
	rel, err := filepath.Rel(given, abs)
	return rel, err == nil
}

// follow walks rel, a clean relative path, one component at a time
// through the root, following symbolic links by hand: a relative target
// goes on from the link's directory, an absolute one from the root when it
// lies inside, and anything that leaves the root is an *EscapeError. The
// result names the same file without links. A missing component ends the
// checks: what follows it is kept as it is.
func (w Workspace) follow(r *os.Root, real, p, rel string) (string, error) {
	parts := splitPath(rel)
	var done []string // components resolved so far, free of links
	missing := -1     // the index in done of the first that does not exist
	hops := 0
	for len(parts) > 0 {
		c := parts[0]
		parts = parts[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", &EscapeError{Path: p, Root: real, Reason: "a symbolic link on the way leads above the root"}
			}
			done = done[:len(done)-1]
			if len(done) <= missing {
				missing = -1
			}
			continue
		}
		if missing >= 0 {
			done = append(done, c) // below a missing directory: nothing to look at
			continue
		}
		cur := path.Join(path.Join(done...), c)
		fi, err := r.Lstat(filepath.FromSlash(cur))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			missing = len(done)
			done = append(done, c)
			continue
		case errors.Is(err, syscall.ENOTDIR):
			return "", fmt.Errorf("resolve path %q: part of it before the end is a file, not a directory: check the path with list_files", p)
		case err != nil:
			return "", w.rootError(p, real, fmt.Errorf("resolve path %q: %w", p, err))
		case fi.Mode()&fs.ModeSymlink == 0:
			done = append(done, c)
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", fmt.Errorf("resolve path %q: too many levels of symbolic links", p)
		}
		target, err := r.Readlink(filepath.FromSlash(cur))
		if errors.Is(err, syscall.EINVAL) {
			// No longer a link: the tree changed since Lstat. Look again.
			parts = append([]string{c}, parts...)
			continue
		}
		if err != nil {
			return "", w.rootError(p, real, fmt.Errorf("resolve path %q: read the link %s: %w", p, cur, err))
		}
		if filepath.IsAbs(target) {
			t := filepath.Clean(target)
			in, ok := w.under(real, t)
			if !ok {
				return "", &EscapeError{Path: p, Root: real, Reason: "a symbolic link on the way leads to " + joinRest(t, parts)}
			}
			done, parts = nil, append(splitPath(filepath.ToSlash(in)), parts...)
			continue
		}
		dest := filepath.Join(real, filepath.FromSlash(path.Join(done...)), target)
		if !Within(real, dest) {
			return "", &EscapeError{Path: p, Root: real, Reason: "a symbolic link on the way leads to " + joinRest(dest, parts)}
		}
		parts = append(splitPath(filepath.ToSlash(target)), parts...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return path.Join(done...), nil
}

// splitPath splits a slash-separated path into its components.
func splitPath(p string) []string {
	return strings.Split(filepath.ToSlash(p), "/")
}

// joinRest joins dir and the components still to resolve, for messages.
func joinRest(dir string, rest []string) string {
	return filepath.Join(append([]string{dir}, rest...)...)
}

// errRootEscape is the text of the error os.Root's methods return for a
// path that leads out of the root; the os package does not export it.
// TestRootEscapeText checks it still is.
const errRootEscape = "path escapes from parent"

// changedReason is the Reason of an *EscapeError for a path os.Root
// refused after Local had accepted it.
const changedReason = "the tree changed while the path was used, and a symbolic link on the way now leads out"

// rootError turns the refusal of an os.Root method, which happens when the
// tree changes between Local and the operation, into an *EscapeError for
// p; other errors are returned as they are.
func (w Workspace) rootError(p, real string, err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == errRootEscape {
			return &EscapeError{Path: p, Root: real, Reason: changedReason}
		}
	}
	return err
}

// OpenFile resolves p as Local does and opens the file it names through
// the open root with flag and perm, as os.OpenFile would. A symbolic link
// put in the way after p was resolved is followed only if it stays inside
// the root. It returns the file and its path relative to the root.
func (w Workspace) OpenFile(p string, flag int, perm fs.FileMode) (*os.File, string, error) {
	r, real, release, err := w.open()
	if err != nil {
		return nil, "", err
	}
	defer release()
	rel, err := w.local(r, real, p)
	if err != nil {
		return nil, "", err
	}
	f, err := r.OpenFile(filepath.FromSlash(rel), flag, perm)
	if err != nil {
		return nil, rel, w.rootError(p, real, err)
	}
	return f, rel, nil
}

// OpenResolved opens rel, a path Local or WalkDir gave, through the open
// root as it is, without resolving it again: cheaper than OpenFile for the
// many files of a walk, and as confined. A symbolic link put on the way
// since is followed only while it stays inside, and only if its target is
// relative; otherwise the open fails with an *EscapeError.
func (w Workspace) OpenResolved(rel string, flag int, perm fs.FileMode) (*os.File, error) {
	if !fs.ValidPath(rel) {
		return nil, fmt.Errorf("open %q: not a path relative to the workspace root as Local gives them", rel)
	}
	r, real, release, err := w.open()
	if err != nil {
		return nil, err
	}
	defer release()
	f, err := r.OpenFile(filepath.FromSlash(rel), flag, perm)
	if err != nil {
		return nil, w.rootError(rel, real, err)
	}
	return f, nil
}

// Stat resolves p as Local does and describes the file it names, looked
// up through the open root. It returns the path relative to the root too.
func (w Workspace) Stat(p string) (fs.FileInfo, string, error) {
	r, real, release, err := w.open()
	if err != nil {
		return nil, "", err
	}
	defer release()
	rel, err := w.local(r, real, p)
	if err != nil {
		return nil, "", err
	}
	fi, err := r.Stat(filepath.FromSlash(rel))
	if err != nil {
		return nil, rel, w.rootError(p, real, err)
	}
	return fi, rel, nil
}

// MkdirAll resolves p as Local does and creates the directory it names
// and its missing parents through the open root, as os.MkdirAll would.
func (w Workspace) MkdirAll(p string, perm fs.FileMode) error {
	r, real, release, err := w.open()
	if err != nil {
		return err
	}
	defer release()
	rel, err := w.local(r, real, p)
	if err != nil {
		return err
	}
	return w.rootError(p, real, r.MkdirAll(filepath.FromSlash(rel), perm))
}

// OpenDir resolves p as Local does and opens the directory it names, for
// work that must stay in that one directory while the tree around it
// changes, such as writing a temporary file and renaming it over another.
// The caller closes it.
func (w Workspace) OpenDir(p string) (*Dir, error) {
	r, real, release, err := w.open()
	if err != nil {
		return nil, err
	}
	defer release()
	rel, err := w.local(r, real, p)
	if err != nil {
		return nil, err
	}
	d, err := r.OpenRoot(filepath.FromSlash(rel))
	if err != nil {
		return nil, w.rootError(p, real, err)
	}
	return &Dir{root: d, rel: rel, real: real}, nil
}

// A Dir is a directory of a workspace held open by Workspace.OpenDir. Its
// methods take names relative to it and act through an os.Root of its
// own: a symbolic link is followed only while it stays in the directory,
// and an operation that would leave it fails with an *EscapeError.
type Dir struct {
	root *os.Root
	rel  string // the directory relative to the workspace root
	real string // the workspace root
}

// Rel returns the directory's path relative to the workspace root.
func (d *Dir) Rel() string { return d.rel }

// Stat describes the named file, as os.Root.Stat does.
func (d *Dir) Stat(name string) (fs.FileInfo, error) {
	fi, err := d.root.Stat(name)
	return fi, d.error(name, err)
}

// OpenFile opens the named file, as os.Root.OpenFile does.
func (d *Dir) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := d.root.OpenFile(name, flag, perm)
	return f, d.error(name, err)
}

// Rename renames oldname to newname, as os.Root.Rename does.
func (d *Dir) Rename(oldname, newname string) error {
	return d.error(newname, d.root.Rename(oldname, newname))
}

// Remove removes the named file or empty directory, as os.Root.Remove
// does.
func (d *Dir) Remove(name string) error {
	return d.error(name, d.root.Remove(name))
}

// Close closes the directory.
func (d *Dir) Close() error { return d.root.Close() }

func (d *Dir) error(name string, err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == errRootEscape {
			p := filepath.ToSlash(name)
			if d.rel != "." {
				p = d.rel + "/" + p
			}
			return &EscapeError{Path: p, Root: d.real, Reason: "a symbolic link on the way leads out of the directory " + d.rel + ", where it was looked up (the tree may have changed meanwhile)"}
		}
	}
	return err
}

// WalkDir resolves p as Local does and walks the tree under it through the
// open root with fs.WalkDir: fn gets slash-separated paths relative to the
// workspace root. Symbolic links are reported, not followed, and a
// directory swapped for a link that leads outside during the walk is
// reported to fn as an error, never read. The root stays open until
// WalkDir returns.
func (w Workspace) WalkDir(p string, fn fs.WalkDirFunc) error {
	r, real, release, err := w.open()
	if err != nil {
		return err
	}
	defer release()
	rel, err := w.local(r, real, p)
	if err != nil {
		return err
	}
	return fs.WalkDir(r.FS(), rel, func(q string, d fs.DirEntry, err error) error {
		return fn(q, d, w.rootError(q, real, err))
	})
}

// Rel returns abs relative to the root with forward slashes, "." for the
// root itself, for showing to a model. A path outside the root is returned
// as it is.
func (w Workspace) Rel(abs string) string {
	root, err := w.realRoot()
	if err != nil {
		return abs
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return abs
	}
	return filepath.ToSlash(rel)
}

// Within reports whether p is dir or below it; both are clean and absolute.
func Within(dir, p string) bool {
	if p == dir {
		return true
	}
	if strings.HasSuffix(dir, string(filepath.Separator)) {
		return strings.HasPrefix(p, dir)
	}
	return strings.HasPrefix(p, dir+string(filepath.Separator))
}
