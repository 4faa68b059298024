package builtin

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unicode"

	"github.com/cadre-ai/cadre/tool"
)

// A command in the sandbox may make a git repository of its own inside the
// workspace (git init sub) and give it a configuration that runs a
// program (core.fsmonitor): the sandbox cannot keep read-only what does
// not exist yet. git on this machine then runs that program, outside any
// sandbox, when it looks at the repository: git status in the workspace
// does as soon as the repository is in the index (git add sub), git
// submodule update acts on its remotes, and editors' git integrations
// open repositories they find in subfolders.
//
// So the sandbox takes stock of the nested repositories git or an editor
// would reach (those the workspace's index holds, through the indexes of
// those in turn, and those in any folder, bare-shaped ones included)
// before the first command, and after each command tells of every one
// that is new or changed and is not plainly inert: its configuration
// holds only settings known to run nothing (a remote's URL, a branch, the
// user's name…), it has no hook, and its .git is a folder (or a file
// naming a submodule folder of the workspace's repository). A denylist
// of settings that run programs would miss those it does not know;
// anything cadre cannot read the way git does counts as not inert. What
// was told is told again after each later command, until it is gone.

// Bounds of the stock-taking: how many folders down from the workspace
// root repositories are looked for besides those indexes hold (a commit a
// command made can hold a gitlink to one at any depth, which git checkout
// brings into the index); the most entries of one folder and of all
// folders looked at, and the most gitlinks, repositories and nested
// levels followed. Past a bound the stock says so, which counts as a
// change when it was not so before.
var (
	nestedDepth      = 64
	maxFolderEntries = 50_000
	maxNestedEntries = 500_000
	maxGitlinks      = 100_000
	maxRepos         = 2_000
	maxRepoLevels    = 4
)

// maxGitPath is the longest path an index entry may have (git's PATH_MAX).
const maxGitPath = 4096

// nestedStock is what the sandbox found in a workspace's nested
// repositories, by workspace root (see RunCommand.run).
type nestedStock struct {
	mu     sync.Mutex
	byRoot map[string][]string
}

// baseline returns the stock of root taken before its first command,
// taking it now when there is none.
func (s *nestedStock) baseline(root string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.byRoot[root]; ok {
		return b
	}
	if s.byRoot == nil {
		s.byRoot = map[string][]string{}
	}
	b := plantedPrograms(root)
	s.byRoot[root] = b
	return b
}

