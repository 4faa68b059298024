package rule

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/tool"
)

// fakeTool records the calls that reach it.
type fakeTool struct {
	name   string
	mutate bool
	calls  []string
}

func (f *fakeTool) Spec() cadre.ToolSpec {
	return cadre.ToolSpec{Name: f.name, Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (f *fakeTool) Call(_ context.Context, args json.RawMessage) (string, error) {
	f.calls = append(f.calls, string(args))
	return "done", nil
}
func (f *fakeTool) Mutates() bool { return f.mutate }

// workspace makes a workspace with src/a.txt, src/dir/b.txt, secret.txt
// outside src, a link src/link → ../secret.txt, a link src/out → a
// directory outside the workspace, and plans/p.md.
func workspace(t *testing.T) (tool.Workspace, string) {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "src", "dir"), filepath.Join(root, "plans"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{"src/a.txt": "a", "src/dir/b.txt": "b", "secret.txt": "s", "plans/p.md": "p", ".env": "k"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../secret.txt", filepath.Join(root, "src", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "src", "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../plans", filepath.Join(root, "src", "toplans")); err != nil {
		t.Fatal(err)
	}
	ws, err := tool.NewWorkspace(root)
	if err != nil {
		t.Fatal(err)
	}
	return ws, root
}

func judgePath(t *testing.T, g cadre.Tool, path string) (cadre.Permission, string) {
	t.Helper()
	gate, ok := g.(tool.Gate)
	if !ok {
		t.Fatalf("%T is not a tool.Gate", g)
	}
	args, _ := json.Marshal(map[string]string{"path": path})
	return gate.Judge(context.Background(), args)
}

// Read(src/**) lets read_file reach files under src only, judged by where
// their path leads.
func TestGuardReadThroughLink(t *testing.T) {
	ws, _ := workspace(t)
	chain := Chain{set(t, denyAll("read_file"), allow("read_file", cadre.SyntaxGitignore, "src/**"))}
	g := Guard(&fakeTool{name: "read_file"}, chain, ws)
	for path, want := range map[string]cadre.Permission{
		"src/a.txt":         cadre.PermissionAllow,
		"src/dir/b.txt":     cadre.PermissionAllow,
		"./src//a.txt":      cadre.PermissionAllow,
		"secret.txt":        cadre.PermissionDeny,
		"src/../secret.txt": cadre.PermissionDeny,
		"src/link":          cadre.PermissionDeny, // a link in src to a file outside src
		"src/out/x":         cadre.PermissionDeny, // a link out of the workspace
		"src/toplans/p.md":  cadre.PermissionDeny,
		"/etc/passwd":       cadre.PermissionDeny,
		"src/new.txt":       cadre.PermissionAllow, // not there yet: judged by its parent
	} {
		got, why := judgePath(t, g, path)
		if got != want {
			t.Errorf("%s: %s (%s), want %s", path, got, why, want)
		}
	}
	_, why := judgePath(t, g, "src/link")
	if !strings.Contains(why, "leads to secret.txt") || !strings.Contains(why, "src/**") {
		t.Errorf("the refusal of a link does not say where it leads and what is allowed: %s", why)
	}
	// Called directly, the refused call never reaches the tool.
	inner := &fakeTool{name: "read_file"}
	g = Guard(inner, chain, ws)
	if _, err := g.Call(context.Background(), json.RawMessage(`{"path":"src/link"}`)); err == nil {
		t.Error("Call ran a refused call")
	}
	if len(inner.calls) != 0 {
		t.Errorf("the tool was called: %v", inner.calls)
	}
}

// OpenCode's edit: {"*": deny, "plans/**": allow}, for edit_file and
// write_file.
func TestGuardEditMap(t *testing.T) {
	ws, _ := workspace(t)
	chain := Chain{set(t,
		cadre.ToolRule{Tool: "write_file", Action: cadre.PermissionDeny, Source: `permission: edit: "*": deny`},
		allow("write_file", cadre.SyntaxWildcard, "plans/**"))}
	g := Guard(&fakeTool{name: "write_file", mutate: true}, chain, ws)
	for path, want := range map[string]cadre.Permission{
		"plans/p.md":       cadre.PermissionAllow,
		"plans/new/x.md":   cadre.PermissionAllow,
		"src/a.txt":        cadre.PermissionDeny,
		"plans/../src/x":   cadre.PermissionDeny,
		"plan.md":          cadre.PermissionDeny,
		"src/toplans/q.md": cadre.PermissionAllow, // leads into plans
	} {
		if got, why := judgePath(t, g, path); got != want {
			t.Errorf("%s: %s (%s), want %s", path, got, why, want)
		}
	}
	if !cadre.Mutates(g) {
		t.Error("the guard hides that the tool mutates")
	}
}

// A rule that denies some paths makes a search or listing that would reach
// them refused, and one that would not allowed.
func TestGuardTree(t *testing.T) {
	ws, _ := workspace(t)
	chain := Chain{set(t, deny("search_files", cadre.SyntaxGitignore, ".env"))}
	g := Guard(&fakeTool{name: "search_files"}, chain, ws)
	for path, want := range map[string]cadre.Permission{
		"":      cadre.PermissionDeny, // the root holds .env
		"src":   cadre.PermissionAllow,
		"plans": cadre.PermissionAllow,
		".env":  cadre.PermissionDeny,
	} {
		if got, why := judgePath(t, g, path); got != want {
			t.Errorf("%q: %s (%s), want %s", path, got, why, want)
		}
	}
	chain = Chain{set(t, denyAll("list_files"), allow("list_files", cadre.SyntaxGitignore, "src/**"))}
	g = Guard(&fakeTool{name: "list_files"}, chain, ws)
	for path, want := range map[string]cadre.Permission{
		"src":     cadre.PermissionAllow,
		"src/dir": cadre.PermissionAllow,
		"":        cadre.PermissionDeny,
		"plans":   cadre.PermissionDeny,
	} {
		if got, why := judgePath(t, g, path); got != want {
			t.Errorf("list %q: %s (%s), want %s", path, got, why, want)
		}
	}
}

func TestGitignorePatterns(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		path    string
		dir     bool
		want    bool
	}{
		{"src/**", "src/a.go", false, true},
		{"src/**", "src/x/y/a.go", false, true},
		{"src/**", "src", true, false},
		{"src/**", "lib/src/a.go", false, false},
		{"src", "src/a.go", false, true}, // a directory and what is in it
		{"src", "lib/src", true, true},   // no slash: at any depth
		{"/src", "lib/src", true, false}, // anchored at the root
		{"./src", "src/a", false, true},
		{"*.env", "a/b/prod.env", false, true},
		{"*.go", "a/b.txt", false, false},
		{"docs/*.md", "docs/a.md", false, true},
		{"docs/*.md", "docs/x/a.md", false, false},
		{"docs/**/*.md", "docs/a.md", false, true},
		{"docs/**/*.md", "docs/x/y/a.md", false, true},
		{"**/secrets/**", "a/secrets/k", false, true},
		{"**/secrets/**", "secrets/k", false, true},
		{"build/", "build", false, false}, // directories only
		{"build/", "build", true, true},
		{"build/", "build/x.o", false, true},
		{"file?.txt", "file1.txt", false, true},
		{"file?.txt", "file/.txt", false, false},
		{"[ab].txt", "a.txt", false, true},
		{"[!ab].txt", "a.txt", false, false},
		{`\*.txt`, "*.txt", false, true},
		{`\*.txt`, "a.txt", false, false},
	} {
		c, err := compileRule(allow("read_file", cadre.SyntaxGitignore, tc.pattern), "")
		if err != nil {
			t.Fatalf("%s: %v", tc.pattern, err)
		}
		got := c.matchPath(pathSubject{rel: tc.path, abs: "/ws/" + tc.path, dir: tc.dir}, false) == matchFull
		if got != tc.want {
			t.Errorf("%s against %s (dir %v): %v, want %v", tc.pattern, tc.path, tc.dir, got, tc.want)
		}
	}
}

func TestGitignoreAbsoluteAndHome(t *testing.T) {
	t.Setenv("HOME", "/home/me")
	s := set(t, deny("read_file", cadre.SyntaxGitignore, "~/.ssh/**"), deny("read_file", cadre.SyntaxGitignore, "//etc/**"))
	for abs, want := range map[string]cadre.Permission{
		"/home/me/.ssh/id_rsa": cadre.PermissionDeny,
		"/etc/passwd":          cadre.PermissionDeny,
		"/home/me/proj/a":      cadre.PermissionAllow,
	} {
		v, _ := s.judgePath("read_file", pathSubject{rel: "x", abs: abs}, false)
		if v.action != want {
			t.Errorf("%s: %s, want %s", abs, v.action, want)
		}
	}
}

// Through tool.Executor: a rule that asks goes to the approval policy even
// for a tool that changes nothing; a refused call never runs.
func TestExecutorAsksAndRefuses(t *testing.T) {
	ws, _ := workspace(t)
	chain := Chain{set(t, ask("read_file", cadre.SyntaxGitignore, "plans/**"), deny("read_file", cadre.SyntaxGitignore, "secret.txt"))}
	inner := &fakeTool{name: "read_file"}
	g := Guard(inner, chain, ws)
	var asked []tool.ApprovalRequest
	answer := false
	ex := &tool.Executor{Approver: &tool.Approver{Mode: tool.ApproveAsk, Prompt: func(_ context.Context, req tool.ApprovalRequest) (bool, error) {
		asked = append(asked, req)
		return answer, nil
	}}}
	run := func(path string) (string, bool) {
		return ex.RunTool(context.Background(), "root", g, cadre.ToolCall{ID: "1", Name: "read_file", Arguments: `{"path":"` + path + `"}`})
	}
	if out, isErr := run("src/a.txt"); isErr || out != "done" || len(asked) != 0 {
		t.Fatalf("src/a.txt: %q %v, asked %d times", out, isErr, len(asked))
	}
	out, isErr := run("plans/p.md")
	if !isErr || len(asked) != 1 || !strings.Contains(asked[0].Rule, "ask plans/**") {
		t.Fatalf("plans/p.md declined: %q %v, asked %+v", out, isErr, asked)
	}
	answer = true
	if out, isErr := run("plans/p.md"); isErr || out != "done" || len(asked) != 2 {
		t.Fatalf("plans/p.md approved: %q %v, asked %d", out, isErr, len(asked))
	}
	out, isErr = run("secret.txt")
	if !isErr || !strings.Contains(out, "deny secret.txt") || len(asked) != 2 {
		t.Fatalf("secret.txt: %q %v, asked %d", out, isErr, len(asked))
	}
	if len(inner.calls) != 2 {
		t.Errorf("the tool ran %d times, want 2 (src/a.txt and the approved plans/p.md)", len(inner.calls))
	}
	// With --approve=none, the rule's ask is a refusal that names it.
	ex.Approver = &tool.Approver{Mode: tool.ApproveNone}
	if out, isErr := run("plans/p.md"); !isErr || !strings.Contains(out, "ask plans/**") {
		t.Errorf("approve=none: %q %v", out, isErr)
	}
}

func TestGuardLeavesOtherToolsAlone(t *testing.T) {
	ws, _ := workspace(t)
	inner := &fakeTool{name: "read_file"}
	if g := Guard(inner, Chain{set(t, denyAll(rc))}, ws); g != cadre.Tool(inner) {
		t.Error("a tool no rule is about was wrapped")
	}
}

// A call whose arguments give the key the rules read in another case, or
// twice, is refused: a tool decoding with encoding/json would take the
// other key's value (the last one wins), which the rules never saw.
func TestGuardAmbiguousSubjectKey(t *testing.T) {
	ws, _ := workspace(t)
	chain := Chain{set(t, denyAll("run_command"), allow("run_command", cadre.SyntaxCommand, "git *"))}
	for _, tc := range []struct {
		name, args string
		allowed    bool
	}{
		{"plain", `{"command":"git status"}`, true},
		{"other keys", `{"command":"git status","timeout":5}`, true},
		{"capital after", `{"command":"git status","Command":"rm -rf x"}`, false},
		{"capital before", `{"COMMAND":"rm -rf x","command":"git status"}`, false},
		{"capital alone", `{"Command":"rm -rf x"}`, false},
		{"escaped", `{"command":"git status","\u0043ommand":"rm -rf x"}`, false},
		{"twice", `{"command":"rm -rf x","command":"git status"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := &fakeTool{name: "run_command"}
			g := Guard(ft, chain, ws)
			_, err := g.Call(context.Background(), json.RawMessage(tc.args))
			if tc.allowed {
				if err != nil || len(ft.calls) != 1 {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || len(ft.calls) != 0 {
				t.Fatalf("ran %q", ft.calls)
			}
			if !strings.Contains(err.Error(), "command") {
				t.Errorf("the reason does not name the key: %v", err)
			}
		})
	}
	// The same for the keys of paths and URLs.
	for tool, args := range map[string]string{
		"read_file": `{"path":"src/a.txt","Path":"secret.txt"}`,
		"web_fetch": `{"url":"https://example.com/","URL":"https://evil.test/"}`,
	} {
		ft := &fakeTool{name: tool}
		rules := []cadre.ToolRule{denyAll(tool), allow(tool, cadre.SyntaxGitignore, "src/**")}
		if tool == "web_fetch" {
			rules[1] = allow(tool, cadre.SyntaxDomain, "example.com")
		}
		g := Guard(ft, Chain{set(t, rules...)}, ws)
		if _, err := g.Call(context.Background(), json.RawMessage(args)); err == nil || len(ft.calls) != 0 {
			t.Errorf("%s ran %q", tool, ft.calls)
		}
	}
}
