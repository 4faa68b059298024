package builtin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Sizes of the benchmark tree: 30 directories of 100 Go-like files of 50
// lines each, 3,000 files and about 2.5 MB in all.
const (
	benchDirs     = 30
	benchFilesPer = 100
	benchFiles    = benchDirs * benchFilesPer
)

// benchTree fills a workspace with the benchmark tree; every file holds
// one line that starts with "func Target".
func benchTree(b *testing.B) *SearchFiles {
	b.Helper()
	ws, root, _ := newWorkspace(b)
	body := strings.Repeat("\tx := compute(a, b) // some ordinary line of code\n", 49) + "func Target() {}\n"
	fs := map[string]string{}
	for d := range benchDirs {
		for f := range benchFilesPer {
			fs[fmt.Sprintf("pkg%02d/file%03d.go", d, f)] = body
		}
	}
	files(b, root, fs)
	return NewSearchFiles(ws, Options{MaxSearchMatches: 10_000})
}

func BenchmarkSearchFiles(b *testing.B) {
	sf := benchTree(b)
	for _, c := range []struct {
		name, pattern string
		matches       int
	}{
		{"anchored", `^func Target`, benchFiles},
		{"rare_literal", `Target\(\) \{\}`, benchFiles},
		{"no_match", `does not occur`, 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				out, err := call(b, sf, map[string]any{"pattern": c.pattern, "glob": "*.go"})
				if err != nil {
					b.Fatal(err)
				}
				if c.matches > 0 && strings.Count(out, "\n") != c.matches {
					b.Fatalf("%d lines, want %d", strings.Count(out, "\n"), c.matches)
				}
			}
		})
	}
}

func BenchmarkListFiles(b *testing.B) {
	sf := benchTree(b)
	lf := NewListFiles(sf.ws, Options{MaxListFiles: benchFiles})
	for _, pattern := range []string{"pkg1*/**/*.go", "*.go"} {
		b.Run(pattern, func(b *testing.B) {
			for b.Loop() {
				if _, err := call(b, lf, map[string]any{"pattern": pattern}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadFile reads pages of a 200,000-line file of about 10 MB.
func BenchmarkReadFile(b *testing.B) {
	ws, root, _ := newWorkspace(b)
	var sb strings.Builder
	for i := range 200_000 {
		fmt.Fprintf(&sb, "%06d the quick brown fox jumps over the lazy dog\n", i)
	}
	if err := os.WriteFile(filepath.Join(root, "big.log"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	rf := NewReadFile(ws, Options{})
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"first_page", map[string]any{"path": "big.log"}},
		{"one_line", map[string]any{"path": "big.log", "limit": 1}},
		{"last_page", map[string]any{"path": "big.log", "offset": 198_001}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(sb.Len()))
			for b.Loop() {
				if _, err := call(b, rf, c.args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
