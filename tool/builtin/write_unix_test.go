//go:build unix

package builtin

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWriteIsAtomic checks that write_file and edit_file replace a file by
// renaming a finished one over it: a reader that opened the file before
// still reads the old content whole, and nothing is left beside it.
func TestWriteIsAtomic(t *testing.T) {
	ws, root, _ := newWorkspace(t)
	tools := New(ws, Options{})
	p := filepath.Join(root, "d", "f.txt")
	files(t, root, map[string]string{"d/f.txt": "old\n"})
	for _, c := range []struct {
		tool int
		args map[string]any
		want string
	}{
		{3, map[string]any{"path": "d/f.txt", "content": "new\n"}, "new\n"},
		{4, map[string]any{"path": "d/f.txt", "old_string": "new", "new_string": "newer"}, "newer\n"},
	} {
		before, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := call(t, tools[c.tool], c.args); err != nil {
			t.Fatal(err)
		}
		old, err := io.ReadAll(before)
		before.Close()
		if err != nil || string(old) == c.want {
			t.Errorf("%s: a reader of the old file read %q, %v; want the old content", tools[c.tool].Spec().Name, old, err)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != c.want {
			t.Errorf("%s: the file holds %q, %v; want %q", tools[c.tool].Spec().Name, b, err, c.want)
		}
	}
	entries, err := os.ReadDir(filepath.Join(root, "d"))
	if err != nil || len(entries) != 1 {
		t.Errorf("d holds %v, %v; want f.txt alone", entries, err)
	}
}

// TestWriteKeepsOwner checks that a file cadre replaces keeps its owner
// and group; it needs the right to give files away.
func TestWriteKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
	ws, root, _ := newWorkspace(t)
	tools := New(ws, Options{})
	p := filepath.Join(root, "owned.txt")
	files(t, root, map[string]string{"owned.txt": "alpha\n"})
	const uid, gid = 4242, 4343
	if err := os.Chown(p, uid, gid); err != nil {
		t.Skipf("chown: %v", err)
	}
	if err := os.Chmod(p, 0o750|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool int
		args map[string]any
	}{
		{3, map[string]any{"path": "owned.txt", "content": "beta\n"}},
		{4, map[string]any{"path": "owned.txt", "old_string": "beta", "new_string": "gamma"}},
	} {
		if _, err := call(t, tools[c.tool], c.args); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != uid || st.Gid != gid || fi.Mode()&(os.ModePerm|os.ModeSetuid) != 0o750|os.ModeSetuid {
			t.Errorf("%s: owner %d:%d mode %v; want %d:%d and u+s,0750 kept", tools[c.tool].Spec().Name, st.Uid, st.Gid, fi.Mode(), uid, gid)
		}
	}
	if b, _ := os.ReadFile(p); !strings.Contains(string(b), "gamma") {
		t.Errorf("content %q", b)
	}
}
