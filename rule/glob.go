package rule

import (
	"unicode"
	"unicode/utf8"
)

// A glob is a compiled pattern: it matches a text when one of its
// alternatives matches the whole text. Alternatives come from the optional
// parts of a pattern (a trailing " *", a "**/" that may stand for no
// directory); each is a sequence of tokens run as a small NFA, so matching
// takes time proportional to the text times the pattern, never more.
type glob struct {
	alts [][]token
	// fold compares letters ignoring case.
	fold bool
}

type tokKind uint8

const (
	tokLit   tokKind = iota // one given character
	tokOne                  // any one character
	tokStar                 // any run of characters, the empty one included
	tokClass                // one character of a class such as [a-z]
)

type token struct {
	kind tokKind
	r    rune
	// slash lets tokOne and tokStar match "/" (gitignore's * and ? do not).
	slash bool
	class *charClass
}

// charClass is a [...] class. It never matches "/".
type charClass struct {
	neg    bool
	ranges [][2]rune
}

func (c *charClass) has(r rune, fold bool) bool {
	in := func(r rune) bool {
		for _, rg := range c.ranges {
			if r >= rg[0] && r <= rg[1] {
				return true
			}
		}
		return false
	}
	ok := in(r)
	if !ok && fold {
		for f := unicode.SimpleFold(r); f != r && !ok; f = unicode.SimpleFold(f) {
			ok = in(f)
		}
	}
	return ok != c.neg
}

func lit(s string) []token {
	out := make([]token, 0, len(s))
	for _, r := range s {
		out = append(out, token{kind: tokLit, r: r})
	}
	return out
}

func star(slash bool) token { return token{kind: tokStar, slash: slash} }

// states is a set of positions in a token sequence (len(seq)+1 of them: the
// last one is "matched everything").
type states []bool

func (g *glob) same(a, b rune) bool {
	if a == b {
		return true
	}
	if !g.fold {
		return false
	}
	for f := unicode.SimpleFold(a); f != a; f = unicode.SimpleFold(f) {
		if f == b {
			return true
		}
	}
	return false
}

// closure adds the positions reachable without reading: past stars.
func closure(seq []token, st states) {
	for i := range seq {
		if st[i] && seq[i].kind == tokStar {
			st[i+1] = true
		}
	}
}

// feed runs seq over text from the start and returns the positions it can
// be in afterwards; nil when none.
func (g *glob) feed(seq []token, text string) states {
	cur := make(states, len(seq)+1)
	cur[0] = true
	closure(seq, cur)
	next := make(states, len(seq)+1)
	for _, r := range text {
		clear(next)
		alive := false
		for i, on := range cur[:len(seq)] {
			if !on {
				continue
			}
			t := seq[i]
			switch t.kind {
			case tokLit:
				if g.same(t.r, r) {
					next[i+1], alive = true, true
				}
			case tokOne:
				if t.slash || r != '/' {
					next[i+1], alive = true, true
				}
			case tokClass:
				if r != '/' && t.class.has(r, g.fold) {
					next[i+1], alive = true, true
				}
			case tokStar:
				if t.slash || r != '/' {
					next[i], alive = true, true
				}
			}
		}
		if !alive {
			return nil
		}
		closure(seq, next)
		cur, next = next, cur
	}
	return cur
}

// match reports whether the whole text matches.
func (g *glob) match(text string) bool {
	if !utf8.ValidString(text) {
		return false
	}
	for _, seq := range g.alts {
		if st := g.feed(seq, text); st != nil && st[len(seq)] {
			return true
		}
	}
	return false
}

// prefix reports, for texts that start with prefix, whether some of them
// may match (alive) and whether all of them do (all: a position from which
// only stars that cross "/" remain).
func (g *glob) prefix(text string) (alive, all bool) {
	if !utf8.ValidString(text) {
		return false, false
	}
	for _, seq := range g.alts {
		st := g.feed(seq, text)
		if st == nil {
			continue
		}
		alive = true
		for i, on := range st {
			if on && onlyStars(seq[i:]) {
				return true, true
			}
		}
	}
	return alive, false
}

func onlyStars(seq []token) bool {
	for _, t := range seq {
		if t.kind != tokStar || !t.slash {
			return false
		}
	}
	return true
}
