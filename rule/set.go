package rule

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"unicode"

	"github.com/cadre-ai/cadre"
)

// Names of the built-in tools whose arguments rules look at.
const (
	toolReadFile    = "read_file"
	toolListFiles   = "list_files"
	toolSearchFiles = "search_files"
	toolWriteFile   = "write_file"
	toolEditFile    = "edit_file"
	toolRunCommand  = "run_command"
	toolWebFetch    = "web_fetch"
)

// subject is what of a call rules about a tool look at.
type subject uint8

const (
	subjectNone    subject = iota // the call as a whole: only rules without a pattern
	subjectCommand                // the command line (run_command)
	subjectPath                   // the path argument (file tools)
	subjectURL                    // the URL (web_fetch)
	subjectAgent                  // the definition an agent would be started from
)

func subjectOf(tool string) subject {
	switch tool {
	case toolRunCommand:
		return subjectCommand
	case toolReadFile, toolListFiles, toolSearchFiles, toolWriteFile, toolEditFile:
		return subjectPath
	case toolWebFetch:
		return subjectURL
	case cadre.RuleAgents:
		return subjectAgent
	}
	return subjectNone
}

// syntaxes lists the pattern syntaxes each subject accepts.
func syntaxes(s subject) []cadre.PatternSyntax {
	switch s {
	case subjectCommand:
		return []cadre.PatternSyntax{cadre.SyntaxCommand, cadre.SyntaxWildcard}
	case subjectPath:
		return []cadre.PatternSyntax{cadre.SyntaxGitignore, cadre.SyntaxWildcard}
	case subjectURL:
		return []cadre.PatternSyntax{cadre.SyntaxDomain, cadre.SyntaxWildcard}
	case subjectAgent:
		return []cadre.PatternSyntax{cadre.SyntaxName, cadre.SyntaxWildcard}
	}
	return nil
}

// Check reports whether cadre can honour a rule, and if not, why, in words
// for the author of the agent file. agentdef checks every rule it reads.
func Check(r cadre.ToolRule) error {
	_, err := compileRule(r, "")
	return err
}

// compiled is a rule ready to match; p is nil for a rule that matches
// every call.
type compiled struct {
	cadre.ToolRule
	p *pattern
}

func compileRule(r cadre.ToolRule, home string) (*compiled, error) {
	switch r.Action {
	case cadre.PermissionAllow, cadre.PermissionAsk, cadre.PermissionDeny:
	default:
		return nil, fmt.Errorf("%q is not a permission: use allow, ask or deny", r.Action)
	}
	if strings.TrimSpace(r.Tool) == "" {
		return nil, errors.New("the rule names no tool")
	}
	if err := CheckName(r.Tool); err != nil {
		return nil, err
	}
	c := &compiled{ToolRule: r}
	if r.MatchesAll() {
		return c, nil
	}
	if r.Tool == cadre.RuleAnyTool {
		return nil, errors.New(`a rule about every tool ("*") cannot have a pattern: commands, paths and URLs are matched differently; give the pattern to the tool it is about (bash, edit, read, webfetch, task)`)
	}
	subj := subjectOf(r.Tool)
	if subj == subjectNone {
		return nil, fmt.Errorf("cadre cannot match the arguments of %s: rules with a pattern are for run_command (Bash), the file tools (Read, Edit, Write, Grep, Glob), web_fetch (WebFetch) and agents (Agent, Task); allow or deny %s as a whole", r.Tool, r.Tool)
	}
	if !slices.Contains(syntaxes(subj), r.Syntax) {
		return nil, fmt.Errorf("a %s pattern cannot be used for %s", r.Syntax, r.Tool)
	}
	if subj == subjectCommand && r.Action == cadre.PermissionAllow {
		if op := shellOperator(r.Pattern); op != "" {
			return nil, fmt.Errorf("this rule allows a command line with %s, and cadre checks each simple command of a line on its own (it splits at ;, &&, ||, |, & and newlines, and no pattern allows redirections, $(…) or `…`), so it could never match: write one rule per command, such as Bash(npm run build) and Bash(npm test)", op)
		}
	}
	p, err := compile(r.Syntax, r.Pattern, r.Action)
	if err != nil {
		return nil, err
	}
	if p.anchor == anchorHome {
		h := home
		if h == "" {
			h = "/home/user" // only checking here
		}
		if p.g, err = p.homeGlob(h, r.Action != cadre.PermissionAllow); err != nil {
			return nil, err
		}
	}
	c.p = p
	return c, nil
}

