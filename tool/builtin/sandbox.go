package builtin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cadre-ai/cadre/internal/safefile"
	"github.com/cadre-ai/cadre/tool"
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
//     folder, .mcp.json, .claude/ and .opencode/ (configuration, agents
//     and run store, read outside the sandbox), nor what git reads and
//     runs (a hook or core.fsmonitor would run outside the sandbox later):
//     a .git file, and in the git folders it leads to (and their
//     worktrees') hooks, info, config, config.worktree, commondir, modules
//     and worktrees' gitdir, and the folder core.hooksPath names. The .git
//     folder, and every folder between the workspace and one of these,
//     cannot be moved away. Where one is missing (but .mcp.json, whose
//     servers apply only in a trusted project), an empty one is made
//     (commondir holding ".", which git takes as the folder itself), so
//     that the command cannot create it, and left in place: removing it
//     while another process's command runs would lift that command's
//     read-only mount; so is an empty .git when the workspace has none
//     but a folder above it holds a repository, which a new one would
//     hide from git. When one of these is a
//     symbolic link in the workspace or a Writable path, or is reached
//     through one, when .cadre holds a link to where commands may write,
//     when .git is a symbolic link, or when git's
//     configuration includes a file commands may change, the command is
//     refused. A repository the command makes where there was none, in
//     the workspace or a folder of it, is the command's, configuration
//     and all;
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
// sockets, the Docker, containerd, Podman, LXD, Incus, CRI-O, BuildKit,
// k3s, libvirt and snapd sockets, the system D-Bus, systemd's private
// socket). They are returned whether they
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
		"/run/systemd/private", "/var/lib/lxd/unix.socket", "/var/snap/lxd/common/lxd/unix.socket", "/var/lib/incus/unix.socket",
		"/run/snapd.socket", "/run/snapd-snap.socket", "/run/libvirt", "/run/crio", "/run/buildkit", "/run/k3s")
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
	args := append(append(s.namespaceArgs(), systemMounts...), "--tmpfs", "/tmp",
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

// systemMounts are the options of bwrap that show the file system
// read-only, with /dev and /proc of the sandbox's own. The kernel's
// settings in /proc/sys and /proc/sysrq-trigger are read-only too: run as
// root, bubblewrap leaves them writable, and a command that holds no
// capability could still set kernel.core_pattern, a program the kernel
// runs as root outside the sandbox, since root's own file permissions
// allow it.
var systemMounts = []string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
	"--ro-bind", "/proc/sys", "/proc/sys", "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger"}

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
	args := append(append(base, systemMounts...), "--tmpfs", "/tmp")
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

// prepare readies a command's sandbox in root: it finds the control
// paths, refuses links among them before any placeholder is made (one
// would be made where the link leads), makes the missing ones, and returns
// bwrap's arguments and the control paths as they are (see replaced).
func (s *Sandbox) prepare(root string, hidden []string) ([]string, controlFiles, error) {
	ctl, err := s.controls(root)
	if err != nil {
		return nil, nil, err
	}
	if err := checkControlLinks(root, ctl.readOnly, s.writableRoots(root)); err != nil {
		return nil, nil, err
	}
	// The plan is checked before anything is made (a workspace of /, a
	// list naming the whole file system are refused), and made again when
	// placeholders were missing, so that they are mounted too.
	args, err := s.plan(root, hidden, ctl)
	if err != nil {
		return nil, nil, err
	}
	if makePlaceholders(ctl.missing) {
		if args, err = s.plan(root, hidden, ctl); err != nil {
			return nil, nil, err
		}
	}
	return args, controlIDs(ctl.readOnly), nil
}

