package rule

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/tool"
)

// BenchmarkCommand judges a three-part command line against an allowlist
// of four patterns and one denial.
func BenchmarkCommand(b *testing.B) {
	chain := Chain{set(b, denyAll(rc), allow(rc, cadre.SyntaxCommand, "git *"), allow(rc, cadre.SyntaxCommand, "go test *"),
		allow(rc, cadre.SyntaxCommand, "go vet *"), allow(rc, cadre.SyntaxCommand, "ls *"), deny(rc, cadre.SyntaxCommand, "git push *"))}
	line := `git status --porcelain && go test -race ./... 2>&1 | tee "test output.txt"`
	b.ReportAllocs()
	for b.Loop() {
		chain.Command(rc, line)
	}
}

// BenchmarkPath judges a read_file call: the path is resolved on disk and
// matched against two .gitignore patterns.
func BenchmarkPath(b *testing.B) {
	root := b.TempDir()
	ws, err := tool.NewWorkspace(root)
	if err != nil {
		b.Fatal(err)
	}
	g := Guard(&fakeTool{name: "read_file"}, Chain{set(b, denyAll("read_file"), allow("read_file", cadre.SyntaxGitignore, "src/**"),
		deny("read_file", cadre.SyntaxGitignore, "*.env"))}, ws).(tool.Gate)
	args := json.RawMessage(`{"path":"src/pkg/deep/file.go"}`)
	b.ReportAllocs()
	for b.Loop() {
		g.Judge(context.Background(), args)
	}
}
