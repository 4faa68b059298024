//go:build unix

package builtin

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCleanEnv(t *testing.T) {
	env := []string{
		"PATH=/usr/bin:/bin", "HOME=/home/u", "LANG=C.UTF-8", "TERM=xterm", "USER=u", "SHELL=/bin/bash", "TZ=UTC",
		"GIT_AUTHOR_NAME=U", "TOKENIZERS_PARALLELISM=false", "KEYBOARD=us", "GOPATH=/home/u/go",
		"OPENAI_API_KEY=sk-1", "ANTHROPIC_API_KEY=sk-2", "MY_PROVIDER_KEY=k", "GITHUB_TOKEN=t", "GH_TOKEN=t",
		"AWS_SECRET_ACCESS_KEY=s", "AWS_PROFILE=p", "AZURE_CLIENT_ID=c", "DB_PASSWORD=p", "PGPASSWORD=p",
		"SSH_AUTH_SOCK=/run/user/1/ssh", "GOOGLE_APPLICATION_CREDENTIALS=/k.json", "client_secret=s",
		"DATABASE_URL=postgres://u:pw@db/x", "PLAIN_URL=https://example.com/x", "HTTP_PROXY=http://user@proxy:3128",
		"CADRE_STORE=postgres://cadre:pw@db/cadre", "VLLM=named-by-config", "NPM_CONFIG__AUTH=a", "XAUTHORITY=/x",
		"KEEP_TOKEN=kept",
		"DB_PASS=p", "SMTP_PWD=p", "GITHUB_PAT=p", "CI_JOB_JWT=j", "SENTRY_DSN=https://k@sentry.io/1",
		"SLACK_WEBHOOK_URL=https://hooks.slack.com/x", "openaiApiKey=k", "githubToken=t", "DBPassword=p", "APIKey=k",
		"PG_CONN=host=db user=u password=p", "ODBC=Server=db;Uid=u;Pwd=p", "PWD=/home/u/ws", "OLDPWD=/home/u",
		"myPathList=/x", "COMPASS_HOME=/c", "PASSENGER_ENV=dev", "KeyboardLayout=us",
	}
	got := CleanEnv(env, []string{"VLLM"}, []string{"KEEP_TOKEN"})
	want := []string{
		"PATH=/usr/bin:/bin", "HOME=/home/u", "LANG=C.UTF-8", "TERM=xterm", "USER=u", "SHELL=/bin/bash", "TZ=UTC",
		"GIT_AUTHOR_NAME=U", "TOKENIZERS_PARALLELISM=false", "KEYBOARD=us", "GOPATH=/home/u/go",
		"PLAIN_URL=https://example.com/x", "HTTP_PROXY=http://user@proxy:3128", "KEEP_TOKEN=kept",
		"PWD=/home/u/ws", "OLDPWD=/home/u", "myPathList=/x", "COMPASS_HOME=/c", "PASSENGER_ENV=dev", "KeyboardLayout=us",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CleanEnv (-want +got):\n%s", diff)
	}
}

// mountsOf returns bwrap's mount options in pairs or triples, for reading.
func mountsOf(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--bind", "--ro-bind", "--ro-bind-try":
			out = append(out, args[i]+" "+args[i+1]+" "+args[i+2])
			i += 2
		case "--tmpfs", "--remount-ro", "--dev", "--proc", "--chdir":
			out = append(out, args[i]+" "+args[i+1])
			i++
		}
	}
	return out
}

