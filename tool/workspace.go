package tool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrOutsideWorkspace is matched (with errors.Is) by every *EscapeError.
var ErrOutsideWorkspace = errors.New("tool: path is outside the workspace root")

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

// maxLinkHops bounds how many dangling symbolic links Resolve follows by
// hand before it gives up, as the kernel does with ELOOP.
const maxLinkHops = 40

// A Workspace confines the paths tools use to a directory tree.
//
// Root is the directory; an empty Root means the current directory. A
// Workspace built as a literal resolves Root on every call; NewWorkspace
// resolves it once.
type Workspace struct {
	Root string

	real string // Root made absolute with symbolic links resolved, when known
}

// NewWorkspace returns a workspace rooted at root, which must be an existing
// directory. Root is made absolute and its symbolic links are resolved
// once, here.
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
	return Workspace{Root: real, real: real}, nil
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

// Resolve returns the absolute path, with symbolic links resolved, that p
// names inside the workspace. A relative p is taken from the root. The
// result is refused with an *EscapeError when p climbs above the root with
// "..", is an absolute path elsewhere, or goes through a symbolic link —
// anywhere along the path, the last component included — that leads
// outside. A path that does not exist yet is checked through its nearest
// existing ancestor, so a file about to be created under a linked
// directory is judged by where the link leads.
func (w Workspace) Resolve(p string) (string, error) {
	root, err := w.realRoot()
	if err != nil {
		return "", err
	}
	if p == "" {
		return "", errors.New("empty path: give a path relative to the workspace root")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	}
	var full string
	if filepath.IsAbs(p) {
		c := filepath.Clean(p)
		switch {
		case within(root, c):
			full = c
		default:
			// The root may have been given through a link, as in /tmp on
			// some systems; accept absolute paths spelled that way.
			abs, aerr := filepath.Abs(w.Root)
			if w.Root == "" || aerr != nil || abs == root || !within(abs, c) {
				return "", &EscapeError{Path: p, Root: root, Reason: "it is an absolute path that is not under the root"}
			}
			rel, _ := filepath.Rel(abs, c)
			full = filepath.Join(root, rel)
		}
	} else {
		full = filepath.Join(root, p)
		if !within(root, full) {
			return "", &EscapeError{Path: p, Root: root, Reason: `it climbs above the root with ".."`}
		}
	}
	real, err := realPath(full)
	if errors.Is(err, syscall.ENOTDIR) {
		return "", fmt.Errorf("resolve path %q: part of it before the end is a file, not a directory: check the path with list_files", p)
	}
	if err != nil {
		return "", fmt.Errorf("resolve path %q: %w", p, err)
	}
	if !within(root, real) {
		return "", &EscapeError{Path: p, Root: root, Reason: "a symbolic link on the way leads to " + real}
	}
	return real, nil
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

// within reports whether p is dir or below it; both are clean and absolute.
func within(dir, p string) bool {
	if p == dir {
		return true
	}
	if strings.HasSuffix(dir, string(filepath.Separator)) {
		return strings.HasPrefix(p, dir)
	}
	return strings.HasPrefix(p, dir+string(filepath.Separator))
}

// realPath resolves the symbolic links of full, a clean absolute path whose
// tail may not exist: the nearest existing ancestor is resolved and the
// missing tail appended. Dangling links are followed by hand, since
// creating a file through one creates it where the link points.
func realPath(full string) (string, error) {
	for range maxLinkHops {
		cur, rest := full, ""
		for {
			_, err := os.Lstat(cur)
			if err == nil {
				break
			}
			if !errors.Is(err, fs.ErrNotExist) {
				return "", err
			}
			parent := filepath.Dir(cur)
			if parent == cur {
				break
			}
			rest = filepath.Join(filepath.Base(cur), rest)
			cur = parent
		}
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		// cur exists but does not resolve: its parent does (Lstat found
		// cur through it), so cur is a link to nowhere. Follow it.
		target, lerr := os.Readlink(cur)
		if lerr != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			dir, derr := filepath.EvalSymlinks(filepath.Dir(cur))
			if derr != nil {
				return "", derr
			}
			target = filepath.Join(dir, target)
		}
		full = filepath.Join(target, rest)
	}
	return "", errors.New("too many levels of symbolic links")
}
