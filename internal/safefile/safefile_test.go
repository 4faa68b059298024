package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "agent.md")
	if err := os.WriteFile(file, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadRegular(file, 10); err != nil || string(b) != "0123456789" {
		t.Errorf("a file at the limit: %q, %v", b, err)
	}
	if _, err := ReadRegular(file, 9); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a file past the limit: %v, want ErrTooLarge", err)
	}
	if _, err := ReadRegular(dir, 10); !errors.Is(err, ErrFolder) {
		t.Errorf("a folder: %v, want ErrFolder", err)
	}
	if _, err := ReadRegular(filepath.Join(dir, "missing.md"), 10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want one that wraps fs.ErrNotExist", err)
	}
}
