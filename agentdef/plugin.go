package agentdef

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/cadre-ai/cadre/internal/safefile"
	"github.com/cadre-ai/cadre/tool"
)

// ScopePlugin is the scope of the agents of Claude Code plugins.
const ScopePlugin = "plugin"

// PluginManifest is the file that makes a folder a Claude Code plugin.
const PluginManifest = ".claude-plugin/plugin.json"

// maxPluginDepth bounds how deep plugins are looked for under a plugins
// folder (marketplaces keep them a few levels down).
const maxPluginDepth = 6

// A Plugin is a Claude Code plugin: a folder holding
// .claude-plugin/plugin.json, whose agents (agents/, or the paths its
// manifest lists) and skills (skills/) are named plugin:name.
type Plugin struct {
	Name string
	Dir  string
	// Agents are the folders and files of its agents.
	Agents []string
}

// pluginName is what a plugin may be called.
var pluginName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]*$`)

// FindPlugins finds the plugins under ~/.claude/plugins and the project's
// .claude/plugins (at any depth), and those opts.PluginDirs name (a plugin
// folder, or a folder holding plugins; it must exist). A plugin whose
// manifest is broken is an error naming the file, and is left out. Two
// plugins of one name: the first found is kept, the other is an error.
func FindPlugins(opts LoadOptions) ([]Plugin, []Diagnostic) {
	var (
		out   []Plugin
		diags []Diagnostic
		seen  = map[string]string{}
	)
	// Each folder is looked in once, by its real path, and a link is
	// followed only to a folder inside top, the real folder the search
	// started from: a repository's links to "." (each doubling the search)
	// or to / made the search take hours, and brought in the plugins of
	// other places.
	visited := map[string]bool{}
	var visit func(dir, top string, depth int, explicit bool)
	visit = func(dir, top string, depth int, explicit bool) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			if visited[real] || !tool.Within(top, real) {
				return
			}
			visited[real] = true
		}
		manifest := filepath.Join(dir, filepath.FromSlash(PluginManifest))
		if _, err := os.Stat(manifest); err == nil {
			p, err := readPlugin(dir, manifest)
			if err != nil {
				diags = append(diags, Diagnostic{File: manifest, Severity: SeverityError, Message: err.Error() + "; the plugin is left out"})
				return
			}
			if first, dup := seen[p.Name]; dup {
				diags = append(diags, Diagnostic{File: manifest, Severity: SeverityError,
					Message: fmt.Sprintf("plugin name %s is taken by %s; this plugin is left out: rename one of them", p.Name, first)})
				return
			}
			seen[p.Name] = manifest
			out = append(out, p)
			return
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			if explicit || !errors.Is(err, fs.ErrNotExist) {
				diags = append(diags, Diagnostic{File: dir, Severity: SeverityError, Message: fmt.Sprintf("the plugin folder cannot be read: %v", err)})
			}
			return
		}
		if depth == maxPluginDepth {
			return
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") || e.Name() == "node_modules" {
				continue
			}
			sub := filepath.Join(dir, e.Name())
			if fi, err := os.Stat(sub); err == nil && fi.IsDir() {
				visit(sub, top, depth+1, false)
			}
		}
	}
	// search searches dir, which must lie inside bound once its links are
	// resolved (the project's top for a project's folder, so that it may
	// link anywhere in its repository); "" for the user's own folder, which
	// may link to their dotfiles, and the folders given by name.
	search := func(dir, bound string, explicit bool) {
		top, err := filepath.EvalSymlinks(dir)
		if err != nil {
			visit(dir, dir, 0, explicit) // its reader says why
			return
		}
		if bound != "" {
			if b, err := filepath.EvalSymlinks(bound); err != nil || !tool.Within(b, top) {
				diags = append(diags, Diagnostic{File: dir, Severity: SeverityWarning,
					Message: fmt.Sprintf("is a link out of the project %s (to %s): it is not searched for plugins", bound, top)})
				return
			}
		}
		visit(dir, top, 0, explicit)
	}
	home := opts.Home
	if home == "" && !opts.NoUser {
		home, _ = os.UserHomeDir()
	}
	if !opts.NoUser && home != "" {
		search(filepath.Join(home, ".claude", "plugins"), "", false)
	}
	if !opts.NoProject {
		levels := projectLevels(opts.Dir, opts.RepoRoot, home)
		for _, level := range levels {
			search(filepath.Join(level, ".claude", "plugins"), levels[0], false) // levels[0] is the outermost
		}
	}
	for _, d := range opts.PluginDirs {
		search(d, "", true)
	}
	return out, diags
}

// readPlugin reads a plugin's manifest.
func readPlugin(dir, manifest string) (Plugin, error) {
	data, err := safefile.ReadRegular(manifest, maxFileSize)
	if err != nil {
		return Plugin{}, fmt.Errorf("cannot be read: %v", err)
	}
	var m struct {
		Name   string          `json:"name"`
		Agents json.RawMessage `json:"agents"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return Plugin{}, fmt.Errorf("is not valid JSON (%v)", err)
	}
	if m.Name == "" {
		return Plugin{}, fmt.Errorf(`has no name: add "name": %q`, filepath.Base(dir))
	}
	if !pluginName.MatchString(m.Name) {
		return Plugin{}, fmt.Errorf("name %q is not a plugin name: letters, digits, '-', '_' and '.'", m.Name)
	}
	p := Plugin{Name: m.Name, Dir: dir, Agents: []string{filepath.Join(dir, "agents")}}
	var extra []string
	if len(m.Agents) > 0 && string(m.Agents) != "null" {
		var one string
		if json.Unmarshal(m.Agents, &one) == nil {
			extra = []string{one}
		} else if err := json.Unmarshal(m.Agents, &extra); err != nil {
			return Plugin{}, fmt.Errorf(`"agents" is not a path or a list of paths`)
		}
	}
	for _, e := range extra {
		rel := filepath.Clean(filepath.FromSlash(e))
		if filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return Plugin{}, fmt.Errorf(`"agents": %s is outside the plugin's folder: give a path inside it, such as ./agents/reviewer.md`, e)
		}
		if a := filepath.Join(dir, rel); !slices.Contains(p.Agents, a) {
			p.Agents = append(p.Agents, a)
		}
	}
	return p, nil
}
