package tool

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree makes a workspace root and an outside directory next to it:
//
//	root/a/b.txt  root/file.txt
//	root/in     -> root/a              (stays inside)
//	root/out    -> outside             (directory link leaving)
//	root/secret -> outside/secret.txt  (file link leaving)
//	root/dangle -> outside/none.txt    (dangling, absolute)
//	root/rel    -> ../outside/x.txt    (dangling, relative)
//	root/loop   -> root/loop
//	link        -> root                (the root through a link)
func tree(t *testing.T) (root, outside, link string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root = filepath.Join(base, "root")
	outside = filepath.Join(base, "outside")
	link = filepath.Join(base, "link")
	for _, d := range []string{filepath.Join(root, "a"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(root, "a", "b.txt"), filepath.Join(root, "file.txt"), filepath.Join(outside, "secret.txt")} {
		if err := os.WriteFile(f, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := [][2]string{
		{filepath.Join(root, "a"), filepath.Join(root, "in")},
		{outside, filepath.Join(root, "out")},
		{filepath.Join(outside, "secret.txt"), filepath.Join(root, "secret")},
		{filepath.Join(outside, "none.txt"), filepath.Join(root, "dangle")},
		{filepath.Join("..", "outside", "x.txt"), filepath.Join(root, "rel")},
		{filepath.Join(root, "loop"), filepath.Join(root, "loop")},
		{root, link},
	}
	for _, l := range links {
		if err := os.Symlink(l[0], l[1]); err != nil {
			t.Skipf("symbolic links unavailable: %v", err)
		}
	}
	return root, outside, link
}

func TestWorkspaceResolve(t *testing.T) {
	root, outside, _ := tree(t)
	ws := Workspace{Root: root}
	tests := []struct {
		name   string
		path   string
		want   string // the resolved path; empty when an error is expected
		escape string // a substring of the EscapeError's reason
	}{
		{name: "relative", path: "a/b.txt", want: filepath.Join(root, "a", "b.txt")},
		{name: "dot", path: ".", want: root},
		{name: "new_file", path: "a/new/deep.txt", want: filepath.Join(root, "a", "new", "deep.txt")},
		{name: "dotdot_inside", path: "a/../file.txt", want: filepath.Join(root, "file.txt")},
		{name: "absolute_inside", path: filepath.Join(root, "a"), want: filepath.Join(root, "a")},
		{name: "link_inside", path: "in/b.txt", want: filepath.Join(root, "a", "b.txt")},
		{name: "new_file_under_link_inside", path: "in/new.txt", want: filepath.Join(root, "a", "new.txt")},
		{name: "traversal", path: "../x", escape: `climbs above the root`},
		{name: "traversal_deep", path: "a/../../outside/secret.txt", escape: `climbs above the root`},
		{name: "absolute_outside", path: filepath.Join(outside, "secret.txt"), escape: "absolute path"},
		{name: "absolute_etc", path: "/etc/passwd", escape: "absolute path"},
		{name: "sibling_prefix", path: root + "x/file", escape: "absolute path"},
		{name: "symlink_dir", path: "out", escape: "symbolic link"},
		{name: "symlink_dir_file", path: "out/secret.txt", escape: "symbolic link"},
		{name: "symlink_file", path: "secret", escape: "symbolic link"},
		{name: "new_file_under_symlink_dir", path: "out/new/file.txt", escape: "symbolic link"},
		{name: "dangling_absolute", path: "dangle", escape: "symbolic link"},
		{name: "dangling_relative", path: "rel", escape: "symbolic link"},
		{name: "under_dangling", path: "dangle/x", escape: "symbolic link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ws.Resolve(tt.path)
			if tt.escape == "" {
				if err != nil || got != tt.want {
					t.Fatalf("Resolve(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
				}
				return
			}
			var ee *EscapeError
			if !errors.As(err, &ee) {
				t.Fatalf("Resolve(%q) = %q, %v; want an *EscapeError", tt.path, got, err)
			}
			if !errors.Is(err, ErrOutsideWorkspace) {
				t.Error("EscapeError does not match ErrOutsideWorkspace")
			}
			if !strings.Contains(ee.Reason, tt.escape) {
				t.Errorf("reason %q does not mention %q", ee.Reason, tt.escape)
			}
			if ee.Path != tt.path || ee.Root != root {
				t.Errorf("EscapeError{Path: %q, Root: %q}, want %q, %q", ee.Path, ee.Root, tt.path, root)
			}
			msg := err.Error()
			if !strings.Contains(msg, "outside the workspace root "+root) {
				t.Errorf("message %q does not say the path is outside the root and name it", msg)
			}
		})
	}
}

func TestWorkspaceResolveErrors(t *testing.T) {
	root, _, _ := tree(t)
	ws := Workspace{Root: root}
	tests := []struct {
		name string
		path string
		want string
	}{
		{name: "empty", path: "", want: "empty path"},
		{name: "nul", path: "a\x00b", want: "NUL"},
		{name: "through_a_file", path: "file.txt/x", want: "not a directory"},
		{name: "loop", path: "loop", want: "too many"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ws.Resolve(tt.path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Resolve(%q) = %q, %v; want an error mentioning %q", tt.path, got, err, tt.want)
			}
			if errors.Is(err, ErrOutsideWorkspace) {
				t.Errorf("error %v is an escape; want another error", err)
			}
		})
	}
}

func TestWorkspaceRootThroughLink(t *testing.T) {
	root, _, link := tree(t)
	for _, mk := range []struct {
		name string
		ws   func() (Workspace, error)
	}{
		{"literal", func() (Workspace, error) { return Workspace{Root: link}, nil }},
		{"new", func() (Workspace, error) { return NewWorkspace(link) }},
	} {
		t.Run(mk.name, func(t *testing.T) {
			ws, err := mk.ws()
			if err != nil {
				t.Fatal(err)
			}
			if got, err := ws.Resolve("a/b.txt"); err != nil || got != filepath.Join(root, "a", "b.txt") {
				t.Errorf("Resolve relative = %q, %v", got, err)
			}
			if mk.name == "literal" {
				// An absolute path spelled through the link is inside.
				if got, err := ws.Resolve(filepath.Join(link, "a")); err != nil || got != filepath.Join(root, "a") {
					t.Errorf("Resolve absolute through the link = %q, %v", got, err)
				}
			}
			if dir, err := ws.Dir(); err != nil || dir != root {
				t.Errorf("Dir = %q, %v; want %q", dir, err, root)
			}
			if got := ws.Rel(filepath.Join(root, "a", "b.txt")); got != "a/b.txt" {
				t.Errorf("Rel = %q", got)
			}
			if got := ws.Rel(root); got != "." {
				t.Errorf("Rel(root) = %q", got)
			}
			if got := ws.Rel("/elsewhere"); got != "/elsewhere" {
				t.Errorf("Rel outside = %q", got)
			}
		})
	}
}

func TestNewWorkspaceErrors(t *testing.T) {
	root, _, _ := tree(t)
	for _, p := range []string{filepath.Join(root, "missing"), filepath.Join(root, "file.txt")} {
		if _, err := NewWorkspace(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("NewWorkspace(%q) = %v; want an error naming it", p, err)
		}
	}
}
