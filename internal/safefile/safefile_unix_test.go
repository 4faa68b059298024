//go:build unix

package safefile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO is refused at once (its open does not wait for a writer), and a
// link to a device is refused, not read until the limit.
func TestReadRegularSpecial(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.md")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	zero := filepath.Join(dir, "zero.md")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{fifo: "a FIFO", zero: "a device"} {
		done := make(chan error, 1)
		go func() { _, err := ReadRegular(path, 1<<20); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "is not a regular file but "+want) {
				t.Errorf("%s: %v, want a refusal naming %s", filepath.Base(path), err, want)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s: ReadRegular did not return", filepath.Base(path))
		}
	}
}