// plantedPrograms returns what the nested repositories of the workspace
// root hold that is not plainly inert, each as "sub: what".
func plantedPrograms(root string) []string {
	sc := &nestedScan{root: root, realRoot: root, seen: map[string]bool{}, examined: map[string]bool{}, linked: map[string]bool{}}
	if real, err := filepath.EvalSymlinks(root); err == nil {
		sc.realRoot = real
	}
	if g := gitDirOf(root); g != "" {
		sc.links(root, g, 0)
		sc.todo(root, g)
	}
	sc.walk(root, 0)
	for i := 0; i < len(sc.queue); i++ {
		sc.examine(sc.queue[i])
	}
	slices.Sort(sc.out)
	return slices.Compact(sc.out)
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

// A nestedScan takes stock of the nested repositories of root.
type nestedScan struct {
	root     string
	realRoot string          // root with its links resolved
	seen     map[string]bool // folders queued
	examined map[string]bool // git folders examined, resolved
	linked   map[string]bool // git folders whose index was read, resolved
	queue    []nestedRepo
	out      []string
	entries  int   // folder entries looked at
	nlinks   int   // gitlinks read
	nmodules int   // submodule git folders looked at
	tooMany  bool  // more than maxRepos repositories were met
	read     int64 // bytes of configurations and hooks read (see budget)
	// templates are the user's git template folders, read once a scan
	// (see fromTemplate); nil until needed.
	templates []string
	// indexBytes are the bytes of the indexes read.
	indexBytes int64
}

// A nestedRepo is a folder to examine, level indexes down from root's.
type nestedRepo struct {
	dir   string
	level int
}

func (sc *nestedScan) tell(dir, what string) {
	rel, err := filepath.Rel(sc.root, dir)
	if err != nil {
		rel = dir
	}
	sc.out = append(sc.out, filepath.ToSlash(rel)+": "+what)
}

func (sc *nestedScan) add(dir string, level int) {
	if sc.seen[dir] || dir == sc.root || !tool.Within(sc.root, dir) {
		return
	}
	if len(sc.seen) >= maxRepos {
		if !sc.tooMany {
			sc.tooMany = true
			sc.tell(sc.root, fmt.Sprintf("more than %d nested repositories, which were not all looked at", maxRepos))
		}
		return
	}
	sc.seen[dir] = true
	sc.queue = append(sc.queue, nestedRepo{dir, level})
}

// links queues the gitlinks of the repository in dir (git folder g): its
// index's and, when the index is split, those of the shared index it
// names. Past maxRepoLevels, gitlinks are told rather than followed.
func (sc *nestedScan) links(dir, g string, level int) {
	limit := maxGitlinks - sc.nlinks
	if level >= maxRepoLevels {
		limit = 1
	}
	if fi, err := os.Stat(filepath.Join(g, "index")); err == nil {
		if sc.indexBytes += fi.Size(); sc.indexBytes > maxIndexBytes {
			sc.tell(dir, fmt.Sprintf("an index past the %d bytes of indexes read in all", maxIndexBytes))
			return
		}
	}
	paths, shared, err := indexGitlinks(filepath.Join(g, "index"), hashSize(g), limit)
	if err != nil {
		sc.tell(dir, fmt.Sprintf("an index that cannot be read (%v)", err))
	}
	if shared != "" {
		more, _, err := indexGitlinks(filepath.Join(g, "sharedindex."+shared), hashSize(g), limit-len(paths))
		if err != nil {
			sc.tell(dir, fmt.Sprintf("a shared index that cannot be read (%v)", err))
		}
		paths = append(paths, more...)
	}
	if level >= maxRepoLevels {
		if len(paths) > 0 {
			sc.tell(dir, fmt.Sprintf("gitlinks nested more than %d repositories down, which were not looked at", maxRepoLevels))
		}
		return
	}
	sc.nlinks += len(paths)
	for _, p := range paths {
		if !filepath.IsLocal(filepath.FromSlash(p)) {
			sc.tell(dir, "a gitlink outside its repository ("+strconv.Quote(clipText(p, 200))+")")
			continue
		}
		sc.add(filepath.Join(dir, filepath.FromSlash(p)), level+1)
	}
}

// walk queues the folders at most nestedDepth down from dir that hold a
// .git or look like a git folder themselves, judging each by its own
// listing.
func (sc *nestedScan) walk(dir string, depth int) {
	f, err := os.Open(dir)
	if err != nil {
		return
	}
	defer f.Close()
	n := 0
	var subs []string
	for {
		// A chunk at a time: a folder of millions of entries is not read
		// whole.
		entries, err := f.ReadDir(1024)
		for _, e := range entries {
			n++
			sc.entries++
			if n > maxFolderEntries || sc.entries > maxNestedEntries {
				sc.tell(dir, fmt.Sprintf("a folder of more entries than are looked at (%d in one folder, %d in all)", maxFolderEntries, maxNestedEntries))
				return
			}
			if dir != sc.root && agentControl(e.Name()) {
				sc.control(dir, e.Name())
			}
			switch {
			case e.Name() == ".git":
				sc.add(dir, 1)
			case e.Name() == "HEAD" && looksLikeGitDir(dir):
				sc.add(dir, 1)
			case e.IsDir() && depth <= nestedDepth: // a link is not followed
				subs = append(subs, e.Name())
			}
		}
		if err != nil || len(entries) == 0 {
			break
		}
	}
	for _, name := range subs {
		sc.walk(filepath.Join(dir, name), depth+1)
	}
}

// agentControl reports whether name is that of a folder or file whose
// agents, skills, settings or MCP servers cadre and other agent tools load
// when run in the folder that holds it or below.
func agentControl(name string) bool {
	switch strings.ToLower(name) {
	case ".cadre", ".claude", ".opencode", ".mcp.json":
		return true
	}
	return false
}

// maxAgentControlEntries bounds the entries of one nested control folder that
// are summed; past it, the folder is told as such.
const maxAgentControlEntries = 10_000

// control tells of the agent control folder or file name in dir (below
// the root, where the sandbox cannot keep it read-only before it exists),
// with a sum of all it holds: a command that makes or changes one gives
// the agents cadre loads when run in dir what the command wrote (an agent
// file without tools: gets every tool).
func (sc *nestedScan) control(dir, name string) {
	path := filepath.Join(dir, name)
	what := name + ", the agents, skills and settings cadre and other agent tools load when run in this folder"
	if strings.EqualFold(name, ".mcp.json") {
		what = name + ", the MCP servers cadre starts when run in this folder"
	}
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
		sc.tell(dir, what+" ("+err.Error()+")")
		return
	case !fi.IsDir():
		sc.tell(dir, what+" "+fileSum(path))
		return
	}
	h := sha256.New()
	n := 0
	var sum func(folder, rel string) bool
	sum = func(folder, rel string) bool {
		entries, err := os.ReadDir(folder)
		if err != nil {
			fmt.Fprintf(h, "%s\x00(%v)\n", rel, err)
			return true
		}
		for _, e := range entries {
			if n++; n > maxAgentControlEntries {
				return false
			}
			p, r := filepath.Join(folder, e.Name()), rel+"/"+e.Name()
			if e.IsDir() {
				fmt.Fprintf(h, "%s/\n", r)
				if !sum(p, r) {
					return false
				}
				continue
			}
			if sc.budget(dir, p) {
				fmt.Fprintf(h, "%s\x00%s\n", r, fileSum(p))
			}
		}
		return true
	}
	if !sum(path, name) {
		sc.tell(dir, fmt.Sprintf("%s (more than %d entries, not all looked at)", what, maxAgentControlEntries))
		return
	}
	sc.tell(dir, fmt.Sprintf("%s (contents sha256 %s)", what, hex.EncodeToString(h.Sum(nil)[:6])))
}

