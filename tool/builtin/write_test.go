package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cadre-ai/cadre/tool"
)

func TestWriteFile(t *testing.T) {
	ws, root, outside := newWorkspace(t)
	files(t, root, map[string]string{"old.txt": "old\n", "dir/x": "", "crlf.txt": "a\r\nb\r\n", "crlf2.txt": "a\r\nb\r\n"})
	symlink(t, filepath.Join(root, "dir"), filepath.Join(root, "inlink"))
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
		{name: "crlf_kept", args: map[string]any{"path": "crlf.txt", "content": "x\ny\n"},
			want: `replaced crlf.txt (6 bytes, 2 lines; its \r\n line endings were kept)`, file: "crlf.txt", content: "x\r\ny\r\n"},
		{name: "crlf_given", args: map[string]any{"path": "crlf2.txt", "content": "x\r\ny\n"},
			want: "replaced crlf2.txt (5 bytes, 2 lines)", file: "crlf2.txt", content: "x\r\ny\n"},
		{name: "new_file_as_given", args: map[string]any{"path": "new.txt", "content": "x\ny\n"},
			want: "created new.txt (4 bytes, 2 lines)", file: "new.txt", content: "x\ny\n"},
		{name: "through_link_inside", args: map[string]any{"path": "inlink/via.txt", "content": "v"},
			want: "created dir/via.txt (1 byte, 1 line)", file: "dir/via.txt", content: "v"},
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
			wantErr: "edit_file: old_string occurs 2 times in f.txt (at lines 2 and 4) and must occur exactly once: include more of the surrounding lines in old_string"},
		{name: "several_multiline", file: "a\nb\na\nb\n", args: map[string]any{"path": "f.txt", "old_string": "a\nb\n", "new_string": "c\n"},
			wantErr: "occurs 2 times in f.txt (at lines 1 and 3)"},
		{name: "many", file: strings.Repeat("x\n", 12), args: map[string]any{"path": "f.txt", "old_string": "x", "new_string": "y"},
			wantErr: "occurs 12 times in f.txt (at lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 2 more places)"},
		{name: "none", file: original, args: map[string]any{"path": "f.txt", "old_string": "four", "new_string": "4"},
			wantErr: "old_string was not found in f.txt: read the file again and copy the text exactly, including whitespace and indentation"},
		{name: "none_line_numbers", file: original, args: map[string]any{"path": "f.txt", "old_string": "     2\ttwo\n     3\tthree", "new_string": "x"},
			wantErr: "old_string starts its lines with the line numbers read_file shows"},
		{name: "none_whitespace", file: "func f() {\n\treturn 1\n}\n", args: map[string]any{"path": "f.txt", "old_string": "func f() {\n    return  1\n}", "new_string": "x"},
			wantErr: "the text at line 1 matches only if spaces, tabs and indentation are ignored"},
		{name: "none_first_line", file: original, args: map[string]any{"path": "f.txt", "old_string": "three\nfour", "new_string": "x"},
			wantErr: "its first line occurs at line 3 but what follows differs"},
		{name: "crlf", file: "one\r\ntwo\r\nthree\r\n", args: map[string]any{"path": "f.txt", "old_string": "one\ntwo\n", "new_string": "1\n2\n3\n"},
			want: "edited f.txt: replaced 2 lines at line 1 with 3 lines", after: "1\r\n2\r\n3\r\nthree\r\n"},
		{name: "crlf_new_lines", file: "one\r\ntwo\r\nthree\r\n", args: map[string]any{"path": "f.txt", "old_string": "two", "new_string": "two\nand a half"},
			want: "edited f.txt: replaced 1 line at line 2 with 2 lines", after: "one\r\ntwo\r\nand a half\r\nthree\r\n"},
		{name: "crlf_written_by_model", file: "one\r\ntwo\r\n", args: map[string]any{"path": "f.txt", "old_string": "one\r\n", "new_string": "1\r\n"},
			want: "edited f.txt: replaced 1 line at line 1 with 1 line", after: "1\r\ntwo\r\n"},
		{name: "mixed_endings", file: "a\r\nb\nc\r\n", args: map[string]any{"path": "f.txt", "old_string": "a\nb", "new_string": "x\ny"},
			want: "edited f.txt: replaced 2 lines at line 1 with 2 lines", after: "x\r\ny\nc\r\n"},
		{name: "lf_stays_lf", file: original, args: map[string]any{"path": "f.txt", "old_string": "one\n", "new_string": "1\n1.5\n"},
			want: "edited f.txt: replaced 1 line at line 1 with 2 lines", after: "1\n1.5\ntwo\nthree\ntwo\n"},
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

