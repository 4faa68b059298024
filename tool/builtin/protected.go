package builtin

import (
	"fmt"
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

// protectedPaths are the control paths of a workspace. They count at any
// depth: git status in the root also runs in the submodules below it, and
// a .git file names the folder git takes a repository's configuration
// from; cadre (and other agent tools) run in a subfolder of a monorepo load
// the agents, skills and settings of the .cadre, .claude and .opencode
// folders of every folder up to the root, and its .mcp.json.
var protectedPaths = []protectedPath{
	{"**/.cadre/**", "cadre's configuration, agents and run store, which cadre reads outside any sandbox (config.yaml can turn the sandbox off; procs/ tells cadre which processes to kill)"},
	{"**/.mcp.json", "the list of MCP servers cadre starts, outside any sandbox"},
	{"**/.claude/**", "agents, skills, plugins and settings other tools (and cadre's agent loading) read from the project, outside any sandbox"},
	{"**/.opencode/**", "agents and settings OpenCode (and cadre's agent loading) reads from the project, outside any sandbox"},
	{"**/.git", "a .git file names the folder git takes the repository's configuration and hooks from"},
	{"**/.git/{config,config.worktree,commondir}", "git's configuration of the repository, which can make git run programs (core.fsmonitor, core.hooksPath) when it next runs"},
	{"**/.git/{hooks,info}/**", "git's hooks and repository settings: git runs hooks as programs, outside any sandbox"},
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
// control path of ws: one of protectedPaths, or one the command sandbox
// keeps read-only in ws, which follows the repository's configuration (the
// git folders a .git file names, their submodules and worktrees, the
// folder core.hooksPath names): the file tools and the sandbox judge by
// the same list.
func protectedIn(ws tool.Workspace, rel string) (what string, ok bool) {
	if what, ok := isProtected(rel); ok {
		return what, true
	}
	root, err := ws.Dir()
	if err != nil {
		return "", false
	}
	// An error says why commands would be refused; the paths found are
	// protected all the same.
	ctl, _ := (&Sandbox{}).controls(root)
	target := strings.ToLower(filepath.Join(root, filepath.FromSlash(rel)))
	for _, p := range ctl.readOnly {
		if tool.Within(strings.ToLower(p), target) {
			return "git's configuration or hooks (in the git folder a .git file names, or the folder core.hooksPath names), which can make git run programs outside any confinement when it next runs", true
		}
	}
	return "", false
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
