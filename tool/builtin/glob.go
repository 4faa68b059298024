package builtin

import (
	"fmt"
	"path"
	"strings"
)

// maxBraceExpansions bounds how many patterns one glob with braces may
// turn into.
const maxBraceExpansions = 256

// A glob matches slash-separated paths. Within a path segment it follows
// path.Match ("*", "?", "[a-z]", "\\" escapes); a segment that is exactly
// "**" matches any number of segments, none included; "{a,b}" alternatives
// are expanded first. A pattern without a slash matches the last segment
// of a path (the file name) at any depth, so "*.go" finds Go files
// everywhere.
type glob struct {
	alts     [][]string // each alternative, split into segments
	baseOnly bool
}

func compileGlob(pattern string) (*glob, error) {
	pattern = strings.TrimPrefix(pattern, "./")
	if pattern == "" {
		return nil, fmt.Errorf("empty glob pattern")
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

func matchSegments(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 1 && pat[1] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 1 {
				return true
			}
			for i := range len(name) + 1 {
				if matchSegments(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// expandBraces turns "a{b,c{d,e}}f" into abf, acdf, acef.
func expandBraces(p string) ([]string, error) {
	open := -1
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			open = i
		}
		if open >= 0 {
			break
		}
	}
	if open < 0 {
		if strings.Contains(strings.ReplaceAll(p, `\}`, ""), "}") {
			return nil, fmt.Errorf("unmatched }")
		}
		return []string{p}, nil
	}
	depth, start := 0, open+1
	var parts []string
	for i := open; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				parts = append(parts, p[start:i])
				var out []string
				for _, part := range parts {
					rest, err := expandBraces(p[:open] + part + p[i+1:])
					if err != nil {
						return nil, err
					}
					out = append(out, rest...)
					if len(out) > maxBraceExpansions {
						return nil, fmt.Errorf("more than %d alternatives", maxBraceExpansions)
					}
				}
				return out, nil
			}
		case ',':
			if depth == 1 {
				parts = append(parts, p[start:i])
				start = i + 1
			}
		}
	}
	return nil, fmt.Errorf("unmatched {")
}
