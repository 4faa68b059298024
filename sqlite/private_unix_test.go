//go:build unix

package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
)

// TestOpenCreatesPrivateFiles checks that a new store, which will hold
// transcripts, is readable by its owner only, with its directory and the
// files SQLite keeps beside it.
func TestOpenCreatesPrivateFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".cadre")
	path := filepath.Join(dir, "cadre.db")
	s := open(t, path)
	defer s.Close()
	if err := s.CreateRun(t.Context(), &cadre.RunRecord{ID: "r1", Task: "private", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{dir: 0o700, path: 0o600, path + "-wal": 0o600, path + "-shm": 0o600}
	for p, mode := range want {
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s has mode %v, want %v", filepath.Base(p), fi.Mode().Perm(), mode)
		}
	}
}

// TestOpenKeepsExistingMode checks that the library leaves the
// permissions of a database it did not create as they are; the cadre
// command decides about its own store.
func TestOpenKeepsExistingMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	open(t, path).Close()
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	open(t, path).Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode after reopening: %v, %v; want 0640", fi.Mode().Perm(), err)
	}
}
