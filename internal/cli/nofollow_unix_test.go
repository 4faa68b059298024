//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The history file's opens refuse a link themselves, so one put at the
// path after the check is neither read nor written through, nor is the
// file it names created.
func TestHistoryOpensRefuseALink(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("token=abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "chat_history")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	if b, err := readNoFollow(link); err == nil || len(b) > 0 || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("reading through a link: %q, %v; want nothing read and an error saying it is a link", b, err)
	}
	missing := filepath.Join(dir, "bashrc")
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(missing, dangling); err != nil {
		t.Fatal(err)
	}
	f, err := appendNoFollow(dangling)
	if err == nil {
		f.Close()
		t.Fatal("the append open followed a link")
	}
	if _, err := os.Lstat(missing); err == nil {
		t.Error("the append open created the file a link names")
	}
}

// A named pipe at the history path is refused at once, by both opens,
// instead of waiting for a writer or a reader.
func TestHistoryOpensRefuseAPipe(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "chat_history")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	if b, err := readNoFollow(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("reading a named pipe: %q, %v; want it refused as not a regular file", b, err)
	}
	if f, err := appendNoFollow(fifo); err == nil {
		f.Close()
		t.Error("the append open took a named pipe")
	}
}
