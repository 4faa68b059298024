package tool

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func BenchmarkValidate(b *testing.B) {
	args := json.RawMessage(`{"task":"x","path":"a","limit":3,"ratio":0.5,"force":true,"mode":"fast","files":["a","b"],"either":2,"opts":{"depth":1,"tags":[{"k":"v"}]}}`)
	schema := json.RawMessage(testSchema)
	b.SetBytes(int64(len(args)))
	for b.Loop() {
		if err := Validate(schema, args); err != nil {
			b.Fatal(err)
		}
	}
}

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