// TestSandboxPlan: the mounts come in an order in which a path inside
// another wins, the same path in two lists gets the stronger rule, missing
// paths are left out, links are resolved, and / is refused.
func TestSandboxPlan(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	files(t, base, map[string]string{
		"home/.ssh/id":         "",
		"home/go/pkg/x":        "",
		"home/.netrc":          "",
		"ws/.cadre/config":     "",
		"ws/.git/config":       "[core]\n\thooksPath = \"tools/hooks\"\n",
		"ws/.git/HEAD":         "ref: refs/heads/main\n",
		"ws/tools/hooks/x":     "",
		"ws/docs/a":            "",
		"cache/x":              "",
		"real-secrets/s":       "",
		"ws/.cadre/cadre.db":   "",
		"ws/.cadre/cadre.db-x": "",
	})
	symlink(t, filepath.Join(base, "real-secrets"), filepath.Join(base, "home/secrets"))
	home, ws := filepath.Join(base, "home"), filepath.Join(base, "ws")
	sb := &Sandbox{
		Network:  true,
		Hide:     []string{home, filepath.Join(home, ".ssh"), filepath.Join(home, ".netrc"), filepath.Join(home, "secrets"), filepath.Join(home, "missing"), "docs"},
		ReadOnly: []string{filepath.Join(home, "go"), "docs"},
		Writable: []string{"../cache", filepath.Join(home, ".ssh")},
	}
	args, err := planFor(sb, ws, []string{filepath.Join(ws, ".cadre/cadre.db")})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(args, "--unshare-net") {
		t.Error("--unshare-net with the network on")
	}
	for _, a := range []string{"--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts"} {
		if !slices.Contains(args, a) {
			t.Errorf("%s missing from %v", a, args)
		}
	}
	tmp := []string{}
	if d := os.TempDir(); d != "/tmp" {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			tmp = append(tmp, "--tmpfs "+real)
		}
	}
	// The test's TMPDIR holds base: its mount comes first.
	want := append([]string{"--ro-bind / /", "--dev /dev", "--proc /proc", "--ro-bind /proc/sys /proc/sys",
		"--ro-bind-try /proc/sysrq-trigger /proc/sysrq-trigger", "--tmpfs /tmp"}, tmp...)
	want = append(want,
		"--bind "+base+"/cache "+base+"/cache",
		"--tmpfs "+home,
		"--tmpfs "+base+"/real-secrets",
		"--bind "+ws+" "+ws,
		"--ro-bind /dev/null "+home+"/.netrc",
		"--bind "+home+"/.ssh "+home+"/.ssh",
		"--ro-bind "+home+"/go "+home+"/go",
		"--ro-bind "+ws+"/.cadre "+ws+"/.cadre",
		"--ro-bind "+ws+"/.claude "+ws+"/.claude",
		"--bind "+ws+"/.git "+ws+"/.git",
		"--ro-bind "+ws+"/.opencode "+ws+"/.opencode",
		"--ro-bind "+ws+"/docs "+ws+"/docs",
		"--bind "+ws+"/tools "+ws+"/tools",
		"--ro-bind /dev/null "+ws+"/.cadre/cadre.db",
		// The control paths git would take as absent, made so that a
		// command cannot make them.
		"--ro-bind "+ws+"/.git/commondir "+ws+"/.git/commondir",
		"--ro-bind "+ws+"/.git/config "+ws+"/.git/config",
		"--ro-bind "+ws+"/.git/config.worktree "+ws+"/.git/config.worktree",
		"--ro-bind "+ws+"/.git/hooks "+ws+"/.git/hooks",
		"--ro-bind "+ws+"/.git/info "+ws+"/.git/info",
		"--ro-bind "+ws+"/.git/modules "+ws+"/.git/modules",
		"--ro-bind "+ws+"/tools/hooks "+ws+"/tools/hooks",
		"--remount-ro "+base+"/real-secrets",
		"--remount-ro "+home,
		"--chdir "+ws,
	)
	got := mountsOf(args)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	if !strings.Contains(strings.Join(args, " "), "--unshare-pid") {
		t.Error("no pid namespace")
	}

	for _, list := range []string{"hide", "readOnly", "writable"} {
		sb := &Sandbox{}
		switch list {
		case "hide":
			sb.Hide = []string{"/"}
		case "readOnly":
			sb.ReadOnly = []string{"/"}
		case "writable":
			sb.Writable = []string{"/"}
		}
		if _, err := planFor(sb, ws, nil); err == nil || !strings.Contains(err.Error(), "sandbox: "+list+" lists /, which is the whole file system") {
			t.Errorf("%s: [/]: %v", list, err)
		}
	}
	_, cadreAtRoot := os.Lstat("/.cadre")
	if _, err := planFor(&Sandbox{}, "/", nil); err == nil || !strings.Contains(err.Error(), "the workspace is /") {
		t.Errorf("a workspace of /: %v", err)
	}
	// A refused plan makes nothing.
	if _, err := os.Lstat("/.cadre"); err == nil && cadreAtRoot != nil {
		os.Remove("/.cadre")
		t.Error("a refused workspace of / was given a .cadre")
	}
	if args, err := planFor(&Sandbox{}, ws, nil); err != nil || !slices.Contains(args, "--unshare-net") {
		t.Errorf("default plan: %v, %v; want --unshare-net", args, err)
	}
}

// planFor returns the plan of sb for root, with its control paths.
func planFor(sb *Sandbox, root string, hidden []string) ([]string, error) {
	args, _, err := sb.prepare(root, hidden)
	return args, err
}

