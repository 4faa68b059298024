package builtin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cadre-ai/cadre/tool"
)

// A protectedPath is a file or folder of a workspace through which what is
// written takes effect outside the confinement of the tools and of the
// command sandbox: cadre's own configuration, and git's configuration and
// hooks, which git acts on (core.fsmonitor, a hook) when the user next runs
// it.
type protectedPath struct {
	// pattern is a glob (see glob) of slash-separated paths relative to
	// the workspace root, in lower case, matched from the root even when
	// it has no slash. A pattern ending in "/**" covers the folder and
	// everything in it.
	pattern string
	// what says what it is, and why changing it reaches outside.
	what string
}

// protectedPaths are the control paths of a workspace. A .git at any depth
// counts: git status in the root also runs in the submodules below it, and
// a .git file names the folder git takes a repository's configuration
// from.
var protectedPaths = []protectedPath{
	{".cadre/**", "cadre's configuration, agents and run store, which cadre reads outside any sandbox (config.yaml can turn the sandbox off; procs/ tells cadre which processes to kill)"},
	{".mcp.json", "the list of MCP servers cadre starts, outside any sandbox"},
	{".claude/**", "agents, skills, plugins and settings other tools (and cadre's agent loading) read from the project, outside any sandbox"},
	{".opencode/**", "agents and settings OpenCode (and cadre's agent loading) reads from the project, outside any sandbox"},
	{"**/.git", "a .git file names the folder git takes the repository's configuration and hooks from"},
	{"**/.git/{config,config.worktree,commondir}", "git's configuration of the repository, which can make git run programs (core.fsmonitor, core.hooksPath) when it next runs"},
	{"**/.git/{hooks,info}/**", "git's hooks and repository settings: git runs hooks as programs, outside any sandbox"},
	{"**/.git/modules", "the git folders of submodules, whose configuration and hooks git acts on when it next runs"},
	{"**/.git/modules/**", "the git folders of submodules, whose configuration and hooks git acts on when it next runs"},
	{"**/.git/worktrees/*/{config.worktree,commondir,gitdir}", "git's configuration of a linked worktree, which can make git run programs when it next runs"},
}

// protectedGlobs are protectedPaths compiled, once.
var protectedGlobs = sync.OnceValue(func() []*glob {
	gs := make([]*glob, len(protectedPaths))
	for i, p := range protectedPaths {
		g, err := compileGlob(p.pattern)
		if err != nil {
			panic(fmt.Sprintf("protected path %q: %v", p.pattern, err))
		}
		g.baseOnly = false // from the root, even without a slash
		gs[i] = g
	}
	return gs
})

// isProtected reports whether rel, a path relative to the workspace root
// with its symbolic links resolved, as Workspace.Local returns it, is or
// lies in one of protectedPaths, and if so what that is. Case is ignored:
// on a file system that ignores it, .GIT/Config is .git/config.
func isProtected(rel string) (what string, ok bool) {
	lower := strings.ToLower(rel)
	for i, g := range protectedGlobs() {
		if g.match(lower) {
			return protectedPaths[i].what, true
		}
	}
	return "", false
}

// protectedIn reports whether rel, resolved as for isProtected, is a
// control path of ws: one of protectedPaths; in the git folders a .git
// file at the root of ws names, when they lie in ws, the same files as in
// a .git folder; or in a hooks folder the repository's core.hooksPath
// names.
func protectedIn(ws tool.Workspace, rel string) (what string, ok bool) {
	if what, ok := isProtected(rel); ok {
		return what, true
	}
	repo := repoControl(ws)
	lower := strings.ToLower(rel)
	for _, g := range repo.gitDirs {
		if inGitDir(lower, strings.ToLower(g)) {
			return "git's configuration or hooks, in the folder the .git file names, which can make git run programs when it next runs", true
		}
	}
	for _, hp := range repo.hooks {
		if hp = strings.ToLower(hp); hp == "." || lower == hp || strings.HasPrefix(lower, hp+"/") {
			return "in the folder of git hooks that core.hooksPath names: git runs hooks as programs, outside any sandbox", true
		}
	}
	return "", false
}

