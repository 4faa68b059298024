package builtin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultBwrap is the bubblewrap program a Sandbox runs when its Bwrap is
// empty, looked up in PATH.
const DefaultBwrap = "bwrap"

// probeTimeout bounds Probe's trial run of bubblewrap.
const probeTimeout = 30 * time.Second

var (
	// ErrNoBwrap is returned by Probe when the bubblewrap program is not
	// found.
	ErrNoBwrap = errors.New("bubblewrap (bwrap) is not installed")
	// ErrSandboxUnsupported is returned by Probe on systems other than
	// Linux, where bubblewrap does not run.
	ErrSandboxUnsupported = errors.New("bubblewrap runs on Linux only")
	// ErrSandboxCapabilities is returned by Probe when a command in the
	// sandbox would keep capabilities, with which one running as root
	// could undo the sandbox (remount the file system writable).
	ErrSandboxCapabilities = errors.New("commands in the sandbox would keep capabilities")
)

// A ProbeError reports that bubblewrap is installed but could not make a
// sandbox, with what it said.
type ProbeError struct {
	Program string // the bwrap that was run
	Output  string // what it wrote, trimmed
	Err     error  // how it ended
}

func (e *ProbeError) Error() string {
	msg := fmt.Sprintf("%s cannot make a sandbox here (%v)", e.Program, e.Err)
	if e.Output != "" {
		msg += ": " + e.Output
	}
	return msg
}

// Unwrap returns how bwrap ended.
func (e *ProbeError) Unwrap() error { return e.Err }

// A Sandbox confines run_command's commands with bubblewrap on Linux.
//
// A sandboxed command sees the whole file system read-only, except:
//
//   - the workspace, which it may change, but not the workspace's .cadre/
//     folder and .mcp.json (cadre's configuration, agents and run store,
//     which take effect outside the sandbox), nor .git/hooks, .git/config
//     and the folder core.hooksPath names (a hook would run outside the
//     sandbox later); the .git folder itself cannot be moved away. When
//     .cadre/ or .mcp.json is missing, an empty one is made for the time
//     of the command, so that the command cannot create it, and removed
//     afterwards if it is still empty. When one of these is a symbolic
//     link in the workspace or a Writable path, or is reached through
//     one, the command is refused: the link could be replaced;
//   - Writable paths, which it may change;
//   - Hide paths, which it sees empty: a folder as an empty read-only
//     folder, anything else as a file that cannot be opened;
//   - /tmp and the TMPDIR of cadre, which are empty folders of its own,
//     and /dev and /proc, its own minimal ones;
//   - with Network off, /run, /var/run, /var/lib/mysql and
//     /var/lib/sss/pipes, which it sees empty: the system's services keep
//     their Unix sockets there, and a socket reaches its server outside
//     the sandbox whatever the network. Sockets in the workspace, in a
//     Writable path or elsewhere on the file system stay reachable;
//   - ReadOnly paths, which matter only inside a writable or hidden path.
//
// Relative paths are taken from the workspace root, symbolic links are
// resolved, and paths that do not exist when a command starts are left
// out. A path inside another is applied after it, so a more specific rule
// wins (Hide ~ and ReadOnly ~/go shows ~/go alone of the home folder);
// where two lists name the same path, Writable wins over ReadOnly, and
// ReadOnly over Hide. No list may name / itself.
//
// The command runs in namespaces of its own: process ids (it sees only
// its own processes, and every process it starts dies with it), IPC, host
// name and, unless Network is set, the network (only a loopback interface
// of its own; nothing outside, not even the host's loopback services, can
// be reached). It runs in a session of its own, and bubblewrap and
// everything in the sandbox are killed if cadre dies. It holds no
// capabilities, even when cadre runs as root, so it cannot remount what
// it sees read-only; Probe refuses a bubblewrap that leaves it some.
type Sandbox struct {
	// Bwrap is the bubblewrap program: a path, or a name looked up in
	// PATH. Empty means DefaultBwrap.
	Bwrap string
	// Network lets commands use the network of the machine.
	Network bool
	// Hide are paths commands see empty, such as credential stores; see
	// DefaultHidden.
	Hide []string
	// ReadOnly are paths commands may read but not change.
	ReadOnly []string
	// Writable are paths outside the workspace commands may change, such
	// as a build cache.
	Writable []string
}

