//go:build unix

package cli

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/sqlite"
	"github.com/cadre-ai/cadre/tool"
)

// checkModes fails for each path whose permissions are not the ones
// given; a path marked optional may be missing.
func checkModes(t *testing.T, want map[string]os.FileMode, optional ...string) {
	t.Helper()
	for p, mode := range want {
		fi, err := os.Stat(p)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) || !slices.Contains(optional, p) {
				t.Errorf("%s: %v", p, err)
			}
			continue
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s has mode %v, want %v", p, fi.Mode().Perm(), mode)
		}
	}
}

// TestStoreIsPrivate checks that the default run store, which holds
// transcripts, and the .cadre folder cadre makes for it are readable by
// their owner only.
func TestStoreIsPrivate(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "script.yaml"), "\"*\":\n  - text: hello\n    repeat: true\n")
	res := runCadre(t, dir, home, "run", "--approve", "none", "-m", "scripted:"+filepath.Join(dir, "script.yaml"), "say hello")
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	c := filepath.Join(dir, ".cadre")
	db := filepath.Join(c, "cadre.db")
	checkModes(t, map[string]os.FileMode{
		c: 0o700, db: 0o600, db + "-wal": 0o600, db + "-shm": 0o600, filepath.Join(c, ".gitignore"): 0o600,
	}, db+"-wal", db+"-shm")
}

// TestStoreMadePrivate checks that a store other users can read, as
// earlier versions of cadre left it, is made private when cadre opens it,
// and that CADRE_LOG=debug says so.
func TestStoreMadePrivate(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	db := filepath.Join(dir, ".cadre", "cadre.db")
	s, err := sqlite.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.Chmod(db, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	env := map[string]string{"HOME": home, "CADRE_LOG": "debug"}
	code := Main(context.Background(), []string{"runs", "list"}, IO{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Dir: dir,
		Getenv: func(k string) string { return env[k] },
	})
	if code != 0 {
		t.Fatalf("runs list: exit %d: %s", code, errb.String())
	}
	checkModes(t, map[string]os.FileMode{db: 0o600})
	if !strings.Contains(errb.String(), "made the run store private") || !strings.Contains(errb.String(), "was=-rw-r--r--") {
		t.Errorf("stderr does not say the store was made private:\n%s", errb.String())
	}
	// Without CADRE_LOG, nothing is said.
	if err := os.Chmod(db, 0o644); err != nil {
		t.Fatal(err)
	}
	res := runCadre(t, dir, home, "runs", "list")
	if res.code != 0 || res.stderr != "" {
		t.Errorf("runs list: exit %d, stderr %q", res.code, res.stderr)
	}
	checkModes(t, map[string]os.FileMode{db: 0o600})
}

// TestGeneratedAgentIsPrivate checks the file agent_create writes.
func TestGeneratedAgentIsPrivate(t *testing.T) {
	dir := t.TempDir()
	a := &app{io: IO{Dir: dir, Stderr: io.Discard, Getenv: func(string) string { return "" }}}
	gen := filepath.Join(dir, ".cadre", "agents", "generated")
	create := a.agentCreator(&tool.Approver{Mode: tool.ApproveAll}, dir)
	if _, err := create(t.Context(), "root", &cadre.Definition{Name: "haiku", Description: "Writes haiku.", Prompt: "Write one.", Tools: []string{}}); err != nil {
		t.Fatal(err)
	}
	checkModes(t, map[string]os.FileMode{
		filepath.Join(dir, ".cadre"): 0o700, filepath.Join(dir, ".cadre", "agents"): 0o700, gen: 0o700,
		filepath.Join(gen, "haiku.md"): 0o600,
	})
}

// TestDemoFilesArePrivate checks the .cadre folder of the demo.
func TestDemoFilesArePrivate(t *testing.T) {
	dir := t.TempDir()
	if err := writeDemo(dir); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := filepath.WalkDir(filepath.Join(dir, ".cadre"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		want := os.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		checkModes(t, map[string]os.FileMode{p: want})
		n++
		return nil
	})
	if err != nil || n < 3 {
		t.Fatalf("walked %d entries of the demo's .cadre: %v", n, err)
	}
}

// agent_create saves nothing through a symbolic link on the way to the
// project's generated agents: a repository's .cadre/agents/generated
// linked to the user's ~/.claude/agents had the agent saved among the
// user's own, loaded by every project, while the approval named the
// project's folder.
func TestGeneratedAgentNotThroughALink(t *testing.T) {
	for _, linked := range []string{".cadre/agents/generated", ".cadre/agents", ".cadre"} {
		t.Run(linked, func(t *testing.T) {
			dir, elsewhere := t.TempDir(), t.TempDir()
			p := filepath.Join(dir, filepath.FromSlash(linked))
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, p); err != nil {
				t.Fatal(err)
			}
			a := &app{io: IO{Dir: dir, Stderr: io.Discard, Getenv: func(string) string { return "" }}}
			create := a.agentCreator(&tool.Approver{Mode: tool.ApproveAll}, dir)
			_, err := create(t.Context(), "root", &cadre.Definition{Name: "haiku", Description: "Writes haiku.", Prompt: "Write one.", Tools: []string{}})
			if err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
				t.Fatalf("error %v", err)
			}
			var found []string
			filepath.WalkDir(elsewhere, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					found = append(found, p)
				}
				return nil
			})
			if len(found) > 0 {
				t.Errorf("saved through the link: %v", found)
			}
		})
	}
}

// A project's config, .mcp.json and AGENTS.md are read only as regular
// files: a FIFO in their place hung every command, and a link to
// /dev/zero was read until memory ran out. Each is refused, saying why.
func TestProjectFilesReadAsRegularFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".cadre"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, ".cadre", "config.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		var fc fileConfig
		_, err := readConfigFile(filepath.Join(dir, ".cadre", "config.yaml"), &fc)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "config.yaml is not a regular file but a FIFO") {
			t.Errorf("config.yaml as a FIFO: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("reading a FIFO config waited for a writer")
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, ".mcp.json")); err != nil {
		t.Fatal(err)
	}
	a := &app{io: IO{Dir: dir, Stderr: io.Discard, Getenv: func(string) string { return "" }}}
	if err := a.loadMCPJSON(&projectFiles{dir: dir}); err == nil || !strings.Contains(err.Error(), ".mcp.json is not a regular file but a device") {
		t.Errorf(".mcp.json linked to /dev/zero: %v", err)
	}
}