// plan returns the bwrap options that confine a command run in root, the
// workspace (resolved), with hidden extra paths to hide and the control
// paths ctl (see Sandbox.controls), whose placeholders are made.
func (s *Sandbox) plan(root string, hidden []string, ctl controls) ([]string, error) {
	p := &mountPlan{rules: map[string]mountKind{}, dirs: map[string]bool{}}
	add := func(path string, kind mountKind, list string) error { return p.add(root, path, kind, list) }
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
	for _, r := range ctl.readOnly {
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
	for _, w := range ctl.pinned {
		_ = add(w, mountWritable, "")
	}
	// So is every folder on the way from a writable path to a control
	// path, which could otherwise be renamed, mounts and all, and
	// replaced (mv tools tools-old && mkdir -p tools/hooks).
	writable := s.writableRoots(root)
	for _, r := range ctl.readOnly {
		real, err := filepath.EvalSymlinks(r)
		if err != nil {
			continue
		}
		for _, w := range writable {
			if real == w || !tool.Within(w, real) {
				continue
			}
			for d := filepath.Dir(real); d != w && tool.Within(w, d); d = filepath.Dir(d) {
				if _, ok := p.rules[d]; !ok {
					_ = add(d, mountWritable, "")
				}
			}
		}
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
		if slices.ContainsFunc(writable, func(w string) bool { return tool.Within(w, cur) }) {
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

// controls are the paths of a workspace through which what a command
// writes would take effect outside the sandbox: cadre's configuration,
// agents and run store (.cadre), the MCP servers cadre starts (.mcp.json),
// and what git reads and runs (hooks, configuration, and the files that
// name another git folder).
type controls struct {
	readOnly []string      // read-only where they exist
	pinned   []string      // writable, but mounted on themselves so that they cannot be moved away
	missing  []placeholder // made where missing, so that a command cannot create them
}

// A placeholder is a control path made, empty, where it is missing.
type placeholder struct {
	path    string
	dir     bool
	content string // what a file holds: what git takes as it being absent
}

// maxIncludeDepth bounds the git configuration files followed through
// include.path, as git does (10).
const maxIncludeDepth = 10

// controls returns the control paths of the workspace root (resolved), or
// an error saying why the sandbox cannot protect them.
//
// Besides .cadre, .mcp.json, .claude and .opencode: a .git file (a linked
// worktree or a submodule) is read-only; in each git folder it leads to,
// hooks, info, config, config.worktree, commondir and modules, and in its
// worktrees the same and worktrees/*/gitdir, are read-only, with the
// folder core.hooksPath names. Where the git folder is writable, those
// missing are made, empty (commondir holding ".", the git folder itself),
// as git takes them, and left (see makePlaceholders). A .git that is a
// symbolic link, or configuration that includes a file commands may
// change, is refused. Without .git at root, when a folder above holds a
// repository, an empty read-only .git is made, so that the command cannot
// make a repository that git would find first there; without a repository
// above, the command may make one (git init).
func (s *Sandbox) controls(root string) (controls, error) {
	// .mcp.json, when missing, is not made: an empty file would be an
	// error to its readers and show in git status; one a command creates
	// is a project setting that needs trust (see the CLI's project trust).
	c := controls{
		readOnly: []string{filepath.Join(root, ".cadre"), filepath.Join(root, ".mcp.json"),
			filepath.Join(root, ".claude"), filepath.Join(root, ".opencode")},
		missing: []placeholder{{path: filepath.Join(root, ".cadre"), dir: true},
			{path: filepath.Join(root, ".claude"), dir: true}, {path: filepath.Join(root, ".opencode"), dir: true}},
	}
	writable := s.writableRoots(root)
	if err := checkLinksInside(root, filepath.Join(root, ".cadre"), writable); err != nil {
		return c, err
	}
	dotgit := filepath.Join(root, ".git")
	fi, err := os.Lstat(dotgit)
	var gitDirs []string
	switch {
	case errors.Is(err, os.ErrNotExist):
		if enclosingRepository(filepath.Dir(root)) {
			c.readOnly = append(c.readOnly, dotgit)
			c.missing = append(c.missing, placeholder{path: dotgit, dir: true})
		}
		return c, nil
	case err != nil:
		return c, nil // out of reach: nothing to protect
	case fi.Mode()&os.ModeSymlink != 0:
		to, _ := os.Readlink(dotgit)
		return c, fmt.Errorf("sandbox: .git in the workspace is a symbolic link (to %s), which a command could replace with a repository of its own, "+
			"whose configuration and hooks git would then run outside the sandbox; replace the link with a .git file holding the line "+
			"\"gitdir: %s\", as git's own worktrees and submodules do (or turn the sandbox off)", to, to)
	case fi.IsDir():
		if !isGitDir(dotgit) {
			// Empty or broken: not a repository git would use; kept as
			// it is, so that it cannot be made one.
			c.readOnly = append(c.readOnly, dotgit)
			return c, nil
		}
		c.pinned = append(c.pinned, dotgit)
		gitDirs = append(gitDirs, dotgit)
	case fi.Mode().IsRegular():
		// A linked worktree or a submodule: .git names the git folder.
		c.readOnly = append(c.readOnly, dotgit)
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
		if err := c.addGitDir(root, g, writable, 0); err != nil {
			return c, err
		}
	}
	return c, nil
}

// addGitDir adds the control paths of the git folder g, and of its
// submodules' and worktrees' git folders.
func (c *controls) addGitDir(root, g string, writable []string, depth int) error {
	if st, err := os.Stat(g); err != nil || !st.IsDir() || depth > maxIncludeDepth {
		return nil
	}
	real, err := filepath.EvalSymlinks(g)
	if err != nil {
		return nil
	}
	canWrite := slices.ContainsFunc(writable, func(w string) bool { return tool.Within(w, real) })
	hooks := filepath.Join(g, "hooks")
	for _, ph := range []placeholder{
		{path: hooks, dir: true},
		{path: filepath.Join(g, "info"), dir: true},
		// Submodules' git folders: one a command made here, with a
		// configuration of its own, git would act on at the next status.
		{path: filepath.Join(g, "modules"), dir: true},
		{path: filepath.Join(g, "config")},
		{path: filepath.Join(g, "config.worktree")},
		{path: filepath.Join(g, "commondir"), content: ".\n"},
	} {
		c.readOnly = append(c.readOnly, ph.path)
		if canWrite {
			c.missing = append(c.missing, ph)
		}
	}
	for _, config := range []string{filepath.Join(g, "config"), filepath.Join(g, "config.worktree")} {
		if err := checkIncludes(config, writable, 0); err != nil {
			return err
		}
	}
	// core.hooksPath, from config or (with worktreeConfig) config.worktree,
	// the later winning; a relative one is taken from the working tree the
	// git folder belongs to.
	hp := gitConfigValue(filepath.Join(g, "config.worktree"), "core", "hookspath")
	if hp == "" {
		hp = gitConfigValue(filepath.Join(g, "config"), "core", "hookspath")
	}
	if hp != "" {
		tree := root
		if depth > 0 {
			// A submodule's git folder: its working tree is where its
			// core.worktree (relative to the git folder) says.
			wt := gitConfigValue(filepath.Join(g, "config"), "core", "worktree")
			if wt == "" && !filepath.IsAbs(hp) && !strings.HasPrefix(hp, "~/") {
				return fmt.Errorf("sandbox: the submodule's git folder %s sets core.hooksPath %q but no core.worktree to read it from; "+
					"give the hooks path as an absolute path (or turn the sandbox off)", g, hp)
			}
			tree = gitPath(g, wt)
		}
		hp = gitPath(tree, hp)
		if slices.Contains(writable, hp) {
			return fmt.Errorf("sandbox: git's hooks folder (core.hooksPath %s) is the workspace or a writable path itself, which the sandbox cannot keep "+
				"read-only: a command could add a hook that git runs outside the sandbox; move the hooks into a folder of their own (or turn the sandbox off)", hp)
		}
		c.readOnly = append(c.readOnly, hp)
		if slices.ContainsFunc(writable, func(w string) bool { return tool.Within(w, hp) }) {
			c.missing = append(c.missing, placeholder{path: hp, dir: true})
		}
	}
	// Worktrees: each has its own gitdir, commondir and config.worktree.
	if wts, err := filepath.Glob(filepath.Join(g, "worktrees", "*")); err == nil {
		for _, w := range wts {
			cw := filepath.Join(w, "config.worktree")
			c.readOnly = append(c.readOnly, cw, filepath.Join(w, "commondir"), filepath.Join(w, "gitdir"))
			if canWrite {
				c.missing = append(c.missing, placeholder{path: cw})
			}
			if err := checkIncludes(cw, writable, 0); err != nil {
				return err
			}
		}
	}
	// Submodules: a git folder under modules/, at any depth (a
	// submodule's name may hold slashes).
	modules := filepath.Join(g, "modules")
	var errs error
	_ = filepath.WalkDir(modules, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || path == modules {
			return nil
		}
		if isGitDir(path) {
			errs = errors.Join(errs, c.addGitDir(root, path, writable, depth+1))
			return filepath.SkipDir
		}
		return nil
	})
	return errs
}

// isGitDir reports whether dir looks like a git folder: git needs HEAD.
func isGitDir(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, "HEAD"))
	return err == nil
}

// enclosingRepository reports whether dir or a folder above it holds a
// .git, which git run in a folder below would find.
func enclosingRepository(dir string) bool {
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

// maxControlEntries bounds the entries of .cadre that checkLinksInside
// looks at.
const maxControlEntries = 10_000

// checkLinksInside refuses a symbolic link inside the folder dir (.cadre)
// that leads where commands may write: the sandbox makes dir read-only,
// but cadre would follow the link (.cadre/agents -> ../agents) and read
// what a command wrote there.
func checkLinksInside(root, dir string, writable []string) error {
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return nil
	}
	var found error
	n := 0
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if n++; err != nil || n > maxControlEntries || found != nil {
			return filepath.SkipAll
		}
		if d.Type()&os.ModeSymlink == 0 {
			return nil
		}
		to, err := os.Readlink(path)
		if err != nil {
			return nil
		}
		target := to
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		if exposed(filepath.Clean(target), writable) {
			name := path
			if rel, err := filepath.Rel(root, path); err == nil {
				name = rel
			}
			found = fmt.Errorf("sandbox: %s is a symbolic link (to %s) to where commands may write: cadre would read what a command wrote there "+
				"(configuration, agents) outside the sandbox; replace the link with a copy of what it points to (or turn the sandbox off)", name, to)
		}
		return nil
	})
	return found
}

