package agentdef

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
)

// The loader cases of the markdown format this package adopts (Netclaw's
// FileSubAgentDefinitionLoader tests), in cadre's terms.

func TestLoadFullFrontmatter(t *testing.T) {
	_, cat, diags := loadDir(t, map[string]string{"research.md": `---
name: research-assistant
description: Deep research with sources cited
tools: [web_fetch, read_file]
modelRole: Compaction
timeoutSeconds: 120
visibility: internal
emitStructuredFindings: true
---

You are a research assistant.

Cite every source.
`}, LoadOptions{})
	if len(diags) != 0 {
		t.Fatalf("diagnostics:%s", diagLines(diags))
	}
	got, ok := cat.Get("research-assistant")
	if !ok {
		t.Fatal("research-assistant not loaded")
	}
	want := &cadre.Definition{
		Name:                   "research-assistant",
		Description:            "Deep research with sources cited",
		Prompt:                 "You are a research assistant.\n\nCite every source.\n",
		File:                   got.File,
		Scope:                  ScopeDir,
		Tools:                  []string{"web_fetch", "read_file"},
		ModelRole:              "compaction",
		Timeout:                120 * time.Second,
		Visibility:             cadre.VisibilityInternal,
		EmitStructuredFindings: true,
		Report:                 cadre.ReportTool,
		Protocol:               cadre.ProtocolAuto,
		Onboarding:             cadre.OnboardingOptional,
		MaxQuestions:           cadre.DefaultMaxQuestions,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("definition (-want +got):\n%s", diff)
	}
	if filepath.Base(got.File) != "research.md" {
		t.Errorf("File = %q, want the path of research.md", got.File)
	}
}

func TestLoadMinimalDefaults(t *testing.T) {
	_, cat, diags := loadDir(t, map[string]string{"min.md": "---\nname: minimal\ndescription: Does little.\n---\nPrompt.\n"}, LoadOptions{})
	if len(diags) != 0 {
		t.Fatalf("diagnostics:%s", diagLines(diags))
	}
	d, ok := cat.Get("minimal")
	if !ok {
		t.Fatal("minimal not loaded")
	}
	if d.Tools != nil {
		t.Errorf("Tools = %#v, want nil (inherit the parent's)", d.Tools)
	}
	if d.Timeout != cadre.DefaultTimeout || d.Visibility != cadre.VisibilityUserFacing ||
		d.Report != cadre.ReportTool || d.Protocol != cadre.ProtocolAuto ||
		d.Onboarding != cadre.OnboardingOptional || d.MaxQuestions != cadre.DefaultMaxQuestions ||
		d.Model != "" || d.ModelRole != "" || d.EmitStructuredFindings {
		t.Errorf("defaults not applied: %+v", d)
	}
}

func TestLoadNoFrontmatter(t *testing.T) {
	_, cat, diags := loadDir(t, map[string]string{"plain.md": "# Just a document\n\nNo frontmatter here.\n"}, LoadOptions{})
	if cat.Len() != 0 {
		t.Errorf("loaded %v", cat.Names())
	}
	if !hasDiag(diagsFor(diags, "plain.md"), SeverityError, "no frontmatter") {
		t.Errorf("want an error naming plain.md and no frontmatter:%s", diagLines(diags))
	}
}

