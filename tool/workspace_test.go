package tool

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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

// TestWorkspaceOpenFile resolves and opens paths of the fuzz tree, held
// open and as a literal, and checks where each one lands.
func TestWorkspaceOpenFile(t *testing.T) {
	root, outside := fuzzTree(t)
	held, err := NewWorkspace(root)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	tests := []struct {
		path    string
		rel     string // where it lands; empty when it is refused
		missing bool   // it lands on a file that does not exist
		escape  string // a substring of the EscapeError's reason
	}{
		{path: "a/b.txt", rel: "a/b.txt"},
		{path: ".", rel: "."},
		{path: "in/c/d.txt", rel: "a/c/d.txt"},
		{path: "abs/d.txt", rel: "a/c/d.txt"},
		{path: "a/up", rel: "file.txt"},
		{path: "a/c/top", rel: "."},
		{path: "chain/d.txt", rel: "a/c/d.txt"},
		{path: "chain/top/in/b.txt", rel: "a/b.txt"},
		// ".." in the path given is taken away with the name before it,
		// as filepath.Clean does; ".." in a link's target goes up from
		// where the link leads.
		{path: "abs/../file.txt", rel: "file.txt"},
		{path: "a/c/top/a/up", rel: "file.txt"},
		{path: filepath.Join(root, "chain"), rel: "a/c"},
		{path: "later", rel: "a/later.txt", missing: true},
		{path: "later/x", rel: "a/later.txt/x", missing: true},
		{path: "out/secret.txt", escape: "leads to " + filepath.Join(outside, "secret.txt")},
		{path: "absout", escape: "leads to " + outside},
		{path: "a/esc", escape: "leads to " + filepath.Join(outside, "secret.txt")},
		{path: "a/c/top/out/dir", escape: "leads to " + filepath.Join(outside, "dir")},
		{path: "abs/../../outside", escape: "climbs above the root"},
		{path: "dangle", escape: "leads to " + filepath.Join(outside, "none")},
		{path: "../outside/secret.txt", escape: "climbs above the root"},
		{path: filepath.Join(outside, "secret.txt"), escape: "absolute path"},
	}
	for _, ws := range []struct {
		name string
		ws   Workspace
	}{{"held", held}, {"literal", Workspace{Root: root}}} {
		for _, tt := range tests {
			t.Run(ws.name+"/"+tt.path, func(t *testing.T) {
				f, rel, err := ws.ws.OpenFile(tt.path, os.O_RDONLY, 0)
				if f != nil {
					defer f.Close()
				}
				switch {
				case tt.escape != "":
					var ee *EscapeError
					if !errors.As(err, &ee) || !strings.Contains(ee.Reason, tt.escape) {
						t.Fatalf("OpenFile(%q) = %q, %v; want an *EscapeError saying %q", tt.path, rel, err, tt.escape)
					}
				case tt.missing:
					if !errors.Is(err, os.ErrNotExist) || rel != tt.rel {
						t.Fatalf("OpenFile(%q) = %q, %v; want %q, which does not exist", tt.path, rel, err, tt.rel)
					}
				default:
					if err != nil || rel != tt.rel {
						t.Fatalf("OpenFile(%q) = %q, %v; want %q", tt.path, rel, err, tt.rel)
					}
					fi, err := f.Stat()
					want, err2 := os.Stat(filepath.Join(root, filepath.FromSlash(tt.rel)))
					if err != nil || err2 != nil || !os.SameFile(fi, want) {
						t.Errorf("OpenFile(%q) opened another file than %s (%v, %v)", tt.path, tt.rel, err, err2)
					}
				}
			})
		}
	}
}

// TestRootEscapeText checks that the text os.Root gives its refusals is
// still the one rootError recognises.
func TestRootEscapeText(t *testing.T) {
	r, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Open("../x")
	if err == nil {
		t.Fatal("os.Root opened ../x")
	}
	var ee *EscapeError
	if !errors.As(Workspace{}.rootError("../x", "/root", err), &ee) {
		t.Fatalf("os.Root's refusal %q is not recognised; errRootEscape is %q", err, errRootEscape)
	}
}

// TestWorkspaceDirRefuses checks that a Dir reports a link leading out
// of it as an *EscapeError naming the path from the workspace root.
func TestWorkspaceDirRefuses(t *testing.T) {
	root, _ := fuzzTree(t)
	ws, err := NewWorkspace(root)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	d, err := ws.OpenDir("in")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Rel() != "a" {
		t.Errorf("Rel = %q, want a", d.Rel())
	}
	if _, err := d.Stat("b.txt"); err != nil {
		t.Errorf("Stat(b.txt): %v", err)
	}
	for _, name := range []string{"up", "esc", "../file.txt"} {
		_, err := d.OpenFile(name, os.O_RDONLY, 0)
		var ee *EscapeError
		if !errors.As(err, &ee) || ee.Path != "a/"+name || ee.Root != root {
			t.Errorf("OpenFile(%s) = %v; want an *EscapeError for a/%s", name, err, name)
		}
	}
}

// TestWorkspaceClose checks that a closed workspace refuses to work and
// that closing is idempotent.
func TestWorkspaceClose(t *testing.T) {
	root, _, _ := tree(t)
	ws, err := NewWorkspace(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ws.Stat("a/b.txt"); err != nil {
		t.Fatal(err)
	}
	copied := ws
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}
	if err := copied.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, _, err := copied.OpenFile("a/b.txt", os.O_RDONLY, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("OpenFile after Close = %v; want ErrClosed", err)
	}
	if err := (Workspace{Root: root}).Close(); err != nil {
		t.Errorf("Close of a literal: %v", err)
	}
}

// TestWorkspaceWalkDir checks that a walk goes through the root without
// following links, and gives paths relative to the root.
func TestWorkspaceWalkDir(t *testing.T) {
	root, _ := fuzzTree(t)
	ws, err := NewWorkspace(root)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var got []string
	err = ws.WalkDir("in", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			p += "@"
		}
		got = append(got, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "a/b.txt", "a/c", "a/c/d.txt", "a/c/top@", "a/esc@", "a/up@"}
	if !slices.Equal(got, want) {
		t.Errorf("walk of in = %v, want %v", got, want)
	}
}
