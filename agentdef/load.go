package agentdef

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/safefile"
)

// Scopes, from the lowest precedence to the highest.
const (
	ScopeBuiltin = "builtin"
	ScopeUser    = "user"
	ScopeProject = "project"
	ScopeDir     = "dir"
)

// A plugin's agents are in ScopePlugin, between the user's and the
// project's; their names, plugin:agent, keep them apart from both.

// maxFileSize bounds the agent files Load reads.
const maxFileSize = 4 << 20

// LoadOptions say where Load looks. The zero value loads the built-in
// agents, the user's (from the process's home directory) and the project's
// (from the process's working directory up to its repository root).
type LoadOptions struct {
	// Dir is the working directory the project scope is found from; ""
	// means the process's.
	Dir string
	// Home is the user's home directory; "" means the process's.
	Home string
	// RepoRoot is the highest directory searched for project agents; ""
	// means the nearest directory from Dir up that holds .git, or Dir
	// itself when there is none.
	RepoRoot string
	// ExtraDirs are folders of agent files (or single files), each a scope
	// of its own above the project's, later ones winning. An extra entry
	// that does not exist is an error.
	ExtraDirs []string
	// PluginDirs are Claude Code plugins (folders holding
	// .claude-plugin/plugin.json), or folders holding plugins, besides
	// those under ~/.claude/plugins and the project's .claude/plugins.
	PluginDirs []string
	// MCPServers are the configured MCP servers, for mcp__server__tool names.
	MCPServers []string
	// Models are the configured named models (see ParseOptions.Models).
	Models []string
	// Strict rejects agents whose tools cadre cannot resolve.
	Strict bool
	// NoBuiltin, NoUser and NoProject leave out those scopes.
	NoBuiltin, NoUser, NoProject bool
}

// Load finds and parses the agent files of every scope and returns the
// catalog of the definitions in effect, with the diagnostics of every file
// it read (see the package documentation for scopes and precedence). It
// never stops at a bad file and never logs.
func Load(opts LoadOptions) (*Catalog, []Diagnostic) {
	l := &loader{opts: opts, cat: &Catalog{byName: map[string]*cadre.Definition{}}}
	if !opts.NoBuiltin {
		for _, d := range Builtin() {
			l.cat.put(d)
		}
	}
	home := opts.Home
	if home == "" && !opts.NoUser {
		home, _ = os.UserHomeDir()
	}
	if !opts.NoUser && home != "" {
		l.tier(ScopeUser, userRoots(home))
	}
	plugins, pdiags := FindPlugins(opts)
	l.diags = append(l.diags, pdiags...)
	l.cat.plugins = plugins
	for _, p := range plugins {
		var roots []root
		for _, a := range p.Agents {
			roots = append(roots, root{path: a, prefix: p.Name, explicit: a != filepath.Join(p.Dir, "agents")})
		}
		l.tier(ScopePlugin, roots)
	}
	if !opts.NoProject {
		for _, dir := range projectLevels(opts.Dir, opts.RepoRoot, home) {
			l.tier(ScopeProject, projectRoots(dir))
		}
	}
	for _, d := range opts.ExtraDirs {
		l.tier(ScopeDir, []root{{path: d, explicit: true}})
	}
	l.cat.seal()
	return l.cat, l.diags
}

// A root is one folder Load scans.
type root struct {
	path string
	// nameFromFile: an OpenCode folder, whose files may omit name.
	nameFromFile bool
	// explicit: named by the caller, so a missing folder is an error and a
	// file is read whatever its extension.
	explicit bool
	// prefix is the plugin whose agents these are: each is named
	// prefix:name.
	prefix string
}

func userRoots(home string) []root {
	return []root{
		{path: filepath.Join(home, ".cadre", "agents")},
		{path: filepath.Join(home, ".claude", "agents")},
		{path: filepath.Join(home, ".config", "opencode", "agent"), nameFromFile: true},
		{path: filepath.Join(home, ".config", "opencode", "agents"), nameFromFile: true},
	}
}

