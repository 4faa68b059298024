package tool

import (
	"os"
	"path/filepath"
	"testing"
)

func BenchmarkResolve(b *testing.B) {
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "a", "b", "c"), 0o755); err != nil {
		b.Fatal(err)
	}
	ws, err := NewWorkspace(root)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	for _, p := range []string{"a/b/c", "a/b/c/new/file.txt"} {
		b.Run(filepath.Base(p), func(b *testing.B) {
			for b.Loop() {
				if _, err := ws.Resolve(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