// looksLikeGitDir reports whether dir has what git takes for a git
// folder (a bare repository), which git finds from the folders below it:
// HEAD, and objects and refs of its own or a commondir naming them.
func looksLikeGitDir(dir string) bool {
	if _, err := os.Lstat(filepath.Join(dir, "HEAD")); err != nil {
		return false
	}
	if _, err := os.Lstat(filepath.Join(dir, "commondir")); err == nil {
		return true
	}
	for _, name := range []string{"objects", "refs"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
			return false
		}
	}
	return true
}

// examine tells what the repository in r.dir holds that is not plainly
// inert, and queues its gitlinks.
func (sc *nestedScan) examine(r nestedRepo) {
	if g, ok := sc.gitDir(r.dir); ok {
		sc.examineGit(r.dir, g, r.level, true)
	}
}

// gitDir returns the git folder of the repository in dir, as git finds
// it, telling what cadre cannot vouch for; false when there is none.
func (sc *nestedScan) gitDir(dir string) (string, bool) {
	dotgit := filepath.Join(dir, ".git")
	fi, err := os.Lstat(dotgit)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !looksLikeGitDir(dir) {
			return "", false // a gitlink whose folder holds no repository
		}
		sc.tell(dir, "a folder git takes for a repository of its own (it has HEAD and no .git)")
		return dir, true
	case err != nil:
		sc.tell(dir, fmt.Sprintf(".git cannot be read (%v)", err))
	case fi.Mode()&fs.ModeSymlink != 0:
		to, _ := os.Readlink(dotgit)
		sc.tell(dir, ".git is a symbolic link (to "+clipText(to, 200)+")")
	case fi.IsDir():
		return dotgit, true
	case fi.Mode().IsRegular():
		// A submodule's or a worktree's: the git folder it names is
		// looked at in its stead, where it really is.
		line, path, ok, err := gitPointer(dotgit, "gitdir: ")
		if err != nil {
			sc.tell(dir, fmt.Sprintf(".git cannot be read (%v)", err))
			return "", false
		}
		if !ok {
			sc.tell(dir, ".git is a file cadre does not read as git does ("+strconv.Quote(clipText(line, 200))+")")
			return "", false
		}
		real, err := resolveFrom(dir, path)
		if err != nil || !isGitDir(real) {
			return "", false // git finds no repository there either
		}
		if !tool.Within(sc.realRoot, real) {
			sc.tell(dir, ".git names a git folder outside the workspace ("+clipText(real, 200)+")")
			return "", false
		}
		return real, true
	default:
		sc.tell(dir, ".git is neither a folder nor a file")
	}
	return "", false
}