// DefaultHidden returns the paths a Sandbox should hide on a machine whose
// user has the home folder home: credential stores and browser profiles
// under home, cadre's and other agents' own configuration there, and the
// sockets that would let a command act outside the sandbox (the user's
// runtime folder /run/user/UID with its ssh-agent, gpg-agent and D-Bus
// sockets, the Docker, containerd, Podman, LXD and Incus sockets, the
// system D-Bus, systemd's private socket). They are returned whether they
// exist or not. With the network off, a Sandbox hides more on its own
// (see Sandbox).
//
// Under home: .ssh, .gnupg, .aws, .azure, .config/gcloud, .kube, .docker,
// .netrc, .git-credentials, .config/git/credentials, .config/gh,
// .config/hub, .npmrc, .yarnrc.yml, .pypirc, .cargo/credentials,
// .cargo/credentials.toml, .gem/credentials, .m2/settings.xml,
// .gradle/gradle.properties, .vault-token, .password-store,
// .local/share/keyrings, .terraform.d/credentials.tfrc.json, .pgpass,
// .my.cnf, .s3cfg, .boto, .config/rclone, .config/op, .cadre, .claude,
// .claude.json, .codex, .mozilla, .config/google-chrome, .config/chromium,
// .config/BraveSoftware.
func DefaultHidden(home string) []string {
	var out []string
	if home != "" {
		for _, p := range hiddenInHome {
			out = append(out, filepath.Join(home, filepath.FromSlash(p)))
		}
	}
	if runtime.GOOS != "windows" {
		out = append(out, "/run/user/"+strconv.Itoa(os.Getuid()))
	}
	return append(out, "/run/docker.sock", "/var/run/docker.sock", "/run/containerd", "/run/podman", "/run/dbus", "/var/run/dbus",
		"/run/systemd/private", "/var/lib/lxd/unix.socket", "/var/snap/lxd/common/lxd/unix.socket", "/var/lib/incus/unix.socket")
}

// offlineHidden are the folders where the system's services keep their
// Unix sockets (PostgreSQL, MySQL, nscd, systemd-resolved, libvirt, …),
// hidden from commands when the network is off: a socket reaches its
// server whatever the network namespace, and these servers are outside
// the sandbox.
var offlineHidden = []string{"/run", "/var/run", "/var/lib/mysql", "/var/lib/sss/pipes"}

var hiddenInHome = []string{
	".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker",
	".netrc", ".git-credentials", ".config/git/credentials", ".config/gh", ".config/hub",
	".npmrc", ".yarnrc.yml", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials",
	".m2/settings.xml", ".gradle/gradle.properties", ".vault-token", ".password-store",
	".local/share/keyrings", ".terraform.d/credentials.tfrc.json", ".pgpass", ".my.cnf",
	".s3cfg", ".boto", ".config/rclone", ".config/op",
	".cadre", ".claude", ".claude.json", ".codex",
	".mozilla", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware",
}

// program returns the bwrap to run, looked up in PATH when it is a name.
func (s *Sandbox) program() (string, error) {
	name := s.Bwrap
	if name == "" {
		name = DefaultBwrap
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w (%v)", ErrNoBwrap, err)
	}
	return p, nil
}

// Probe checks that s can confine commands here: that the system is
// Linux, that bubblewrap is installed, that it can make the namespaces s
// asks for (it cannot where unprivileged user namespaces are turned off,
// or in some containers), and that a command inside holds no capability
// (CapEff of /proc/self/status is 0): run as root, bubblewrap would
// otherwise leave it every capability, enough to remount the file system
// writable. It runs bubblewrap once; call it once, before the first
// command. The error wraps ErrSandboxUnsupported, ErrNoBwrap or
// ErrSandboxCapabilities, or is a *ProbeError with what bubblewrap said.
func (s *Sandbox) Probe(ctx context.Context) error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("%w, not on %s", ErrSandboxUnsupported, runtime.GOOS)
	}
	prog, err := s.program()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	// The shell reads its own capabilities with builtins alone.
	args := append(s.namespaceArgs(), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
		"--", "sh", "-c", `while read -r k v; do if [ "$k" = CapEff: ]; then echo "$v"; fi; done < /proc/self/status`)
	out, err := exec.CommandContext(ctx, prog, args...).CombinedOutput()
	msg := strings.Join(strings.Fields(string(out)), " ")
	if len(msg) > 500 {
		msg = msg[:500] + " …"
	}
	if err != nil {
		return &ProbeError{Program: prog, Output: msg, Err: err}
	}
	capEff, err := strconv.ParseUint(msg, 16, 64)
	if err != nil {
		return fmt.Errorf("%s: the capabilities of a command in the sandbox (CapEff of /proc/self/status) could not be read from what it printed: %q", prog, msg)
	}
	if capEff != 0 {
		return fmt.Errorf("%w: %s left a command inside with capabilities (CapEff %s), with which a command run as root can remount the file system writable and change the host; "+
			"use a bubblewrap that drops them (--cap-drop ALL), or run cadre as a user other than root", ErrSandboxCapabilities, prog, msg)
	}
	return nil
}

