package agentdef

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/cadre-ai/cadre"
)

// corpusEnv names a folder holding the corpus, for checkouts that do not
// have shared/ beside them.
const corpusEnv = "CADRE_CORPUS"

// corpusDir locates the compatibility corpus of real agent files (see
// findCorpus). When it is missing the tests that need it are skipped,
// except in CI (the variable CI is set), where they fail: CI checks out
// shared/ beside the repository, so a missing corpus there is a broken
// setup, not a reason to test less.
func corpusDir(tb testing.TB) string {
	tb.Helper()
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	dir, err := findCorpus(wd, os.Getenv)
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("%v; CI runs the corpus tests, so it must have the corpus", err)
		}
		tb.Skip(err)
	}
	return dir
}

// findCorpus returns the corpus folder: the one getenv(corpusEnv) names,
// or shared/corpus/agents beside the checkout of the module that holds the
// folder wd. The error says where it looked.
func findCorpus(wd string, getenv func(string) string) (string, error) {
	corpus := getenv(corpusEnv)
	how := "named by " + corpusEnv
	if corpus == "" {
		dir := wd
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				break
			}
			up := filepath.Dir(dir)
			if up == dir {
				return "", fmt.Errorf("go.mod not found above %s", wd)
			}
			dir = up
		}
		corpus = filepath.Join(filepath.Dir(dir), "shared", "corpus", "agents")
		how = "shared/corpus/agents beside the module's checkout; set " + corpusEnv + " to use another"
	}
	if fi, err := os.Stat(corpus); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("the agent corpus is missing: expected a folder at %s (%s)", corpus, how)
	}
	return corpus, nil
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

// rejectionReasons are the reasons a file is rejected for, as the first
// words of the error that rejects it.
func rejectionReasons() []string {
	return []string{"no frontmatter", "the frontmatter opened here is never closed", "malformed YAML",
		"the frontmatter is not key: value fields", "missing name", "name is empty", "missing description",
		"description is empty", "empty body", "duplicate name", "cannot read", "file is"}
}

// Every file of the corpus loads or gets a specific diagnostic; files with
// valid frontmatter load; the broken ones load through recovery, with what
// a plain reading of their lines says; every prompt is the file's body.
func TestCorpus(t *testing.T) {
	dir := corpusDir(t)
	files := corpusFiles(t, dir)
	broken := brokenCorpusFiles()
	var (
		clean, warned, recovered, skipped int
		rejected                          = map[string]int{}
		warnings                          = map[string]int{}
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
			if !slices.ContainsFunc(rejectionReasons(), func(r string) bool { return strings.HasPrefix(first.Message, r) }) &&
				!strings.Contains(first.Message, " is not valid: ") && !strings.Contains(first.Message, "strict") {
				t.Errorf("%s: rejected for no recognised reason: %s", rel, first)
			}
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
			checkRecovered(t, rel, data, def)
		case hasDiag(diags, SeverityWarning):
			warned++
			for _, d := range diags {
				if d.Severity == SeverityWarning {
					warnings[warningKind(d.Message)]++
				}
			}
		default:
			clean++
		}
		if def == nil {
			continue
		}
		if def.Name == "" || def.Description == "" || strings.TrimSpace(def.Prompt) == "" {
			t.Errorf("%s: loaded without name, description or prompt: %+v", rel, def)
		}
		// The prompt is the file's tail, right after the closing delimiter
		// line and the blank lines after it.
		head, ok := bytes.CutSuffix(data, []byte(def.Prompt))
		if !ok || !strings.HasSuffix(strings.TrimRight(string(head), " \t\r\n"), "---") || strings.HasPrefix(def.Prompt, "\n") || strings.HasPrefix(def.Prompt, "\r\n") {
			t.Errorf("%s: the prompt is not the body of the file byte for byte", rel)
		}
	}
	for _, b := range broken {
		if !slices.Contains(recoveredFiles, b) {
			t.Errorf("%s: broken YAML must load through recovery with a warning (is it still in the corpus?)", b)
		}
	}
	for _, f := range recoveredFiles {
		if !slices.Contains(broken, f) {
			t.Errorf("%s: recovered, but not among the files known to be broken: a regression in the YAML reading?", f)
		}
	}
	t.Logf("%d files: %d loaded (%d clean, %d with warnings), %d recovered from broken YAML with a warning, %d rejected, %d skipped with an info line",
		len(files), clean+warned, clean, warned, recovered, len(files)-clean-warned-recovered-skipped, skipped)
	for _, r := range slices.Sorted(maps.Keys(rejected)) {
		t.Logf("rejected: %d × %s", rejected[r], r)
	}
	for _, w := range slices.Sorted(maps.Keys(warnings)) {
		t.Logf("warnings on loaded files: %d × %s", warnings[w], w)
	}
	for _, f := range recoveredFiles {
		t.Logf("recovered: %s", f)
	}
	if len(files) < 500 {
		t.Errorf("only %d files in the corpus; expected about 565", len(files))
	}
}

