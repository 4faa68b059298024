package builtin

import (
	"bytes"
	"encoding/binary"
	"errors"
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
			got, _, err := indexGitlinks(filepath.Join(root, ".git", "index"), 20, 100)
			if want := []string{"deep/vendor/x", "lib"}; !slices.Equal(got, want) || err != nil {
				t.Errorf("gitlinks %v, %v, want %v", got, err, want)
			}
			if got, _, err := indexGitlinks(filepath.Join(root, ".git", "index"), 20, 1); len(got) != 1 || !errors.Is(err, errGitlinks) {
				t.Errorf("gitlinks past a limit of 1: %v, %v", got, err)
			}
		})
	}
	if got, _, err := indexGitlinks(filepath.Join(t.TempDir(), "none"), 20, 100); got != nil || err != nil {
		t.Errorf("a missing index: %v, %v", got, err)
	}
	bad := filepath.Join(t.TempDir(), "index")
	files(t, filepath.Dir(bad), map[string]string{"index": "DIRC\x00\x00\x00\x02\x00\x00\x00\x09short"})
	if got, _, err := indexGitlinks(bad, 20, 100); got != nil || err == nil {
		t.Errorf("a cut index: %v, %v", got, err)
	}
}

// Only settings known to run nothing pass; anything else, and what cadre
// could read otherwise than git, is told.
func TestConfigNotInert(t *testing.T) {
	dir := t.TempDir()
	files(t, dir, map[string]string{
		"cloned": "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n" +
			"[remote \"origin\"]\n\turl = https://example.com/r.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n" +
			"[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n[user]\n\tname = someone\n",
		"config": `[core]
	bare = false
	pager = less -R
[Filter "lfs"]
	Smudge = git-lfs smudge %f
[alias]
	st = status
[remote "origin"] url = ext::sh -c evil
[gpg "ssh"]
	defaultKeyCommand = ./key.sh
[protocol "ext"]
	allow = always
[core]
	worktree = ../../d/e/f/wt
`,
		"bom":       "\xef\xbb\xbf[core]\n\tfsmonitor = ./evil.sh\n",
		"continued": "[core]\n\tfoo = a \\\n[user]\n\tfsmonitor = ./evil.sh\n",
		"long":      "[user]\n\tname = " + strings.Repeat("x", 2<<20) + "\n[core]\n\tfsmonitor = ./evil.sh\n",
	})
	if got := configNotInert(filepath.Join(dir, "cloned")); len(got) != 0 {
		t.Errorf("a cloned repository's configuration: %q", got)
	}
	got := configNotInert(filepath.Join(dir, "config"))
	want := []string{"core.pager = less -R", "filter.lfs.smudge = git-lfs smudge %f", "alias.st = status",
		"remote.origin.url = ext::sh -c evil", "gpg.ssh.defaultkeycommand = ./key.sh", "protocol.ext.allow = always", "core.worktree = ../../d/e/f/wt"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, name := range []string{"bom", "continued"} {
		if got := configNotInert(filepath.Join(dir, name)); len(got) != 1 || !strings.Contains(got[0], "does not read as git does") {
			t.Errorf("%s: %q", name, got)
		}
	}
	// A line longer than a line reader's buffer does not hide what follows.
	if got := configNotInert(filepath.Join(dir, "long")); len(got) != 1 || got[0] != "core.fsmonitor = ./evil.sh" {
		t.Errorf("after a long line: %q", got)
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
	if len(before) != 2 || before[1] != "mine: core.pager = less" || !strings.HasPrefix(before[0], "mine: config (sha256 ") {
		t.Fatalf("before: %q, want mine's pager and the sum of its config", before)
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
	for _, want := range []string{"a/b/c/d/sub: core.fsmonitor = ./evil.sh", "tools/x: hook post-checkout (sha256 "} {
		if !slices.ContainsFunc(got, func(f string) bool { return strings.HasPrefix(f, want) }) {
			t.Errorf("planted %q, want %q among them", got, want)
		}
	}
}

// A command that makes more folders than are looked at is told so, once:
// the same number before and after is not reported again.
func TestPlantedProgramsBounded(t *testing.T) {
	defer func(n int) { maxFolderEntries = n }(maxFolderEntries)
	maxFolderEntries = 10
	root := t.TempDir()
	before := plantedPrograms(root)
	for i := range 12 {
		if err := os.MkdirAll(filepath.Join(root, "d", strings.Repeat("x", i+1)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	after := plantedPrograms(root)
	if got := planted(before, after); len(got) != 1 || !strings.Contains(got[0], "more entries than are looked at") {
		t.Errorf("planted %q, want the folders not all looked at", got)
	}
	if got := planted(after, plantedPrograms(root)); len(got) != 0 {
		t.Errorf("the same workspace again: %q", got)
	}
}

// Layouts by which git finds a nested repository that a reader of .git
// folders alone would miss, each told.
func TestPlantedLayouts(t *testing.T) {
	requireGit(t)
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, root string)
		want  string
		cap   int // entries of a folder looked at, when not the default
	}{
		{"symlinked .git", func(t *testing.T, root string) {
			gitIn(t, root, "init", "-q", "hid/real")
			if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			symlink(t, "../hid/real/.git", filepath.Join(root, "sub/.git"))
		}, "sub: .git is a symbolic link (to ../hid/real/.git)", 0},
		{".git file naming a folder outside", func(t *testing.T, root string) {
			gitIn(t, root, "init", "-q", "--separate-git-dir", filepath.Join(filepath.Dir(root), "elsewhere"), "sub")
		}, "sub: .git names a git folder outside the workspace (ROOT/../elsewhere)", 0},
		{".git file naming a folder inside", func(t *testing.T, root string) {
			if err := os.MkdirAll(filepath.Join(root, "a/b/c"), 0o755); err != nil {
				t.Fatal(err)
			}
			gitIn(t, root, "init", "-q", "--separate-git-dir", filepath.Join(root, "a/b/c/g"), "sub")
			gitIn(t, filepath.Join(root, "sub"), "config", "core.fsmonitor", "./evil.sh")
		}, "sub: core.fsmonitor = ./evil.sh", 0},
		{".git file with a NUL", func(t *testing.T, root string) {
			gitIn(t, root, "init", "-q", "a/b/c/r")
			files(t, root, map[string]string{"sub/.git": "gitdir: ../a/b/c/r/.git\x00/../../../../../.git/modules/x\n"})
		}, `sub: .git is a file cadre does not read as git does ("gitdir: ../a/b/c/r/.git\x00/../../../../../.git/modules/x")`, 0},
		{"split index", func(t *testing.T, root string) {
			gitIn(t, root, "init", "-q", "a/b/c/sub")
			gitIn(t, filepath.Join(root, "a/b/c/sub"), "commit", "-q", "--allow-empty", "-m", "s")
			gitIn(t, filepath.Join(root, "a/b/c/sub"), "config", "core.fsmonitor", "./evil.sh")
			gitIn(t, root, "add", "a")
			gitIn(t, root, "update-index", "--split-index")
		}, "a/b/c/sub: core.fsmonitor = ./evil.sh", 0},
		{"gitlink of a nested repository", func(t *testing.T, root string) {
			gitIn(t, root, "init", "-q", "sub")
			gitIn(t, filepath.Join(root, "sub"), "init", "-q", "a/b/inner")
			gitIn(t, filepath.Join(root, "sub/a/b/inner"), "commit", "-q", "--allow-empty", "-m", "s")
			gitIn(t, filepath.Join(root, "sub/a/b/inner"), "config", "core.fsmonitor", "./evil.sh")
			gitIn(t, filepath.Join(root, "sub"), "add", "a")
			gitIn(t, filepath.Join(root, "sub"), "commit", "-q", "-m", "s")
			gitIn(t, root, "add", "sub")
		}, "sub/a/b/inner: core.fsmonitor = ./evil.sh", 0},
		{"submodule git folder of a nested repository", func(t *testing.T, root string) {
			gitIn(t, root, "init", "-q", "s1")
			gitIn(t, root, "init", "-q", "--bare", "s1/.git/modules/lib")
			files(t, root, map[string]string{"s1/.git/modules/lib/hooks/post-checkout": "#!/bin/sh\n"})
		}, "s1/.git/modules/lib: hook post-checkout (sha256 ", 0},
		{"bare-shaped folder with a commondir", func(t *testing.T, root string) {
			gitIn(t, filepath.Dir(root), "init", "-q", "--bare", "real.git")
			gitIn(t, filepath.Join(filepath.Dir(root), "real.git"), "config", "core.pager", "./evil.sh")
			files(t, root, map[string]string{"tools/HEAD": "ref: refs/heads/main\n", "tools/commondir": "../../real.git\n"})
		}, "tools: a commondir naming a git folder outside the workspace (ROOT/../real.git)", 0},
		{"bare-shaped folder", func(t *testing.T, root string) {
			gitIn(t, root, "init", "-q", "--bare", "src")
		}, "src: a folder git takes for a repository of its own (it has HEAD and no .git)", 0},
		{"past a huge folder", func(t *testing.T, root string) {
			for i := range 8 {
				if err := os.MkdirAll(filepath.Join(root, "aaa", strings.Repeat("x", i+1)), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			gitIn(t, root, "init", "-q", "zzz/sub")
			gitIn(t, filepath.Join(root, "zzz/sub"), "config", "core.pager", "./evil.sh")
		}, "zzz/sub: core.pager = ./evil.sh", 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root, before := plantedWorkspace(t)
			tt.setup(t, root)
			if tt.cap > 0 {
				defer func(n int) { maxFolderEntries = n }(maxFolderEntries)
				maxFolderEntries = tt.cap
			}
			got := planted(before, plantedPrograms(root))
			want := strings.ReplaceAll(tt.want, "ROOT/..", filepath.Dir(root))
			if !slices.ContainsFunc(got, func(f string) bool {
				return f == want || strings.HasSuffix(want, "(sha256 ") && strings.HasPrefix(f, want)
			}) {
				t.Errorf("planted %q, want %q among them", got, want)
			}
		})
	}
}

// An index of version 4 whose paths grow entry by entry is read with no
// path past git's PATH_MAX kept: it is told as one that cannot be read.
func TestIndexGitlinksLongPaths(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("DIRC")
	n := maxGitPath + 10
	_ = binary.Write(&b, binary.BigEndian, [2]uint32{4, uint32(n)})
	entry := make([]byte, 40+20+2)
	binary.BigEndian.PutUint32(entry[24:28], 0o160000)
	for i := range n {
		binary.BigEndian.PutUint16(entry[len(entry)-2:], uint16(min(i+1, 0xfff))) // the path's length, as git writes it
		b.Write(entry)
		b.Write([]byte{0, 'a', 0}) // drop nothing, add one byte
	}
	file := filepath.Join(t.TempDir(), "index")
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, _, err := indexGitlinks(file, 20, n)
	if err == nil || !strings.Contains(err.Error(), "longer than git allows") || len(got) != maxGitPath {
		t.Errorf("%d gitlinks, %v; want %d and the long path told", len(got), err, maxGitPath)
	}
}

// A hook git copied from the user's own template is the user's: not told.
// One the command wrote beside it is.
func TestPlantedTemplateHooks(t *testing.T) {
	requireGit(t)
	tmpl := t.TempDir()
	files(t, tmpl, map[string]string{"hooks/pre-commit": "#!/bin/sh\necho the user's check\n"})
	if err := os.Chmod(filepath.Join(tmpl, "hooks/pre-commit"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_TEMPLATE_DIR", tmpl)
	root, before := plantedWorkspace(t)
	cmd := exec.Command("git", "init", "-q", "sub")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(root, "sub/.git/hooks/pre-commit")); err != nil {
		t.Fatalf("git did not copy the template's hook: %v", err)
	}
	if got := planted(before, plantedPrograms(root)); len(got) != 0 {
		t.Errorf("the template's hook: %q", got)
	}
	files(t, root, map[string]string{"sub/.git/hooks/post-checkout": "#!/bin/sh\n"})
	if got := planted(before, plantedPrograms(root)); len(got) != 1 || !strings.HasPrefix(got[0], "sub: hook post-checkout (sha256 ") {
		t.Errorf("a hook beside it: %q", got)
	}
}

// Gitlinks nested deeper than are followed are told, not passed over.
func TestPlantedTooDeep(t *testing.T) {
	requireGit(t)
	defer func(n int) { maxRepoLevels = n }(maxRepoLevels)
	maxRepoLevels = 1
	root, before := plantedWorkspace(t)
	gitIn(t, root, "init", "-q", "a/s1")
	gitIn(t, filepath.Join(root, "a/s1"), "init", "-q", "x/s2")
	gitIn(t, filepath.Join(root, "a/s1/x/s2"), "commit", "-q", "--allow-empty", "-m", "s")
	gitIn(t, filepath.Join(root, "a/s1"), "add", "x")
	gitIn(t, filepath.Join(root, "a/s1"), "commit", "-q", "-m", "s")
	gitIn(t, root, "add", "a")
	got := planted(before, plantedPrograms(root))
	if !slices.Contains(got, "a/s1: gitlinks nested more than 1 repositories down, which were not looked at") {
		t.Errorf("planted %q, want the deeper gitlinks told", got)
	}
}

// A hook already there that changes is a change.
func TestPlantedChangedHook(t *testing.T) {
	requireGit(t)
	root := t.TempDir()
	gitIn(t, root, "init", "-q", "sub")
	files(t, root, map[string]string{"sub/.git/hooks/post-checkout": "#!/bin/sh\necho the user's\n"})
	before := plantedPrograms(root)
	files(t, root, map[string]string{"sub/.git/hooks/post-checkout": "#!/bin/sh\n./evil.sh\n"})
	if got := planted(before, plantedPrograms(root)); len(got) != 1 || !strings.HasPrefix(got[0], "sub: hook post-checkout (sha256 ") {
		t.Errorf("planted %q, want the changed hook", got)
	}
}

// An entry's path is as long as its flags say, as git reads it, not as
// far as the next NUL: a byte of padding that is not a NUL hides nothing.
func TestIndexGitlinksByFlags(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("DIRC")
	_ = binary.Write(&b, binary.BigEndian, [2]uint32{2, 2})
	entry := func(mode uint32, name, pad string) {
		e := make([]byte, 40+20+2)
		binary.BigEndian.PutUint32(e[24:28], mode)
		binary.BigEndian.PutUint16(e[len(e)-2:], uint16(len(name)))
		b.Write(e)
		b.WriteString(name + pad)
	}
	entry(0o100644, "a", "Z")            // 62 + 1 + 1 = 64: the padding git skips, not a NUL
	entry(0o160000, "sub/x", "\x00\x00") // 62 + 5 + 1 = 68, padded to 72
	b.Write(make([]byte, 20))            // the index's sum
	file := filepath.Join(t.TempDir(), "index")
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, _, err := indexGitlinks(file, 20, 10)
	if err != nil || !slices.Equal(got, []string{"sub/x"}) {
		t.Errorf("gitlinks %q, %v; want sub/x", got, err)
	}
}

// Layouts a third review found: a repository deep in the workspace and
// in no index (a commit the command made can hold a gitlink to it, which
// git checkout brings in), and a .git file whose path goes through a link
// before a "..".
func TestPlantedDeepAndLinked(t *testing.T) {
	requireGit(t)
	root, before := plantedWorkspace(t)
	gitIn(t, root, "init", "-q", "a/b/c/d/e/sub")
	gitIn(t, filepath.Join(root, "a/b/c/d/e/sub"), "config", "core.fsmonitor", "./evil.sh")
	outside := filepath.Join(t.TempDir(), "deep")
	gitIn(t, filepath.Dir(outside), "init", "-q", "--bare", "deep/x/g")
	if err := os.MkdirAll(filepath.Join(root, "sub2"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Join(outside, "x", "y"), filepath.Join(root, "sub2/link"))
	if err := os.MkdirAll(filepath.Join(outside, "x", "y"), 0o755); err != nil {
		t.Fatal(err)
	}
	files(t, root, map[string]string{"sub2/.git": "gitdir: link/../g\n"})
	got := planted(before, plantedPrograms(root))
	real, err := filepath.EvalSymlinks(filepath.Join(outside, "x", "g"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"a/b/c/d/e/sub: core.fsmonitor = ./evil.sh", "sub2: .git names a git folder outside the workspace (" + real + ")"} {
		if !slices.Contains(got, want) {
			t.Errorf("planted %q, want %q among them", got, want)
		}
	}
}

// Ordinary work passes: a clone with its submodules, and a worktree of a
// nested repository.
func TestPlantedOrdinaryWork(t *testing.T) {
	requireGit(t)
	src := t.TempDir()
	gitIn(t, src, "init", "-q", "lib")
	gitIn(t, filepath.Join(src, "lib"), "commit", "-q", "--allow-empty", "-m", "lib")
	gitIn(t, src, "init", "-q", "app")
	gitIn(t, filepath.Join(src, "app"), "-c", "protocol.file.allow=always", "submodule", "add", "-q", filepath.Join(src, "lib"), "lib")
	gitIn(t, filepath.Join(src, "app"), "commit", "-q", "-m", "app")
	root, before := plantedWorkspace(t)
	gitIn(t, root, "-c", "protocol.file.allow=always", "clone", "-q", "--recurse-submodules", filepath.Join(src, "app"), "app")
	gitIn(t, filepath.Join(root, "app"), "worktree", "add", "-q", "../wt")
	if got := planted(before, plantedPrograms(root)); len(got) != 0 {
		t.Errorf("a clone with submodules and a worktree: %q", got)
	}
}

// A git folder met first as a nested repository's submodule folder has its
// index read when it is met again as the submodule's checkout: the
// gitlinks in it are followed (a fourth review reached a repository past
// the walk this way).
func TestPlantedSubmoduleIndex(t *testing.T) {
	requireGit(t)
	defer func(n int) { nestedDepth = n }(nestedDepth)
	nestedDepth = 1 // the deep repository is reached through indexes alone
	src := t.TempDir()
	gitIn(t, src, "init", "-q", "lib")
	gitIn(t, filepath.Join(src, "lib"), "commit", "-q", "--allow-empty", "-m", "lib")
	root, before := plantedWorkspace(t)
	gitIn(t, root, "init", "-q", "a")
	gitIn(t, filepath.Join(root, "a"), "commit", "-q", "--allow-empty", "-m", "a")
	gitIn(t, filepath.Join(root, "a"), "-c", "protocol.file.allow=always", "submodule", "add", "-q", filepath.Join(src, "lib"), "m")
	deep := "p/q/r/s/x"
	gitIn(t, filepath.Join(root, "a/m"), "init", "-q", deep)
	gitIn(t, filepath.Join(root, "a/m", deep), "commit", "-q", "--allow-empty", "-m", "x")
	gitIn(t, filepath.Join(root, "a/m", deep), "config", "core.fsmonitor", "./evil.sh")
	gitIn(t, filepath.Join(root, "a/m"), "add", "p")
	got := planted(before, plantedPrograms(root))
	if want := "a/m/" + deep + ": core.fsmonitor = ./evil.sh"; !slices.Contains(got, want) {
		t.Errorf("planted %q, want %q among them", got, want)
	}
}

// Exec lines of a rebase left in progress in the workspace's own git
// folder are told: git runs them at git rebase --continue.
func TestPlantedRebaseExec(t *testing.T) {
	requireGit(t)
	root, before := plantedWorkspace(t)
	files(t, root, map[string]string{".git/rebase-merge/git-rebase-todo": "pick 0123456 first\nexec ./evil.sh\n"})
	got := planted(before, plantedPrograms(root))
	if len(got) != 1 || !strings.HasPrefix(got[0], ".: .git/rebase-merge/git-rebase-todo runs a command when the rebase goes on (exec ./evil.sh)") {
		t.Errorf("planted %q, want the exec line told", got)
	}
}

// plantedWorkspace makes a workspace that is a git repository and returns
// it with its stock of nested repositories before anything is planted.
func plantedWorkspace(t *testing.T) (root string, before []string) {
	t.Helper()
	requireGit(t)
	root = t.TempDir()
	gitIn(t, root, "init", "-q", ".")
	return root, plantedPrograms(root)
}

// Past the bytes one stock-taking reads, a hook or configuration is told
// as not read rather than read whole.
func TestPlantedReadBudget(t *testing.T) {
	defer func(n int64) { maxReadBytes = n }(maxReadBytes)
	maxReadBytes = 100
	root, before := plantedWorkspace(t)
	gitIn(t, root, "init", "-q", "sub")
	files(t, root, map[string]string{"sub/.git/hooks/post-checkout": strings.Repeat("x", 200)})
	got := planted(before, plantedPrograms(root))
	want := "past the 100 bytes of configurations and hooks read in one stock-taking"
	if !slices.ContainsFunc(got, func(f string) bool { return strings.Contains(f, want) }) {
		t.Errorf("planted %q, want something not read past the budget", got)
	}
}

// Agent folders and MCP server lists in subfolders (pkg/.claude,
// pkg/.mcp.json), which cadre run in that subfolder loads, are told when a
// command makes or changes one, as planted repositories are: the sandbox
// keeps only the root's read-only. Those that were there before, unchanged,
// and the root's own, are not told.
func TestPlantedAgentFolders(t *testing.T) {
	root := t.TempDir()
	files(t, root, map[string]string{
		".claude/agents/a.md":         "root agent",
		"sub/.claude/agents/a.md":     "---\nname: a\ntools: Read\n---\n",
		"sub/.opencode/agent/b.md":    "b",
		"docs/claude/notes.md":        "not a control folder",
		"vendor/x/.cadre/config.yaml": "model: openai:x\n",
	})
	before := plantedPrograms(root)
	if got := planted(before, plantedPrograms(root)); len(got) != 0 {
		t.Fatalf("nothing changed, yet told: %v", got)
	}
	files(t, root, map[string]string{
		".claude/agents/b.md":              "the root's: kept read-only by the sandbox",
		"sub/.claude/agents/a.md":          "---\nname: a\n---\n", // its tools taken out: every tool
		"pkg/web/.claude/agents/helper.md": "---\nname: helper\n---\n",
		"pkg/.mcp.json":                    `{"mcpServers":{"x":{"command":"sh"}}}`,
		"docs/claude/notes.md":             "changed, but not a control folder",
	})
	got := planted(before, plantedPrograms(root))
	var told []string
	for _, g := range got {
		dir, _, _ := strings.Cut(g, ": ")
		told = append(told, dir)
	}
	slices.Sort(told)
	if want := []string{"pkg", "pkg/web", "sub"}; !slices.Equal(told, want) {
		t.Fatalf("told of %v, want %v:\n%s", told, want, strings.Join(got, "\n"))
	}
	for _, g := range got {
		if !strings.Contains(g, "load when run in this folder") && !strings.Contains(g, "MCP servers cadre starts") {
			t.Errorf("finding %q does not say what the folder is", g)
		}
	}
}