func projectRoots(dir string) []root {
	return []root{
		{path: filepath.Join(dir, ".cadre", "agents")},
		{path: filepath.Join(dir, ".claude", "agents")},
		{path: filepath.Join(dir, ".opencode", "agent"), nameFromFile: true},
		{path: filepath.Join(dir, ".opencode", "agents"), nameFromFile: true},
	}
}

// projectLevels lists the directories whose agent folders form the project
// scope, farthest (the repository root) first. The home directory is not
// one: its folders are the user scope.
func projectLevels(dir, repoRoot, home string) []string {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil
		}
		dir = wd
	}
	dir = absClean(dir)
	top := dir
	if repoRoot != "" {
		top = absClean(repoRoot)
	} else {
		for d := dir; ; {
			if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
				top = d
				break
			}
			up := filepath.Dir(d)
			if up == d {
				break
			}
			d = up
		}
	}
	if rel, err := filepath.Rel(top, dir); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		top = dir // the root given is not above the working directory
	}
	if home != "" {
		home = absClean(home)
	}
	var levels []string
	for d := dir; ; d = filepath.Dir(d) {
		if d != home {
			levels = append(levels, d)
		}
		if d == top || filepath.Dir(d) == d {
			break
		}
	}
	slices.Reverse(levels)
	return levels
}

func absClean(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}

// loader holds the state of one Load call.
type loader struct {
	opts  LoadOptions
	cat   *Catalog
	diags []Diagnostic
}

func (l *loader) diag(file string, line, col int, sev Severity, format string, args ...any) {
	l.diags = append(l.diags, Diagnostic{File: file, Line: line, Column: col, Severity: sev, Message: fmt.Sprintf(format, args...)})
}

type agentFile struct {
	path string
	root root
}

// tier loads the files of one precedence level: within it, the first file
// in path order wins a name. Names that differ only in case are the same
// name here, as they are to the people who write them.
func (l *loader) tier(scope string, roots []root) {
	var files []agentFile
	for _, r := range roots {
		files = append(files, l.scan(r)...)
	}
	slices.SortStableFunc(files, func(a, b agentFile) int { return strings.Compare(a.path, b.path) })

	type winner struct {
		def  *cadre.Definition
		root string
	}
	won := map[string]winner{}
	type loaded struct {
		def       *cadre.Definition
		line, col int
	}
	var defs []loaded
	for _, f := range files {
		data, err := readAgentFile(f.path)
		if err != nil {
			l.diag(f.path, 0, 0, SeverityError, "%v", err)
			continue
		}
		def, diags := Parse(f.path, data, ParseOptions{
			Scope: scope, MCPServers: l.opts.MCPServers, Models: l.opts.Models,
			Strict: l.opts.Strict, NameFromFile: f.root.nameFromFile,
		})
		l.diags = append(l.diags, diags...)
		if def == nil {
			continue
		}
		if f.root.prefix != "" {
			def.Name = f.root.prefix + ":" + def.Name
		}
		line, col := nameLine(data)
		key := strings.ToLower(def.Name)
		if w, dup := won[key]; dup {
			sev := SeverityWarning
			if w.root == f.root.path {
				sev = SeverityError
			}
			same := def.Name
			if w.def.Name != def.Name {
				same = fmt.Sprintf("%s (the same name as %s, ignoring case)", def.Name, w.def.Name)
			}
			l.diag(f.path, line, col, sev, "duplicate name %s: %s defines it too and comes first, so this file is not loaded; rename one of them", same, w.def.File)
			continue
		}
		won[key] = winner{def: def, root: f.root.path}
		defs = append(defs, loaded{def: def, line: line, col: col})
	}
	for _, d := range defs {
		old := l.cat.put(d.def)
		switch {
		case old == nil:
		case old.Scope == ScopeBuiltin && sameDefinition(old, d.def):
			// An unchanged copy of a built-in agent, as cadre init writes:
			// nothing changes, so nothing is worth saying.
		case old.Scope == ScopeBuiltin:
			l.diag(d.def.File, d.line, d.col, SeverityInfo, "agent %s replaces cadre's built-in agent of that name", d.def.Name)
		default:
			l.diag(d.def.File, d.line, d.col, SeverityInfo, "agent %s overrides the one in %s (%s scope)", d.def.Name, old.File, old.Scope)
		}
	}
}