func TestLoadUnclosedList(t *testing.T) {
	// An unclosed flow list is malformed YAML: the line reader recovers the
	// agent and says so, naming the file, the place and the parser's reason.
	_, cat, diags := loadDir(t, map[string]string{"unclosed.md": "---\nname: lister\ndescription: Lists things.\ntools: [Read, Grep\n---\nPrompt.\n"}, LoadOptions{})
	d, ok := cat.Get("lister")
	if !ok {
		t.Fatalf("lister not loaded:%s", diagLines(diags))
	}
	if diff := cmp.Diff([]string{"read_file", "search_files"}, d.Tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	ds := diagsFor(diags, "unclosed.md")
	if !hasDiag(ds, SeverityWarning, "not valid YAML", "recovered", "tools") {
		t.Errorf("want a recovery warning:%s", diagLines(diags))
	}
	if len(ds) == 0 || ds[0].Line != 4 {
		t.Errorf("want the warning at line 4:%s", diagLines(ds))
	}
}

func TestLoadUnrecoverableYAML(t *testing.T) {
	_, cat, diags := loadDir(t, map[string]string{"flow.md": "---\n{name: x, description: y\n---\nPrompt.\n"}, LoadOptions{})
	if cat.Len() != 0 {
		t.Errorf("loaded %v", cat.Names())
	}
	if !hasDiag(diagsFor(diags, "flow.md"), SeverityError, "malformed YAML", "name or description") {
		t.Errorf("want a malformed YAML error:%s", diagLines(diags))
	}
}

func TestLoadMissingName(t *testing.T) {
	_, cat, diags := loadDir(t, map[string]string{"anon.md": "---\ndescription: Has no name.\n---\nPrompt.\n"}, LoadOptions{})
	if cat.Len() != 0 {
		t.Errorf("loaded %v", cat.Names())
	}
	if !hasDiag(diagsFor(diags, "anon.md"), SeverityError, "missing name", "name: anon") {
		t.Errorf("want a missing name error suggesting the file name:%s", diagLines(diags))
	}
}

func TestLoadMissingDescription(t *testing.T) {
	_, cat, diags := loadDir(t, map[string]string{"nodesc.md": "---\nname: nodesc\n---\nPrompt.\n"}, LoadOptions{})
	if cat.Len() != 0 {
		t.Errorf("loaded %v", cat.Names())
	}
	if !hasDiag(diagsFor(diags, "nodesc.md"), SeverityError, "missing description") {
		t.Errorf("want a missing description error:%s", diagLines(diags))
	}
}

func TestLoadEmptyBody(t *testing.T) {
	_, cat, diags := loadDir(t, map[string]string{"empty.md": "---\nname: empty\ndescription: Says nothing.\n---\n\n   \n"}, LoadOptions{})
	if cat.Len() != 0 {
		t.Errorf("loaded %v", cat.Names())
	}
	ds := diagsFor(diags, "empty.md")
	if !hasDiag(ds, SeverityError, "empty body") {
		t.Errorf("want an empty body error:%s", diagLines(diags))
	}
	if len(ds) == 0 || ds[0].Line != 4 {
		t.Errorf("want the error at the closing line 4:%s", diagLines(ds))
	}
}

func TestLoadDuplicateNamesFirstWins(t *testing.T) {
	_, cat, diags := loadDir(t, map[string]string{
		"a.md": agent("twin", "timeoutSeconds: 11"),
		"b.md": agent("twin", "timeoutSeconds: 22"),
	}, LoadOptions{})
	d, ok := cat.Get("twin")
	if !ok || d.Timeout != 11*time.Second {
		t.Fatalf("want twin from a.md, got %+v", d)
	}
	if !hasDiag(diagsFor(diags, "b.md"), SeverityError, "duplicate name twin", "a.md") {
		t.Errorf("want a duplicate error on b.md naming a.md:%s", diagLines(diags))
	}
	if len(diagsFor(diags, "a.md")) != 0 {
		t.Errorf("a.md should have no diagnostics:%s", diagLines(diags))
	}
}

func TestLoadVisibilitySpellings(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  cadre.Visibility
	}{
		{"user-facing", cadre.VisibilityUserFacing},
		{"UserFacing", cadre.VisibilityUserFacing},
		{"userfacing", cadre.VisibilityUserFacing},
		{"internal", cadre.VisibilityInternal},
		{"Internal", cadre.VisibilityInternal},
	} {
		t.Run(tc.value, func(t *testing.T) {
			d, diags := parseString(t, agent("v", "visibility: "+tc.value), ParseOptions{})
			if d == nil || len(diags) != 0 {
				t.Fatalf("not loaded:%s", diagLines(diags))
			}
			if d.Visibility != tc.want {
				t.Errorf("Visibility = %q, want %q", d.Visibility, tc.want)
			}
		})
	}
	t.Run("sideways", func(t *testing.T) {
		d, diags := parseString(t, agent("v", "visibility: sideways"), ParseOptions{})
		if d != nil || !hasDiag(diags, SeverityError, "visibility", "sideways", "user-facing or internal") {
			t.Errorf("want a bad value error:%s", diagLines(diags))
		}
	})
}