// examineGit tells what the git folder g of the repository in dir holds
// that is not plainly inert: settings, hooks, a commondir, the git
// folders of its submodules; with links, it queues the gitlinks of its
// index.
func (sc *nestedScan) examineGit(dir, g string, level int, links bool) {
	real := g
	if r, err := filepath.EvalSymlinks(g); err == nil {
		real = r
	}
	// A git folder met first without its index (as a submodule's folder
	// or a common folder) has its index read when it is met again as a
	// repository's.
	if links && !sc.linked[real] {
		defer func() {
			sc.linked[real] = true
			sc.links(dir, g, level)
		}()
	}
	if sc.examined[real] {
		return
	}
	sc.examined[real] = true
	// The few names git acts on are looked up, not the folder listed: a
	// command may have put millions of files there.
	f, err := os.Open(g)
	if err != nil {
		sc.tell(dir, fmt.Sprintf("a git folder that cannot be read (%v)", err))
		return
	}
	f.Close()
	for _, name := range []string{"commondir", "config", "config.worktree", "hooks", "modules"} {
		if _, err := os.Lstat(filepath.Join(g, name)); errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			sc.tell(dir, fmt.Sprintf("%s cannot be read (%v)", name, err))
			continue
		}
		switch name {
		case "commondir":
			// A linked worktree's: the common git folder it names is
			// examined in its stead when it is in the workspace.
			_, line, ok, err := gitPointer(filepath.Join(g, "commondir"), "")
			common, rerr := resolveFrom(g, line)
			switch {
			case err != nil || !ok:
				sc.tell(dir, "a commondir cadre does not read as git does")
			case rerr != nil || !isGitDir(common):
				// git finds no common folder there either.
			case !tool.Within(sc.realRoot, common):
				sc.tell(dir, "a commondir naming a git folder outside the workspace ("+clipText(common, 200)+")")
			default:
				sc.examineGit(dir, common, level, false)
			}
		case "config", "config.worktree":
			file := filepath.Join(g, name)
			if !sc.budget(dir, file) {
				continue
			}
			found := configNotInert(file)
			found = slices.DeleteFunc(found, func(f string) bool {
				wt, ok := strings.CutPrefix(f, "core.worktree = ")
				return ok && ownWorktree(g, wt)
			})
			if len(found) > 0 {
				for _, what := range found {
					sc.tell(dir, what)
				}
				// A change to any of it is a change.
				if sum := fileSum(file); strings.HasPrefix(sum, "(sha256") {
					sc.tell(dir, name+" "+sum)
				}
			}
		case "hooks":
			sc.hooks(dir, filepath.Join(g, "hooks"))
		case "modules":
			sc.modules(dir, filepath.Join(g, "modules"), level, 0)
		}
	}
}

// maxHooks is the most entries of a hooks folder looked at.
const maxHooks = 10_000

