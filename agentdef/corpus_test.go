package agentdef

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// corpusDir locates the compatibility corpus of real agent files: shared/
// beside the module's checkout. When it is missing the test fails under CI
// and is skipped elsewhere.
func corpusDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		up := filepath.Dir(dir)
		if up == dir {
			tb.Fatal("go.mod not found above the test's directory")
		}
		dir = up
	}
	corpus := filepath.Join(dir, "..", "shared", "corpus", "agents")
	if fi, err := os.Stat(corpus); err != nil || !fi.IsDir() {
		msg := fmt.Sprintf("the agent corpus is missing: expected a folder at %s (shared/corpus/agents beside the module's checkout)", corpus)
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	return corpus
}

// The files of the corpus whose frontmatter is not valid YAML: each must
// load through the line reader, with a warning.
func brokenCorpusFiles() []string {
	return []string{
		"VoltAgent__awesome-claude-code-subagents/categories/04-quality-security/gdpr-ccpa-compliance.md",
		"VoltAgent__awesome-claude-code-subagents/categories/07-specialized-domains/hipaa-compliance.md",
		"VoltAgent__awesome-claude-code-subagents/categories/08-business-product/assumption-mapping.md",
		"VoltAgent__awesome-claude-code-subagents/categories/08-business-product/backlog-grooming.md",
		"VoltAgent__awesome-claude-code-subagents/categories/08-business-product/growth-loops.md",
		"VoltAgent__awesome-claude-code-subagents/categories/10-research-analysis/ab-test-analysis.md",
		"VoltAgent__awesome-claude-code-subagents/categories/10-research-analysis/cohort-analysis.md",
		"VoltAgent__awesome-claude-code-subagents/categories/10-research-analysis/first-principles-thinking.md",
		"vijaythecoder__awesome-claude-agents/agents/specialized/rails/rails-backend-expert.md",
	}
}

func corpusFiles(tb testing.TB, dir string) []string {
	tb.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && isAgentFile(d.Name()) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return files
}

// validFrontmatter reports whether a file's frontmatter is valid YAML
// holding a name (or an OpenCode mode) and a description: such a file must
// load.
func validFrontmatter(data []byte) bool {
	fm, st := splitFrontmatter(data)
	if st != splitOK {
		return false
	}
	var m map[string]any
	if err := yaml.Unmarshal(fm.yaml, &m); err != nil {
		return false
	}
	_, hasName := m["name"]
	_, hasMode := m["mode"]
	desc, _ := m["description"].(string)
	return (hasName || hasMode) && strings.TrimSpace(desc) != "" && strings.TrimSpace(string(fm.body)) != ""
}