func TestLoadIgnoresNonMarkdownFiles(t *testing.T) {
	_, cat, diags := loadDir(t, map[string]string{
		"good.md":       agent("good"),
		"notes.txt":     "---\nname: txt\n---\n",
		"agent.json":    `{"name": "json"}`,
		"script.sh":     "#!/bin/sh\n",
		"README":        "not markdown",
		"deep/more.md":  agent("deeper"),
		"deep/more.bak": "garbage",
	}, LoadOptions{})
	if diff := cmp.Diff([]string{"deeper", "good"}, cat.Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if len(diags) != 0 {
		t.Errorf("non-markdown files must not be reported:%s", diagLines(diags))
	}
}

// One valid agent beside eight kinds of invalid siblings: the valid one
// loads, every sibling gets exactly one diagnostic, an error naming its
// file, its place where it has one, and its reason, and stray files of
// other kinds get none.
func TestLoadFailsLoudPerFile(t *testing.T) {
	siblings := []struct {
		file, content string
		line, col     int
		reason        []string
	}{
		{"no-frontmatter.md", "Just text, no frontmatter.\n", 0, 0, []string{"no frontmatter"}},
		{"unclosed.md", "---\nname: unclosed\ndescription: Never closed.\n\nPrompt.\n", 1, 1, []string{"never closed"}},
		{"malformed.md", "---\n{name: malformed, description: x\n---\nPrompt.\n", 2, 1, []string{"malformed YAML"}},
		{"missing-name.md", "---\ndescription: No name.\n---\nPrompt.\n", 1, 1, []string{"missing name", "name: missing-name"}},
		{"missing-description.md", "---\nname: nodesc\n---\nPrompt.\n", 1, 1, []string{"missing description"}},
		{"empty-body.md", "---\nname: empty\ndescription: Empty.\n---\n", 4, 1, []string{"empty body"}},
		{"zz-duplicate.md", agent("valid"), 2, 1, []string{"duplicate name valid", "valid.md"}},
		{"bad-value.md", agent("badvalue", "timeoutSeconds: soon"), 4, 17, []string{"timeoutSeconds", "soon", "whole number of seconds"}},
	}
	files := map[string]string{
		"valid.md":   agent("valid"),
		"stray.json": `{"name": "stray"}`,
		"stray.txt":  "---\nname: stray\n---\n",
	}
	for _, s := range siblings {
		files[s.file] = s.content
	}
	_, cat, diags := loadDir(t, files, LoadOptions{})
	if diff := cmp.Diff([]string{"valid"}, cat.Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if d, _ := cat.Get("valid"); d == nil || filepath.Base(d.File) != "valid.md" {
		t.Errorf("valid should come from valid.md, got %+v", d)
	}
	for _, s := range siblings {
		t.Run(s.file, func(t *testing.T) {
			ds := diagsFor(diags, "/"+s.file)
			if len(ds) != 1 || !hasDiag(ds, SeverityError, s.reason...) {
				t.Fatalf("want one error on %s with %q:%s", s.file, s.reason, diagLines(diags))
			}
			if ds[0].Line != s.line || ds[0].Column != s.col {
				t.Errorf("error at %d:%d, want %d:%d: %s", ds[0].Line, ds[0].Column, s.line, s.col, ds[0])
			}
			if !strings.HasPrefix(ds[0].String(), ds[0].File) || filepath.Base(ds[0].File) != s.file {
				t.Errorf("the diagnostic must name its file: %s", ds[0])
			}
		})
	}
	for _, stray := range []string{"stray.json", "stray.txt", "valid.md"} {
		if ds := diagsFor(diags, "/"+stray); len(ds) != 0 {
			t.Errorf("%s must get no diagnostic:%s", stray, diagLines(ds))
		}
	}
	if len(diags) != len(siblings) {
		t.Errorf("%d diagnostics for %d invalid files:%s", len(diags), len(siblings), diagLines(diags))
	}
}

func TestLoadStrictRejectsUnknownTools(t *testing.T) {
	files := map[string]string{"a.md": agent("searcher", "tools: Read, NotebookEdit")}
	t.Run("lenient", func(t *testing.T) {
		_, cat, diags := loadDir(t, files, LoadOptions{})
		d, ok := cat.Get("searcher")
		if !ok {
			t.Fatalf("not loaded:%s", diagLines(diags))
		}
		if diff := cmp.Diff([]string{"read_file"}, d.Tools); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
		if !hasDiag(diags, SeverityWarning, "NotebookEdit", "loads without it") || diags[0].Line != 4 || diags[0].Column != 8 {
			t.Errorf("want a warning at 4:8:%s", diagLines(diags))
		}
	})
	t.Run("strict", func(t *testing.T) {
		_, cat, diags := loadDir(t, files, LoadOptions{Strict: true})
		if cat.Len() != 0 {
			t.Errorf("loaded %v", cat.Names())
		}
		if !hasDiag(diags, SeverityError, "NotebookEdit", "strict") {
			t.Errorf("want a strict error:%s", diagLines(diags))
		}
	})
}

func TestLoadIndexFilesAreInfo(t *testing.T) {
	_, cat, diags := loadDir(t, map[string]string{
		"README.md": "# My agents\n\nSee the files here.\n",
		"INDEX.md":  "- a\n- b\n",
		"a.md":      agent("a"),
	}, LoadOptions{})
	if cat.Len() != 1 || HasErrors(diags) || hasDiag(diags, SeverityWarning) {
		t.Fatalf("want one agent and info lines only:%s", diagLines(diags))
	}
	for _, f := range []string{"README.md", "INDEX.md"} {
		if !hasDiag(diagsFor(diags, f), SeverityInfo, "not an agent") {
			t.Errorf("want an info line for %s:%s", f, diagLines(diags))
		}
	}
}

func TestLoadOpenCodeFolderNamesFromFile(t *testing.T) {
	home := t.TempDir()
	writeFiles(t, home, map[string]string{
		".config/opencode/agent/reviewer.md": "---\ndescription: Reviews code.\nmode: subagent\ntools:\n  write: false\n  edit: false\n---\nReview.\n",
		".cadre/agents/helper.md":            agent("helper"),
	})
	cat, diags := Load(LoadOptions{Home: home, NoBuiltin: true, NoProject: true})
	if HasErrors(diags) {
		t.Fatalf("errors:%s", diagLines(diags))
	}
	d, ok := cat.Get("reviewer")
	if !ok {
		t.Fatalf("reviewer not loaded: %v", cat.Names())
	}
	if d.Scope != ScopeUser || d.Tools != nil {
		t.Errorf("scope %q tools %v, want user and nil", d.Scope, d.Tools)
	}
	if diff := cmp.Diff([]string{"write_file", "edit_file"}, d.DisallowedTools); diff != "" {
		t.Errorf("disallowed (-want +got):\n%s", diff)
	}
}

func TestLoadScopes(t *testing.T) {
	home := t.TempDir()
	repo := filepath.Join(t.TempDir(), "repo")
	work := filepath.Join(repo, "svc", "api")
	extra := t.TempDir()
	writeFiles(t, home, map[string]string{
		".claude/agents/shared.md":     agent("shared", "model: haiku"),
		".cadre/agents/userish.md":     agent("userish"),
		".claude/agents/summarizer.md": agent("summarizer", "timeoutSeconds: 7"),
	})
	writeFiles(t, repo, map[string]string{
		".git/HEAD":                        "ref: refs/heads/main\n",
		".claude/agents/shared.md":         agent("shared", "model: sonnet"),
		".claude/agents/top.md":            agent("top"),
		"svc/.cadre/agents/mid.md":         agent("mid"),
		"svc/.cadre/agents/top.md":         agent("top", "timeoutSeconds: 42"),
		"svc/api/.opencode/agents/near.md": "---\ndescription: Near.\n---\nNear.\n",
	})
	writeFiles(t, extra, map[string]string{"shared.md": agent("shared", "model: opus")})
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}

	cat, diags := Load(LoadOptions{Dir: work, Home: home, ExtraDirs: []string{extra}})
	if HasErrors(diags) {
		t.Fatalf("errors:%s", diagLines(diags))
	}
	for _, tc := range []struct {
		name, scope, file string
		check             func(*cadre.Definition) bool
	}{
		{"shared", ScopeDir, filepath.Join(extra, "shared.md"), func(d *cadre.Definition) bool { return d.Model == "opus" }},
		{"userish", ScopeUser, filepath.Join(home, ".cadre", "agents", "userish.md"), nil},
		{"summarizer", ScopeUser, filepath.Join(home, ".claude", "agents", "summarizer.md"), func(d *cadre.Definition) bool { return d.Timeout == 7*time.Second }},
		{"top", ScopeProject, filepath.Join(repo, "svc", ".cadre", "agents", "top.md"), func(d *cadre.Definition) bool { return d.Timeout == 42*time.Second }},
		{"mid", ScopeProject, filepath.Join(repo, "svc", ".cadre", "agents", "mid.md"), nil},
		{"near", ScopeProject, filepath.Join(work, ".opencode", "agents", "near.md"), nil},
		{"research-assistant", ScopeBuiltin, "builtin:research-assistant.md", nil},
		{"general-purpose", ScopeBuiltin, "builtin:general-purpose.md", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := cat.Get(tc.name)
			if !ok {
				t.Fatalf("not loaded; have %v", cat.Names())
			}
			if d.Scope != tc.scope || d.File != tc.file {
				t.Errorf("scope %q file %q, want %q %q", d.Scope, d.File, tc.scope, tc.file)
			}
			if tc.check != nil && !tc.check(d) {
				t.Errorf("wrong definition won: %+v", d)
			}
		})
	}
	// Each override is an info line on the nearer file; overriding a
	// built-in agent is not worth one.
	for _, want := range []struct{ file, from string }{
		{filepath.Join(repo, ".claude", "agents", "shared.md"), filepath.Join(home, ".claude", "agents", "shared.md")},
		{filepath.Join(extra, "shared.md"), filepath.Join(repo, ".claude", "agents", "shared.md")},
		{filepath.Join(repo, "svc", ".cadre", "agents", "top.md"), filepath.Join(repo, ".claude", "agents", "top.md")},
	} {
		if !slices.ContainsFunc(diags, func(d Diagnostic) bool {
			return d.File == want.file && d.Severity == SeverityInfo && d.Line == 2 && hasDiag([]Diagnostic{d}, SeverityInfo, "overrides", want.from)
		}) {
			t.Errorf("want an override info on %s naming %s:%s", want.file, want.from, diagLines(diags))
		}
	}
	// Replacing a built-in agent with a different definition is worth a
	// line too (an unchanged copy is not: see TestInit).
	if ds := diagsFor(diags, "/.claude/agents/summarizer.md"); len(ds) != 1 || !hasDiag(ds, SeverityInfo, "agent summarizer replaces cadre's built-in agent") || ds[0].Line != 2 {
		t.Errorf("want one info line at line 2 on the user's summarizer:%s", diagLines(diags))
	}
	if n := len(cat.Overridden()); n != 4 {
		t.Errorf("Overridden has %d definitions, want 4 (shared twice, top, summarizer)", n)
	}
}

