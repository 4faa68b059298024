package builtin

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A command in the sandbox may make a git repository of its own inside the
// workspace (git init sub) and give it a configuration that runs a
// program (core.fsmonitor): the sandbox cannot keep read-only what does
// not exist yet. git on this machine then runs that program, outside any
// sandbox, when it looks at the repository: git status in the workspace
// does as soon as the repository is in the index (git add sub), and
// editors' git integrations open repositories they find in subfolders.
// So the sandbox looks, before and after each command, at the nested
// repositories git or an editor would reach (those the workspace's index
// holds, and those at most two folders down), and a command that left one
// whose configuration or hooks run a program, where there was none, fails
// with what it left named.

// nestedDepth is how many folders down from the workspace root nested
// repositories are looked for besides those the index holds.
const nestedDepth = 2

// maxIndexSize is the largest index read for the repositories it holds;
// a larger one is read for none (a repository of millions of files).
const maxIndexSize = 256 << 20

// plantedPrograms returns what the nested repositories of the workspace
// root run, each as "sub: core.fsmonitor = …" (see planted).
func plantedPrograms(root string) []string {
	var out []string
	for _, dir := range nestedRepos(root) {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			continue
		}
		for _, f := range repoPrograms(dir) {
			out = append(out, filepath.ToSlash(rel)+": "+f)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// planted returns what is in after and not in before.
func planted(before, after []string) []string {
	var out []string
	for _, f := range after {
		if !slices.Contains(before, f) {
			out = append(out, f)
		}
	}
	return out
}

// nestedRepos returns the folders inside root holding a .git of their
// own: those the repository at root holds as gitlinks in its index, and
// those at most nestedDepth folders down.
func nestedRepos(root string) []string {
	var out []string
	add := func(dir string) {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil && !slices.Contains(out, dir) {
			out = append(out, dir)
		}
	}
	if g := workspaceGitDir(root); g != "" {
		for _, p := range indexGitlinks(filepath.Join(g, "index"), hashSize(g)) {
			dir := filepath.Join(root, filepath.FromSlash(p))
			if within(root, dir) && dir != root {
				add(dir)
			}
		}
	}
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		if depth > nestedDepth {
			return
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			if !e.IsDir() || e.Name() == ".git" { // a link is not followed
				continue
			}
			sub := filepath.Join(dir, e.Name())
			add(sub)
			walk(sub, depth+1)
		}
	}
	walk(root, 1)
	return out
}

// workspaceGitDir returns the git folder of the repository at root, or "".
func workspaceGitDir(root string) string {
	dotgit := filepath.Join(root, ".git")
	fi, err := os.Lstat(dotgit)
	switch {
	case err != nil:
		return ""
	case fi.IsDir():
		return dotgit
	case fi.Mode().IsRegular():
		if dir := readGitFile(dotgit, "gitdir:"); dir != "" {
			return gitPath(root, dir)
		}
	}
	return ""
}

// hashSize is the size of an object name in the repository of the git
// folder g: 32 bytes with SHA-256, 20 with SHA-1.
func hashSize(g string) int {
	config := filepath.Join(g, "config")
	if common := readGitFile(filepath.Join(g, "commondir"), ""); common != "" {
		config = filepath.Join(gitPath(g, common), "config")
	}
	if strings.EqualFold(gitConfigValue(config, "extensions", "objectformat"), "sha256") {
		return 32
	}
	return 20
}

// indexGitlinks returns the paths of the gitlinks (mode 160000: a
// submodule, or a repository added as one) in a git index file of
// version 2, 3 or 4, or none when it cannot be read.
func indexGitlinks(file string, hash int) []string {
	fi, err := os.Stat(file)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxIndexSize {
		return nil
	}
	b, err := os.ReadFile(file)
	if err != nil || len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil
	}
	version := binary.BigEndian.Uint32(b[4:8])
	if version < 2 || version > 4 {
		return nil
	}
	n := int(binary.BigEndian.Uint32(b[8:12]))
	var out []string
	off := 12
	prev := ""
	for range n {
		// ctime, mtime (8 bytes each), dev, ino, mode, uid, gid, size (4
		// each), the object name, then 2 bytes of flags.
		start := off
		if off+40+hash+2 > len(b) {
			return out
		}
		mode := binary.BigEndian.Uint32(b[off+24 : off+28])
		off += 40 + hash
		flags := binary.BigEndian.Uint16(b[off : off+2])
		off += 2
		if version >= 3 && flags&0x4000 != 0 {
			off += 2 // extended flags
		}
		var name string
		if version == 4 {
			// The length of the previous path to drop, as a varint, then
			// the rest of this one, NUL-terminated.
			drop, k := indexVarint(b[min(off, len(b)):])
			if k == 0 || drop > len(prev) {
				return out
			}
			off += k
			end := bytes.IndexByte(b[min(off, len(b)):], 0)
			if end < 0 {
				return out
			}
			name = prev[:len(prev)-drop] + string(b[off:off+end])
			off += end + 1
		} else {
			end := bytes.IndexByte(b[min(off, len(b)):], 0)
			if end < 0 {
				return out
			}
			name = string(b[off : off+end])
			off += end + 1
			// Entries are padded with NULs to a multiple of 8 bytes.
			off = start + (off-start+7)/8*8
		}
		prev = name
		if mode&0o170000 == 0o160000 {
			out = append(out, name)
		}
	}
	return out
}

