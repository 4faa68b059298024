package builtin

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// Bounds of a glob. They are far above what a person writes, and keep the
// cost of matching a path small whatever the pattern.
const (
	// maxGlobLen bounds the bytes of a glob pattern.
	maxGlobLen = 4096
	// maxGlobSegments bounds the slash-separated segments of each
	// alternative of a glob.
	maxGlobSegments = 64
	// maxBraceExpansions bounds how many patterns one glob with braces may
	// turn into.
	maxBraceExpansions = 256
	// maxBraceBytes bounds the bytes of all the patterns a glob with
	// braces turns into, together.
	maxBraceBytes = 16 << 10
)

// A glob matches slash-separated paths. Within a path segment it follows
// path.Match ("*", "?", "[a-z]", "\\" escapes); a segment that is exactly
// "**" matches any number of segments, none included; "{a,b}" alternatives
// are expanded first. A pattern without a slash matches the last segment
// of a path (the file name) at any depth, so "*.go" finds Go files
// everywhere.
//
// Matching a path costs at most about the number of the pattern's segments
// times the path's depth calls of path.Match, whatever "**" the pattern
// holds.
type glob struct {
	alts     [][]string // each alternative, split into segments
	baseOnly bool
}

func compileGlob(pattern string) (*glob, error) {
	pattern = strings.TrimPrefix(pattern, "./")
	if pattern == "" {
		return nil, fmt.Errorf("empty glob pattern")
	}
	if len(pattern) > maxGlobLen {
		return nil, fmt.Errorf("glob pattern of %d bytes is too long: the limit is %d bytes; use a shorter pattern, or several calls", len(pattern), maxGlobLen)
	}
	if strings.HasPrefix(pattern, "/") {
		return nil, fmt.Errorf("glob pattern %q starts with /: patterns are relative to the directory searched; drop the leading slash", pattern)
	}
	pats, err := expandBraces(pattern)
	if err != nil {
		return nil, fmt.Errorf("glob pattern %q: %w", pattern, err)
	}
	g := &glob{baseOnly: !strings.Contains(pattern, "/")}
	for _, p := range pats {
		segs := strings.Split(p, "/")
		if len(segs) > maxGlobSegments {
			return nil, fmt.Errorf("glob pattern %q has %d path segments: the limit is %d; use fewer segments (one ** stands for any number of folders)", pattern, len(segs), maxGlobSegments)
		}
		for _, s := range segs {
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("glob pattern %q: %w (use * ? [abc] {a,b} and **)", pattern, err)
			}
		}
		g.alts = append(g.alts, segs)
	}
	return g, nil
}

// match reports whether rel, a slash-separated relative path, matches.
func (g *glob) match(rel string) bool {
	segs := strings.Split(rel, "/")
	if g.baseOnly {
		segs = segs[len(segs)-1:]
	}
	for _, alt := range g.alts {
		if matchSegments(alt, segs) {
			return true
		}
	}
	return false
}

// matchSegments reports whether the segments of name match those of pat.
// A "**" may take any number of segments. Whether pat[i:] matches
// name[j:] is worked out once for each (i, j) and remembered, so the work
// is at most (len(pat)+1) × (len(name)+1) steps, each one path.Match at
// most, rather than growing exponentially with the number of "**".
func matchSegments(pat, name []string) bool {
	if !slices.Contains(pat, "**") {
		if len(pat) != len(name) {
			return false
		}
		for i := range pat {
			if ok, _ := path.Match(pat[i], name[i]); !ok {
				return false
			}
		}
		return true
	}
	width := len(name) + 1
	const (
		unknown = iota
		no
		yes
	)
	memo := make([]uint8, (len(pat)+1)*width)
	var rest func(i, j int) bool // pat[i:] matches name[j:]
	rest = func(i, j int) bool {
		if i == len(pat) {
			return j == len(name)
		}
		at := i*width + j
		if memo[at] != unknown {
			return memo[at] == yes
		}
		var ok bool
		if pat[i] == "**" {
			// It takes no more segments, or one more.
			ok = rest(i+1, j) || j < len(name) && rest(i, j+1)
		} else if j < len(name) {
			m, _ := path.Match(pat[i], name[j])
			ok = m && rest(i+1, j+1)
		}
		memo[at] = no
		if ok {
			memo[at] = yes
		}
		return ok
	}
	return rest(0, 0)
}

// expandBraces turns "a{b,c{d,e}}f" into abf, acdf, acef. It reads the
// pattern once, left to right, and stops as soon as the patterns it makes
// exceed maxBraceExpansions or maxBraceBytes.
func expandBraces(p string) ([]string, error) {
	e := braceExpander{p: p}
	out, err := e.sequence(0)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// braceExpander reads a pattern with braces.
type braceExpander struct {
	p string
	i int // the next byte to read
}

// sequence reads up to the end of p or, inside braces (depth > 0), up to
// the "," or "}" that ends the current alternative, and returns the
// patterns it stands for.
func (e *braceExpander) sequence(depth int) ([]string, error) {
	out := []string{""}
	start := e.i
	flush := func() error {
		lit := e.p[start:e.i]
		if lit == "" {
			return nil
		}
		for k := range out {
			out[k] += lit
		}
		return checkExpansion(out)
	}
	for e.i < len(e.p) {
		switch c := e.p[e.i]; {
		case c == '\\':
			e.i = min(e.i+2, len(e.p))
		case c == '{':
			if err := flush(); err != nil {
				return nil, err
			}
			e.i++
			alts, err := e.group(depth + 1)
			if err != nil {
				return nil, err
			}
			if len(out)*len(alts) > maxBraceExpansions {
				return nil, errTooManyAlternatives
			}
			next := make([]string, 0, len(out)*len(alts))
			for _, o := range out {
				for _, a := range alts {
					next = append(next, o+a)
				}
				if err := checkExpansion(next); err != nil {
					return nil, err
				}
			}
			out, start = next, e.i
		case c == '}' && depth == 0:
			return nil, fmt.Errorf("unmatched }")
		case (c == '}' || c == ',') && depth > 0:
			if err := flush(); err != nil {
				return nil, err
			}
			return out, nil
		default:
			e.i++
		}
	}
	if depth > 0 {
		return nil, fmt.Errorf("unmatched {")
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// group reads the alternatives of a brace group whose "{" was read, up to
// and including its "}".
func (e *braceExpander) group(depth int) ([]string, error) {
	var alts []string
	for {
		s, err := e.sequence(depth)
		if err != nil {
			return nil, err
		}
		alts = append(alts, s...)
		if err := checkExpansion(alts); err != nil {
			return nil, err
		}
		// sequence stopped at a "," or "}"; at the end it failed.
		c := e.p[e.i]
		e.i++
		if c == '}' {
			return alts, nil
		}
	}
}

var errTooManyAlternatives = fmt.Errorf("its braces make more than %d alternatives: use fewer {a,b} groups, or several calls", maxBraceExpansions)

// checkExpansion fails when pats exceed the bounds of a brace expansion.
func checkExpansion(pats []string) error {
	if len(pats) > maxBraceExpansions {
		return errTooManyAlternatives
	}
	n := 0
	for _, p := range pats {
		n += len(p)
	}
	if n > maxBraceBytes {
		return fmt.Errorf("its braces expand to more than %d bytes of patterns: use fewer or shorter {a,b} groups, or several calls", maxBraceBytes)
	}
	return nil
}
