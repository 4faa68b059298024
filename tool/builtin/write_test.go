package builtin

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/cadre-ai/cadre/tool"
)

func TestWriteFile(t *testing.T) {
	ws, root, outside := newWorkspace(t)
	files(t, root, map[string]string{"old.txt": "old\n", "dir/x": ""})
	if err := os.Chmod(filepath.Join(root, "old.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	symlink(t, outside, filepath.Join(root, "outlink"))
	wf := NewWriteFile(ws, Options{})

	tests := []struct {
		name    string
		args    map[string]any
		want    string
		wantErr string
		file    string // a file that must then hold content
		content string
	}{
		{name: "create_with_parents", args: map[string]any{"path": "new/deep/f.txt", "content": "a\nb"},
			want: "created new/deep/f.txt (3 bytes, 2 lines)", file: "new/deep/f.txt", content: "a\nb"},
		{name: "replace", args: map[string]any{"path": "old.txt", "content": "new\n"},
			want: "replaced old.txt (4 bytes, 1 line)", file: "old.txt", content: "new\n"},
		{name: "empty_content", args: map[string]any{"path": "empty.txt", "content": ""},
			want: "created empty.txt (0 bytes, 0 lines)", file: "empty.txt", content: ""},
		{name: "directory", args: map[string]any{"path": "dir", "content": "x"}, wantErr: "dir is a directory"},
		{name: "traversal", args: map[string]any{"path": "../outside/evil.txt", "content": "x"}, wantErr: "outside the workspace root"},
		{name: "absolute_outside", args: map[string]any{"path": filepath.Join(outside, "evil.txt"), "content": "x"}, wantErr: "outside the workspace root"},
		{name: "new_file_under_link_out", args: map[string]any{"path": "outlink/sub/evil.txt", "content": "x"}, wantErr: "symbolic link"},
		{name: "missing_content", args: map[string]any{"path": "a.txt"}, wantErr: `missing required argument "content"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := call(t, wf, tt.args)
			checkResult(t, got, err, tt.want, tt.wantErr)
			if tt.file != "" {
				b, err := os.ReadFile(filepath.Join(root, tt.file))
				if err != nil || string(b) != tt.content {
					t.Errorf("%s holds %q, %v; want %q", tt.file, b, err, tt.content)
				}
			}
		})
	}
	if fi, err := os.Stat(filepath.Join(root, "old.txt")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode of a replaced file: %v, %v; want it kept at 0600", fi.Mode(), err)
	}
	// Nothing was written outside.
	for _, p := range []string{"evil.txt", "sub"} {
		if _, err := os.Lstat(filepath.Join(outside, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s was created outside the workspace (%v)", p, err)
		}
	}
	if got := tool.Summarize(wf, json.RawMessage(`{"path":"a.txt","content":"x\ny\n"}`)); got != "write a.txt (4 bytes, 2 lines)" {
		t.Errorf("Summary = %q", got)
	}
}

func TestEditFile(t *testing.T) {
	ws, root, outside := newWorkspace(t)
	files(t, outside, map[string]string{"secret.txt": "a\n"})
	symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(root, "link.txt"))
	ef := NewEditFile(ws, Options{})
	const original = "one\ntwo\nthree\ntwo\n"

	tests := []struct {
		name    string
		file    string // initial content of f.txt
		args    map[string]any
		want    string
		wantErr string
		after   string // content of f.txt afterwards; empty means unchanged
	}{
		{name: "once", file: original, args: map[string]any{"path": "f.txt", "old_string": "three\n", "new_string": "3\nthree\n"},
			want: "edited f.txt: replaced 1 line at line 3 with 2 lines", after: "one\ntwo\n3\nthree\ntwo\n"},
		{name: "delete", file: original, args: map[string]any{"path": "f.txt", "old_string": "one\n", "new_string": ""},
			want: "edited f.txt: replaced 1 line at line 1 with 0 lines", after: "two\nthree\ntwo\n"},
		{name: "several", file: original, args: map[string]any{"path": "f.txt", "old_string": "two", "new_string": "2"},
			wantErr: "old_string occurs 2 times in f.txt, and must occur exactly once"},
		{name: "none", file: original, args: map[string]any{"path": "f.txt", "old_string": "four", "new_string": "4"},
			wantErr: "old_string was not found in f.txt: read the file again"},
		{name: "crlf_hint", file: "one\r\ntwo\r\n", args: map[string]any{"path": "f.txt", "old_string": "one\ntwo", "new_string": "x"},
			wantErr: "Windows line endings"},
		{name: "empty_old", file: original, args: map[string]any{"path": "f.txt", "old_string": "", "new_string": "x"}, wantErr: "old_string is empty"},
		{name: "same", file: original, args: map[string]any{"path": "f.txt", "old_string": "one", "new_string": "one"}, wantErr: "the same"},
		{name: "missing_file", args: map[string]any{"path": "nope.txt", "old_string": "a", "new_string": "b"}, wantErr: "nope.txt does not exist"},
		{name: "binary", file: "a\x00b", args: map[string]any{"path": "f.txt", "old_string": "a", "new_string": "b"}, wantErr: "binary file"},
		{name: "link_out", args: map[string]any{"path": "link.txt", "old_string": "a", "new_string": "b"}, wantErr: "outside the workspace root"},
		{name: "missing_argument", file: original, args: map[string]any{"path": "f.txt", "old_string": "a"}, wantErr: `missing required argument "new_string"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := filepath.Join(root, "f.txt")
			os.Remove(f)
			if tt.file != "" {
				files(t, root, map[string]string{"f.txt": tt.file})
			}
			got, err := call(t, ef, tt.args)
			checkResult(t, got, err, tt.want, tt.wantErr)
			if tt.file == "" {
				return
			}
			want := tt.after
			if want == "" {
				want = tt.file
			}
			if b, _ := os.ReadFile(f); string(b) != want {
				t.Errorf("f.txt holds %q, want %q", b, want)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "a\n" {
		t.Errorf("a file outside was changed: %q", b)
	}
}