// namespaceArgs are the options of bwrap that do not depend on the
// command: the namespaces, the life of the sandbox, and no capabilities
// (run as root, bwrap would otherwise keep them all for the command).
func (s *Sandbox) namespaceArgs() []string {
	args := []string{"--die-with-parent", "--new-session", "--cap-drop", "ALL", "--unshare-pid", "--unshare-ipc", "--unshare-uts"}
	if !s.Network {
		args = append(args, "--unshare-net")
	}
	return args
}

type mountKind int

// Mount kinds, weakest first: where two rules name the same path, the
// stronger one is kept.
const (
	mountHide     mountKind = iota // an empty read-only folder, or an unopenable file
	mountPrivate                   // an empty writable folder of the sandbox's own
	mountReadOnly                  // the host's, read-only
	mountWritable                  // the host's, writable
)

// mountPlan gathers the rules of one command's sandbox.
type mountPlan struct {
	rules map[string]mountKind // resolved path -> kind
	dirs  map[string]bool      // resolved path -> is a directory
}

// add adds a rule for p, taken from root when relative. A path that does
// not exist is left out; a rule for / is refused.
func (p *mountPlan) add(root, path string, kind mountKind, list string) error {
	if path == "" {
		return nil
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	path = filepath.Clean(path)
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil // missing, or out of reach: nothing to mount
	}
	if real == "/" {
		if kind == mountWritable && path == root {
			return errors.New("sandbox: the workspace is /, the whole file system, which a sandbox cannot confine; choose a folder as the workspace (or turn the sandbox off)")
		}
		return fmt.Errorf("sandbox: %s lists %s, which is the whole file system; name a folder inside it (or turn the sandbox off)", list, path)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil
	}
	if old, ok := p.rules[real]; !ok || kind > old {
		p.rules[real] = kind
	}
	p.dirs[real] = fi.IsDir()
	return nil
}

