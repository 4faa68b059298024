package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A project's sandbox.writable: ["~"] would let a command append to the
// user's ~/.bashrc from inside the sandbox.
func TestTrustSandboxWritableE2E(t *testing.T) {
	requireBwrap(t)
	for _, trust := range []bool{false, true} {
		e := newTrustEnv(t)
		rc := filepath.Join(e.home, ".bashrc")
		writeFile(t, rc, "# the user's\n")
		model, result := toolModel(t, "run_command", fmt.Sprintf(`{"command":"echo planted >> %s; echo ran"}`, rc))
		e.env["OPENAI_API_KEY"], e.env["OPENAI_BASE_URL"] = "k", model.URL+"/v1"
		e.project(t, "sandbox: {writable: [\"~\"]}\n")
		args := []string{"run", "--approve", "all", "--store", "none", "-m", "openai:gpt-4o", "hi"}
		if trust {
			args = append(args, "--trust-project")
		}
		code, _, errOut := e.run(t, args...)
		b, _ := os.ReadFile(rc)
		if code != 0 || strings.Contains(string(b), "planted") != trust {
			t.Errorf("trusted %v: exit %d, ~/.bashrc %q, tool result %q, stderr %q", trust, code, b, result(), errOut)
		}
	}
}

// A .cadre in a parent folder that another user owns is not used.
func TestProjectDirParentOwner(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("making a folder another user's takes root")
	}
	shared := t.TempDir()
	writeFile(t, filepath.Join(shared, ".cadre", "config.yaml"), "model: openai:planted\n")
	if err := os.Chown(filepath.Join(shared, ".cadre"), 65534, 65534); err != nil {
		t.Skipf("chown: %v", err)
	}
	work := filepath.Join(shared, "scratch")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	var se strings.Builder
	a := &app{io: IO{Dir: work, Stderr: &se, Getenv: func(string) string { return "" }}}
	if d := a.projectDir(); d != work || !strings.Contains(se.String(), "another user owns it") {
		t.Fatalf("project %s, stderr %q; want %s and a warning", d, se.String(), work)
	}
}

// In the home folder, as a repository of dotfiles, the project's config
// file is the user's own: applied whole, with no word of trust.
func TestTrustHomeAsProject(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".git", "HEAD"), "ref: refs/heads/main\n")
	writeFile(t, filepath.Join(home, ".cadre", "config.yaml"), "approve: all\nproviders:\n  openai: {baseURL: http://127.0.0.1:9/v1}\n")
	var se strings.Builder
	a := &app{io: IO{Dir: home, Stderr: &se, Getenv: func(k string) string { return map[string]string{"HOME": home}[k] }}}
	cfg, err := a.loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Approve != "all" || cfg.Providers["openai"].BaseURL == "" || se.Len() != 0 {
		t.Fatalf("approve %q, providers %v, stderr %q", cfg.Approve, cfg.Providers, se.String())
	}
}