// checkRecovered compares what recovery made of a broken file with a plain
// reading of its frontmatter lines: the name, the start of the description,
// the model and whether tools were given must agree, and the description
// must not have swallowed a field.
func checkRecovered(t *testing.T, rel string, data []byte, def *cadre.Definition) {
	t.Helper()
	fm, _ := splitFrontmatter(data)
	plain := map[string]string{}
	for _, l := range fm.lines {
		if key, ok := keyAt(l); ok && slices.Contains(knownKeys(), key) {
			if _, seen := plain[key]; !seen {
				_, v, _ := strings.Cut(l, ":")
				plain[key] = strings.Trim(strings.TrimSpace(v), `"'`)
			}
		}
	}
	if def.Name != plain["name"] {
		t.Errorf("%s: recovered name %q, the file says %q", rel, def.Name, plain["name"])
	}
	if start := []rune(plain["description"]); len(start) < 20 || !strings.HasPrefix(def.Description, string(start[:20])) {
		t.Errorf("%s: recovered description %q does not start as the file's does (%q)", rel, clip(def.Description, 40), clip(plain["description"], 40))
	}
	for _, key := range knownKeys() {
		if strings.Contains(def.Description, "\n"+key+":") {
			t.Errorf("%s: the recovered description swallowed the field %s", rel, key)
		}
	}
	if _, has := plain["tools"]; has != (def.Tools != nil) {
		t.Errorf("%s: tools in the file: %v; tools recovered: %#v", rel, has, def.Tools)
	}
	if def.Model != plain["model"] {
		t.Errorf("%s: recovered model %q, the file says %q", rel, def.Model, plain["model"])
	}
}

// warningKind names the kind of a warning, for counting.
func warningKind(msg string) string {
	switch {
	case strings.Contains(msg, "of the MCP server"):
		return "tools of an MCP server that is not configured"
	case strings.Contains(msg, "cadre knows"):
		return "tools cadre does not have"
	case strings.Contains(msg, "is not an agent name"):
		return "a display name as the name"
	}
	return reason(msg)
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

func TestFindCorpus(t *testing.T) {
	root := t.TempDir()
	module := filepath.Join(root, "cadre")
	pkg := filepath.Join(module, "agentdef")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(module, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noEnv := func(string) string { return "" }
	beside := filepath.Join(root, "shared", "corpus", "agents")

	_, err := findCorpus(pkg, noEnv)
	if err == nil || !strings.Contains(err.Error(), "expected a folder at "+beside) || !strings.Contains(err.Error(), corpusEnv) {
		t.Errorf("without a corpus: %v, want an error naming %s and %s", err, beside, corpusEnv)
	}
	if err := os.MkdirAll(beside, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := findCorpus(pkg, noEnv); err != nil || got != beside {
		t.Errorf("beside the checkout: %q, %v", got, err)
	}
	other := filepath.Join(root, "elsewhere")
	env := func(k string) string {
		if k == corpusEnv {
			return other
		}
		return ""
	}
	if _, err := findCorpus(pkg, env); err == nil || !strings.Contains(err.Error(), other) || !strings.Contains(err.Error(), "named by "+corpusEnv) {
		t.Errorf("%s naming a missing folder: %v", corpusEnv, err)
	}
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := findCorpus(pkg, env); err != nil || got != other {
		t.Errorf("named by %s: %q, %v", corpusEnv, got, err)
	}
}