// hooks tells the hooks of a hooks folder, with a sum of each, bar
// samples and copies of the user's template.
func (sc *nestedScan) hooks(dir, folder string) {
	f, err := os.Open(folder)
	if err != nil {
		sc.tell(dir, fmt.Sprintf("a hooks folder that cannot be read (%v)", err))
		return
	}
	defer f.Close()
	n := 0
	for {
		entries, err := f.ReadDir(1024)
		for _, h := range entries {
			if n++; n > maxHooks {
				sc.tell(dir, fmt.Sprintf("a hooks folder of more than %d entries", maxHooks))
				return
			}
			path := filepath.Join(folder, h.Name())
			if !strings.HasSuffix(h.Name(), ".sample") && !sc.fromTemplate(path) {
				sum := "(not summed)"
				if sc.budget(dir, path) {
					sum = fileSum(path)
				}
				sc.tell(dir, "hook "+h.Name()+" "+sum)
			}
		}
		if errors.Is(err, io.EOF) || len(entries) == 0 {
			return
		}
		if err != nil {
			sc.tell(dir, fmt.Sprintf("a hooks folder that cannot be read (%v)", err))
			return
		}
	}
}

// maxModules is the most folders of a repository's modules looked at.
const maxModules = 1_000

// modules examines the git folders of a repository's submodules, which
// git uses again (its hooks and settings included) when it checks a
// submodule out: those under folder, at any depth.
func (sc *nestedScan) modules(dir, folder string, level, depth int) {
	f, err := os.Open(folder)
	if err != nil {
		sc.tell(dir, fmt.Sprintf("a modules folder that cannot be read (%v)", err))
		return
	}
	// At most one more entry than are looked at: a folder of millions is
	// not read whole.
	entries, err := f.ReadDir(maxModules + 1)
	f.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		sc.tell(dir, fmt.Sprintf("a modules folder that cannot be read (%v)", err))
		return
	}
	for _, e := range entries {
		if sc.nmodules++; sc.nmodules > maxModules || depth > 8 {
			sc.tell(dir, "more submodule git folders than are looked at")
			return
		}
		sub := filepath.Join(folder, e.Name())
		if !e.IsDir() {
			continue
		}
		if isGitDir(sub) {
			rel, _ := filepath.Rel(dir, sub)
			sc.examineGit(filepath.Join(dir, rel), sub, level+1, false)
		} else {
			sc.modules(dir, sub, level, depth+1)
		}
	}
}

// maxReadBytes is the most bytes of configurations and hooks one
// stock-taking reads: a command could make thousands of large ones.
var maxReadBytes int64 = 256 << 20

// budget counts file against the bytes one stock-taking reads, and
// reports whether it may be read; past the budget it tells so, for dir.
func (sc *nestedScan) budget(dir, file string) bool {
	fi, err := os.Lstat(file)
	if err != nil {
		return true // its reader says why
	}
	if sc.read += fi.Size(); sc.read > maxReadBytes {
		sc.tell(dir, fmt.Sprintf("%s not read: past the %d bytes of configurations and hooks read in one stock-taking", filepath.Base(file), maxReadBytes))
		return false
	}
	return true
}

// fileSum is a short sum of a file's contents, or what stands in for one.
func fileSum(file string) string {
	fi, err := os.Lstat(file)
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		to, _ := os.Readlink(file)
		return "(a link to " + clipText(to, 200) + ")"
	}
	b, err := readRegular(file, 16<<20)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	sum := sha256.Sum256(b)
	return "(sha256 " + hex.EncodeToString(sum[:6]) + ")"
}

