package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/cadre-ai/cadre/tool/builtin"
)

// sandboxConfig is the sandbox key of a config file: a mode alone
//
//	sandbox: auto      # bwrap when it works here, else unconfined, with a warning
//	sandbox: bwrap     # bwrap, or the run does not start
//	sandbox: off       # unconfined, with a warning
//
// or a map with the mode and what commands may see and change:
//
//	sandbox:
//	  mode: auto
//	  network: false
//	  hide: [~/work/clients]
//	  readOnly: [scripts]
//	  writable: [~/.cache/go-build]
//	  passEnv: [GITHUB_TOKEN]
//
// Paths may start with ~; relative ones are taken from the workspace.
type sandboxConfig struct {
	Mode     string   `yaml:"mode"`
	Network  *bool    `yaml:"network"`
	Hide     []string `yaml:"hide"`
	ReadOnly []string `yaml:"readOnly"`
	Writable []string `yaml:"writable"`
	// PassEnv are variables commands see although they look like secrets.
	PassEnv []string `yaml:"passEnv"`

	// modeFrom is where the mode was set, file:line, for messages.
	modeFrom string
}

// sandboxFields is sandboxConfig without its methods, for decoding.
type sandboxFields sandboxConfig

// UnmarshalYAML implements yaml.InterfaceUnmarshaler: the key takes a mode
// alone or a map.
func (s *sandboxConfig) UnmarshalYAML(unmarshal func(any) error) error {
	var mode string
	if err := unmarshal(&mode); err == nil {
		*s = sandboxConfig{Mode: mode}
		return nil
	}
	var f sandboxFields
	if err := unmarshal(&f); err != nil {
		return err
	}
	*s = sandboxConfig(f)
	return nil
}

// Sandbox modes.
const (
	sandboxAuto  = "auto"
	sandboxBwrap = "bwrap"
	sandboxOff   = "off"
)

// checkSandbox validates the sandbox key of file and notes where its mode
// was set.
func checkSandbox(file string, data []byte, s *sandboxConfig) error {
	bad := func(key, msg string) error {
		line, col := findSandboxKey(data, key)
		return &ConfigError{File: file, Line: line, Column: col, Msg: msg}
	}
	if s.Mode != "" {
		if !oneOf(s.Mode, sandboxAuto, sandboxBwrap, sandboxOff) {
			return bad("mode", fmt.Sprintf("sandbox: %q is not a sandbox mode; use auto (bubblewrap when it works here), bwrap (bubblewrap or no run) or off (commands unconfined)", s.Mode))
		}
		line, _ := findSandboxKey(data, "mode")
		s.modeFrom = file
		if line > 0 {
			s.modeFrom = fmt.Sprintf("%s:%d", file, line)
		}
	}
	for _, l := range []struct {
		key   string
		paths []string
	}{{"hide", s.Hide}, {"readOnly", s.ReadOnly}, {"writable", s.Writable}} {
		for _, p := range l.paths {
			switch {
			case strings.TrimSpace(p) == "":
				return bad(l.key, fmt.Sprintf("sandbox.%s: an empty path; give a folder or file", l.key))
			case filepath.Clean(p) == "/":
				return bad(l.key, fmt.Sprintf("sandbox.%s: / is the whole file system; name a folder inside it (or set sandbox: off)", l.key))
			}
		}
	}
	for _, name := range s.PassEnv {
		if name == "" || strings.ContainsAny(name, "= \t") {
			return bad("passEnv", fmt.Sprintf("sandbox.passEnv: %q is not the name of an environment variable", name))
		}
	}
	return nil
}

// findSandboxKey locates key within the sandbox entry, or the entry
// itself, for error messages.
func findSandboxKey(data []byte, key string) (int, int) {
	lines := strings.Split(string(data), "\n")
	for i, line := range lines {
		t := strings.TrimLeft(line, " \t")
		if !strings.HasPrefix(t, "sandbox:") {
			continue
		}
		indent := len(line) - len(t)
		for j := i; j < len(lines); j++ {
			lt := strings.TrimLeft(lines[j], " \t")
			if j > i && lt != "" && !strings.HasPrefix(lt, "#") && len(lines[j])-len(lt) <= indent {
				break
			}
			from := 0
			if j == i {
				from = len("sandbox:") + indent
			}
			if k := strings.Index(lines[j][from:], key+":"); k >= 0 {
				return j + 1, from + k + 1
			}
		}
		// Not found (the scalar form, or the entry as a whole).
		return i + 1, indent + 1
	}
	return 0, 0
}

// merge puts a later file's sandbox over c's: its mode and network when
// set, its lists added.
func (c *sandboxConfig) merge(f sandboxConfig) {
	if f.Mode != "" {
		c.Mode, c.modeFrom = f.Mode, f.modeFrom
	}
	if f.Network != nil {
		c.Network = f.Network
	}
	c.Hide = append(c.Hide, f.Hide...)
	c.ReadOnly = append(c.ReadOnly, f.ReadOnly...)
	c.Writable = append(c.Writable, f.Writable...)
	c.PassEnv = append(c.PassEnv, f.PassEnv...)
}

// installBwrap says how to install bubblewrap.
const installBwrap = "install bubblewrap (Debian, Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap; Arch: pacman -S bubblewrap)"

// probeCache keeps, for each bubblewrap and network setting, whether
// bubblewrap could make a sandbox, so that it is tried once per process.
type probeCache struct {
	mu   sync.Mutex
	done map[string]error
}

