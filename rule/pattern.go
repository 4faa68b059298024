package rule

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cadre-ai/cadre"
)

// anchor says what a gitignore pattern is relative to.
type anchor uint8

const (
	anchorWorkspace anchor = iota // the workspace root
	anchorAbsolute                // the file system root ("//path")
	anchorHome                    // the home directory ("~/path")
)

// A pattern is the compiled pattern of one rule.
type pattern struct {
	syntax cadre.PatternSyntax
	g      *glob
	// gitignore: what the pattern is relative to, and whether it matches
	// directories only.
	anchor  anchor
	dirOnly bool
	// raw is the text after the anchor ("~/x" → "/x"), for home patterns,
	// which are compiled when the home directory is known.
	raw string
	// domain: the host, and whether subdomains are meant ("*.example.com").
	host string
	sub  bool
}

// maxDoubleStars bounds the "**" segments of one gitignore pattern: each
// doubles the alternatives tried.
const maxDoubleStars = 6

// compile reads a rule's pattern. fold compares letters ignoring case (deny
// and ask rules do, so that a differently written name is still caught);
// prefix reads a command pattern's ":*" as a bare prefix (deny and ask) or
// as " *" (allow, which must not match "rmdir" for "rm:*").
func compile(syntax cadre.PatternSyntax, text string, action cadre.Permission) (*pattern, error) {
	wide := action != cadre.PermissionAllow
	p := &pattern{syntax: syntax}
	switch syntax {
	case cadre.SyntaxCommand:
		p.g = commandGlob(text, wide)
	case cadre.SyntaxWildcard:
		p.g = wildcardGlob(text, wide)
	case cadre.SyntaxGitignore:
		if err := p.gitignore(text, wide); err != nil {
			return nil, err
		}
	case cadre.SyntaxDomain:
		host := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(text)), ".")
		if rest, ok := strings.CutPrefix(host, "*."); ok {
			host, p.sub = rest, true
		}
		if host == "" || strings.ContainsAny(host, "/:@ *?[]\\") {
			return nil, fmt.Errorf("%q is not a host name: write a domain such as example.com, or *.example.com for its subdomains", text)
		}
		p.host = host
	case cadre.SyntaxName:
		name := strings.TrimSpace(text)
		if name == "" || strings.ContainsAny(name, " \t*?/") {
			return nil, fmt.Errorf("%q is not an agent name: write the names of the agents, such as Agent(explore, reviewer)", text)
		}
		p.g = &glob{alts: [][]token{lit(name)}, fold: true}
	default:
		return nil, fmt.Errorf("unknown pattern syntax %q", syntax)
	}
	return p, nil
}

// commandGlob reads a Claude Code command pattern: * is any text; a
// trailing " *" or ":*" may also match nothing.
func commandGlob(text string, wide bool) *glob {
	g := &glob{fold: wide}
	if base, ok := strings.CutSuffix(text, ":*"); ok {
		if wide {
			// The older prefix form: anything that starts so.
			g.alts = [][]token{append(lit(base), star(true))}
			return g
		}
		text = base + " *"
	}
	var seq []token
	for _, r := range text {
		if r == '*' {
			seq = append(seq, star(true))
			continue
		}
		seq = append(seq, token{kind: tokLit, r: r})
	}
	g.alts = [][]token{seq}
	if n := len(seq); n >= 2 && seq[n-1].kind == tokStar && seq[n-2].kind == tokLit && seq[n-2].r == ' ' {
		g.alts = append(g.alts, seq[:n-2])
	}
	return g
}

// wildcardGlob reads an OpenCode pattern: * is any text, ? one character;
// a trailing " *" may also match nothing.
func wildcardGlob(text string, wide bool) *glob {
	g := &glob{fold: wide}
	var seq []token
	for _, r := range text {
		switch r {
		case '*':
			seq = append(seq, star(true))
		case '?':
			seq = append(seq, token{kind: tokOne, slash: true})
		default:
			seq = append(seq, token{kind: tokLit, r: r})
		}
	}
	g.alts = [][]token{seq}
	if n := len(seq); n >= 2 && seq[n-1].kind == tokStar && seq[n-2].kind == tokLit && seq[n-2].r == ' ' {
		g.alts = append(g.alts, seq[:n-2])
	}
	return g
}