func TestHooksPath(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ config, want string }{
		{"[core]\n\thooksPath = .husky/_\n", ".husky/_"},
		{"[Core]\nHooksPath=\"x y\"\n", "x y"},
		{"[user]\n\thooksPath = no\n[core]\n\tbare = false\n", ""},
		{"[core]\n\thooksPath = a\n[core]\n\thooksPath = b\n", "b"},
		{"", ""},
	}
	for i, tt := range tests {
		f := filepath.Join(dir, "config")
		if err := os.WriteFile(f, []byte(tt.config), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := gitConfigValue(f, "core", "hookspath"); got != tt.want {
			t.Errorf("%d: hooksPath(%q) = %q, want %q", i, tt.config, got, tt.want)
		}
	}
}

// TestControlPathsWorktree: in a linked worktree, .git is a file naming
// the git folder, and the hooks and configuration are in the common one.
func TestControlPathsWorktree(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	files(t, base, map[string]string{
		"main/.git/config":                 "",
		"main/.git/worktrees/wt/commondir": "../..\n",
		"wt/.git":                          "gitdir: " + filepath.Join(base, "main/.git/worktrees/wt") + "\n",
	})
	ctl, err := (&Sandbox{}).controls(filepath.Join(base, "wt"))
	if err != nil {
		t.Fatal(err)
	}
	got := ctl.readOnly
	for _, want := range []string{
		filepath.Join(base, "wt/.cadre"), filepath.Join(base, "wt/.mcp.json"),
		filepath.Join(base, "main/.git/worktrees/wt/hooks"),
		filepath.Join(base, "main/.git/hooks"), filepath.Join(base, "main/.git/config"),
	} {
		if !slices.Contains(got, want) {
			t.Errorf("the control paths lack %s: %v", want, got)
		}
	}
}

func TestDefaultHidden(t *testing.T) {
	got := DefaultHidden("/home/u")
	for _, want := range []string{"/home/u/.ssh", "/home/u/.aws", "/home/u/.gnupg", "/home/u/.config/gcloud", "/home/u/.docker", "/home/u/.netrc", "/home/u/.kube", "/run/docker.sock"} {
		if !slices.Contains(got, want) {
			t.Errorf("DefaultHidden lacks %s", want)
		}
	}
	if got := DefaultHidden(""); slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, "/.") }) {
		t.Errorf("DefaultHidden without a home: %v", got)
	}
}

// TestWritableLink: only a link that lies in a writable folder is
// reported, however the path reaches it.
func TestWritableLink(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	files(t, base, map[string]string{"ws/keep": "", "ro/target/x": "", "shared/config": ""})
	symlink(t, "target", filepath.Join(base, "ro/link"))
	symlink(t, "../ro/link", filepath.Join(base, "ws/via"))
	symlink(t, "../shared", filepath.Join(base, "ws/.cadre"))
	symlink(t, filepath.Join(base, "ws"), filepath.Join(base, "ro/ws-link"))
	writable := []string{filepath.Join(base, "ws")}
	for _, tt := range []struct{ path, link, target string }{
		{"ro/link/x", "", ""},
		{"ws/keep", "", ""},
		{"ws/missing/x", "", ""},
		{"ws/via/x", "ws/via", "../ro/link"},
		{"ws/.cadre", "ws/.cadre", "../shared"},
		{"ws/.cadre/config", "ws/.cadre", "../shared"},
		{"ro/ws-link/.cadre/config", "ws/.cadre", "../shared"},
	} {
		link, target := writableLink(filepath.Join(base, tt.path), writable, 0)
		want := ""
		if tt.link != "" {
			want = filepath.Join(base, tt.link)
		}
		if link != want || target != tt.target {
			t.Errorf("writableLink(%s) = %q, %q; want %q, %q", tt.path, link, target, want, tt.target)
		}
	}
}

// core.hooksPath is read where git reads it (config.worktree too), and a
// hooks folder that is the workspace itself, which cannot be made
// read-only, is refused.
func TestSandboxHooksPathWhereGitReadsIt(t *testing.T) {
	ws := t.TempDir()
	files(t, ws, map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/config": "[core]\n\tbare = false\n",
		".git/config.worktree": "[core]\n\thooksPath = hk\n"})
	args, err := planFor(&Sandbox{}, ws, nil)
	if err != nil || !slices.Contains(mountsOf(args), "--ro-bind "+ws+"/hk "+ws+"/hk") {
		t.Errorf("hooksPath in config.worktree: %v, %q", err, mountsOf(args))
	}
	files(t, ws, map[string]string{".git/config.worktree": "", ".git/config": "[core]\n\thooksPath = .\n"})
	if _, err := planFor(&Sandbox{}, ws, nil); err == nil || !strings.Contains(err.Error(), "is the workspace or a writable path itself") {
		t.Errorf("hooksPath of the workspace itself: %v", err)
	}
}