// exposed reports whether a command could write path: it lies in one of
// the folders writable (resolved), as named or resolved, or is reached
// through a symbolic link there.
func exposed(path string, writable []string) bool {
	in := func(p string) bool {
		return slices.ContainsFunc(writable, func(w string) bool { return tool.Within(w, p) })
	}
	if in(path) {
		return true
	}
	if real, err := filepath.EvalSymlinks(path); err == nil && in(real) {
		return true
	}
	link, _ := writableLink(path, writable, 0)
	return link != ""
}

// checkIncludes refuses git configuration that includes (include.path,
// includeIf.*.path) a file commands may change, which could set
// core.fsmonitor or core.pager and so run a program outside the sandbox
// the next time git runs; it follows the includes of included files.
func checkIncludes(config string, writable []string, depth int) error {
	if depth > maxIncludeDepth {
		return nil
	}
	incs := append(gitConfigValues(config, "include", "path"), gitConfigValues(config, "includeif", "path")...)
	for _, inc := range incs {
		p := gitPath(filepath.Dir(config), inc)
		if exposed(p, writable) {
			return fmt.Errorf("sandbox: the git configuration %s includes %s (path = %s), which commands may change: a command could write settings there "+
				"that make git run a program outside the sandbox (core.fsmonitor, core.pager); move the included file out of the workspace "+
				"and the sandbox's writable paths, or remove the include (or turn the sandbox off)", config, p, inc)
		}
		if err := checkIncludes(p, writable, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// gitPath reads a path as git's configuration does: ~/ is the home
// folder, and a relative path is taken from base.
func gitPath(base, p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p)
}

// maxGitConfig is the most of a git configuration file that is read.
const maxGitConfig = 16 << 20

// readRegular reads a regular file of at most limit bytes. Anything else
// (a FIFO, which would block the read until a writer comes, a device, a
// folder) or a larger file is an error: what it reads may have been put
// there by a command.
func readRegular(file string, limit int64) ([]byte, error) {
	b, err := safefile.ReadRegular(file, limit)
	var pe *fs.PathError
	switch {
	case err == nil || errors.As(err, &pe): // the open's error names the file
		return b, err
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, fmt.Errorf("%s is larger than %d bytes", file, limit)
	case errors.Is(err, safefile.ErrFolder):
		return nil, fmt.Errorf("%s is not a regular file", file)
	}
	return nil, fmt.Errorf("%s %v", file, err)
}

// readGitFile returns the first line of file, after prefix when prefix is
// not empty, trimmed; "" when there is none.
func readGitFile(file, prefix string) string {
	b, err := readRegular(file, 64<<10)
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

// gitConfigValue returns the last value of section.key in a git config
// file, or "".
func gitConfigValue(file, section, key string) string {
	vs := gitConfigValues(file, section, key)
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

// gitConfigValues returns the values of section.key (section without its
// subsection, both compared without case) in a git config file, in order.
func gitConfigValues(file, section, key string) []string {
	b, err := readRegular(file, maxGitConfig)
	if err != nil {
		return nil
	}
	var out []string
	for e := range gitConfigEntries(b) {
		if !e.bare && e.section == section && e.key == strings.ToLower(key) {
			out = append(out, e.value)
		}
	}
	return out
}

// A gitConfigEntry is a variable of a git config file: its section (lower
// case), its subsection as written when hasSub, its key (lower case) and
// its value (see gitConfigString).
type gitConfigEntry struct {
	section, sub, key, value string
	hasSub                   bool
	bare                     bool // a key alone on its line (true, for a boolean)
}

// gitConfigEntries yields the variables of the contents of a git config
// file, in order. Lines of any length are read.
func gitConfigEntries(b []byte) iter.Seq[gitConfigEntry] {
	return func(yield func(gitConfigEntry) bool) {
		var cur gitConfigEntry
		for line := range strings.SplitSeq(string(b), "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "[") {
				end := strings.IndexByte(line, ']')
				if end < 0 {
					continue
				}
				name := strings.TrimSpace(line[1:end])
				cur = gitConfigEntry{section: strings.ToLower(name)}
				if i := strings.IndexAny(name, " \t\"."); i >= 0 {
					cur.section, cur.hasSub = strings.ToLower(name[:i]), true
					cur.sub = strings.Trim(strings.TrimSpace(name[i:]), `".`)
				}
				// A variable may follow on the same line.
				line = strings.TrimSpace(line[end+1:])
			}
			if line == "" || line[0] == '#' || line[0] == ';' {
				continue
			}
			k, v, set := strings.Cut(line, "=")
			e := cur
			e.key, e.value, e.bare = strings.ToLower(strings.TrimSpace(k)), gitConfigString(v), !set
			if !yield(e) {
				return
			}
		}
	}
}

// gitConfigString reads a value of a git config file: quotes removed,
// escapes read, a comment (# or ; outside quotes) left out, and the ends
// trimmed.
func gitConfigString(v string) string {
	var b strings.Builder
	quoted := false
	for i := 0; i < len(v); i++ {
		switch ch := v[i]; {
		case ch == '"':
			quoted = !quoted
		case ch == '\\' && i+1 < len(v):
			i++
			switch v[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(v[i])
			}
		case (ch == '#' || ch == ';') && !quoted:
			return strings.TrimSpace(b.String())
		default:
			b.WriteByte(ch)
		}
	}
	return strings.TrimSpace(b.String())
}

// makePlaceholders makes the control paths of missing that are missing,
// so that the sandbox can mount them read-only and a command cannot
// create them. They are left in place after the command: git and cadre
// take each as absent (an empty folder or configuration, a commondir of
// "."), and removing one while a command of another cadre process runs
// would lift that command's read-only mount on it.
// It reports whether it made any.
func makePlaceholders(missing []placeholder) (made bool) {
	for _, c := range missing {
		if _, err := os.Lstat(c.path); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		if c.dir {
			// The folders above a missing folder are made too (a
			// core.hooksPath of tools/hooks).
			made = os.MkdirAll(c.path, 0o700) == nil || made
		} else {
			made = writeNew(c.path, c.content) == nil || made
		}
	}
	return made
}

// writeNew makes the file path, which must not exist, holding content.
func writeNew(path, content string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(content)
	return errors.Join(err, f.Close())
}

// controlFiles are the read-only control paths that exist, as they were
// before a command ran.
type controlFiles map[string]os.FileInfo

// controlIDs notes which file or folder each of paths is. The sandbox
// mounts each read-only over the file or folder itself; when a program
// outside the sandbox replaces one while a command runs (git writes its
// config to a new file and renames it over the old one), the kernel drops
// that mount in the sandbox, and the command may then write the new file.
// Mounts cannot prevent it; replaced tells that it happened.
func controlIDs(paths []string) controlFiles {
	ids := controlFiles{}
	for _, p := range paths {
		if fi, err := os.Lstat(p); err == nil {
			ids[p] = fi
		}
	}
	return ids
}

// replaced lists, relative to root, the paths that are no longer the
// file or folder they were.
func (ids controlFiles) replaced(root string) []string {
	var out []string
	for p, before := range ids {
		if fi, err := os.Lstat(p); err != nil || !os.SameFile(before, fi) {
			rel, rerr := filepath.Rel(root, p)
			if rerr != nil {
				rel = p
			}
			out = append(out, rel)
		}
	}
	slices.Sort(out)
	return out
}