// gitignore reads a Claude Code path pattern.
func (p *pattern) gitignore(text string, wide bool) error {
	s := strings.TrimSpace(text)
	anchored := false
	switch {
	case strings.HasPrefix(s, "//"):
		p.anchor, s, anchored = anchorAbsolute, s[2:], true
	case s == "~" || strings.HasPrefix(s, "~/"):
		p.anchor, s, anchored = anchorHome, strings.TrimPrefix(strings.TrimPrefix(s, "~"), "/"), true
	case strings.HasPrefix(s, "/"):
		s, anchored = s[1:], true
	case strings.HasPrefix(s, "./"):
		s, anchored = s[2:], true
	}
	if strings.HasPrefix(s, "!") {
		return errors.New("a pattern starting with ! (an exception, in a .gitignore file) cannot stand alone in a rule: write the paths the rule is about")
	}
	if strings.HasSuffix(s, "/") {
		p.dirOnly = true
		s = strings.TrimRight(s, "/")
	}
	if s == "" && p.anchor != anchorHome {
		s = "**" // the root itself: everything in it
	}
	if p.anchor == anchorWorkspace && !anchored && !strings.Contains(s, "/") {
		s = "**/" + s // no slash: at any depth
	}
	if strings.Count(s, "**") > maxDoubleStars {
		return fmt.Errorf("more than %d ** in one pattern: write a simpler pattern", maxDoubleStars)
	}
	p.raw = s
	if p.anchor == anchorHome {
		// Compiled against the home directory when the rules are used;
		// checked here.
		_, err := gitignoreGlob("home/"+s, wide)
		return err
	}
	g, err := gitignoreGlob(s, wide)
	if err != nil {
		return err
	}
	p.g = g
	return nil
}

// gitignoreGlob compiles the "/"-separated segments of a gitignore
// pattern, without its anchor: a "**" segment stands for any number of
// directories (none included), and a last "**" for everything below.
func gitignoreGlob(s string, wide bool) (*glob, error) {
	g := &glob{fold: wide}
	alts := [][]token{nil}
	segs := strings.Split(s, "/")
	for i, seg := range segs {
		last := i == len(segs)-1
		if seg == "**" {
			if last {
				for j := range alts {
					alts[j] = append(alts[j], star(true))
				}
				continue
			}
			// Either no directory here, or some directories.
			var more [][]token
			for _, a := range alts {
				more = append(more, append(append([]token(nil), a...), star(true), token{kind: tokLit, r: '/'}))
			}
			alts = append(alts, more...)
			continue
		}
		toks, err := segmentTokens(seg)
		if err != nil {
			return nil, err
		}
		if !last {
			toks = append(toks, token{kind: tokLit, r: '/'})
		}
		for j := range alts {
			alts[j] = append(alts[j], toks...)
		}
	}
	g.alts = alts
	return g, nil
}

// segmentTokens reads one path segment: * and ? within it, [classes] and
// \ escapes.
func segmentTokens(seg string) ([]token, error) {
	var out []token
	rs := []rune(seg)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '*':
			if len(out) > 0 && out[len(out)-1].kind == tokStar {
				continue // "a**b" is an ordinary star
			}
			out = append(out, star(false))
		case '?':
			out = append(out, token{kind: tokOne})
		case '\\':
			if i+1 < len(rs) {
				i++
			}
			out = append(out, token{kind: tokLit, r: rs[i]})
		case '[':
			c, n, err := readClass(rs[i:])
			if err != nil {
				return nil, err
			}
			out = append(out, token{kind: tokClass, class: c})
			i += n - 1
		default:
			out = append(out, token{kind: tokLit, r: r})
		}
	}
	return out, nil
}

// readClass reads a class starting at rs[0] == '[' and returns it and how
// many runes it took.
func readClass(rs []rune) (*charClass, int, error) {
	c := &charClass{}
	i := 1
	if i < len(rs) && (rs[i] == '!' || rs[i] == '^') {
		c.neg = true
		i++
	}
	first := true
	for ; i < len(rs); i++ {
		r := rs[i]
		if r == ']' && !first {
			if len(c.ranges) == 0 {
				break
			}
			return c, i + 1, nil
		}
		first = false
		if r == '\\' && i+1 < len(rs) {
			i++
			r = rs[i]
		}
		hi := r
		if i+2 < len(rs) && rs[i+1] == '-' && rs[i+2] != ']' {
			hi = rs[i+2]
			i += 2
			if hi < r {
				return nil, 0, fmt.Errorf("the class %s has a range from %q down to %q: write the lower end first", string(rs), r, hi)
			}
		}
		c.ranges = append(c.ranges, [2]rune{r, hi})
	}
	return nil, 0, fmt.Errorf("the class starting at %q is not closed: end it with ], or write \\[ for a bracket", string(rs))
}

// homeGlob compiles a home pattern once the home directory is known: the
// directory's own path is literal text.
func (p *pattern) homeGlob(home string, wide bool) (*glob, error) {
	base := strings.Trim(home, "/")
	if p.raw == "" {
		return &glob{alts: [][]token{lit(base)}, fold: wide}, nil
	}
	g, err := gitignoreGlob(p.raw, wide)
	if err != nil {
		return nil, err
	}
	prefix := lit(base + "/")
	if base == "" {
		prefix = nil
	}
	for i, a := range g.alts {
		g.alts[i] = append(append([]token(nil), prefix...), a...)
	}
	return g, nil
}
