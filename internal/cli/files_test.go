package cli

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-ai/cadre/tool/builtin"
)

// TestAllowHardLinksConfig checks that files.allowHardLinks reaches the
// file tools: by default read_file refuses a file with a second name
// outside the workspace; the project's config can allow it, over the
// user's.
func TestAllowHardLinksConfig(t *testing.T) {
	for _, tt := range []struct {
		name, user, project string
		allowed             bool
	}{
		{name: "default"},
		{name: "project_allows", project: "files:\n  allowHardLinks: true\n", allowed: true},
		{name: "user_allows", user: "files: {allowHardLinks: true}\n", allowed: true},
		{name: "project_refuses_over_user", user: "files: {allowHardLinks: true}\n", project: "files: {allowHardLinks: false}\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base, home := t.TempDir(), t.TempDir()
			dir, outside := filepath.Join(base, "project"), filepath.Join(base, "outside")
			writeFile(t, filepath.Join(outside, "secret.txt"), "SECRET\n")
			writeFile(t, filepath.Join(dir, "script.yaml"), "\"*\":\n  - text: hello\n")
			if err := os.Link(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "door.txt")); err != nil {
				t.Skipf("hard links unavailable: %v", err)
			}
			if tt.user != "" {
				writeFile(t, filepath.Join(home, ".cadre", "config.yaml"), tt.user)
			}
			if tt.project != "" {
				writeFile(t, filepath.Join(dir, ".cadre", "config.yaml"), tt.project)
			}
			env := map[string]string{"HOME": home}
			// A project's allowHardLinks: true needs trust (see TestTrustConfigKeys).
			a := &app{io: IO{Dir: dir, Stderr: io.Discard, Getenv: func(k string) string { return env[k] }}, trustProject: true}
			cfg, err := a.loadConfig()
			if err != nil {
				t.Fatal(err)
			}
			cfg.Model, cfg.Store = "scripted:"+filepath.Join(dir, "script.yaml"), "none"
			w, err := a.wire(context.Background(), cfg, &console{w: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			defer w.close()
			var got string
			for _, tl := range w.engine.Tools {
				if tl.Spec().Name == builtin.NameReadFile {
					raw, _ := json.Marshal(map[string]string{"path": "door.txt"})
					out, err := tl.Call(context.Background(), raw)
					got = out
					if err != nil {
						got = err.Error()
					}
				}
			}
			if tt.allowed != strings.Contains(got, "1\tSECRET") {
				t.Errorf("read_file door.txt = %q; allowed %v", got, tt.allowed)
			}
			if !tt.allowed && !strings.Contains(got, "allowHardLinks: true under files:") {
				t.Errorf("the refusal %q does not say how to allow the file", got)
			}
		})
	}
}
