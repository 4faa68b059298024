package builtin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadFile(t *testing.T) {
	ws, root, outside := newWorkspace(t)
	var ten strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&ten, "line %d\n", i)
	}
	files(t, root, map[string]string{
		"abc.txt":    "a\nb\nc\n",
		"ten.txt":    ten.String(),
		"crlf.txt":   "one\r\ntwo",
		"empty.txt":  "",
		"long.txt":   strings.Repeat("x", 25) + "\nshort\n",
		"utf8.txt":   "ééééé\n", // 10 bytes
		"bin.dat":    "ab\x00cd",
		"dir/in.txt": "in\n",
	})
	files(t, outside, map[string]string{"secret.txt": "secret\n"})
	symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(root, "link.txt"))
	var thirty strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&thirty, "%d\n", i)
	}
	files(t, root, map[string]string{"thirty.txt": thirty.String()})
	symlink(t, filepath.Join(root, "abc.txt"), filepath.Join(root, "inlink.txt"))
	rf := NewReadFile(ws, Options{ReadLimit: 4, MaxLineLength: 9})
	capped := NewReadFile(ws, Options{ReadLimit: 4, MaxReadBytes: 30})

	tests := []struct {
		name    string
		tool    *ReadFile
		args    map[string]any
		want    string
		wantErr string
	}{
		{name: "whole", args: map[string]any{"path": "abc.txt"}, want: "     1\ta\n     2\tb\n     3\tc\n"},
		{name: "link_inside", args: map[string]any{"path": "inlink.txt"}, want: "     1\ta\n     2\tb\n     3\tc\n"},
		{name: "output_capped", tool: capped, args: map[string]any{"path": "ten.txt"},
			want: "     1\tline 1\n     2\tline 2\n\n(showing lines 1-2 of 10; the page ends early because the result is capped at 30 bytes; call read_file with offset=3 to read on)\n"},
		{name: "output_capped_shows_one_line", tool: NewReadFile(ws, Options{MaxReadBytes: 5}), args: map[string]any{"path": "ten.txt", "offset": 10},
			want: "    10\tline 10\n\n(showing lines 10-10 of 10)\n"},
		{name: "long_file_points_to_search", args: map[string]any{"path": "thirty.txt", "offset": 2, "limit": 2},
			want: "     2\t2\n     3\t3\n\n(showing lines 2-3 of 30; call read_file with offset=4 to read on, or find the lines you need with search_files)\n"},
		{name: "absolute_inside", args: map[string]any{"path": filepath.Join(root, "abc.txt"), "limit": 1},
			want: "     1\ta\n\n(showing lines 1-1 of 3; call read_file with offset=2 to read on)\n"},
		{name: "default_limit", args: map[string]any{"path": "ten.txt"},
			want: "     1\tline 1\n     2\tline 2\n     3\tline 3\n     4\tline 4\n\n(showing lines 1-4 of 10; call read_file with offset=5 to read on)\n"},
		{name: "offset_limit", args: map[string]any{"path": "ten.txt", "offset": 3, "limit": 2},
			want: "     3\tline 3\n     4\tline 4\n\n(showing lines 3-4 of 10; call read_file with offset=5 to read on)\n"},
		{name: "to_the_end", args: map[string]any{"path": "ten.txt", "offset": 9},
			want: "     9\tline 9\n    10\tline 10\n\n(showing lines 9-10 of 10)\n"},
		{name: "limit_above_maximum", args: map[string]any{"path": "ten.txt", "offset": 2, "limit": 100},
			want: "     2\tline 2\n     3\tline 3\n     4\tline 4\n     5\tline 5\n\n(showing lines 2-5 of 10; call read_file with offset=6 to read on)\n"},
		{name: "crlf_and_no_final_newline", args: map[string]any{"path": "crlf.txt"}, want: "     1\tone\n     2\ttwo\n"},
		{name: "empty", args: map[string]any{"path": "empty.txt"}, want: "(empty.txt is empty)"},
		{name: "long_line", args: map[string]any{"path": "long.txt"},
			want: "     1\txxxxxxxxx … [line cut: 25 bytes in all]\n     2\tshort\n(1 line longer than 9 bytes cut)\n"},
		{name: "cut_on_rune_boundary", args: map[string]any{"path": "utf8.txt"},
			want: "     1\téééé … [line cut: 10 bytes in all]\n(1 line longer than 9 bytes cut)\n"},
		{name: "offset_past_end", args: map[string]any{"path": "abc.txt", "offset": 4}, wantErr: "offset 4 is past the end of abc.txt, which has 3 lines"},
		{name: "negative", args: map[string]any{"path": "abc.txt", "offset": -1}, wantErr: "must not be negative"},
		{name: "missing", args: map[string]any{"path": "nope.txt"}, wantErr: "read_file: nope.txt does not exist in the workspace"},
		{name: "directory", args: map[string]any{"path": "dir"}, wantErr: "dir is a directory, not a file: use list_files"},
		{name: "binary", args: map[string]any{"path": "bin.dat"}, wantErr: "bin.dat is a binary file (5 bytes), not text, so it is not shown; to look inside it, run a command such as `file bin.dat`"},
		{name: "traversal", args: map[string]any{"path": "../outside/secret.txt"}, wantErr: "is outside the workspace root " + root},
		{name: "absolute_outside", args: map[string]any{"path": filepath.Join(outside, "secret.txt")}, wantErr: "is outside the workspace root"},
		{name: "symlink_out", args: map[string]any{"path": "link.txt"}, wantErr: "symbolic link"},
		{name: "bad_type", args: map[string]any{"path": 3}, wantErr: `invalid arguments for read_file: argument "path": expected string, got number`},
		{name: "missing_path", args: map[string]any{}, wantErr: `missing required argument "path"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := tt.tool
			if tl == nil {
				tl = rf
			}
			got, err := call(t, tl, tt.args)
			checkResult(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestReadFileHugeLine(t *testing.T) {
	ws, root, _ := newWorkspace(t)
	// A line much longer than the reader's buffer is cut, and the next
	// line is still numbered right.
	big := strings.Repeat("y", 300_000)
	if err := os.WriteFile(filepath.Join(root, "big.txt"), []byte(big+"\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := call(t, NewReadFile(ws, Options{}), map[string]any{"path": "big.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "[line cut: 300000 bytes in all]") || !strings.Contains(got, "     2\tafter\n") || len(got) > 3000 {
		t.Errorf("unexpected result (%d bytes): %.200q…", len(got), got)
	}
}

func TestReadFileLarge(t *testing.T) {
	ws, root, _ := newWorkspace(t)
	// 200,000 lines, the last without a newline: the page is short, the
	// count exact.
	var b strings.Builder
	for i := 1; i < 200_000; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	b.WriteString("the end")
	if err := os.WriteFile(filepath.Join(root, "big.log"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	rf := NewReadFile(ws, Options{})
	got, err := call(t, rf, map[string]any{"path": "big.log", "limit": 2})
	want := "     1\tline 1\n     2\tline 2\n\n(showing lines 1-2 of 200000; call read_file with offset=3 to read on, or find the lines you need with search_files)\n"
	checkResult(t, got, err, want, "")
	got, err = call(t, rf, map[string]any{"path": "big.log", "offset": 199_999})
	checkResult(t, got, err, "199999\tline 199999\n200000\tthe end\n\n(showing lines 199999-200000 of 200000)\n", "")
}

func TestReadFileStopsInsideALine(t *testing.T) {
	ws, root, _ := newWorkspace(t)
	// Text, then a gigabyte without a newline (a sparse file: the rest
	// reads as NUL bytes, past where binary files are told apart).
	f, err := os.Create(filepath.Join(root, "long.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(strings.Repeat("x", 2*sniffLen)); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		f.Close()
		t.Skipf("no sparse file of 1 GiB here: %v", err)
	}
	f.Close()
	// The call looks at its context once before the first line; any look
	// after that, inside the line, must stop it.
	got, err := callCtx(t, newStopAfter(1), NewReadFile(ws, Options{}), map[string]any{"path": "long.txt"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("read under a context that ended = %.100q, %v; want context.Canceled", got, err)
	}
}
