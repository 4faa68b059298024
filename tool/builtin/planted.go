package builtin

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
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
// repositories are looked for besides those the index holds, and
// maxNestedEntries the most entries looked at on the way: a command that
// makes more is told so (see nestedRepos), rather than cadre spending
// unbounded time and memory on what it made.
const nestedDepth = 2

var maxNestedEntries = 200_000 // a variable for the tests

// plantedPrograms returns what the nested repositories of the workspace
// root run, each as "sub: core.fsmonitor = …" (see planted).
func plantedPrograms(root string) []string {
	dirs, complete := nestedRepos(root)
	var out []string
	if !complete {
		out = append(out, fmt.Sprintf(".: more than %d files and folders within %d folders of the workspace root, which were not all looked at", maxNestedEntries, nestedDepth))
	}
	for _, dir := range dirs {
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
// those at most nestedDepth folders down; complete is false when more
// than maxNestedEntries entries were on the way.
func nestedRepos(root string) (out []string, complete bool) {
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
	seen := 0
	var walk func(dir string, depth int) bool
	walk = func(dir string, depth int) bool {
		f, err := os.Open(dir)
		if err != nil {
			return true
		}
		defer f.Close()
		for {
			// A chunk at a time: a folder of millions of entries is not
			// read whole.
			entries, err := f.ReadDir(1024)
			for _, e := range entries {
				if seen++; seen > maxNestedEntries {
					return false
				}
				if !e.IsDir() || e.Name() == ".git" { // a link is not followed
					continue
				}
				sub := filepath.Join(dir, e.Name())
				add(sub)
				if depth < nestedDepth && !walk(sub, depth+1) {
					return false
				}
			}
			if err != nil || len(entries) == 0 {
				return true
			}
		}
	}
	return out, walk(root, 1)
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
// version 2, 3 or 4, as far as it can be read. It reads the file as a
// stream: an index of any size costs its reading, not its size in memory.
func indexGitlinks(file string, hash int) []string {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0) // a FIFO must not block the read
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	r := bufio.NewReaderSize(f, 64<<10)
	var head [12]byte
	if _, err := io.ReadFull(r, head[:]); err != nil || string(head[:4]) != "DIRC" {
		return nil
	}
	version := binary.BigEndian.Uint32(head[4:8])
	if version < 2 || version > 4 {
		return nil
	}
	n := binary.BigEndian.Uint32(head[8:12])
	fixed := make([]byte, 40+hash+2)
	var out []string
	var prev []byte
	for range n {
		// ctime, mtime (8 bytes each), dev, ino, mode, uid, gid, size (4
		// each), the object name, then 2 bytes of flags.
		if _, err := io.ReadFull(r, fixed); err != nil {
			return out
		}
		size := len(fixed)
		mode := binary.BigEndian.Uint32(fixed[24:28])
		if flags := binary.BigEndian.Uint16(fixed[len(fixed)-2:]); version >= 3 && flags&0x4000 != 0 {
			if _, err := r.Discard(2); err != nil { // extended flags
				return out
			}
			size += 2
		}
		var name []byte
		if version == 4 {
			// The length of the previous path to drop, as a varint, then
			// the rest of this one, NUL-terminated.
			drop, ok := indexVarint(r)
			if !ok || drop > len(prev) {
				return out
			}
			rest, err := r.ReadBytes(0)
			if err != nil {
				return out
			}
			name = append(prev[:len(prev)-drop:len(prev)-drop], rest[:len(rest)-1]...)
		} else {
			rest, err := r.ReadBytes(0)
			if err != nil {
				return out
			}
			name = rest[:len(rest)-1]
			// Entries are padded with NULs to a multiple of 8 bytes.
			size += len(rest)
			if _, err := r.Discard((8 - size%8) % 8); err != nil {
				return out
			}
		}
		prev = name
		if mode&0o170000 == 0o160000 {
			out = append(out, string(name))
		}
	}
	return out
}

// indexVarint reads the variable-length number of an index of version 4.
func indexVarint(r *bufio.Reader) (int, bool) {
	c, err := r.ReadByte()
	if err != nil {
		return 0, false
	}
	v := int(c & 0x7f)
	for i := 0; c&0x80 != 0; i++ {
		if c, err = r.ReadByte(); err != nil || i >= 8 {
			return 0, false
		}
		v = (v+1)<<7 | int(c&0x7f)
	}
	return v, true
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
	b, err := readRegular(file, maxGitConfig)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		// What cannot be read cannot be said to run nothing.
		return []string{"a configuration that cannot be read (" + err.Error() + ")"}
	}
	var out []string
	for e := range gitConfigEntries(b) {
		section, key, value := e.section, e.key, e.value
		full, shown := section+"."+key, section
		if e.hasSub {
			full, shown = section+".*."+key, section+"."+e.sub
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