func TestLoadProjectStopsAtRepoRootAndSkipsHome(t *testing.T) {
	home := t.TempDir()
	writeFiles(t, home, map[string]string{
		".cadre/agents/mine.md":        agent("mine"),
		"outside/.cadre/agents/out.md": agent("out"),
		"outside/repo/.git/HEAD":       "x",
		"outside/repo/a/.keep":         "",
	})
	cat, diags := Load(LoadOptions{Dir: filepath.Join(home, "outside", "repo", "a"), Home: home, NoBuiltin: true, NoUser: true})
	if cat.Len() != 0 {
		t.Errorf("loaded %v: folders above the repository root or in home are not the project's", cat.Names())
	}
	if len(diags) != 0 {
		t.Errorf("diagnostics:%s", diagLines(diags))
	}
	// Without a repository, only the working directory counts.
	cat, _ = Load(LoadOptions{Dir: filepath.Join(home, "outside"), Home: home, NoBuiltin: true, NoUser: true})
	if diff := cmp.Diff([]string{"out"}, cat.Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	// Home as the working directory: its folders are the user's, loaded once.
	cat, diags = Load(LoadOptions{Dir: home, Home: home, NoBuiltin: true})
	if diff := cmp.Diff([]string{"mine"}, cat.Names()); diff != "" || len(diags) != 0 {
		t.Errorf("names (-want +got):\n%s%s", diff, diagLines(diags))
	}
}

func TestLoadExtraDirMissingAndFiles(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"one.txt": agent("one")})
	missing := filepath.Join(dir, "nope")
	cat, diags := Load(LoadOptions{ExtraDirs: []string{missing, filepath.Join(dir, "one.txt")}, NoBuiltin: true, NoUser: true, NoProject: true})
	if !hasDiag(diagsFor(diags, "nope"), SeverityError, "does not exist") {
		t.Errorf("want an error for the missing folder:%s", diagLines(diags))
	}
	if _, ok := cat.Get("one"); !ok {
		t.Errorf("a file named explicitly is read whatever its extension; have %v", cat.Names())
	}
}