func (p *probeCache) probe(ctx context.Context, sb *builtin.Sandbox) error {
	key := fmt.Sprintf("%s %v", sb.Bwrap, sb.Network)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err, ok := p.done[key]; ok {
		return err
	}
	err := sb.Probe(ctx)
	if p.done == nil {
		p.done = map[string]error{}
	}
	p.done[key] = err
	return err
}

// commandOptions returns the options of the built-in tools: how
// run_command is confined, what it may not see of the environment, and
// where it records its processes. When commands run unconfined, warning
// says so and why; when the configuration asks for bubblewrap and it
// cannot run, the error says what to do.
func (a *app) commandOptions(ctx context.Context, cfg *config) (opts builtin.Options, warning string, err error) {
	sc := cfg.Sandbox
	opts.SecretEnv = secretEnvNames(cfg)
	opts.PassEnv = sc.PassEnv
	opts.ProcessDir = a.processDir(cfg)

	mode := sc.Mode
	if mode == "" {
		mode = sandboxAuto
	}
	from := "the default"
	if sc.modeFrom != "" {
		from = "set in " + sc.modeFrom
	}
	unconfined := func(why, what string) string {
		return fmt.Sprintf("warning: run_command is unconfined: %s; commands can read, change and send anything your user can. %s", why, what)
	}
	if mode == sandboxOff {
		return opts, unconfined(fmt.Sprintf("sandbox: off (%s)", from), "Set sandbox: auto to confine them with bubblewrap."), nil
	}
	fail := func(why string) error {
		return fmt.Errorf("sandbox: bwrap (%s) cannot be had: %s; or set sandbox: auto or off to run commands unconfined", from, why)
	}
	if runtime.GOOS != "linux" {
		if mode == sandboxBwrap {
			return opts, "", fail("bubblewrap runs on Linux only, and this is " + runtime.GOOS)
		}
		return opts, unconfined("there is no sandbox for commands on "+runtime.GOOS+" (bubblewrap runs on Linux only)",
			"Set sandbox: off to say you know."), nil
	}
	prog, err := lookPath(builtin.DefaultBwrap, a.io.Getenv("PATH"))
	if err != nil {
		if mode == sandboxBwrap {
			return opts, "", fail("bubblewrap (bwrap) is not installed (no bwrap in PATH): " + installBwrap)
		}
		return opts, unconfined("bubblewrap (bwrap) is not installed", "To confine them, "+installBwrap+"; or set sandbox: off to say you know."), nil
	}
	sb := &builtin.Sandbox{
		Bwrap:    prog,
		Network:  sc.Network != nil && *sc.Network,
		Hide:     append(builtin.DefaultHidden(a.home()), a.expandAll(sc.Hide)...),
		ReadOnly: a.expandAll(sc.ReadOnly),
		Writable: a.expandAll(sc.Writable),
	}
	if d := a.io.Getenv("XDG_RUNTIME_DIR"); d != "" {
		sb.Hide = append(sb.Hide, d)
	}
	if loc := a.storePath(cfg); loc != "none" && !isPostgres(loc) {
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			sb.Hide = append(sb.Hide, loc+suffix)
		}
	}
	if err := a.probes.probe(ctx, sb); err != nil {
		why := err.Error()
		var pe *builtin.ProbeError
		if errors.As(err, &pe) {
			why += " (bubblewrap needs unprivileged user namespaces: see sysctl kernel.unprivileged_userns_clone, " +
				"or kernel.apparmor_restrict_unprivileged_userns on Ubuntu; in a container, allow user namespaces)"
		}
		if mode == sandboxBwrap {
			return opts, "", fail(why)
		}
		return opts, unconfined(why, "Set sandbox: off to say you know."), nil
	}
	opts.Sandbox = sb
	return opts, "", nil
}

func (a *app) expandAll(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = a.expandHome(p)
	}
	return out
}

// secretEnvNames are the variables cadre reads keys from, which commands
// must not see: those the configuration names and the providers' own.
func secretEnvNames(cfg *config) []string {
	names := []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OLLAMA_API_KEY", "CADRE_STORE"}
	for _, p := range cfg.Providers {
		if p.APIKeyEnv != "" {
			names = append(names, p.APIKeyEnv)
		}
	}
	return names
}

// processDir is where unconfined commands are recorded while they run:
// procs beside a SQLite store, or in the project's .cadre folder with a
// PostgreSQL one; nowhere without a store, which could not be resumed.
func (a *app) processDir(cfg *config) string {
	loc := a.storePath(cfg)
	switch {
	case loc == "none":
		return ""
	case isPostgres(loc):
		return filepath.Join(a.projectDir(), ".cadre", "procs")
	}
	return filepath.Join(filepath.Dir(loc), "procs")
}

// killLeftovers kills what commands of a cadre process that died left
// running, and says so.
func (a *app) killLeftovers(cfg *config) {
	dir := a.processDir(cfg)
	if dir == "" {
		return
	}
	left, err := builtin.KillLeftovers(dir)
	if err != nil {
		fmt.Fprintf(a.io.Stderr, "cadre: %v\n", err)
	}
	for _, l := range left {
		fmt.Fprintf(a.io.Stderr, "cadre: killed %d processes left running by a command of cadre process %d, which died (started %s): %s\n",
			l.Killed, l.Owner, l.Started.Local().Format("2006-01-02 15:04:05"), oneLine(l.Command))
	}
}

// lookPath finds an executable named name in the folders of path (a PATH
// value), as the shell would.
func lookPath(name, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not in PATH", name)
}
