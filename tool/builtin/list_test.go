package builtin

import (
	"path/filepath"
	"testing"
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