// shellOperator returns the first shell operator, redirection or
// substitution in a command pattern, named for a person, or "".
func shellOperator(pat string) string {
	for _, op := range []struct{ s, name string }{
		{"&&", "&&"}, {"||", "||"}, {";", ";"}, {"|", "a pipe |"}, {"&", "&"}, {"\n", "a newline"},
		{"$(", "$(…)"}, {"`", "`…`"}, {">", "a redirection >"}, {"<", "a redirection <"},
	} {
		if strings.Contains(pat, op.s) {
			return op.name
		}
	}
	return ""
}

// A Set is the compiled rules of one definition. It is immutable and safe
// for concurrent use.
type Set struct {
	name  string
	rules []*compiled
}

// Compile compiles the rules of the definition called name, one set per
// group (in the order groups first appear). Rules about home-directory
// paths ("~/…") need the home directory, which is read from the
// environment.
func Compile(name string, rules []cadre.ToolRule) (Chain, error) {
	var chain Chain
	var groups []string
	for _, r := range rules {
		if !slices.Contains(groups, r.Group) {
			groups = append(groups, r.Group)
		}
	}
	for _, g := range groups {
		var in []cadre.ToolRule
		for _, r := range rules {
			if r.Group == g {
				in = append(in, r)
			}
		}
		s, err := compileSet(name, in)
		if err != nil {
			return nil, err
		}
		chain = append(chain, s)
	}
	return chain, nil
}

func compileSet(name string, rules []cadre.ToolRule) (*Set, error) {
	s := &Set{name: name}
	var home string
	for _, r := range rules {
		if r.Syntax == cadre.SyntaxGitignore && strings.HasPrefix(strings.TrimSpace(r.Pattern), "~") && home == "" {
			h, err := os.UserHomeDir()
			if err != nil || !strings.HasPrefix(h, "/") {
				return nil, fmt.Errorf("agent %s: rule %s: the home directory is not known (set HOME), so the rule cannot be placed", name, describe(r))
			}
			home = h
		}
		c, err := compileRule(r, home)
		if err != nil {
			return nil, fmt.Errorf("agent %s: rule %s: %w", name, describe(r), err)
		}
		s.rules = append(s.rules, c)
	}
	return s, nil
}

// describe names a rule for messages: as written, and where.
func describe(r cadre.ToolRule) string {
	src := r.Source
	if src == "" {
		src = fmt.Sprintf("%s %s %q", r.Action, r.Tool, r.Pattern)
	}
	if r.Where != "" {
		return "`" + src + "` at " + r.Where
	}
	return "`" + src + "`"
}

// For returns the rules about tool, in order.
func (s *Set) For(tool string) []cadre.ToolRule {
	var out []cadre.ToolRule
	for _, c := range s.rulesFor(tool) {
		out = append(out, c.ToolRule)
	}
	return out
}

func (s *Set) rulesFor(tool string) []*compiled {
	var out []*compiled
	for _, c := range s.rules {
		if c.Tool == cadre.RuleAnyTool || NameMatches(c.Tool, tool) {
			out = append(out, c)
		}
	}
	return out
}

// A Chain is the rules an agent's calls must pass: its own definition's
// first, then each ancestor's. A call is denied when one set denies it, and
// needs approval when one asks.
type Chain []*Set

// About reports whether any rule of the chain is about tool.
func (c Chain) About(tool string) bool {
	for _, s := range c {
		if len(s.rulesFor(tool)) > 0 {
			return true
		}
	}
	return false
}

// A Verdict is what the rules decide about a call.
type Verdict struct {
	Action cadre.Permission
	// Reason says why a call is denied, in words for the model (which
	// rule, and what the rules allow), or which rule asks for approval.
	// It is empty when the call is allowed.
	Reason string
}

// verdict is one set's decision, with what led to it.
type verdict struct {
	action cadre.Permission
	set    *Set
	rule   *compiled // the deciding rule; nil when none matched or unsure
	unsure string    // why the call could not be checked
	note   string    // an allow pattern matched, but could not allow (why)
	part   string    // the simple command of a line that decided
}

func rank(a cadre.Permission) int {
	switch a {
	case cadre.PermissionDeny:
		return 2
	case cadre.PermissionAsk:
		return 1
	}
	return 0
}

// worse returns the stricter of two verdicts; on a tie the first.
func worse(a, b verdict) verdict {
	if rank(b.action) > rank(a.action) {
		return b
	}
	return a
}

type match uint8

const (
	matchNone match = iota
	matchFull
	matchPartial // some but maybe not all of what the call reaches
)

