//go:build unix

package builtin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO in a skill's folder is refused rather than opened: the open
// waited for a writer for ever, and the call with it.
func TestSkillFileFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "notes.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	sk := NewSkill([]SkillEntry{{Name: "s", Description: "d", Body: "b", Dir: dir}})
	done := make(chan error, 1)
	go func() {
		_, err := sk.Call(context.Background(), json.RawMessage(`{"name":"s","file":"notes.md"}`))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("error %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the call waited on the FIFO")
	}
}

// A skill's folder replaced after the tool was made (by a link to /, or a
// folder moved there) is not read: the link made the skill tool read
// /etc/passwd and list the whole machine.
func TestSkillFolderReplaced(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "s")
	files(t, dir, map[string]string{"SKILL.md": "---\nname: s\n---\nb\n", "ref.md": "reference"})
	sk := NewSkill([]SkillEntry{{Name: "s", Description: "d", Body: "b", Dir: dir}})
	if got, err := sk.Call(context.Background(), json.RawMessage(`{"name":"s","file":"ref.md"}`)); err != nil || got != "reference" {
		t.Fatalf("before: %q, %v", got, err)
	}
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", dir); err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{`{"name":"s","file":"etc/passwd"}`, `{"name":"s"}`} {
		if got, err := sk.Call(context.Background(), json.RawMessage(args)); err == nil || !strings.Contains(err.Error(), "was replaced") {
			t.Errorf("%s: %q, %v", args, clipText(got, 80), err)
		}
	}
}
