package builtin

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitIn runs git in dir with a configuration of the test's own.
func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
}

func requireGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

// The gitlinks of an index are read in each of its versions, past entries
// of other kinds and long paths.
func TestIndexGitlinks(t *testing.T) {
	requireGit(t)
	for _, version := range []string{"2", "3", "4"} {
		t.Run("v"+version, func(t *testing.T) {
			root := t.TempDir()
			gitIn(t, root, "init", "-q", ".")
			files(t, root, map[string]string{"a.txt": "a", "deep/" + strings.Repeat("long-name/", 12) + "f.txt": "f", "z.txt": "z"})
			for _, sub := range []string{"lib", "deep/vendor/x"} {
				gitIn(t, root, "init", "-q", sub)
				gitIn(t, filepath.Join(root, sub), "commit", "-q", "--allow-empty", "-m", "s")
			}
			gitIn(t, root, "add", "a.txt", "deep", "z.txt", "lib")
			gitIn(t, root, "update-index", "--index-version", version)
			if version == "3" {
				gitIn(t, root, "update-index", "--skip-worktree", "z.txt") // an extended flag
			}
			got := indexGitlinks(filepath.Join(root, ".git", "index"), 20)
			if want := []string{"deep/vendor/x", "lib"}; !slices.Equal(got, want) {
				t.Errorf("gitlinks %v, want %v", got, want)
			}
		})
	}
	if got := indexGitlinks(filepath.Join(t.TempDir(), "none"), 20); got != nil {
		t.Errorf("a missing index: %v", got)
	}
	bad := filepath.Join(t.TempDir(), "index")
	files(t, filepath.Dir(bad), map[string]string{"index": "DIRC\x00\x00\x00\x02\x00\x00\x00\x09short"})
	if got := indexGitlinks(bad, 20); got != nil {
		t.Errorf("a cut index: %v", got)
	}
}

// What makes git run a program is told apart from what does not.
func TestConfigPrograms(t *testing.T) {
	dir := t.TempDir()
	files(t, dir, map[string]string{"config": `[core]
	bare = false
	fsmonitor = true
	pager = less -R
[core "x"]
	fsmonitor = ./evil.sh
[Filter "lfs"]
	Smudge = git-lfs smudge %f
[alias]
	st = status
	boom = !sh -c evil
[remote "origin"] url = https://example.com/r.git
[diff "png"]
	textconv = ./conv.sh
[user]
	name = someone
`})
	// A line longer than a line reader's buffer does not hide what follows.
	files(t, dir, map[string]string{"long": "[user]\n\tname = " + strings.Repeat("x", 2<<20) + "\n[core]\n\tfsmonitor = ./evil.sh\n"})
	if got := configPrograms(filepath.Join(dir, "long")); !slices.Equal(got, []string{"core.fsmonitor = ./evil.sh"}) {
		t.Errorf("after a long line: %q", got)
	}
	got := configPrograms(filepath.Join(dir, "config"))
	want := []string{"core.pager = less -R", "filter.lfs.smudge = git-lfs smudge %f", "alias.boom = !sh -c evil", "diff.png.textconv = ./conv.sh"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A repository made or changed in a subfolder, or held by the index, is
// found with what it runs; one that runs nothing, or that ran the same
// before, is not reported.
func TestPlantedPrograms(t *testing.T) {
	requireGit(t)
	root := t.TempDir()
	gitIn(t, root, "init", "-q", ".")
	gitIn(t, root, "init", "-q", "mine") // the user's, with a pager of theirs
	gitIn(t, filepath.Join(root, "mine"), "config", "core.pager", "less")
	gitIn(t, root, "init", "-q", "plain")
	before := plantedPrograms(root)
	if want := []string{"mine: core.pager = less"}; !slices.Equal(before, want) {
		t.Fatalf("before: %q, want %q", before, want)
	}

	deep := "a/b/c/d/sub" // below the depth searched, but in the index
	gitIn(t, root, "init", "-q", deep)
	gitIn(t, filepath.Join(root, deep), "commit", "-q", "--allow-empty", "-m", "s")
	gitIn(t, filepath.Join(root, deep), "config", "core.fsmonitor", "./evil.sh")
	gitIn(t, root, "add", deep)
	gitIn(t, root, "init", "-q", "tools/x")
	files(t, root, map[string]string{"tools/x/.git/hooks/post-checkout": "#!/bin/sh\n"})
	if err := os.Chmod(filepath.Join(root, "tools/x/.git/hooks/post-checkout"), 0o755); err != nil {
		t.Fatal(err)
	}
	got := planted(before, plantedPrograms(root))
	want := []string{"a/b/c/d/sub: core.fsmonitor = ./evil.sh", "tools/x: hook post-checkout"}
	if !slices.Equal(got, want) {
		t.Errorf("planted %q, want %q", got, want)
	}
}

// A command that makes more folders than are looked at is told so, once:
// the same number before and after is not reported again.
func TestPlantedProgramsBounded(t *testing.T) {
	defer func(n int) { maxNestedEntries = n }(maxNestedEntries)
	maxNestedEntries = 10
	root := t.TempDir()
	before := plantedPrograms(root)
	for i := range 12 {
		if err := os.MkdirAll(filepath.Join(root, "d", strings.Repeat("x", i+1)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	after := plantedPrograms(root)
	if got := planted(before, after); len(got) != 1 || !strings.Contains(got[0], "more than 10 files and folders") {
		t.Errorf("planted %q, want the folders not all looked at", got)
	}
	if got := planted(after, plantedPrograms(root)); len(got) != 0 {
		t.Errorf("the same workspace again: %q", got)
	}
}
