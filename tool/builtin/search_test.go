package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cadre-ai/cadre"
)

func TestSearchFiles(t *testing.T) {
	ws, root, outside := newWorkspace(t)
	files(t, root, map[string]string{
		"a.go":        "package a\n\nfunc A() {}\nfunc helper() {}\n",
		"b.txt":       "no functions here\nFUNC upper\n",
		"src/c.go":    "package src\nfunc C() {}\n",
		"bin.dat":     "func\x00binary\n",
		".git/HEAD":   "func in git\n",
		"long.txt":    "func " + strings.Repeat("z", 600) + "\n",
		"big/big.txt": strings.Repeat("func big\n", 20),
	})
	files(t, outside, map[string]string{"secret.go": "func Secret() {}\n"})
	symlink(t, filepath.Join(outside, "secret.go"), filepath.Join(root, "secret.go"))
	sf := NewSearchFiles(ws, Options{})
	small := NewSearchFiles(ws, Options{MaxSearchMatches: 3, MaxSearchFileSize: 100})

	tests := []struct {
		name    string
		tool    *SearchFiles
		args    map[string]any
		want    string
		wantErr string
	}{
		{name: "glob", args: map[string]any{"pattern": `^func \w+\(`, "glob": "*.go"},
			want: "a.go:3: func A() {}\na.go:4: func helper() {}\nsrc/c.go:2: func C() {}\n"},
		{name: "case_insensitive", args: map[string]any{"pattern": `(?i)^func upper`}, want: "b.txt:2: FUNC upper\n\n(not searched: 1 binary file: bin.dat)\n"},
		{name: "under_path", args: map[string]any{"pattern": "func", "path": "src"}, want: "src/c.go:2: func C() {}\n"},
		{name: "single_file", args: map[string]any{"pattern": "helper", "path": "a.go"}, want: "a.go:4: func helper() {}\n"},
		{name: "long_line_cut", args: map[string]any{"pattern": "zzz", "glob": "long.txt"},
			want: "long.txt:1: func " + strings.Repeat("z", 495) + " …\n"},
		{name: "capped", tool: small, args: map[string]any{"pattern": "func"},
			want: "a.go:3: func A() {}\na.go:4: func helper() {}\nb.txt:1: no functions here\n\n(stopped at 3 matches; narrow the pattern, path or glob to see the rest)\n" +
				"(not searched: 1 binary file: bin.dat)\n(not searched: 2 files over 100 bytes: big/big.txt, long.txt)\n"},
		{name: "no_match", args: map[string]any{"pattern": "nothing like this"}, want: "no matches for \"nothing like this\" under .\n(not searched: 1 binary file: bin.dat)\n"},
		{name: "no_match_glob", args: map[string]any{"pattern": "x", "glob": "*.rs"}, want: `no matches for "x" under . in files matching "*.rs"`},
		{name: "skips_binary_git_and_links", args: map[string]any{"pattern": "binary|in git|Secret"}, want: "no matches for \"binary|in git|Secret\" under .\n(not searched: 1 binary file: bin.dat)\n"},
		{name: "binary_file_as_path", args: map[string]any{"pattern": "func", "path": "bin.dat"}, want: "no matches for \"func\" under bin.dat\n(not searched: 1 binary file: bin.dat)\n"},
		{name: "bad_regexp", args: map[string]any{"pattern": "func("}, wantErr: `invalid regular expression "func(": error parsing regexp: missing closing )`},
		{name: "empty_pattern", args: map[string]any{"pattern": ""}, wantErr: "the pattern is empty"},
		{name: "bad_glob", args: map[string]any{"pattern": "x", "glob": "{a"}, wantErr: "unmatched {"},
		{name: "missing_path", args: map[string]any{"pattern": "x", "path": "nope"}, wantErr: "nope does not exist"},
		{name: "traversal", args: map[string]any{"pattern": "x", "path": "../outside"}, wantErr: "outside the workspace root"},
		{name: "link_out", args: map[string]any{"pattern": "x", "path": "secret.go"}, wantErr: "outside the workspace root"},
		{name: "missing_pattern", args: map[string]any{"path": "."}, wantErr: `missing required argument "pattern"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := tt.tool
			if tl == nil {
				tl = sf
			}
			got, err := call(t, tl, tt.args)
			checkResult(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestSearchFilesNamesSkippedFiles(t *testing.T) {
	ws, root, _ := newWorkspace(t)
	fs := map[string]string{"match.txt": "needle\n"}
	for i := range 8 {
		fs[fmt.Sprintf("img%d.png", i)] = "\x89PNG\x00needle"
	}
	for i := range 2 {
		fs[fmt.Sprintf("huge%d.log", i)] = strings.Repeat("needle\n", 100)
	}
	files(t, root, fs)
	got, err := call(t, NewSearchFiles(ws, Options{MaxSearchFileSize: 500}), map[string]any{"pattern": "needle"})
	want := "match.txt:1: needle\n\n" +
		"(not searched: 8 binary files: img0.png, img1.png, img2.png, img3.png, img4.png and 3 more)\n" +
		"(not searched: 2 files over 500 bytes: huge0.log, huge1.log)\n"
	checkResult(t, got, err, want, "")
}

// TestReadUpTo checks the reading of a file whose size may have changed
// since it was looked at.
func TestReadUpTo(t *testing.T) {
	tests := []struct {
		name    string
		content string
		size    int64 // as the file was seen
		limit   int64
		tooBig  bool
	}{
		{name: "size_right", content: "abc", size: 3, limit: 10},
		{name: "empty", content: "", size: 0, limit: 10},
		{name: "grew", content: strings.Repeat("x", 2000), size: 3, limit: 5000},
		{name: "shrank", content: "ab", size: 3000, limit: 5000},
		{name: "at_limit", content: "12345", size: 5, limit: 5},
		{name: "grew_past_limit", content: "123456", size: 2, limit: 5, tooBig: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readUpTo(strings.NewReader(tt.content), tt.size, tt.limit)
			if tt.tooBig {
				if !errors.Is(err, errTooLarge) {
					t.Fatalf("got %q, %v; want errTooLarge", got, err)
				}
				return
			}
			if err != nil || string(got) != tt.content {
				t.Errorf("got %q, %v; want %q", got, err, tt.content)
			}
		})
	}
}

// stopAfter is a context that ends (its Err says context.Canceled) once
// Err has been called n times: it shows whether work looks at its context
// while it goes on, without depending on how fast it goes.
type stopAfter struct {
	context.Context
	left atomic.Int64
}

func newStopAfter(n int64) *stopAfter {
	c := &stopAfter{Context: context.Background()}
	c.left.Store(n)
	return c
}

func (c *stopAfter) Err() error {
	if c.left.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// callCtx runs a tool with args marshalled to JSON, under ctx.
func callCtx(t testing.TB, ctx context.Context, tl cadre.Tool, args any) (string, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tl.Call(ctx, raw)
}

func TestSearchFilesStopsInsideAFile(t *testing.T) {
	ws, root, _ := newWorkspace(t)
	// 200 kB of lines, none matching: the pattern, a thousand
	// instructions, is looked for in every one.
	files(t, root, map[string]string{"big.txt": strings.Repeat(strings.Repeat("y", 99)+"\n", 2000)})
	sf := NewSearchFiles(ws, Options{})
	for _, path := range []string{"big.txt", "."} {
		t.Run(path, func(t *testing.T) {
			// The walk, if any, looks at the context once for the folder
			// and once for the file; the search of the file once at its
			// start. Any look after that must stop the call.
			looks := int64(1)
			if path == "." {
				looks = 3
			}
			got, err := callCtx(t, newStopAfter(looks), sf, map[string]any{"pattern": "x{1000}", "path": path})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("search under a context that ended = %q, %v; want context.Canceled", got, err)
			}
		})
	}
}

func TestSearchFilesRefusesHugePrograms(t *testing.T) {
	ws, root, _ := newWorkspace(t)
	files(t, root, map[string]string{"a.txt": strings.Repeat(strings.Repeat("a", 63)+"\n", 512)})
	sf := NewSearchFiles(ws, Options{})
	pattern := strings.Repeat("(?:.?){999}", 100) + "z"
	var (
		got string
		err error
	)
	finishes(t, "the search", func() { got, err = call(t, sf, map[string]any{"pattern": pattern}) })
	checkResult(t, got, err, "", "compiles to 199803 instructions, and the limit is 3000")
	// The largest repetition RE2 allows is still searched for.
	got, err = call(t, sf, map[string]any{"pattern": "a.{1,1000}"})
	if err != nil || !strings.HasPrefix(got, "a.txt:1: ") {
		t.Errorf("search for a.{1,1000} = %.100q, %v", got, err)
	}
}

func TestSearchFilesLeavesOutLinesTooLongForThePattern(t *testing.T) {
	ws, root, _ := newWorkspace(t)
	files(t, root, map[string]string{
		"min.js":  strings.Repeat("a", 100_000) + "z\naxz\n",
		"note.md": "abz\n",
	})
	sf := NewSearchFiles(ws, Options{})
	var (
		got string
		err error
	)
	// The expression is 2002 instructions: a line of 100 kB would take
	// it about a second, which could not be cut short.
	finishes(t, "the search", func() { got, err = call(t, sf, map[string]any{"pattern": "a.{1,1000}z"}) })
	want := "min.js:2: axz\nnote.md:1: abz\n\n" +
		"(not searched: lines over 67.0 kB in 1 file: min.js; the larger an expression, the shorter the lines it can search: a smaller one searches longer lines)\n"
	checkResult(t, got, err, want, "")
	// A small expression searches the long line.
	got, err = call(t, sf, map[string]any{"pattern": "az$", "path": "min.js"})
	checkResult(t, got, err, "min.js:1: "+strings.Repeat("a", 500)+" …\n", "")
}

// A search of one file named by the call says when it stopped at the
// match limit, as a search of a folder does.
func TestSearchFilesOneFileSaysItStopped(t *testing.T) {
	ws, root, _ := newWorkspace(t)
	files(t, root, map[string]string{"many.txt": strings.Repeat("needle\n", 10)})
	got, err := call(t, NewSearchFiles(ws, Options{MaxSearchMatches: 3}), map[string]any{"pattern": "needle", "path": "many.txt"})
	if err != nil || strings.Count(got, "needle") != 3 || !strings.Contains(got, "(stopped at 3 matches") {
		t.Fatalf("got %q, %v; want 3 matches and the note that the search stopped", got, err)
	}
}