// inGitDir reports whether rel is one of the control files of the git
// folder g, both relative to the workspace root.
func inGitDir(rel, g string) bool {
	r := rel
	if g != "." {
		var ok bool
		if r, ok = strings.CutPrefix(rel, g+"/"); !ok {
			return false
		}
	}
	switch r {
	case "config", "config.worktree", "commondir", "gitdir", "hooks", "info":
		return true
	}
	return strings.HasPrefix(r, "hooks/") || strings.HasPrefix(r, "info/")
}

// repoPaths are the control paths of the repository at a workspace's
// root that depend on its configuration, relative to the root and
// resolved; those outside the workspace are left out, as the file tools
// cannot reach them.
type repoPaths struct {
	gitDirs []string // the folders a .git file names: the worktree's, and the common one
	hooks   []string // the folders core.hooksPath names
}

// repoControl reads the repository's configuration in .git, or where a
// .git file says (a linked worktree, a submodule), for its control paths.
func repoControl(ws tool.Workspace) repoPaths {
	var out repoPaths
	root, err := ws.Dir()
	if err != nil {
		return out
	}
	dotgit := filepath.Join(root, ".git")
	fi, err := os.Lstat(dotgit)
	if err != nil {
		return out
	}
	inside := func(p string) (string, bool) {
		rel, err := ws.Local(p)
		return rel, err == nil
	}
	var configs []string
	switch {
	case fi.IsDir():
		configs = append(configs, filepath.Join(dotgit, "config"), filepath.Join(dotgit, "config.worktree"))
	case fi.Mode().IsRegular():
		dir := readGitFile(dotgit, "gitdir:")
		if dir == "" {
			return out
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(root, dir)
		}
		common := dir
		if c := readGitFile(filepath.Join(dir, "commondir"), ""); c != "" {
			common = c
			if !filepath.IsAbs(c) {
				common = filepath.Join(dir, c)
			}
		}
		for _, d := range []string{dir, common} {
			if rel, ok := inside(d); ok {
				out.gitDirs = append(out.gitDirs, rel)
			}
		}
		configs = append(configs, filepath.Join(common, "config"), filepath.Join(dir, "config.worktree"))
	}
	for _, c := range configs {
		hp := gitConfigValue(c, "core", "hookspath")
		if hp == "" {
			continue
		}
		if strings.HasPrefix(hp, "~/") {
			home, err := os.UserHomeDir()
			if err != nil {
				continue
			}
			hp = filepath.Join(home, hp[2:])
		}
		if !filepath.IsAbs(hp) {
			hp = filepath.Join(root, hp)
		}
		if rel, ok := inside(hp); ok {
			out.hooks = append(out.hooks, rel)
		}
	}
	return out
}

// protectedNote tells a model, in the specs of write_file and edit_file,
// which paths they refuse.
const protectedNote = "The control files of cadre and git (.cadre/, .mcp.json, .git/config, .git/hooks/, .git/info/) are refused: " +
	"say in your answer what should change there."

// A ProtectedError reports a change a file tool refused because the path
// is one of the workspace's control paths: cadre's configuration (.cadre,
// .mcp.json) or git's configuration and hooks, through which what is
// written takes effect outside the tools' and the sandbox's confinement.
type ProtectedError struct {
	Tool string // the tool that refused
	Path string // the path, relative to the workspace root, links resolved
	What string // what the path is, and why a change there reaches outside
}

func (e *ProtectedError) Error() string {
	return fmt.Sprintf("%s: %s is not changed by the file tools: it is %s. "+
		"If the change is needed, say what to change and why in your answer: the user can make it themselves",
		e.Tool, e.Path, e.What)
}

// checkProtected refuses, for tool name, a change to rel, a path resolved
// in ws, when it is a control path.
func checkProtected(ws tool.Workspace, name, rel string) error {
	if what, ok := protectedIn(ws, rel); ok {
		return &ProtectedError{Tool: name, Path: rel, What: what}
	}
	return nil
}