// indexVarint reads the variable-length number of an index of version 4
// and returns it and its length, 0 when it is cut short.
func indexVarint(b []byte) (int, int) {
	if len(b) == 0 {
		return 0, 0
	}
	v := int(b[0] & 0x7f)
	i := 1
	for b[i-1]&0x80 != 0 {
		if i >= len(b) || i > 8 {
			return 0, 0
		}
		v = (v+1)<<7 | int(b[i]&0x7f)
		i++
	}
	return v, i
}

// repoPrograms returns what the repository in dir makes git run: the
// settings of its configuration that name a program, and its hooks.
func repoPrograms(dir string) []string {
	g := workspaceGitDir(dir)
	if g == "" {
		return nil
	}
	var out []string
	dirs := []string{g}
	if common := readGitFile(filepath.Join(g, "commondir"), ""); common != "" {
		dirs = append(dirs, gitPath(g, common))
	}
	for _, d := range dirs {
		for _, name := range []string{"config", "config.worktree"} {
			out = append(out, configPrograms(filepath.Join(d, name))...)
		}
		hooks, err := os.ReadDir(filepath.Join(d, "hooks"))
		if err != nil {
			continue
		}
		for _, h := range hooks {
			info, err := h.Info()
			if err != nil || strings.HasSuffix(h.Name(), ".sample") || !info.Mode().IsRegular() && info.Mode()&os.ModeSymlink == 0 {
				continue
			}
			if info.Mode()&0o111 != 0 || info.Mode()&os.ModeSymlink != 0 {
				out = append(out, "hook "+h.Name())
			}
		}
	}
	return out
}

// programKeys are the settings of a git configuration that make git run
// a program, as section.key or section.*.key (any subsection), lower
// case.
var programKeys = []string{
	"core.fsmonitor", "core.hookspath", "core.sshcommand", "core.gitproxy", "core.askpass", "core.editor",
	"core.pager", "core.alternaterefscommand", "sequence.editor", "diff.external", "diff.*.textconv",
	"diff.*.command", "difftool.*.cmd", "mergetool.*.cmd", "merge.*.driver", "filter.*.clean",
	"filter.*.smudge", "filter.*.process", "credential.helper", "credential.*.helper", "gpg.program",
	"gpg.*.program", "include.path", "includeif.*.path", "uploadpack.packobjectshook",
	"remote.*.uploadpack", "remote.*.receivepack", "pager.*", "interactive.difffilter", "alias.*",
}

// configPrograms returns the settings of a git config file that make git
// run a program, each as "key = value".
func configPrograms(file string) []string {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var out []string
	section, sub, shown := "", false, ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			name := strings.TrimSpace(line[1:end])
			sub = false
			section, shown = strings.ToLower(name), strings.ToLower(name)
			if i := strings.IndexAny(name, " \t\"."); i >= 0 {
				sub = true
				section = strings.ToLower(name[:i])
				shown = section + "." + strings.Trim(strings.TrimSpace(name[i:]), `".`)
			}
			line = strings.TrimSpace(line[end+1:])
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		key := strings.ToLower(strings.TrimSpace(k))
		value := gitConfigString(v)
		full := section + "." + key
		if sub {
			full = section + ".*." + key
		}
		switch {
		case !slices.Contains(programKeys, full) && !slices.Contains(programKeys, section+".*"):
			continue
		case section == "alias" && !strings.HasPrefix(value, "!"):
			continue // a git command, not a program
		case full == "core.fsmonitor" && isGitBool(value):
			continue // git's own daemon, or none
		}
		out = append(out, fmt.Sprintf("%s.%s = %s", shown, key, clipText(value, 200)))
	}
	return out
}

// isGitBool reports whether a git configuration value is a boolean.
func isGitBool(v string) bool {
	switch strings.ToLower(v) {
	case "", "true", "false", "yes", "no", "on", "off", "1", "0":
		return true
	}
	return false
}
