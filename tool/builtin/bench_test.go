package builtin

import (
	"fmt"
	"strings"
	"testing"
)

// benchTree fills a workspace with 20 directories of 50 Go-like files of
// 100 lines each (about 4 MB).
func benchTree(b *testing.B) *SearchFiles {
	b.Helper()
	ws, root, _ := newWorkspace(b)
	body := strings.Repeat("\tx := compute(a, b) // some ordinary line of code\n", 99) + "func Target() {}\n"
	fs := map[string]string{}
	for d := range 20 {
		for f := range 50 {
			fs[fmt.Sprintf("pkg%02d/file%02d.go", d, f)] = body
		}
	}
	files(b, root, fs)
	return NewSearchFiles(ws, Options{MaxSearchMatches: 10_000})
}

func BenchmarkSearchFiles(b *testing.B) {
	sf := benchTree(b)
	for b.Loop() {
		out, err := call(b, sf, map[string]any{"pattern": `^func Target`, "glob": "*.go"})
		if err != nil || strings.Count(out, "\n") != 1000 {
			b.Fatalf("%d lines, %v", strings.Count(out, "\n"), err)
		}
	}
}

func BenchmarkListFiles(b *testing.B) {
	sf := benchTree(b)
	lf := NewListFiles(sf.ws, Options{})
	for b.Loop() {
		if _, err := call(b, lf, map[string]any{"pattern": "pkg1*/**/*.go"}); err != nil {
			b.Fatal(err)
		}
	}
}