// TestWriteAndEditKeepMode checks that changing a file keeps its
// permissions, such as a script's executable bit.
func TestWriteAndEditKeepMode(t *testing.T) {
	ws, root, _ := newWorkspace(t)
	tests := []struct {
		name string
		tool interface {
			Call(context.Context, json.RawMessage) (string, error)
		}
		args map[string]any
	}{
		{name: "write", tool: NewWriteFile(ws, Options{}), args: map[string]any{"path": "run.sh", "content": "#!/bin/sh\necho new\n"}},
		{name: "edit", tool: NewEditFile(ws, Options{}), args: map[string]any{"path": "run.sh", "old_string": "old", "new_string": "new"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(root, "run.sh")
			files(t, root, map[string]string{"run.sh": "#!/bin/sh\necho old\n"})
			if err := os.Chmod(p, 0o751); err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(tt.args)
			if _, err := tt.tool.Call(context.Background(), raw); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o751 {
				t.Errorf("mode %v, want it kept at 0751", fi.Mode().Perm())
			}
			if b, _ := os.ReadFile(p); string(b) != "#!/bin/sh\necho new\n" {
				t.Errorf("content %q", b)
			}
		})
	}
}

func TestPathLocks(t *testing.T) {
	var l pathLocks
	unlockA := l.lock("a")
	unlockB := l.lock("b") // another path does not wait for a
	got := make(chan string, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		unlock := l.lock("a") // waits for the first holder of a
		got <- "second"
		unlock()
	}()
	got <- "first"
	unlockA()
	<-done
	unlockB()
	if first, second := <-got, <-got; first != "first" || second != "second" {
		t.Errorf("order %s, %s; want first, second", first, second)
	}
	if len(l.m) != 0 {
		t.Errorf("%d entries left after every lock was given up", len(l.m))
	}
}

func TestEditFileRefusesLargeFiles(t *testing.T) {
	ws, root, _ := newWorkspace(t)
	files(t, root, map[string]string{"mid.txt": "needle\n" + strings.Repeat("x", 5000)})
	got, err := call(t, NewEditFile(ws, Options{MaxSearchFileSize: 1000}), map[string]any{"path": "mid.txt", "old_string": "needle", "new_string": "pin"})
	checkResult(t, got, err, "", "edit_file: mid.txt is 5.0 kB, larger than the 1.0 kB that edit_file reads at most")
	if b, _ := os.ReadFile(filepath.Join(root, "mid.txt")); !strings.HasPrefix(string(b), "needle\n") {
		t.Errorf("mid.txt was changed: %.20q", b)
	}

	// A sparse file of 8 GiB, which a read of the whole would not survive.
	f, err := os.Create(filepath.Join(root, "huge.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(8 << 30); err != nil {
		f.Close()
		t.Skipf("no sparse file of 8 GiB here: %v", err)
	}
	f.Close()
	got, err = call(t, NewEditFile(ws, Options{}), map[string]any{"path": "huge.txt", "old_string": "a", "new_string": "b"})
	checkResult(t, got, err, "", "edit_file: huge.txt is 8.6 GB, larger than the 10.5 MB that edit_file reads at most")
}

func TestEditFileHintIsBounded(t *testing.T) {
	ws, root, _ := newWorkspace(t)
	// 200,000 lines alike, ending in the 2,000 lines of old_string but
	// for the space around its last line: finding that takes each of the
	// 198,000 places before it 2,000 comparisons.
	content := strings.Repeat("a\n", 199_999) + "b\n"
	old := strings.Repeat("a\n", 1999) + "  b"
	files(t, root, map[string]string{"big.txt": content})
	ef := NewEditFile(ws, Options{})
	var (
		got string
		err error
	)
	finishes(t, "the edit", func() {
		got, err = call(t, ef, map[string]any{"path": "big.txt", "old_string": old, "new_string": "c"})
	})
	checkResult(t, got, err, "", "old_string was not found in big.txt: its first line occurs at line 1 but what follows differs")

	// Under a context that ended, the search for the hint stops at its
	// first look at it.
	ctx := newStopAfter(0)
	if at := matchIgnoringSpace(ctx, content, old); at != 0 {
		t.Errorf("matchIgnoringSpace = %d under a context that ended", at)
	}
	if n := ctx.left.Load(); n != -1 {
		t.Errorf("the context was looked at %d times, want once", -n)
	}
	// Within the bound, the hint is given.
	if at := matchIgnoringSpace(context.Background(), "x\n"+content[len(content)-4000:], old); at != 2 {
		t.Errorf("matchIgnoringSpace = %d, want 2", at)
	}
}

func TestWriteFileLongName(t *testing.T) {
	ws, root, _ := newWorkspace(t)
	// A name of 251 bytes, which with the temporary file's additions
	// would be longer than the 255 most file systems take.
	name := strings.Repeat("n", 247) + ".txt"
	got, err := call(t, NewWriteFile(ws, Options{}), map[string]any{"path": name, "content": "long\n"})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, name)); err != nil || string(b) != "long\n" {
		t.Errorf("after %q the file holds %q, %v", got, b, err)
	}
	for _, tt := range []struct{ name, want string }{
		{"a.txt", ".a.txt.00000000000000ff.tmp"},
		{strings.Repeat("é", 127) + "x", "." + strings.Repeat("é", 116) + ".00000000000000ff.tmp"},
	} {
		got := tempName(tt.name, 0xff)
		if got != tt.want || len(got) > maxNameLen || !utf8.ValidString(got) {
			t.Errorf("tempName(%q) = %q (%d bytes), want %q", tt.name, got, len(got), tt.want)
		}
	}
}