// gitDirOf returns the git folder of the repository whose working tree is
// dir, from its .git folder or file, or "".
func gitDirOf(dir string) string {
	dotgit := filepath.Join(dir, ".git")
	fi, err := os.Lstat(dotgit)
	switch {
	case err != nil:
		return ""
	case fi.IsDir():
		return dotgit
	case fi.Mode().IsRegular():
		if g := readGitFile(dotgit, "gitdir:"); g != "" {
			return gitPath(dir, g)
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

// errGitlinks is the error of an index of more gitlinks than are read.
var errGitlinks = errors.New("more gitlinks than are looked at")

// maxIndex is the largest index read, and maxIndexBytes the most bytes
// of indexes read in one stock-taking: past them an index is told as such.
const (
	maxIndex      = 256 << 20
	maxIndexBytes = 1 << 30
)

// indexGitlinks returns the paths of the gitlinks (mode 160000: a
// submodule, or a repository added as one) in a git index file of
// version 2, 3 or 4, at most limit of them; the name of the shared index
// of a split index (its link extension), when there is one; and an error
// when the file is there but cannot be read to its end (or holds more
// gitlinks). A missing file has none. It reads the file as a stream,
// without blocking on a FIFO, and keeps no path longer than git's
// PATH_MAX.
func indexGitlinks(file string, hash, limit int) (out []string, shared string, err error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, "", err
	case !fi.Mode().IsRegular():
		return nil, "", errors.New("not a regular file")
	case fi.Size() > maxIndex:
		return nil, "", fmt.Errorf("%d bytes, more than are read", fi.Size())
	}
	cr := &countReader{r: f}
	r := bufio.NewReaderSize(cr, 64<<10)
	read := func() int64 { return cr.n - int64(r.Buffered()) }
	var head [12]byte
	if _, err := io.ReadFull(r, head[:]); err != nil || string(head[:4]) != "DIRC" {
		return nil, "", errors.New("not an index git writes")
	}
	version := binary.BigEndian.Uint32(head[4:8])
	if version < 2 || version > 4 {
		return nil, "", fmt.Errorf("index version %d", version)
	}
	cut := errors.New("cut short")
	n := binary.BigEndian.Uint32(head[8:12])
	fixed := make([]byte, 40+hash+2)
	var prev []byte
	for range n {
		// ctime, mtime (8 bytes each), dev, ino, mode, uid, gid, size (4
		// each), the object name, then 2 bytes of flags.
		if _, err := io.ReadFull(r, fixed); err != nil {
			return out, "", cut
		}
		size := len(fixed)
		mode := binary.BigEndian.Uint32(fixed[24:28])
		flags := binary.BigEndian.Uint16(fixed[len(fixed)-2:])
		if flags&0x4000 != 0 { // extended flags, which git reads whatever the version
			if _, err := r.Discard(2); err != nil {
				return out, "", cut
			}
			size += 2
		}
		// The path's length is in the flags, as git reads it, unless it
		// is 0xFFF or more: then the path ends at a NUL.
		length := int(flags & 0x0fff)
		var name []byte
		if version == 4 {
			// The length of the previous path to drop, as a varint, then
			// the rest of this one and a NUL.
			drop, ok := indexVarint(r)
			if !ok || drop > len(prev) {
				return out, "", cut
			}
			kept := len(prev) - drop
			var rest []byte
			if length < 0x0fff {
				if length < kept {
					return out, "", cut
				}
				rest, err = readN(r, length-kept)
				if err == nil {
					_, err = r.Discard(1)
				}
			} else {
				rest, err = readPathPart(r)
			}
			if err != nil {
				return out, "", cut
			}
			if kept+len(rest) > maxGitPath {
				return out, "", errors.New("a path longer than git allows")
			}
			name = append(prev[:kept:kept], rest...)
		} else {
			if length < 0x0fff {
				name, err = readN(r, length)
			} else {
				name, err = readPathPart(r)
			}
			if err != nil {
				return out, "", cut
			}
			// The entry is padded with NULs to a multiple of 8 bytes, at
			// least one, from the length git reads.
			size += len(name)
			pad := (size+8)&^7 - size
			if length >= 0x0fff {
				pad-- // readPathPart took the NUL
			}
			if _, err := r.Discard(pad); err != nil {
				return out, "", cut
			}
		}
		prev = name
		if mode&0o170000 == 0o160000 {
			if len(out) >= limit {
				return out, "", errGitlinks
			}
			out = append(out, string(name))
		}
	}
	// Extensions, each a signature, a size and its data, up to the
	// index's own sum: the link extension names the shared index.
	for fi.Size()-read() > int64(hash) {
		var ext [8]byte
		if _, err := io.ReadFull(r, ext[:]); err != nil {
			return out, "", cut
		}
		size := int64(binary.BigEndian.Uint32(ext[4:]))
		if size > fi.Size()-read() {
			return out, "", cut
		}
		if string(ext[:4]) == "link" && size >= int64(hash) {
			sum := make([]byte, hash)
			if _, err := io.ReadFull(r, sum); err != nil {
				return out, "", cut
			}
			shared = hex.EncodeToString(sum)
			size -= int64(hash)
		}
		if _, err := r.Discard(int(size)); err != nil {
			return out, "", cut
		}
	}
	return out, shared, nil
}

// A countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// readN reads n bytes of an index entry's path (n < 0xFFF).
func readN(r *bufio.Reader, n int) ([]byte, error) {
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}

// readPathPart reads a NUL-terminated path of an index entry, at most
// maxGitPath bytes, and returns it without the NUL.
func readPathPart(r *bufio.Reader) ([]byte, error) {
	var b []byte
	for {
		part, err := r.ReadSlice(0)
		b = append(b, part...)
		if len(b) > maxGitPath+1 {
			return nil, errors.New("a path longer than git allows")
		}
		switch {
		case err == nil:
			return b[:len(b)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, errors.New("cut short")
		}
	}
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

// inertKeys are the settings of a git configuration known to make git run
// no program, as section.key or section.*.key (any subsection), lower
// case: what git init, git clone and common use write. URLs are checked
// apart (see inertURL).
var inertKeys = []string{
	"core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates", "core.ignorecase",
	"core.precomposeunicode", "core.symlinks", "core.autocrlf", "core.eol", "core.safecrlf", "core.quotepath",
	"core.sharedrepository", "core.longpaths", "core.sparsecheckout", "core.sparsecheckoutcone",
	"extensions.objectformat", "extensions.worktreeconfig", "extensions.partialclone",
	"remote.*.url", "remote.*.pushurl", "remote.*.fetch", "remote.*.push", "remote.*.tagopt", "remote.*.prune",
	"remote.*.promisor", "remote.*.partialclonefilter",
	"branch.*.remote", "branch.*.merge", "branch.*.rebase", "branch.*.pushremote",
	"user.name", "user.email", "init.defaultbranch", "pull.rebase", "pull.ff", "push.default", "push.autosetupremote",
	"fetch.prune", "gc.auto", "color.ui", "index.version", "index.sparse", "feature.manyfiles", "lfs.repositoryformatversion",
	"branch.*.vscode-merge-base", "maintenance.auto", "maintenance.strategy",
	"submodule.*.url", "submodule.*.active", "submodule.active",
}

// configNotInert returns what a git config file holds besides settings
// known to run nothing, each as "key = value"; a file that cannot be read
// as git reads it counts as one such thing.
func configNotInert(file string) []string {
	b, err := readRegular(file, maxGitConfig)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return []string{"a configuration that cannot be read (" + err.Error() + ")"}
	}
	// What the parser here could read otherwise than git: a byte order
	// mark, a value continued on the next line, a NUL.
	if bytes.HasPrefix(b, []byte("\xef\xbb\xbf")) || bytes.Contains(b, []byte("\\\n")) || bytes.Contains(b, []byte("\\\r\n")) || bytes.IndexByte(b, 0) >= 0 {
		return []string{"a configuration written in a way cadre does not read as git does (a byte order mark, a continued line or a NUL)"}
	}
	var out []string
	for e := range gitConfigEntries(b) {
		full, shown := e.section+"."+e.key, e.section
		if e.hasSub {
			full, shown = e.section+".*."+e.key, e.section+"."+e.sub
		}
		if slices.Contains(inertKeys, full) && (!strings.HasSuffix(e.key, "url") || inertURL(e.value)) {
			continue
		}
		out = append(out, fmt.Sprintf("%s.%s = %s", shown, e.key, clipText(e.value, 200)))
	}
	return out
}

// inertURL reports whether a remote's URL makes git run no program of
// the repository's choosing: not a transport helper's (ext::, fd::, or
// any helper::), and not one that starts like an option.
func inertURL(u string) bool {
	return !strings.Contains(u, "::") && !strings.HasPrefix(u, "-") && !strings.HasPrefix(strings.ToLower(u), "ext:") &&
		!strings.HasPrefix(strings.ToLower(u), "fd:")
}

// fromTemplate reports whether a hook is a copy of one of the user's own
// template (init.templateDir in the user's git configuration, or
// GIT_TEMPLATE_DIR), which git init and git clone copy into every
// repository they make: the user's, not a command's.
func (sc *nestedScan) fromTemplate(hook string) bool {
	mine, err := readRegular(hook, 1<<20)
	if err != nil {
		return false
	}
	if sc.templates == nil {
		sc.templates = []string{}
		if d := os.Getenv("GIT_TEMPLATE_DIR"); d != "" {
			sc.templates = append(sc.templates, d)
		}
		if home, err := os.UserHomeDir(); err == nil {
			for _, config := range []string{filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "git", "config")} {
				if d := gitConfigValue(config, "init", "templatedir"); d != "" {
					sc.templates = append(sc.templates, gitPath(home, d))
				}
			}
		}
	}
	for _, d := range sc.templates {
		if theirs, err := readRegular(filepath.Join(d, "hooks", filepath.Base(hook)), 1<<20); err == nil && bytes.Equal(mine, theirs) {
			return true
		}
	}
	return false
}

// gitPointer reads a file of git's that names a path (a .git file after
// prefix "gitdir: ", a commondir with none) as git reads it: up to 1 MiB,
// the line ends trimmed, and nothing else taken for the path; line is
// what it holds, for messages. ok is false when the file cannot be read
// or holds what git would not have written (no prefix, an empty path, a
// control byte).
func gitPointer(file, prefix string) (line, path string, ok bool, err error) {
	b, err := readRegular(file, 1<<20)
	if err != nil {
		return "", "", false, err
	}
	line = strings.TrimRight(string(b), "\r\n")
	path, ok = strings.CutPrefix(line, prefix)
	ok = ok && path != "" && strings.IndexFunc(path, unicode.IsControl) < 0
	return line, path, ok, nil
}

// resolveFrom resolves path, relative to dir unless absolute, the way the
// kernel does: each link followed before a ".." after it is applied, not
// the path cleaned first (which filepath.Join would do).
func resolveFrom(dir, path string) (string, error) {
	if !filepath.IsAbs(path) {
		path = dir + string(filepath.Separator) + path
	}
	return filepath.EvalSymlinks(path)
}

// ownWorktree reports whether core.worktree wt of the git folder g names
// the checkout whose .git file names g back: what git submodule writes in
// a submodule's git folder, which moves nothing.
func ownWorktree(g, wt string) bool {
	tree, err := resolveFrom(g, wt)
	if err != nil {
		return false
	}
	_, path, ok, err := gitPointer(filepath.Join(tree, ".git"), "gitdir: ")
	if err != nil || !ok {
		return false
	}
	back, err := resolveFrom(tree, path)
	real, rerr := filepath.EvalSymlinks(g)
	return err == nil && rerr == nil && back == real
}

// todo tells the exec lines of a rebase or cherry-pick left in progress in
// the git folder g: git runs them when the user goes on with it (git
// rebase --continue), and a command may write them, as it may write the
// rest of what git keeps while it works.
func (sc *nestedScan) todo(dir, g string) {
	for _, name := range []string{"rebase-merge/git-rebase-todo", "rebase-merge/done", "sequencer/todo"} {
		b, err := readRegular(filepath.Join(g, name), 16<<20)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				sc.tell(dir, fmt.Sprintf(".git/%s cannot be read (%v)", name, err))
			}
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			word, _, _ := strings.Cut(strings.TrimSpace(line), " ")
			if word == "exec" || word == "x" {
				sc.tell(dir, fmt.Sprintf(".git/%s runs a command when the rebase goes on (%s) %s", name, clipText(strings.TrimSpace(line), 200), fileSum(filepath.Join(g, name))))
			}
		}
	}
}
