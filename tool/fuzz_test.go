package tool

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzTree makes a workspace root full of links, and a directory outside
// it:
//
//	root/a/b.txt  root/a/c/d.txt  root/file.txt  root/.hidden
//	root/in      -> a              relative, inside
//	root/abs     -> root/a/c       absolute, inside
//	root/a/up    -> ../file.txt    relative, climbing, inside
//	root/a/c/top -> ../..          the root itself
//	root/chain   -> in/c/top/abs   links through links, inside
//	root/out     -> ../outside     relative, leaving
//	root/absout  -> outside        absolute, leaving
//	root/a/esc   -> ../../outside/secret.txt
//	root/dangle  -> outside/none   dangling, leaving
//	root/later   -> a/later.txt    dangling, inside
//	root/loop    -> loop
//	outside/secret.txt  outside/dir/x.txt
func fuzzTree(tb testing.TB) (root, outside string) {
	tb.Helper()
	base, err := filepath.EvalSymlinks(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	root, outside = filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{"root/a/c", "outside/dir"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	for _, f := range []string{"root/a/b.txt", "root/a/c/d.txt", "root/file.txt", "root/.hidden", "outside/secret.txt", "outside/dir/x.txt"} {
		if err := os.WriteFile(filepath.Join(base, f), []byte(f), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	for _, l := range [][2]string{
		{"a", "in"},
		{filepath.Join(root, "a", "c"), "abs"},
		{"../file.txt", "a/up"},
		{"../..", "a/c/top"},
		{"in/c/top/abs", "chain"},
		{"../outside", "out"},
		{outside, "absout"},
		{"../../outside/secret.txt", "a/esc"},
		{filepath.Join(outside, "none"), "dangle"},
		{"a/later.txt", "later"},
		{"loop", "loop"},
	} {
		if err := os.Symlink(l[0], filepath.Join(root, l[1])); err != nil {
			tb.Skipf("symbolic links unavailable: %v", err)
		}
	}
	return root, outside
}

// lstatAll returns what is under dir, links not followed.
func lstatAll(tb testing.TB, dir string) []fs.FileInfo {
	tb.Helper()
	var all []fs.FileInfo
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			all = append(all, fi)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return all
}

func sameAsOne(fi fs.FileInfo, all []fs.FileInfo) bool {
	for _, x := range all {
		if os.SameFile(fi, x) {
			return true
		}
	}
	return false
}

// FuzzResolve opens arbitrary paths through a workspace full of links and
// checks that whatever it opens is a file or directory of the root, never
// one outside: the opened file's identity (device and inode) is compared
// with those of the tree. In a path, @root and @out stand for the
// absolute paths of the root and of the directory outside.
func FuzzResolve(f *testing.F) {
	for _, p := range []string{
		"a/b.txt", ".", "in/c/d.txt", "abs/d.txt", "a/up", "chain/d.txt", "later",
		"out/secret.txt", "absout/secret.txt", "a/esc", "dangle", "loop", "../outside/secret.txt",
		"a/../../outside/secret.txt", "@root/a/b.txt", "@out/secret.txt", "@root/../outside/dir/x.txt",
		"a/c/top/out/dir", "in/../out", "a\x00b", "", "/", "//", "a//b.txt/", "file.txt/x",
	} {
		f.Add(p)
	}
	root, outside := fuzzTree(f)
	inside, other := lstatAll(f, root), lstatAll(f, outside)
	held, err := NewWorkspace(root)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { held.Close() })
	literal := Workspace{Root: root}
	f.Fuzz(func(t *testing.T, p string) {
		p = strings.ReplaceAll(strings.ReplaceAll(p, "@root", root), "@out", outside)
		for _, ws := range []Workspace{held, literal} {
			file, rel, err := ws.OpenFile(p, os.O_RDONLY, 0)
			if err != nil {
				if errors.Is(err, ErrOutsideWorkspace) && !strings.Contains(err.Error(), "outside the workspace root "+root) {
					t.Errorf("OpenFile(%q): escape error %q does not name the root", p, err)
				}
				continue
			}
			fi, err := file.Stat()
			file.Close()
			if err != nil {
				t.Fatalf("OpenFile(%q): stat the opened file: %v", p, err)
			}
			if sameAsOne(fi, other) || !sameAsOne(fi, inside) {
				t.Fatalf("OpenFile(%q) opened %s, which is not in the workspace root", p, fi.Name())
			}
			// The path it reports names the file it opened, and Resolve
			// agrees.
			if !fs.ValidPath(rel) {
				t.Errorf("OpenFile(%q) reported %q, not a valid relative path", p, rel)
			}
			byRel, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel)))
			if err != nil || !os.SameFile(fi, byRel) {
				t.Errorf("OpenFile(%q) reported %q, which names another file (%v)", p, rel, err)
			}
			if abs, err := ws.Resolve(p); err != nil || abs != filepath.Join(root, filepath.FromSlash(rel)) {
				t.Errorf("Resolve(%q) = %q, %v; OpenFile reported %q", p, abs, err, rel)
			}
		}
	})
}
