package builtin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProtectedPaths(t *testing.T) {
	ws, root, _ := newWorkspace(t)
	files(t, root, map[string]string{
		".git/config":                     "[core]\n\thooksPath = .githooks\n",
		".git/HEAD":                       "ref: refs/heads/main\n",
		".git/description":                "old\n",
		".git/hooks/pre-commit.sample":    "#!/bin/sh\n",
		".git/modules/m/config":           "[core]\n",
		".git/modules/a/b/hooks/x.sample": "#!/bin/sh\n",
		".git/worktrees/w/gitdir":         "/somewhere/.git\n",
		".githooks/pre-push":              "#!/bin/sh\n",
		".cadre/config.yaml":              "sandbox: auto\n",
		".mcp.json":                       "{}\n",
		"sub/.git":                        "gitdir: ../.git/modules/m\n",
		"src/main.go":                     "package main\n",
		"src/git/config":                  "old\n",
	})
	symlink(t, ".git/hooks", filepath.Join(root, "hooks-link"))
	symlink(t, ".git/config", filepath.Join(root, "config-link"))
	tools := New(ws, Options{})
	write, edit, read := tools[3], tools[4], tools[0]

	refused := []string{
		".git/config",
		".git/config.worktree",
		".git/commondir",
		".git/hooks/pre-commit",
		".git/hooks/pre-commit.sample",
		".git/info/attributes",
		".git/modules/m/config",
		".git/modules/a/b/hooks/post-checkout",
		".git/worktrees/w/gitdir",
		".git/worktrees/w/commondir",
		".git",
		"sub/.git",
		"other/.git/config",
		"vendor/x/.git/hooks/pre-commit",
		".cadre/config.yaml",
		".cadre/procs/1234.json",
		".cadre",
		".mcp.json",
		".GIT/CONFIG",
		".githooks/pre-commit",
		"hooks-link/pre-commit",
		"config-link",
		"src/../.git/config",
		"sub/.claude/agents/summarizer.md",
		"sub/.cadre/config.yaml",
		"pkg/web/.mcp.json",
		"pkg/.opencode/agent/x.md",
	}
	for _, p := range refused {
		t.Run("write "+p, func(t *testing.T) {
			before, beforeErr := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
			_, err := call(t, write, map[string]any{"path": p, "content": "[core]\n\tfsmonitor = touch /tmp/pwned\n"})
			var pe *ProtectedError
			if !errors.As(err, &pe) {
				t.Fatalf("write_file %s = %v, want a *ProtectedError", p, err)
			}
			if !strings.Contains(err.Error(), "the user can make it themselves") || !strings.HasPrefix(err.Error(), "write_file: ") {
				t.Errorf("the refusal does not say what to do: %v", err)
			}
			after, afterErr := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
			if string(after) != string(before) || (beforeErr == nil) != (afterErr == nil) {
				t.Errorf("%s changed: %q, %v → %q, %v", p, before, beforeErr, after, afterErr)
			}
		})
	}
	for _, p := range []string{".git/config", ".cadre/config.yaml", ".mcp.json", "sub/.git", "config-link", ".githooks/pre-push"} {
		t.Run("edit "+p, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
			if err != nil {
				t.Fatal(err)
			}
			old, _, _ := strings.Cut(string(b), "\n")
			_, err = call(t, edit, map[string]any{"path": p, "old_string": old, "new_string": "changed"})
			var pe *ProtectedError
			if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "edit_file: ") {
				t.Fatalf("edit_file %s = %v, want a *ProtectedError", p, err)
			}
			if after, _ := os.ReadFile(filepath.Join(root, filepath.FromSlash(p))); string(after) != string(b) {
				t.Errorf("%s changed: %q", p, after)
			}
		})
	}
	// The refusal names the path as resolved.
	_, err := call(t, write, map[string]any{"path": "hooks-link/pre-commit", "content": "x"})
	if err == nil || !strings.Contains(err.Error(), "write_file: .git/hooks/pre-commit is not changed by the file tools: it is git's hooks") {
		t.Errorf("refusal through a link = %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "vendor")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused write made the folders of its path: %v", err)
	}

	// Reading stays allowed, and so do paths that only look alike.
	if got, err := call(t, read, map[string]any{"path": ".git/config"}); err != nil || !strings.Contains(got, "hooksPath") {
		t.Errorf("read_file .git/config = %q, %v", got, err)
	}
	for _, p := range []string{".git/description", ".gitignore", "src/git/config", ".cadrex", "src/mcp.json", "src/.cadre2/x", "sub/.git2", "hooks.txt"} {
		if _, err := call(t, write, map[string]any{"path": p, "content": "new\n"}); err != nil {
			t.Errorf("write_file %s: %v", p, err)
		}
	}
	if _, err := call(t, edit, map[string]any{"path": "src/main.go", "old_string": "main", "new_string": "app"}); err != nil {
		t.Errorf("edit_file src/main.go: %v", err)
	}
}

