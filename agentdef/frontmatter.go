package agentdef

import (
	"bytes"
	"strings"
)

// maxFrontmatter bounds the frontmatter handed to the YAML parser.
const maxFrontmatter = 128 << 10

// frontmatter is a file split into its YAML block and its body.
type frontmatter struct {
	// yaml is the block between the delimiter lines, with line endings
	// normalised to \n and the common indentation removed.
	yaml []byte
	// lines are the lines of yaml.
	lines []string
	// first is the file line (1-based) of the first line of yaml; open and
	// close are the lines of the delimiters.
	first, open, close int
	// indent is the number of characters removed from the start of each
	// frontmatter line.
	indent int
	// longClose is set when the closing line is a longer run of dashes.
	longClose bool
	// body is everything after the closing line, leading blank lines
	// dropped; bodyLine is the file line it starts at.
	body     []byte
	bodyLine int
}

// splitStatus says why a file could not be split.
type splitStatus int

const (
	splitOK splitStatus = iota
	splitNoFrontmatter
	splitUnclosed
)

// utf8BOM is the byte order mark some editors put at the start of a file.
const utf8BOM = "\xef\xbb\xbf"

// splitFrontmatter finds the frontmatter of a file. It tolerates a byte
// order mark, blank lines before the opening delimiter, CRLF, an indented
// block, and a closing line of more than three dashes.
func splitFrontmatter(data []byte) (*frontmatter, splitStatus) {
	data = bytes.TrimPrefix(data, []byte(utf8BOM))
	fm := &frontmatter{}
	line, pos := 0, 0
	next := func() (string, int, bool) { // text without line ending, offset after it
		if pos >= len(data) {
			return "", pos, false
		}
		end := bytes.IndexByte(data[pos:], '\n')
		var text []byte
		after := len(data)
		if end < 0 {
			text = data[pos:]
		} else {
			text = data[pos : pos+end]
			after = pos + end + 1
		}
		line++
		return strings.TrimSuffix(string(text), "\r"), after, true
	}

	// The opening delimiter: the first non-blank line.
	for {
		text, after, ok := next()
		if !ok {
			return nil, splitNoFrontmatter
		}
		pos = after
		t := strings.TrimSpace(text)
		if t == "" {
			continue
		}
		if t != "---" {
			return nil, splitNoFrontmatter
		}
		fm.open = line
		fm.indent = len(text) - len(strings.TrimLeft(text, " \t"))
		break
	}
	fm.first = fm.open + 1

	// The block up to the closing delimiter.
	for {
		text, after, ok := next()
		if !ok {
			return fm, splitUnclosed
		}
		pos = after
		if t := strings.TrimSpace(text); len(t) >= 3 && strings.Trim(t, "-") == "" {
			fm.close = line
			fm.longClose = len(t) > 3
			break
		}
		fm.lines = append(fm.lines, dedent(text, fm.indent))
	}
	fm.yaml = []byte(strings.Join(fm.lines, "\n") + "\n")

	// The body, leading blank lines dropped.
	fm.bodyLine = line + 1
	for pos < len(data) {
		end := bytes.IndexByte(data[pos:], '\n')
		if end < 0 || len(bytes.TrimSpace(data[pos:pos+end])) != 0 {
			break
		}
		pos += end + 1
		fm.bodyLine++
	}
	fm.body = data[pos:]
	return fm, splitOK
}

// dedent removes up to n leading spaces or tabs.
func dedent(s string, n int) string {
	i := 0
	for i < n && i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return s[i:]
}

// splitFenced finds frontmatter written as a fenced YAML block (```yaml or
// ~~~yaml) at the top of a file, after nothing but headings and blank
// lines, as some agent collections write it. The block's fences stand for
// the --- lines. ok is false when the file has no such block; closed is
// false when the block never ends.
func splitFenced(data []byte) (fm *frontmatter, ok, closed bool) {
	data = bytes.TrimPrefix(data, []byte(utf8BOM))
	lines := strings.Split(string(data), "\n")
	fm = &frontmatter{}
	fence := ""
	for i, l := range lines {
		t := strings.TrimSpace(strings.TrimSuffix(l, "\r"))
		switch {
		case t == "" || strings.HasPrefix(t, "#") && fence == "":
			if fence != "" {
				fm.lines = append(fm.lines, "")
			}
			continue
		case fence == "":
			lang := strings.ToLower(strings.TrimSpace(strings.TrimLeft(t, "`~")))
			marker := t[:len(t)-len(strings.TrimLeft(t, "`~"))]
			if len(marker) < 3 || strings.Trim(marker, string(marker[0])) != "" || (lang != "yaml" && lang != "yml") {
				return nil, false, false
			}
			fence, fm.open, fm.first = marker, i+1, i+2
			continue
		case strings.HasPrefix(t, fence) && strings.Trim(t, string(fence[0])) == "":
			fm.close = i + 1
			fm.yaml = []byte(strings.Join(fm.lines, "\n") + "\n")
			rest := i + 1
			for rest < len(lines) && strings.TrimSpace(lines[rest]) == "" {
				rest++
			}
			fm.bodyLine = rest + 1
			fm.body = []byte(strings.Join(lines[rest:], "\n"))
			return fm, true, true
		}
		fm.lines = append(fm.lines, strings.TrimSuffix(l, "\r"))
	}
	return fm, fence != "", false
}
