package agentdef

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-ai/cadre"
)

// writeFiles creates files (path relative to dir → content) under dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// loadDir writes files into a new folder and loads that folder alone.
func loadDir(t testing.TB, files map[string]string, opts LoadOptions) (string, *Catalog, []Diagnostic) {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, files)
	opts.ExtraDirs = append([]string{dir}, opts.ExtraDirs...)
	opts.NoBuiltin, opts.NoUser, opts.NoProject = true, true, true
	cat, diags := Load(opts)
	return dir, cat, diags
}

// parseString parses content as the file agent.md.
func parseString(t testing.TB, content string, opts ParseOptions) (*cadre.Definition, []Diagnostic) {
	t.Helper()
	return Parse("agent.md", []byte(content), opts)
}

// diagsFor returns the diagnostics about file (a path ending in file).
func diagsFor(diags []Diagnostic, file string) []Diagnostic {
	var out []Diagnostic
	for _, d := range diags {
		if strings.HasSuffix(filepath.ToSlash(d.File), file) {
			out = append(out, d)
		}
	}
	return out
}

// hasDiag reports whether one diagnostic has the severity and contains
// every fragment.
func hasDiag(diags []Diagnostic, sev Severity, fragments ...string) bool {
	for _, d := range diags {
		if d.Severity != sev {
			continue
		}
		ok := true
		for _, f := range fragments {
			if !strings.Contains(d.Message, f) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func diagLines(diags []Diagnostic) string {
	var sb strings.Builder
	for _, d := range diags {
		sb.WriteString("\n\t")
		sb.WriteString(d.String())
	}
	return sb.String()
}

// agent builds a minimal valid file with extra frontmatter lines.
func agent(name string, extra ...string) string {
	fm := "name: " + name + "\ndescription: The " + name + " agent.\n"
	for _, e := range extra {
		fm += e + "\n"
	}
	return "---\n" + fm + "---\nYou are " + name + ".\n"
}