// Every file of the corpus loads or gets a specific diagnostic; files with
// valid frontmatter load; the broken ones load through recovery.
func TestCorpus(t *testing.T) {
	dir := corpusDir(t)
	files := corpusFiles(t, dir)
	broken := brokenCorpusFiles()
	var (
		clean, warned, recovered, skipped int
		rejected                          = map[string]int{}
		recoveredFiles                    []string
	)
	for _, path := range files {
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		def, diags := Parse(path, data, ParseOptions{Scope: ScopeDir})
		for _, d := range diags {
			if d.File != path || strings.TrimSpace(d.Message) == "" {
				t.Errorf("%s: diagnostic without its file or reason: %+v", rel, d)
			}
		}
		isRecovered := hasDiag(diags, SeverityWarning, "not valid YAML", "recovered")
		switch {
		case def == nil && HasErrors(diags):
			first := diags[slices.IndexFunc(diags, func(d Diagnostic) bool { return d.Severity == SeverityError })]
			rejected[reason(first.Message)]++
			if validFrontmatter(data) {
				t.Errorf("%s: valid frontmatter, but rejected:%s", rel, diagLines(diags))
			}
		case def == nil:
			if len(diags) == 0 {
				t.Errorf("%s: not loaded and no diagnostic says why", rel)
			}
			skipped++
		case isRecovered:
			recovered++
			recoveredFiles = append(recoveredFiles, rel)
		case hasDiag(diags, SeverityWarning):
			warned++
		default:
			clean++
		}
		if def != nil && (def.Name == "" || def.Description == "" || strings.TrimSpace(def.Prompt) == "") {
			t.Errorf("%s: loaded without name, description or prompt: %+v", rel, def)
		}
		if slices.Contains(broken, rel) && (def == nil || !isRecovered) {
			t.Errorf("%s: broken YAML must load through recovery with a warning; got def=%v:%s", rel, def != nil, diagLines(diags))
		}
	}
	for _, b := range broken {
		if !slices.Contains(recoveredFiles, b) {
			t.Errorf("%s: not recovered (is it still in the corpus?)", b)
		}
	}
	sort.Strings(recoveredFiles)
	t.Logf("%d files: %d loaded clean, %d loaded with warnings, %d recovered from broken YAML, %d skipped (info), %d rejected",
		len(files), clean, warned, recovered, skipped, len(files)-clean-warned-recovered-skipped)
	for r, n := range rejected {
		t.Logf("rejected: %d × %s", n, r)
	}
	for _, f := range recoveredFiles {
		t.Logf("recovered: %s", f)
	}
	if len(files) < 500 {
		t.Errorf("only %d files in the corpus; expected about 565", len(files))
	}
}

// reason is the first clause of a message, for counting by kind.
func reason(msg string) string {
	if i := strings.IndexAny(msg, ":("); i > 0 {
		return msg[:i]
	}
	return msg
}

// Loading the corpus as folders: every file ends up loaded, replaced by a
// later folder's agent of the same name, or with a diagnostic.
func TestCorpusLoad(t *testing.T) {
	dir := corpusDir(t)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join(dir, e.Name()))
		}
	}
	cat, diags := Load(LoadOptions{ExtraDirs: dirs, NoBuiltin: true, NoUser: true, NoProject: true})
	accounted := map[string]bool{}
	for _, d := range cat.All() {
		accounted[d.File] = true
	}
	for _, d := range cat.Overridden() {
		accounted[d.File] = true
	}
	dups := 0
	for _, d := range diags {
		if d.Severity == SeverityError {
			accounted[d.File] = true
		}
		if strings.HasPrefix(d.Message, "duplicate name") {
			dups++
		}
	}
	files := corpusFiles(t, dir)
	for _, f := range files {
		if !accounted[f] {
			t.Errorf("%s: neither loaded, overridden nor rejected", f)
		}
	}
	t.Logf("%d files in %d folders: %d agents in the catalog, %d overridden by a later folder, %d duplicates within a folder, %d diagnostics",
		len(files), len(dirs), cat.Len(), len(cat.Overridden()), dups, len(diags))
}

// BenchmarkLoadCorpus loads every corpus file (read, split, parse, resolve)
// as one folder.
func BenchmarkLoadCorpus(b *testing.B) {
	dir := corpusDir(b)
	n := len(corpusFiles(b, dir))
	b.ReportAllocs()
	for b.Loop() {
		cat, _ := Load(LoadOptions{ExtraDirs: []string{dir}, NoBuiltin: true, NoUser: true, NoProject: true})
		if cat.Len() == 0 {
			b.Fatal("nothing loaded")
		}
	}
	b.ReportMetric(float64(n), "files/op")
}

// BenchmarkParse parses one typical file, already in memory.
func BenchmarkParse(b *testing.B) {
	data := []byte(agent("bench", "tools: Read, Grep, Glob, Bash(git *)", "model: sonnet", "color: blue") + strings.Repeat("Prompt line.\n", 200))
	b.ReportAllocs()
	for b.Loop() {
		if d, _ := Parse("bench.md", data, ParseOptions{}); d == nil {
			b.Fatal("rejected")
		}
	}
}
