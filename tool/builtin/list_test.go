package builtin

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern string
		path    string
		want    bool
	}{
		{"*.go", "a.go", true},
		{"*.go", "src/deep/a.go", true},
		{"*.go", "a.txt", false},
		{"src/*.go", "src/a.go", true},
		{"src/*.go", "src/deep/a.go", false},
		{"src/**/*.go", "src/a.go", true},
		{"src/**/*.go", "src/deep/er/a.go", true},
		{"src/**/*.go", "lib/a.go", false},
		{"**/*.go", "a.go", true},
		{"**", "any/thing", true},
		{"src/**", "src/x/y", true},
		{"src/**/**/x", "src/x", true},
		{"{a,b}.txt", "b.txt", true},
		{"{a,b}.txt", "c.txt", false},
		{"*.{go,md}", "dir/readme.md", true},
		{"src/{x,y{1,2}}/*.go", "src/y2/a.go", true},
		{"src/{x,y{1,2}}/*.go", "src/y3/a.go", false},
		{"./src/*.go", "src/a.go", true},
		{"?.go", "ab.go", false},
		{"[ab].go", "b.go", true},
		{`\*.go`, "*.go", true},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"~"+tt.path, func(t *testing.T) {
			g, err := compileGlob(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if got := g.match(tt.path); got != tt.want {
				t.Errorf("match = %v, want %v", got, tt.want)
			}
		})
	}
	for _, bad := range []string{"[", "a{b", "a}b", "/abs/*.go", ""} {
		if _, err := compileGlob(bad); err == nil {
			t.Errorf("compileGlob(%q) succeeded, want an error", bad)
		}
	}
}

func TestListFiles(t *testing.T) {
	ws, root, outside := newWorkspace(t)
	files(t, root, map[string]string{
		"a.go": "", "b.txt": "", "src/x.go": "", "src/deep/y.go": "", "src/deep/z.md": "",
		".git/config": "", "node/z.go": "",
	})
	files(t, outside, map[string]string{"hidden.go": ""})
	symlink(t, outside, filepath.Join(root, "outlink"))
	lf := NewListFiles(ws, Options{})
	small := NewListFiles(ws, Options{MaxListFiles: 2})

	tests := []struct {
		name    string
		tool    *ListFiles
		args    map[string]any
		want    string
		wantErr string
	}{
		{name: "all", args: map[string]any{},
			want: "a.go\nb.txt\nnode/z.go\nsrc/deep/y.go\nsrc/deep/z.md\nsrc/x.go\n\n(1 symbolic link leading outside the workspace or to nothing not listed)\n"},
		{name: "by_name", args: map[string]any{"pattern": "*.go"}, want: "a.go\nnode/z.go\nsrc/deep/y.go\nsrc/x.go\n"},
		{name: "double_star", args: map[string]any{"pattern": "src/**/*.go"}, want: "src/deep/y.go\nsrc/x.go\n"},
		{name: "one_level", args: map[string]any{"pattern": "src/*"}, want: "src/x.go\n"},
		{name: "braces", args: map[string]any{"pattern": "{a,b}.*"}, want: "a.go\nb.txt\n"},
		{name: "under_path", args: map[string]any{"pattern": "deep/*", "path": "src"}, want: "src/deep/y.go\nsrc/deep/z.md\n"},
		{name: "null_pattern", args: map[string]any{"pattern": nil, "path": "src/deep"}, want: "src/deep/y.go\nsrc/deep/z.md\n"},
		{name: "capped", tool: small, args: map[string]any{"pattern": "*.go"},
			want: "a.go\nnode/z.go\n\n(showing 2 of 4 files; narrow the pattern or path to see the rest)\n"},
		{name: "no_match", args: map[string]any{"pattern": "*.rs"}, want: `no files match "*.rs" under .`},
		{name: "bad_pattern", args: map[string]any{"pattern": "[x"}, wantErr: "syntax error in pattern"},
		{name: "path_is_file", args: map[string]any{"path": "a.go"}, wantErr: "a.go is a file, not a directory"},
		{name: "path_missing", args: map[string]any{"path": "nope"}, wantErr: "nope does not exist"},
		{name: "traversal", args: map[string]any{"path": ".."}, wantErr: "outside the workspace root"},
		{name: "through_link", args: map[string]any{"path": "outlink"}, wantErr: "outside the workspace root"},
		{name: "unknown_argument", args: map[string]any{"glob": "*.go"}, wantErr: `unexpected argument "glob": the tool accepts only path, pattern`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := tt.tool
			if tl == nil {
				tl = lf
			}
			got, err := call(t, tl, tt.args)
			checkResult(t, got, err, tt.want, tt.wantErr)
		})
	}
}

// finishes runs f and fails the test if it has not returned after a
// minute: a guard against a hang, far above what f needs, not a measure
// of speed.
func finishes(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s did not finish within a minute", what)
	}
}

func TestGlobManyDoubleStars(t *testing.T) {
	// Each ** could take any number of the 40 folders: tried naively,
	// the ways to split them are beyond counting.
	name := strings.Repeat("a/", 40) + "c.txt"
	pattern := strings.Repeat("**/a/", 14) + "**/b"
	g, err := compileGlob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	var got, got2 bool
	finishes(t, "matching "+pattern, func() {
		got = g.match(name)
		got2 = g.match(strings.Repeat("a/", 40) + "b")
	})
	if got {
		t.Errorf("%q matches %q", pattern, name)
	}
	if !got2 {
		t.Errorf("%q does not match %q", pattern, name)
	}
	// A path 2000 folders deep, and a pattern at the segment limit.
	deep := strings.Repeat("a/", 2000) + "c.txt"
	long := strings.Repeat("**/a/", 31) + "**"
	if g, err = compileGlob(long); err != nil {
		t.Fatal(err)
	}
	finishes(t, "matching "+long, func() { got = g.match(deep) })
	if !got {
		t.Errorf("%q does not match a path 2000 folders deep", long)
	}
}

func TestGlobBounds(t *testing.T) {
	tests := []struct {
		name, pattern, wantErr string
	}{
		{"too_long", strings.Repeat("{a}", 20_000), "too long: the limit is 4096 bytes"},
		{"too_many_segments", strings.Repeat("a/", 64) + "b", "has 65 path segments: the limit is 64"},
		{"too_many_alternatives", strings.Repeat("{a,b}", 9), "more than 256 alternatives"},
		{"too_many_bytes", "{" + strings.Repeat("x", 1000) + ",y}" + strings.Repeat("{a,b}", 7), "more than 16384 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			finishes(t, "compiling the pattern", func() { _, err = compileGlob(tt.pattern) })
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("compileGlob = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
	// Many groups in a row expand to one pattern.
	pats, err := expandBraces(strings.Repeat("{a}", 1300))
	if err != nil || len(pats) != 1 || pats[0] != strings.Repeat("a", 1300) {
		t.Errorf("expandBraces({a}×1300) = %d patterns, %v", len(pats), err)
	}
	pats, err = expandBraces(`x{a,b{c,d}}y,\{z\}`)
	if want := []string{`xay,\{z\}`, `xbcy,\{z\}`, `xbdy,\{z\}`}; err != nil || !slices.Equal(pats, want) {
		t.Errorf("expandBraces = %q, %v; want %q", pats, err, want)
	}
}