// args returns bwrap's options for a command run in root (resolved).
func (p *mountPlan) args(base []string, root string) []string {
	paths := make([]string, 0, len(p.rules))
	for path := range p.rules {
		paths = append(paths, path)
	}
	// A path is mounted after every path that contains it.
	slices.SortFunc(paths, func(a, b string) int {
		if da, db := strings.Count(a, "/"), strings.Count(b, "/"); da != db {
			return da - db
		}
		return strings.Compare(a, b)
	})
	args := append(base, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp")
	var remount []string
	for _, path := range paths {
		switch p.rules[path] {
		case mountWritable:
			args = append(args, "--bind", path, path)
		case mountReadOnly:
			args = append(args, "--ro-bind", path, path)
		case mountPrivate:
			args = append(args, "--tmpfs", path)
		case mountHide:
			if p.dirs[path] {
				args = append(args, "--tmpfs", path)
				remount = append(remount, path)
			} else {
				args = append(args, "--ro-bind", "/dev/null", path)
			}
		}
	}
	// Hidden folders are made read-only last, once the mounts inside them
	// have their mount points.
	for _, path := range slices.Backward(remount) {
		args = append(args, "--remount-ro", path)
	}
	return append(args, "--chdir", root)
}

// plan returns the bwrap options that confine a command run in root, the
// workspace (resolved), with hidden extra paths to hide.
func (s *Sandbox) plan(root string, hidden []string) ([]string, error) {
	p := &mountPlan{rules: map[string]mountKind{}, dirs: map[string]bool{}}
	add := func(path string, kind mountKind, list string) error { return p.add(root, path, kind, list) }
	if err := checkControlLinks(root, controlPaths(root), s.writableRoots(root)); err != nil {
		return nil, err
	}
	for _, h := range s.Hide {
		if err := add(h, mountHide, "hide"); err != nil {
			return nil, err
		}
	}
	for _, h := range hidden {
		if err := add(h, mountHide, "hide"); err != nil {
			return nil, err
		}
	}
	if !s.Network {
		for _, h := range offlineHidden {
			_ = add(h, mountHide, "")
		}
	}
	if tmp := os.TempDir(); tmp != "/tmp" {
		_ = add(tmp, mountPrivate, "TMPDIR")
	}
	for _, r := range s.ReadOnly {
		if err := add(r, mountReadOnly, "readOnly"); err != nil {
			return nil, err
		}
	}
	for _, r := range controlPaths(root) {
		_ = add(r, mountReadOnly, "")
	}
	for _, w := range s.Writable {
		if err := add(w, mountWritable, "writable"); err != nil {
			return nil, err
		}
	}
	if err := add(root, mountWritable, "the workspace"); err != nil {
		return nil, err
	}
	// The .git folder is mounted on itself, so that it cannot be moved
	// away and replaced by one with hooks of the command's choosing.
	if fi, err := os.Lstat(filepath.Join(root, ".git")); err == nil && fi.IsDir() {
		_ = add(filepath.Join(root, ".git"), mountWritable, "")
	}
	return p.args(s.namespaceArgs(), root), nil
}

// writableRoots returns the folders a command may change, resolved: the
// workspace root (resolved already) and the Writable paths that exist.
func (s *Sandbox) writableRoots(root string) []string {
	out := []string{root}
	for _, w := range s.Writable {
		if !filepath.IsAbs(w) {
			w = filepath.Join(root, w)
		}
		if real, err := filepath.EvalSymlinks(w); err == nil {
			out = append(out, real)
		}
	}
	return out
}

// checkControlLinks refuses control paths that a command could swap: the
// sandbox makes a control path read-only where its links lead, not where
// its name is, so a symbolic link on the way to it that lies in a folder
// the command may change (.cadre -> ../shared-cadre in the workspace)
// could be replaced by a folder of the command's own, which cadre or git
// would then read outside the sandbox.
func checkControlLinks(root string, controls, writable []string) error {
	for _, c := range controls {
		link, target := writableLink(c, writable, 0)
		if link == "" {
			continue
		}
		name, where := c, "a folder commands may change"
		if rel, err := filepath.Rel(root, c); err == nil && filepath.IsLocal(rel) {
			name = rel
		}
		if rel, err := filepath.Rel(root, link); err == nil && filepath.IsLocal(rel) {
			link, where = rel, "the workspace"
		}
		what := fmt.Sprintf("%s is a symbolic link (to %s)", link, target)
		if link != name {
			what = fmt.Sprintf("the way to it passes %s, a symbolic link (to %s),", link, target)
		}
		return fmt.Errorf("sandbox: %s, which commands must not change (what is written there takes effect outside the sandbox), cannot be protected: %s in %s, "+
			"so a command could put a file or folder of its own in the link's place; replace the link with what it points to (or turn the sandbox off)", name, what, where)
	}
	return nil
}

// maxLinks bounds the symbolic links writableLink follows, as the kernel
// does (40).
const maxLinks = 40

// writableLink follows path from / a name at a time, links included, and
// returns the first symbolic link met that lies in one of the folders
// writable (resolved), with what it points to; "" when there is none, or
// path ends before it is reached.
func writableLink(path string, writable []string, links int) (link, target string) {
	parts := strings.Split(filepath.Clean(path), string(filepath.Separator))
	cur := string(filepath.Separator)
	for i, part := range parts {
		if part == "" {
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", "" // missing: nothing to mount from here on
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		to, err := os.Readlink(next)
		if err != nil {
			return "", ""
		}
		if slices.ContainsFunc(writable, func(w string) bool { return within(w, cur) }) {
			return next, to
		}
		if links++; links > maxLinks {
			return "", ""
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(cur, to)
		}
		return writableLink(filepath.Join(append([]string{to}, parts[i+1:]...)...), writable, links)
	}
	return "", ""
}

// within reports whether path is dir or lies inside it.
func within(dir, path string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator)) || dir == string(filepath.Separator)
}

// controlFiles are the files and folders of a workspace root through which
// what a command writes would take effect outside the sandbox: cadre's
// configuration, agents and run store, and the MCP servers cadre starts.
// They are read-only in the sandbox, and made (empty) when missing.
var controlFiles = []struct {
	name string
	dir  bool
}{{".cadre", true}, {".mcp.json", false}}