// sameDefinition reports whether two definitions differ only in where they
// were found.
func sameDefinition(a, b *cadre.Definition) bool {
	x, y := *a, *b
	x.File, x.Scope, y.File, y.Scope = "", "", "", ""
	return reflect.DeepEqual(x, y)
}

// scan lists the agent files under a root. Folders are followed through
// symbolic links (an agents folder linked from a dotfiles repository is
// common), each real folder once, so a link cycle ends the descent; paths
// are reported as reached, not as resolved.
func (l *loader) scan(r root) []agentFile {
	fi, err := os.Stat(r.path)
	if err != nil {
		switch {
		case r.explicit && errors.Is(err, fs.ErrNotExist):
			l.diag(r.path, 0, 0, SeverityError, "agents folder does not exist: check the path given to --agents-dir or agentsDirs:")
		case r.explicit || !errors.Is(err, fs.ErrNotExist):
			l.diag(r.path, 0, 0, SeverityWarning, "cannot read agents folder: %v", err)
		}
		return nil
	}
	if !fi.IsDir() {
		if r.explicit {
			return []agentFile{{path: r.path, root: r}}
		}
		return nil
	}
	var out []agentFile
	l.walk(r, r.path, map[string]bool{}, &out)
	return out
}

// walk adds the agent files below dir to out. seen holds the real paths of
// the folders already walked.
func (l *loader) walk(r root, dir string, seen map[string]bool, out *[]agentFile) {
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		l.diag(dir, 0, 0, SeverityWarning, "cannot read agents folder: %v", err)
		return
	}
	if seen[resolved] {
		return
	}
	seen[resolved] = true
	entries, err := os.ReadDir(dir)
	if err != nil {
		l.diag(dir, 0, 0, SeverityWarning, "cannot read agents folder: %v", err)
		// ReadDir returns what it read before the error; carry on with it.
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		typ := e.Type()
		if typ&fs.ModeSymlink != 0 {
			fi, err := os.Stat(p)
			if err != nil {
				if isAgentFile(e.Name()) {
					l.diag(p, 0, 0, SeverityWarning, "cannot read: %v (a broken link?)", err)
				}
				continue
			}
			typ = fi.Mode().Type()
		}
		switch {
		case typ.IsDir():
			if e.Name() != ".git" && e.Name() != "node_modules" {
				l.walk(r, p, seen, out)
			}
		case typ.IsRegular() && isAgentFile(e.Name()):
			*out = append(*out, agentFile{path: p, root: r})
		}
	}
}

// isAgentFile reports whether a file name has an agent file's extension.
func isAgentFile(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	return ext == ".md" || ext == ".agent"
}

func readAgentFile(path string) ([]byte, error) {
	data, err := safefile.ReadRegular(path, maxFileSize)
	switch {
	case errors.Is(err, safefile.ErrFolder):
		return nil, errors.New("is a folder, not an agent file")
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, fmt.Errorf("file is more than an agent file can be (%d MiB): is it an agent definition?", maxFileSize>>20)
	case err != nil:
		return nil, fmt.Errorf("cannot read agent file: %w", err)
	}
	return data, nil
}

// nameLine finds the name field in the frontmatter of a file that has
// already parsed, for messages about the file as a whole agent. It is 0, 0
// when the name came from the file name.
func nameLine(data []byte) (int, int) {
	fm, st := splitFrontmatter(data)
	if st != splitOK {
		return 0, 0
	}
	for i, line := range fm.lines {
		if key, ok := keyAt(line); ok && key == "name" {
			return fm.first + i, fm.indent + 1
		}
	}
	return 0, 0
}
