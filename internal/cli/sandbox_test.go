package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSandboxConfig(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(home, ".cadre", "config.yaml"), "sandbox: off\n")
	writeFile(t, filepath.Join(proj, ".cadre", "config.yaml"), "model: x\nsandbox:\n  network: true\n  hide: [~/private, secrets]\n  writable:\n    - ~/.cache/go-build\n  passEnv: [GITHUB_TOKEN]\n")
	env := map[string]string{"HOME": home}
	// The project's lists need trust (see TestTrustConfigKeys).
	a := &app{io: IO{Dir: proj, Getenv: func(k string) string { return env[k] }}, trustProject: true}
	cfg, err := a.loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	sc := cfg.Sandbox
	userFile := filepath.Join(home, ".cadre", "config.yaml")
	if sc.Mode != "off" || sc.modeFrom != userFile+":1" || sc.Network == nil || !*sc.Network ||
		!cmp.Equal(sc.Hide, []string{"~/private", "secrets"}) || !cmp.Equal(sc.Writable, []string{"~/.cache/go-build"}) ||
		!cmp.Equal(sc.PassEnv, []string{"GITHUB_TOKEN"}) || sc.ReadOnly != nil {
		t.Fatalf("merged sandbox %+v", sc)
	}
	// The project's mode wins over the user's, and says where it is.
	projFile := filepath.Join(proj, ".cadre", "config.yaml")
	writeFile(t, projFile, "sandbox: {mode: bwrap, readOnly: [docs]}\n")
	if cfg, err = a.loadConfig(); err != nil {
		t.Fatal(err)
	}
	if sc := cfg.Sandbox; sc.Mode != "bwrap" || sc.modeFrom != projFile+":1" || !cmp.Equal(sc.ReadOnly, []string{"docs"}) {
		t.Fatalf("merged sandbox %+v", sc)
	}

	// sandbox: off runs commands unconfined, and says so.
	writeFile(t, projFile, "sandbox:\n  mode: off\n")
	if cfg, err = a.loadConfig(); err != nil {
		t.Fatal(err)
	}
	opts, warning, err := a.commandOptions(context.Background(), cfg)
	if err != nil || opts.Sandbox != nil || !strings.Contains(warning, "run_command is unconfined: sandbox: off (set in "+projFile+":2)") {
		t.Fatalf("commandOptions = %+v, %q, %v", opts.Sandbox, warning, err)
	}
	if want := filepath.Join(proj, ".cadre", "procs"); opts.ProcessDir != want {
		t.Errorf("ProcessDir = %s, want %s", opts.ProcessDir, want)
	}

	// sandbox: bwrap without bubblewrap refuses, and says what to install.
	writeFile(t, projFile, "sandbox: bwrap\n")
	env["PATH"] = t.TempDir()
	if cfg, err = a.loadConfig(); err != nil {
		t.Fatal(err)
	}
	_, _, err = a.commandOptions(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "sandbox: bwrap (set in "+projFile+":1)") || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Fatalf("sandbox: bwrap without bwrap: %v", err)
	}
	// auto without bubblewrap runs commands unconfined, with a warning.
	writeFile(t, projFile, "sandbox: auto\n")
	if cfg, err = a.loadConfig(); err != nil {
		t.Fatal(err)
	}
	opts, warning, err = a.commandOptions(context.Background(), cfg)
	if err != nil || opts.Sandbox != nil || !strings.Contains(warning, "unconfined: bubblewrap (bwrap) is not installed") {
		t.Fatalf("auto without bwrap: %+v, %q, %v", opts.Sandbox, warning, err)
	}
	// The variables cadre reads keys from are kept from commands.
	cfg.Providers = map[string]providerConfig{"openai": {APIKeyEnv: "VLLM_KEY"}}
	if got := secretEnvNames(cfg); !strings.Contains(strings.Join(got, " "), "VLLM_KEY") {
		t.Errorf("secretEnvNames = %v", got)
	}
}

func TestSandboxConfigErrors(t *testing.T) {
	checkConfigErrors(t, []configErrorCase{
		{"bad mode", "model: x\nsandbox: strict\n", 2, []string{`sandbox: "strict" is not a sandbox mode`, "auto", "bwrap", "off"}},
		{"bad mode in map", "sandbox:\n  network: true\n  mode: always\n", 3, []string{`"always"`, "auto"}},
		{"bad mode inline", "sandbox: {mode: nope}\n", 1, []string{`"nope"`}},
		{"unknown key", "sandbox:\n  mode: auto\n  hidden: [a]\n", 3, []string{"hidden", "README.md"}},
		{"whole file system", "sandbox:\n  writable:\n    - /\n", 2, []string{"sandbox.writable", "/ is the whole file system"}},
		{"empty path", "sandbox:\n  hide: [\"\"]\n", 2, []string{"sandbox.hide", "empty path"}},
		{"bad passEnv", "sandbox:\n  passEnv: [\"A=B\"]\n", 2, []string{"sandbox.passEnv", `"A=B"`}},
		{"list for mode", "sandbox: [a]\n", 1, []string{"sandbox"}},
		{"wrong type", "sandbox:\n  network: maybe\n", 2, []string{"network"}},
	})
}