// controlPaths returns the paths of the workspace root that a sandboxed
// command may not change besides the control files: the git hooks and
// configuration of the repository at root, if any, and the hooks folder
// core.hooksPath names. The hooks folder is created when missing, as git
// itself does, so that it can be made read-only.
func controlPaths(root string) []string {
	out := []string{filepath.Join(root, ".cadre"), filepath.Join(root, ".mcp.json")}
	dotgit := filepath.Join(root, ".git")
	fi, err := os.Lstat(dotgit)
	if err != nil {
		return out
	}
	var gitDirs []string
	switch {
	case fi.IsDir():
		gitDirs = append(gitDirs, dotgit)
	case fi.Mode().IsRegular():
		// A linked worktree or a submodule: .git names the git folder.
		if dir := readGitFile(dotgit, "gitdir:"); dir != "" {
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(root, dir)
			}
			gitDirs = append(gitDirs, dir)
			if common := readGitFile(filepath.Join(dir, "commondir"), ""); common != "" {
				if !filepath.IsAbs(common) {
					common = filepath.Join(dir, common)
				}
				gitDirs = append(gitDirs, filepath.Clean(common))
			}
		}
	}
	for _, g := range gitDirs {
		if st, err := os.Stat(g); err != nil || !st.IsDir() {
			continue
		}
		hooks := filepath.Join(g, "hooks")
		if _, err := os.Lstat(hooks); errors.Is(err, os.ErrNotExist) {
			_ = os.Mkdir(hooks, 0o755)
		}
		out = append(out, hooks, filepath.Join(g, "config"), filepath.Join(g, "config.worktree"))
		if mods, err := filepath.Glob(filepath.Join(g, "modules", "*")); err == nil {
			for _, m := range mods {
				out = append(out, filepath.Join(m, "hooks"), filepath.Join(m, "config"))
			}
		}
		if hp := hooksPath(filepath.Join(g, "config")); hp != "" {
			if strings.HasPrefix(hp, "~/") {
				if home, err := os.UserHomeDir(); err == nil {
					hp = filepath.Join(home, hp[2:])
				}
			}
			if !filepath.IsAbs(hp) {
				hp = filepath.Join(root, hp)
			}
			out = append(out, hp)
		}
	}
	return out
}

// readGitFile returns the first line of file, after prefix when prefix is
// not empty, trimmed; "" when there is none.
func readGitFile(file, prefix string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSpace(line)
	if prefix != "" {
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			return ""
		}
		line = strings.TrimSpace(rest)
	}
	return line
}

// hooksPath returns core.hooksPath from a git config file, or "".
func hooksPath(config string) string {
	b, err := os.ReadFile(config)
	if err != nil {
		return ""
	}
	section, value := "", ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			name, _, _ := strings.Cut(strings.Trim(line, "[]"), " ")
			section = strings.ToLower(strings.TrimSpace(name))
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if section == "core" && ok && strings.EqualFold(strings.TrimSpace(key), "hooksPath") {
			value = strings.Trim(strings.TrimSpace(val), `"`)
		}
	}
	return value
}

// placeholders makes the control files that are missing for the time of
// the commands that run, and removes them afterwards if still empty.
type placeholders struct {
	mu    sync.Mutex
	users map[string]int // placeholder path -> commands running with it
}

// acquire makes the missing control files of root and returns the ones
// this call must release.
func (ph *placeholders) acquire(root string) []string {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	var held []string
	for _, c := range controlFiles {
		path := filepath.Join(root, c.name)
		if ph.users[path] > 0 {
			ph.users[path]++
			held = append(held, path)
			continue
		}
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			continue // there, or out of reach: not ours
		}
		var err error
		if c.dir {
			err = os.Mkdir(path, 0o700)
		} else {
			var f *os.File
			if f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
				err = f.Close()
			}
		}
		if err != nil {
			continue
		}
		if ph.users == nil {
			ph.users = map[string]int{}
		}
		ph.users[path] = 1
		held = append(held, path)
	}
	return held
}

// release gives back what acquire returned; the last command to give a
// placeholder back removes it if it is still empty.
func (ph *placeholders) release(held []string) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	for _, path := range held {
		if ph.users[path]--; ph.users[path] > 0 {
			continue
		}
		delete(ph.users, path)
		fi, err := os.Lstat(path)
		switch {
		case err != nil:
		case fi.IsDir():
			_ = os.Remove(path) // fails, as it should, when not empty
		case fi.Mode().IsRegular() && fi.Size() == 0:
			_ = os.Remove(path)
		}
	}
}
