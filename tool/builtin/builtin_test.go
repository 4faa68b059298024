package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/tool"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// newWorkspace makes an empty workspace root in a temporary directory and
// an "outside" directory beside it.
func newWorkspace(t testing.TB) (ws tool.Workspace, root, outside string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, outside = filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ws, err = tool.NewWorkspace(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws, root, outside
}

// files writes files (path -> content) under dir.
func files(t testing.TB, dir string, fs map[string]string) {
	t.Helper()
	for p, c := range fs {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func symlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symbolic links unavailable: %v", err)
	}
}

// call runs a tool with args marshalled to JSON.
func call(t testing.TB, tl cadre.Tool, args any) (string, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tl.Call(context.Background(), raw)
}

// checkResult compares a call's outcome with want (exact) or wantErr (a
// substring of the error).
func checkResult(t *testing.T, got string, err error, want, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil {
			t.Fatalf("got %q, want an error containing %q", got, wantErr)
		}
		if !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %q does not contain %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

func TestNew(t *testing.T) {
	ws, _, _ := newWorkspace(t)
	tools := New(ws, Options{})
	var names, mutating []string
	for _, tl := range tools {
		names = append(names, tl.Spec().Name)
		if cadre.Mutates(tl) {
			mutating = append(mutating, tl.Spec().Name)
		}
	}
	if diff := cmp.Diff([]string{NameReadFile, NameListFiles, NameSearchFiles, NameWriteFile, NameEditFile, NameRunCommand, NameWebFetch, NameWebSearch, "todo_write", "todo_read"}, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{NameWriteFile, NameEditFile, NameRunCommand}, mutating); diff != "" {
		t.Errorf("mutating tools (-want +got):\n%s", diff)
	}
	if _, err := tool.NewRegistry(tools...); err != nil {
		t.Errorf("the tools do not fit in one registry: %v", err)
	}
}

// TestSpecs keeps what models are told about the tools in a golden file.
// Run with -update after changing a description or schema.
func TestSpecs(t *testing.T) {
	ws, _, _ := newWorkspace(t)
	var specs []cadre.ToolSpec
	for _, tl := range New(ws, Options{}) {
		s := tl.Spec()
		if err := tool.Validate(s.Parameters, json.RawMessage(`{}`)); errors.Is(err, tool.ErrInvalidSchema) {
			t.Errorf("%s: %v", s.Name, err)
		}
		var compact map[string]any
		if err := json.Unmarshal(s.Parameters, &compact); err != nil {
			t.Fatalf("%s: parameters: %v", s.Name, err)
		}
		specs = append(specs, s)
	}
	got, err := json.MarshalIndent(specs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "specs.golden.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("specs differ from %s (-want +got); run go test -update if the change is meant:\n%s", golden, diff)
	}
}

func TestOptionsDefaults(t *testing.T) {
	got := Options{CommandTimeout: 2 * DefaultMaxCommandTimeout}.withDefaults()
	if got.CommandTimeout != DefaultMaxCommandTimeout {
		t.Errorf("CommandTimeout above the maximum: got %s", got.CommandTimeout)
	}
	if got.ReadLimit != DefaultReadLimit || got.MaxCommandOutput != DefaultMaxCommandOutput || got.MaxFetchBytes != DefaultMaxFetchBytes || got.Shell != DefaultShell {
		t.Errorf("defaults not applied: %+v", got)
	}
}
