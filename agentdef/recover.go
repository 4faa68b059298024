package agentdef

import (
	"slices"
	"strings"
)

// recoverable are the fields the line reader recovers as text when they do
// not parse as YAML on their own.
func recoverable(key string) bool {
	switch key {
	case "name", "description", "tools", "model":
		return true
	}
	return false
}

// block is the run of lines of one field: its key line and the lines below
// it up to the next known key at column 0.
type block struct {
	key   string
	line  int // 1-based, in the frontmatter block
	lines []string
}

// recoverFields reads frontmatter that is not valid YAML line by line. A
// field name at column 0 starts a field, but inside a description only a
// known one does, so the example dialogue of a description ("user: …",
// "Context: …") stays in the description; a nested block (a list under
// related:) stays with its field. Each
// field is first parsed as YAML on its own; name, description, tools and
// model fall back to their text. It returns the fields and the names of the
// other fields it had to drop.
func recoverFields(fm *frontmatter) (fields []field, dropped []string) {
	known := knownKeys()
	var blocks []*block
	for i, text := range fm.lines {
		// A field name cadre knows starts a field anywhere; any other name
		// at column 0 does too (category:, related:), except inside a
		// description, whose examples write "user: …" and "Context: …".
		if key, ok := keyAt(text); ok && (slices.Contains(known, key) || len(blocks) > 0 && blocks[len(blocks)-1].key != "description") {
			blocks = append(blocks, &block{key: key, line: i + 1, lines: []string{text}})
			continue
		}
		if len(blocks) > 0 {
			last := blocks[len(blocks)-1]
			last.lines = append(last.lines, text)
		}
	}
	seen := map[string]bool{}
	for _, bl := range blocks {
		if seen[bl.key] {
			continue // the builder only reads the first; keep it that way here
		}
		seen[bl.key] = true
		src := strings.Join(bl.lines, "\n") + "\n"
		if fs, err := parseYAML([]byte(src)); err == nil && len(fs) == 1 && fs[0].key == bl.key {
			f := fs[0]
			f.line += bl.line - 1
			f.vline += bl.line - 1
			f.off = bl.line - 1
			fields = append(fields, f)
			continue
		}
		if !recoverable(bl.key) {
			dropped = append(dropped, bl.key)
			continue
		}
		fields = append(fields, field{
			key: bl.key, value: lineValue(bl), raw: true,
			line: bl.line, col: 1, vline: bl.line, vcol: valueColumn(bl.lines[0]),
		})
	}
	return fields, dropped
}

// keyAt returns the field name a line starts with: an identifier at column
// 0 followed by a colon and a space or the end of the line.
func keyAt(line string) (string, bool) {
	i := 0
	for i < len(line) {
		c := line[i]
		if c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			i++
			continue
		}
		break
	}
	if i == 0 {
		return "", false
	}
	key := line[:i]
	rest := strings.TrimLeft(line[i:], " ")
	if !strings.HasPrefix(rest, ":") {
		return "", false
	}
	rest = rest[1:]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return "", false
	}
	return key, true
}

func valueColumn(line string) int {
	_, v, _ := strings.Cut(line, ":")
	return len(line) - len(strings.TrimLeft(v, " \t")) + 1
}

// lineValue is the text of a block that YAML could not read.
func lineValue(bl *block) any {
	_, v, _ := strings.Cut(bl.lines[0], ":")
	v = strings.TrimSpace(v)
	rest := bl.lines[1:]
	for len(rest) > 0 && strings.TrimSpace(rest[len(rest)-1]) == "" {
		rest = rest[:len(rest)-1]
	}
	if h := strings.TrimSpace(strings.SplitN(v, " #", 2)[0]); h != "" && (h[0] == '|' || h[0] == '>') && strings.Trim(h[1:], "+-0123456789") == "" {
		return blockScalar(h[0], rest)
	}
	if bl.key == "tools" && v == "" {
		var items []any
		for _, l := range rest {
			t := strings.TrimSpace(l)
			if item, ok := strings.CutPrefix(t, "-"); ok {
				items = append(items, strings.TrimSpace(item))
			}
		}
		if items != nil {
			return items
		}
	}
	parts := []string{v}
	for _, l := range rest {
		t := strings.TrimSpace(l)
		if bl.key != "description" && strings.HasPrefix(t, "#") {
			continue
		}
		parts = append(parts, t)
	}
	return unquote(strings.TrimSpace(strings.Join(parts, "\n")))
}

// blockScalar joins the lines of a | or > block.
func blockScalar(style byte, lines []string) string {
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRight(dedent(l, max(indent, 0)), " \t")
	}
	if style == '|' {
		return strings.Join(out, "\n")
	}
	var sb strings.Builder
	for i, l := range out {
		switch {
		case l == "":
			sb.WriteByte('\n')
		case i > 0 && out[i-1] != "":
			sb.WriteByte(' ')
			sb.WriteString(l)
		default:
			sb.WriteString(l)
		}
	}
	return sb.String()
}

// unquote removes the quotes around a recovered value, undoing the escapes
// of a double-quoted one and the doubled quotes of a single-quoted one.
func unquote(s string) string {
	if len(s) < 2 {
		return s
	}
	switch {
	case s[0] == '"' && s[len(s)-1] == '"':
		in := s[1 : len(s)-1]
		var sb strings.Builder
		for i := 0; i < len(in); i++ {
			if in[i] != '\\' || i+1 == len(in) {
				sb.WriteByte(in[i])
				continue
			}
			i++
			switch in[i] {
			case 'n':
				sb.WriteByte('\n')
			case 't':
				sb.WriteByte('\t')
			case '"', '\\', '/':
				sb.WriteByte(in[i])
			default:
				sb.WriteByte('\\')
				sb.WriteByte(in[i])
			}
		}
		return sb.String()
	case s[0] == '\'' && s[len(s)-1] == '\'':
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'")
	}
	return s
}