// decide reads the rules from the last: the last one that matches the call
// fully decides; a partial match makes its action possible, so the result
// is the strictest of those and the deciding one. inexact is set when a
// partial match made the result stricter than the deciding rule's.
func decide(s *Set, rules []*compiled, m func(*compiled) match) (v verdict, inexact bool) {
	v = verdict{action: cadre.PermissionAllow, set: s}
	for i := len(rules) - 1; i >= 0; i-- {
		c := rules[i]
		switch m(c) {
		case matchFull:
			if rank(c.Action) >= rank(v.action) {
				return verdict{action: c.Action, set: s, rule: c}, inexact
			}
			return v, inexact
		case matchPartial:
			if rank(c.Action) > rank(v.action) {
				v = verdict{action: c.Action, set: s, rule: c}
				inexact = true
			}
		}
	}
	return v, inexact
}

func allMatchAll(rules []*compiled) bool {
	for _, c := range rules {
		if c.p != nil {
			return false
		}
	}
	return true
}

// judgeAll decides about a tool whose arguments are not looked at.
func (s *Set) judgeAll(tool string) verdict {
	v, _ := decide(s, s.rulesFor(tool), func(c *compiled) match {
		if c.p == nil {
			return matchFull
		}
		return matchNone
	})
	return v
}

// runners are programs that run another command given as arguments, which
// a rule about commands cannot see into.
var runners = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "fish": true, "csh": true, "tcsh": true,
	"eval": true, "exec": true, "env": true, "xargs": true, "command": true, "builtin": true, "nohup": true,
	"timeout": true, "nice": true, "sudo": true, "doas": true, "su": true, "watch": true, "setsid": true,
	"stdbuf": true, "chroot": true, "unshare": true, "busybox": true, "parallel": true, "script": true,
	"flock": true, "ionice": true, "time": true, "strace": true, "ltrace": true, "nsenter": true,
}

// judgeCommand decides about a command line.
func (s *Set) judgeCommand(tool, line string) verdict {
	rules := s.rulesFor(tool)
	if allMatchAll(rules) {
		return s.judgeAll(tool)
	}
	parts, err := splitCommand(line)
	if err != nil {
		return verdict{action: cadre.PermissionDeny, set: s, unsure: "cadre could not read the command line (" + err.Error() + "), so it cannot check it against the rules"}
	}
	if len(parts) == 0 {
		parts = []part{{text: trimBlanks(line), prog: -1}}
	}
	strict := false // some rule denies or asks about some commands only
	for _, c := range rules {
		if c.p != nil && c.Action != cadre.PermissionAllow {
			strict = true
		}
	}
	worst := verdict{action: cadre.PermissionAllow, set: s}
	for _, pt := range parts {
		v := s.judgePart(rules, pt, strict)
		if len(parts) > 1 {
			v.part = pt.text
		}
		worst = worse(worst, v)
		if worst.action == cadre.PermissionDeny {
			break
		}
	}
	// The whole line against the rules that deny or ask about lines of
	// several commands ("curl * | sh"), which no single part can match.
	for i := len(rules) - 1; i >= 0 && worst.action != cadre.PermissionDeny; i-- {
		c := rules[i]
		if c.p != nil && c.Action != cadre.PermissionAllow && shellOperator(c.Pattern) != "" && c.p.g.match(line) {
			worst = worse(worst, verdict{action: c.Action, set: s, rule: c})
			break
		}
	}
	return worst
}

