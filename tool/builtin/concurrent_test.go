package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/tool"
)

// TestConcurrentCalls runs many calls of every tool at once through one
// Executor, as the calls of one model reply are run; with -race it checks
// that the tools share no state unsafely, and it checks that concurrent
// edits of one file are all kept.
func TestConcurrentCalls(t *testing.T) {
	ws, root, _ := newWorkspace(t)
	const n = 16
	var shared strings.Builder
	for i := range n {
		fmt.Fprintf(&shared, "slot %d\n", i)
	}
	files(t, root, map[string]string{"shared.txt": shared.String(), "a.txt": "alpha\n", "src/b.go": "package b\n"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<p>page %s</p>", r.URL.Path)
	}))
	defer srv.Close()

	byName := map[string]cadre.Tool{}
	for _, tl := range New(ws, Options{HTTPClient: srv.Client()}) {
		byName[tl.Spec().Name] = tl
	}
	e := &tool.Executor{Approver: &tool.Approver{Mode: tool.ApproveAll}}
	type job struct {
		name string
		args map[string]any
		want string // a substring of the result
	}
	var jobs []job
	for i := range n {
		jobs = append(jobs,
			job{NameEditFile, map[string]any{"path": "shared.txt", "old_string": fmt.Sprintf("slot %d\n", i), "new_string": fmt.Sprintf("done %d\n", i)}, "edited shared.txt"},
			job{NameWriteFile, map[string]any{"path": fmt.Sprintf("out/%d.txt", i), "content": fmt.Sprint(i)}, "created out/"},
			job{NameReadFile, map[string]any{"path": "a.txt"}, "1\talpha"},
			job{NameListFiles, map[string]any{"pattern": "*.go"}, "src/b.go"},
			job{NameSearchFiles, map[string]any{"pattern": "^package", "glob": "*.go"}, "src/b.go:1: package b"},
			job{NameWebFetch, map[string]any{"url": fmt.Sprintf("%s/%d", srv.URL, i)}, fmt.Sprintf("page /%d", i)},
		)
		if runtime.GOOS != "windows" {
			jobs = append(jobs, job{NameRunCommand, map[string]any{"command": fmt.Sprintf("echo run %d", i)}, fmt.Sprintf("run %d\n", i)})
		}
	}
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			raw, err := json.Marshal(j.args)
			if err != nil {
				t.Error(err)
				return
			}
			got, isErr := e.RunTool(context.Background(), "root", byName[j.name], cadre.ToolCall{ID: fmt.Sprint(i), Name: j.name, Arguments: string(raw)})
			if isErr || !strings.Contains(got, j.want) {
				t.Errorf("%s %s = %q (error %v); want it to contain %q", j.name, raw, got, isErr, j.want)
			}
		})
	}
	wg.Wait()

	b, err := os.ReadFile(filepath.Join(root, "shared.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := range n {
		fmt.Fprintf(&want, "done %d\n", i)
	}
	if string(b) != want.String() {
		t.Errorf("shared.txt after concurrent edits:\n%s\nwant every slot done", b)
	}
	for i := range n {
		if b, err := os.ReadFile(filepath.Join(root, "out", fmt.Sprintf("%d.txt", i))); err != nil || string(b) != fmt.Sprint(i) {
			t.Errorf("out/%d.txt holds %q, %v", i, b, err)
		}
	}
}
