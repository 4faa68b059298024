package builtin

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cadre-ai/cadre/tool"
)

// TestSandboxNestedRepository: a command that leaves a repository of its
// own in the workspace whose configuration or hooks run a program (which
// git on the host would run at the next git status once it is in the
// index, or an editor looking into subfolders) fails, naming it; one that
// makes a plain repository, or leaves the user's own as it was, does not.
func TestSandboxNestedRepository(t *testing.T) {
	sb := requireSandbox(t)
	requireGit(t)
	env := append(os.Environ(), "HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
	for _, tt := range []struct {
		name, command string
		refused       string // a part of the failure, "" when the call must succeed
	}{
		{"in the index", "git init -q sub && git -C sub commit -q --allow-empty -m s && " +
			"git -C sub config core.fsmonitor \"$PWD/evil.sh\" && git add sub", "sub: core.fsmonitor = "},
		{"deep in the index", "git init -q a/b/c/sub && git -C a/b/c/sub commit -q --allow-empty -m s && " +
			"git -C a/b/c/sub config filter.x.clean ./evil.sh && git add a", "a/b/c/sub: filter.x.clean = ./evil.sh"},
		{"hook in a subfolder", "git init -q tools/x && printf '#!/bin/sh\\n' > tools/x/.git/hooks/post-checkout && " +
			"chmod +x tools/x/.git/hooks/post-checkout", "tools/x: hook post-checkout"},
		{"agent in a subfolder", "mkdir -p pkg/.claude/agents && printf -- '---\\nname: helper\\n---\\nYou help.\\n' > pkg/.claude/agents/helper.md",
			"pkg: .claude, the agents, skills and settings cadre and other agent tools load when run in this folder"},
		{"MCP servers in a subfolder", "mkdir -p pkg && echo '{}' > pkg/.mcp.json", "pkg: .mcp.json, the MCP servers cadre starts"},
		{"plain repository", "git init -q sub && git -C sub commit -q --allow-empty -m s && git add sub", ""},
		{"the user's own", "git -C mine log -1 --format=%s && echo done", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := filepath.Join(persistentBase(t), "ws")
			if err := os.MkdirAll(root, 0o755); err != nil {
				t.Fatal(err)
			}
			gitIn(t, root, "init", "-q", ".")
			gitIn(t, root, "init", "-q", "mine")
			gitIn(t, filepath.Join(root, "mine"), "commit", "-q", "--allow-empty", "-m", "mine")
			gitIn(t, filepath.Join(root, "mine"), "config", "core.pager", "less")
			ws, err := tool.NewWorkspace(root)
			if err != nil {
				t.Fatal(err)
			}
			rc := NewRunCommand(ws, Options{Sandbox: sb, Env: env})
			out, err := call(t, rc, map[string]any{"command": tt.command})
			if tt.refused == "" {
				if err != nil || exitCodeOf(out) != 0 {
					t.Fatalf("got %q, %v; want the command to succeed", out, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.refused) || !strings.Contains(err.Error(), "outside any sandbox") {
				t.Errorf("got %q, %v; want the call failed naming %q", out, err, tt.refused)
			}
			// It is told again after the next command, until it is gone.
			if _, err := call(t, rc, map[string]any{"command": "true"}); err == nil || !strings.Contains(err.Error(), tt.refused) {
				t.Errorf("the next command: %v; want it told again", err)
			}
		})
	}
}

// A FIFO where git keeps a configuration or the index is not read (the
// read would wait for a writer for ever): the configuration counts as one
// that cannot be said to run nothing, the index as holding no gitlinks.
func TestPlantedFIFO(t *testing.T) {
	requireGit(t)
	root := t.TempDir()
	gitIn(t, root, "init", "-q", "sub")
	for _, p := range []string{"sub/.git/config", "sub/.git/index"} {
		path := filepath.Join(root, p)
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Skipf("no FIFOs here: %v", err)
		}
	}
	done := make(chan []string)
	go func() { done <- plantedPrograms(root) }()
	var got []string
	select {
	case got = <-done:
	case <-time.After(10 * time.Second): // a hang, not a timing
		t.Fatal("reading the nested repository blocked on a FIFO")
	}
	want := []string{"sub: a configuration that cannot be read (" + filepath.Join(root, "sub/.git/config") + " is not a regular file but a FIFO, which is not read)",
		"sub: an index that cannot be read (not a regular file)"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