func TestLoadDuplicateAcrossFoldersOfOneScopeIsWarning(t *testing.T) {
	home := t.TempDir()
	writeFiles(t, home, map[string]string{
		".cadre/agents/x.md":  agent("x", "timeoutSeconds: 1"),
		".claude/agents/x.md": agent("x", "timeoutSeconds: 2"),
	})
	cat, diags := Load(LoadOptions{Home: home, NoBuiltin: true, NoProject: true})
	if d, _ := cat.Get("x"); d == nil || d.Timeout != 1*time.Second {
		t.Fatalf("want x from .cadre (first in path order), got %+v", d)
	}
	if HasErrors(diags) || !hasDiag(diagsFor(diags, ".claude/agents/x.md"), SeverityWarning, "duplicate name x") {
		t.Errorf("want a warning on the .claude copy:%s", diagLines(diags))
	}
}

func TestCatalog(t *testing.T) {
	a := &cadre.Definition{Name: "b", Description: "B"}
	b := &cadre.Definition{Name: "a", Description: "A", Visibility: cadre.VisibilityInternal}
	c := &cadre.Definition{Name: "b", Description: "B2"}
	cat := NewCatalog([]*cadre.Definition{a, b, c, nil, {Description: "no name"}})
	if diff := cmp.Diff([]string{"a", "b"}, cat.Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if got, _ := cat.Get("b"); got != c {
		t.Errorf("Get(b) = %+v, want the later definition", got)
	}
	if uf := cat.UserFacing(); len(uf) != 1 || uf[0] != c {
		t.Errorf("UserFacing = %v, want [b]", uf)
	}
	if ov := cat.Overridden(); len(ov) != 1 || ov[0] != a {
		t.Errorf("Overridden = %v, want the first b", ov)
	}
	all := cat.All()
	all[0] = nil
	if cat.All()[0] == nil {
		t.Error("All must return a copy")
	}
	// Names are one name whatever their case.
	upper := &cadre.Definition{Name: "B", Description: "B3"}
	cat = NewCatalog([]*cadre.Definition{a, upper})
	if got, _ := cat.Get("b"); got != upper || cat.Len() != 1 || len(cat.Overridden()) != 1 {
		t.Errorf("Get(b) = %+v, Len %d: want B to replace b", got, cat.Len())
	}
	var none *Catalog
	if _, ok := none.Get("x"); ok || none.Len() != 0 || none.All() != nil {
		t.Error("a nil catalog is empty")
	}
}

// Agents folders are often links into a dotfiles repository; folders
// inside them may be links too, even in a cycle.
func TestLoadFollowsLinkedFolders(t *testing.T) {
	home, real, other := t.TempDir(), t.TempDir(), t.TempDir()
	writeFiles(t, real, map[string]string{"a.md": agent("a")})
	writeFiles(t, other, map[string]string{"b.md": agent("b"), "notes.txt": "not an agent"})
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, link := range []struct{ target, name string }{
		{real, filepath.Join(home, ".claude", "agents")},
		{other, filepath.Join(real, "linked")},
		{real, filepath.Join(other, "back")}, // a cycle
		{filepath.Join(real, "a.md"), filepath.Join(other, "c.md")},
		{filepath.Join(real, "gone.md"), filepath.Join(real, "dangling.md")},
	} {
		if err := os.Symlink(link.target, link.name); err != nil {
			t.Skipf("cannot make symbolic links here: %v", err)
		}
	}
	cat, diags := Load(LoadOptions{Home: home, NoBuiltin: true, NoProject: true})
	if diff := cmp.Diff([]string{"a", "b"}, cat.Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if d, _ := cat.Get("b"); d == nil || d.File != filepath.Join(home, ".claude", "agents", "linked", "b.md") {
		t.Errorf("b should be reported under the path it was reached by, got %+v", d)
	}
	// The linked file defines a again: a duplicate within the folder.
	if !hasDiag(diagsFor(diags, "/linked/c.md"), SeverityError, "duplicate name a") {
		t.Errorf("want a duplicate error on the linked copy:%s", diagLines(diags))
	}
	if !hasDiag(diagsFor(diags, "/dangling.md"), SeverityWarning, "cannot read") {
		t.Errorf("want a warning on the dangling link:%s", diagLines(diags))
	}
	if len(diags) != 2 {
		t.Errorf("want two diagnostics:%s", diagLines(diags))
	}
}

// Names are compared ignoring case within one scope, as the Netclaw loader
// does; the message says so.
func TestLoadDuplicateNamesIgnoreCase(t *testing.T) {
	_, cat, diags := loadDir(t, map[string]string{
		"a.md": agent("Reviewer"),
		"b.md": agent("reviewer"),
	}, LoadOptions{})
	if diff := cmp.Diff([]string{"Reviewer"}, cat.Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if !hasDiag(diagsFor(diags, "/b.md"), SeverityError, "duplicate name reviewer (the same name as Reviewer, ignoring case)", "a.md") {
		t.Errorf("want a duplicate error on b.md:%s", diagLines(diags))
	}
}

// A nearer scope overrides a farther one whatever the case of the name.
func TestLoadOverrideIgnoresCase(t *testing.T) {
	home := t.TempDir()
	writeFiles(t, home, map[string]string{".claude/agents/r.md": agent("reviewer")})
	extra := t.TempDir()
	writeFiles(t, extra, map[string]string{"r.md": agent("Reviewer")})
	cat, diags := Load(LoadOptions{Home: home, ExtraDirs: []string{extra}, NoBuiltin: true, NoProject: true})
	if diff := cmp.Diff([]string{"Reviewer"}, cat.Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if !hasDiag(diagsFor(diags, extra+"/r.md"), SeverityInfo, "agent Reviewer overrides the one in "+filepath.Join(home, ".claude", "agents", "r.md")) {
		t.Errorf("want an override info line:%s", diagLines(diags))
	}
}

// A duplicate's diagnostic points at its name field, never at a line of
// the prompt that happens to start with "name:"; a name taken from the file
// name points at the file.
func TestLoadDuplicatePositions(t *testing.T) {
	_, _, diags := loadDir(t, map[string]string{
		"a.md":            agent("dup"),
		"b.md":            "---\n# a comment\ndescription: d\n  \nname: dup\n---\nname: in the prompt\n",
		"oc/.keep":        "",
		"oc/dup.md":       "---\ndescription: OpenCode style.\nmode: subagent\n---\nname: dup\n",
		"oc/unrelated.md": agent("unrelated"),
	}, LoadOptions{})
	for _, tc := range []struct {
		file      string
		line, col int
	}{{"/b.md", 5, 1}, {"/oc/dup.md", 0, 0}} {
		ds := diagsFor(diags, tc.file)
		if len(ds) != 1 || !hasDiag(ds, SeverityError, "duplicate name dup") || ds[0].Line != tc.line || ds[0].Column != tc.col {
			t.Errorf("%s: want one duplicate error at %d:%d:%s", tc.file, tc.line, tc.col, diagLines(diags))
		}
	}
}

// Load, Parse and Builtin share nothing: concurrent calls under -race give
// the same catalog.
func TestLoadConcurrent(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.md": agent("a"), "b/c.md": agent("c", "tools: Read, Bash(git *)"), "bad.md": "x"})
	opts := LoadOptions{ExtraDirs: []string{dir}, NoUser: true, NoProject: true}
	want, wantDiags := Load(opts)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Go(func() {
			cat, diags := Load(opts)
			if !slices.Equal(cat.Names(), want.Names()) || len(diags) != len(wantDiags) {
				errs <- fmt.Sprintf("names %v, %d diagnostics; want %v, %d", cat.Names(), len(diags), want.Names(), len(wantDiags))
			}
			Builtin()
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
