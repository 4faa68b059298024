//go:build unix

package builtin

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestSpecialFiles checks that a named pipe, which blocks whoever opens
// it until a writer comes, is refused or passed over, never opened.
func TestSpecialFiles(t *testing.T) {
	ws, root, _ := newWorkspace(t)
	files(t, root, map[string]string{"a.txt": "fifo\n"})
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
		t.Skipf("named pipes unavailable: %v", err)
	}
	tools := New(ws, Options{})
	tests := []struct {
		name    string
		tool    int // index in New's order
		args    map[string]any
		want    string
		wantErr string
	}{
		{name: "read", tool: 0, args: map[string]any{"path": "pipe"}, wantErr: "read_file: pipe is a named pipe, not a regular file: read_file works on regular files only"},
		{name: "list", tool: 1, args: map[string]any{}, want: "a.txt\n"},
		{name: "search", tool: 2, args: map[string]any{"pattern": "fifo"}, want: "a.txt:1: fifo\n"},
		{name: "search_pipe_as_path", tool: 2, args: map[string]any{"pattern": "fifo", "path": "pipe"}, wantErr: "search_files: pipe is a named pipe, not a regular file"},
		{name: "write", tool: 3, args: map[string]any{"path": "pipe", "content": "x"}, wantErr: "write_file: pipe is a named pipe, not a regular file"},
		{name: "edit", tool: 4, args: map[string]any{"path": "pipe", "old_string": "a", "new_string": "b"}, wantErr: "edit_file: pipe is a named pipe, not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := call(t, tools[tt.tool], tt.args)
			checkResult(t, got, err, tt.want, tt.wantErr)
		})
	}
}

// TestPermissionDenied checks the wording when the file system refuses;
// it needs a user the permissions apply to.
func TestPermissionDenied(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("permissions do not apply to root")
	}
	ws, root, _ := newWorkspace(t)
	files(t, root, map[string]string{"locked.txt": "a\n", "ro.txt": "a\n"})
	for p, mode := range map[string]os.FileMode{"locked.txt": 0, "ro.txt": 0o444} {
		if err := os.Chmod(filepath.Join(root, p), mode); err != nil {
			t.Fatal(err)
		}
	}
	tools := New(ws, Options{})
	tests := []struct {
		name    string
		tool    int
		args    map[string]any
		wantErr string
	}{
		{name: "read", tool: 0, args: map[string]any{"path": "locked.txt"}, wantErr: "read_file: cannot open locked.txt: permission denied"},
		{name: "write", tool: 3, args: map[string]any{"path": "ro.txt", "content": "b"}, wantErr: "write_file: cannot write ro.txt: permission denied"},
		{name: "edit", tool: 4, args: map[string]any{"path": "ro.txt", "old_string": "a", "new_string": "b"}, wantErr: "edit_file: cannot write ro.txt: permission denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := call(t, tools[tt.tool], tt.args)
			checkResult(t, got, err, "", tt.wantErr)
		})
	}
}
