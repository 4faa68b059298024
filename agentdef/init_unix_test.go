//go:build unix

package agentdef

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestInitIsPrivate checks that what Init writes under .cadre is its
// user's alone, while a project folder it makes is an ordinary one.
func TestInitIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "project")
	if _, _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o755&^umask(t) {
		t.Errorf("project folder: %v, %v; want an ordinary folder", fi.Mode().Perm(), err)
	}
	n := 0
	err := filepath.WalkDir(filepath.Join(dir, ".cadre"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := os.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", p, fi.Mode().Perm(), want)
		}
		n++
		return nil
	})
	if err != nil || n < 7 {
		t.Fatalf("walked %d entries of .cadre: %v", n, err)
	}
}

// umask returns the process's file mode creation mask, as a new folder
// shows it.
func umask(t *testing.T) os.FileMode {
	t.Helper()
	d := filepath.Join(t.TempDir(), "probe")
	if err := os.Mkdir(d, 0o777); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(d)
	if err != nil {
		t.Fatal(err)
	}
	return 0o777 &^ fi.Mode().Perm()
}