func TestProtectedPatterns(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{".cadre", true},
		{".cadre/agents/generated/a.md", true},
		{".mcp.json", true},
		{".git", true},
		{"a/b/.git", true},
		{".git/config", true},
		{".git/HEAD", false},
		{".git/objects/ab/cdef", false},
		{".git/refs/heads/main", false},
		{".git/hooks", true},
		{".git/hooks/pre-commit", true},
		{".git/info/exclude", true},
		{".git/modules/a/b/c/config", true},
		{".git/modules/a/info/sparse-checkout", true},
		{".git/modules/a/HEAD", true},
		{".claude/agents/x.md", true},
		{".opencode/agent/x.md", true},
		{"docs/.claude/x.md", true}, // loaded by cadre run in docs
		{".git/worktrees/w/config.worktree", true},
		{".git/worktrees/w/HEAD", false},
		{"x/.cadre/config.yaml", true},
		{"x/.mcp.json", true},
		{"a/b/.opencode/agent/x.md", true},
		{"x/claude/agents/x.md", false},
		{"x/.cadrex/config.yaml", false},
		{".Cadre/Config.yaml", true},
	}
	for _, tt := range tests {
		if _, got := isProtected(tt.path); got != tt.want {
			t.Errorf("isProtected(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

// TestProtectedGitFolderElsewhere checks a workspace whose .git is a file
// naming a git folder inside the workspace, as a linked worktree's or a
// submodule's does: that folder's configuration and hooks are protected,
// and so is its common folder's.
func TestProtectedGitFolderElsewhere(t *testing.T) {
	ws, root, _ := newWorkspace(t)
	files(t, root, map[string]string{
		".git":                       "gitdir: repo/worktrees/w\n",
		"repo/worktrees/w/HEAD":      "ref: refs/heads/w\n",
		"repo/worktrees/w/commondir": "../..\n",
		"repo/config":                "[core]\n\thooksPath = tools/hooks\n",
		"repo/HEAD":                  "ref: refs/heads/main\n",
	})
	write := NewWriteFile(ws, Options{})
	for _, p := range []string{"repo/worktrees/w/config.worktree", "repo/worktrees/w/commondir", "repo/config",
		"repo/hooks/pre-commit", "repo/info/attributes", "tools/hooks/pre-commit", "Tools/Hooks/x", "REPO/Config",
		"repo/modules/m/config"} {
		_, err := call(t, write, map[string]any{"path": p, "content": "x\n"})
		var pe *ProtectedError
		if !errors.As(err, &pe) {
			t.Errorf("write_file %s = %v, want a *ProtectedError", p, err)
		}
	}
	for _, p := range []string{"repo/HEAD", "repo/worktrees/w/HEAD", "repo/objects/ab/cd", "tools/build.sh", "src/config"} {
		if _, err := call(t, write, map[string]any{"path": p, "content": "x\n"}); err != nil {
			t.Errorf("write_file %s: %v", p, err)
		}
	}
}