// judgePart decides about one simple command. Rules that allow must match
// its text as written, and it must be plain: no redirection to a file, no
// substitution, nothing cadre cannot read. Rules that deny or ask match
// its text, its words without quotes, and its words without VAR=value
// assignments or with the program's directory left out.
func (s *Set) judgePart(rules []*compiled, pt part, strict bool) verdict {
	if strict && pt.opaque != "" {
		return verdict{action: cadre.PermissionDeny, set: s, unsure: "has " + pt.opaque + ", which cadre cannot read, and the rules deny or ask about some commands"}
	}
	if strict && pt.progDynamic {
		return verdict{action: cadre.PermissionDeny, set: s, unsure: "names its program with an expansion ($VAR, a glob or {…}), which the rules cannot see through, and the rules deny or ask about some commands"}
	}
	if strict && pt.prog >= 0 && runners[path.Base(pt.words[pt.prog])] {
		return verdict{action: cadre.PermissionDeny, set: s, unsure: fmt.Sprintf("runs %s, which runs other commands the rules cannot see, and the rules deny or ask about some commands", path.Base(pt.words[pt.prog]))}
	}
	var forms []string
	add := func(f string) {
		if f = trimBlanks(f); f != "" && !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	add(pt.text)
	add(strings.Join(pt.words, " "))
	if pt.prog >= 0 {
		rest := pt.words[pt.prog:]
		add(strings.Join(rest, " "))
		if base := path.Base(rest[0]); base != rest[0] {
			add(strings.Join(append([]string{base}, rest[1:]...), " "))
		}
	}
	plain := !pt.redir && pt.dynamic == "" && pt.opaque == ""
	note := ""
	for i := len(rules) - 1; i >= 0; i-- {
		c := rules[i]
		if c.p == nil {
			return verdict{action: c.Action, set: s, rule: c, note: note}
		}
		if c.Action == cadre.PermissionAllow {
			if !c.p.g.match(pt.text) {
				continue
			}
			if plain {
				return verdict{action: cadre.PermissionAllow, set: s, rule: c}
			}
			if note == "" {
				why := pt.dynamic
				switch {
				case pt.opaque != "":
					why = pt.opaque
				case pt.redir:
					why = "a redirection to or from a file"
				}
				note = fmt.Sprintf("matches %s, but has %s, which no pattern allows", c.Pattern, why)
			}
			continue
		}
		for _, f := range forms {
			if c.p.g.match(f) {
				return verdict{action: c.Action, set: s, rule: c}
			}
		}
	}
	return verdict{action: cadre.PermissionAllow, set: s, note: note}
}

// pathSubject is a path a file tool would use.
type pathSubject struct {
	rel string // relative to the workspace root, "/"-separated; "" for the root
	abs string // absolute, symbolic links resolved
	dir bool   // it is a directory
}

// matchPath matches a path pattern. tree asks about everything below the
// path as well (a search or a listing of a directory).
func (c *compiled) matchPath(ps pathSubject, tree bool) match {
	p := c.p
	if c.p == nil {
		return matchFull
	}
	if p.syntax == cadre.SyntaxWildcard {
		rel := ps.rel
		if rel == "" {
			rel = "."
		}
		if p.g.match(rel) {
			return matchFull
		}
		return matchNone
	}
	sub := ps.rel
	if p.anchor != anchorWorkspace {
		sub = strings.TrimPrefix(ps.abs, "/")
	}
	if sub != "" && (!p.dirOnly || ps.dir || tree) && p.g.match(sub) {
		return matchFull
	}
	for i := 0; i < len(sub); i++ {
		if sub[i] == '/' && p.g.match(sub[:i]) {
			return matchFull
		}
	}
	if !tree {
		return matchNone
	}
	prefix := sub + "/"
	if sub == "" {
		prefix = ""
	}
	alive, all := p.g.prefix(prefix)
	switch {
	case all && !p.dirOnly:
		return matchFull
	case alive:
		return matchPartial
	}
	return matchNone
}

func (s *Set) judgePath(tool string, ps pathSubject, tree bool) (verdict, bool) {
	return decide(s, s.rulesFor(tool), func(c *compiled) match { return c.matchPath(ps, tree) })
}

// judgeURL decides about a URL a tool would fetch.
func (s *Set) judgeURL(tool, raw string) verdict {
	rules := s.rulesFor(tool)
	if allMatchAll(rules) {
		return s.judgeAll(tool)
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return verdict{action: cadre.PermissionDeny, set: s, unsure: "cadre could not read it as a URL, so it cannot check it against the rules"}
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	clean := u.User == nil && !strings.ContainsFunc(raw, func(r rune) bool {
		return r == '\\' || unicode.IsSpace(r) || unicode.IsControl(r)
	})
	v, _ := decide(s, rules, func(c *compiled) match {
		if c.p == nil {
			return matchFull
		}
		if c.p.syntax == cadre.SyntaxDomain {
			if host == c.p.host && !c.p.sub || c.p.sub && strings.HasSuffix(host, "."+c.p.host) {
				return matchFull
			}
			return matchNone
		}
		if c.Action == cadre.PermissionAllow {
			if clean && c.p.g.match(raw) {
				return matchFull
			}
			return matchNone
		}
		for _, f := range []string{raw, u.String(), strings.ToLower(u.String())} {
			if c.p.g.match(f) {
				return matchFull
			}
		}
		return matchNone
	})
	return v
}

// judgeAgent decides about starting an agent of the named definition; ""
// is a subagent without a definition (a <spawn_agents> task that names
// none).
func (s *Set) judgeAgent(name string) verdict {
	v, _ := decide(s, s.rulesFor(cadre.RuleAgents), func(c *compiled) match {
		if c.p == nil {
			return matchFull
		}
		if name != "" && c.p.g.match(name) {
			return matchFull
		}
		return matchNone
	})
	return v
}

// allowed lists the patterns of the rules that allow calls of tool after
// the last rule that denies them all: what the set lets through.
func (s *Set) allowed(tool string) []string {
	var out []string
	for _, c := range s.rulesFor(tool) {
		switch {
		case c.p == nil && c.Action != cadre.PermissionAllow:
			out = nil
		case c.p != nil && c.Action == cadre.PermissionAllow && !slices.Contains(out, c.Pattern):
			out = append(out, c.Pattern)
		}
	}
	return out
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
