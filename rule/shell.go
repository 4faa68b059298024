package rule

import (
	"fmt"
	"strings"
)

// A part is one simple command of a command line, as far as a reader that
// does not run anything can tell.
type part struct {
	// text is the command as written, without the operators around it,
	// comments or surrounding blanks.
	text string
	// words are its words with quotes and escapes removed, redirections
	// left out; prog is the index of the program among them (after any
	// VAR=value), or -1 when there is none.
	words []string
	prog  int
	// progDynamic is set when the program's own name comes from an
	// expansion ($CMD, a glob, {a,b}).
	progDynamic bool
	// redir is set when it redirects input or output to or from a file
	// (2>&1 and /dev/null do not count).
	redir bool
	// dynamic says why its text does not show all it runs or touches
	// ($(…), `…`, a program named by a variable or a glob); "" when it does.
	dynamic string
	// opaque says why it cannot be read at all (a subshell, a group, a
	// compound command such as if or for, a here-document); "" when it can.
	opaque string
}

// maxNesting bounds how deep $(…) and `…` may nest before a command line is
// refused as unreadable.
const maxNesting = 16

// splitCommand takes a shell command line apart into simple commands: at
// ;, &, &&, ||, |, |& and newlines, and into each $(…), `…`, <(…) and >(…),
// whose commands run too. It is conservative: what it cannot read is marked
// opaque, and an error (an unclosed quote) means the line cannot be judged.
func splitCommand(line string) ([]part, error) {
	p := &shellReader{s: line}
	parts, err := p.list(0, 0)
	if err != nil {
		return nil, err
	}
	if p.i < len(p.s) {
		return nil, fmt.Errorf("a ) at byte %d closes nothing", p.i+1)
	}
	return parts, nil
}

type shellReader struct {
	s string
	i int
}

// builder collects one simple command while it is read.
type builder struct {
	start    int
	words    []string
	expands  []bool // the word had an unquoted $, `, *, ?, [ or {
	word     strings.Builder
	inWord   bool
	wordExp  bool
	quoted   bool // the word had quotes (so it is not an operator word like {)
	redir    bool
	dynamic  string
	opaque   string
	inner    []part // commands of its substitutions
	textEnd  int    // where its text ends (a comment starts), or -1
	pendDup  bool   // the next word is the target of a redirection
	pendKind string // ">", "<", ">&", "<&", "<<<"
}

func (b *builder) endWord() {
	if !b.inWord {
		return
	}
	w := b.word.String()
	b.word.Reset()
	b.inWord = false
	exp, quoted := b.wordExp, b.quoted
	b.wordExp, b.quoted = false, false
	if b.pendKind != "" {
		kind := b.pendKind
		b.pendKind = ""
		switch {
		case (kind == ">&" || kind == "<&") && (isDigits(w) || w == "-" || w == "") && !exp:
		case w == "/dev/null" && !exp:
		case kind == "<<<":
		default:
			b.redir = true
		}
		return
	}
	if !quoted && (w == "{" || w == "}") {
		b.setOpaque("a { … } group")
	}
	b.words = append(b.words, w)
	b.expands = append(b.expands, exp)
}

func (b *builder) setOpaque(why string) {
	if b.opaque == "" {
		b.opaque = why
	}
}

func (b *builder) setDynamic(why string) {
	if b.dynamic == "" {
		b.dynamic = why
	}
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// reserved are the words that start or continue compound commands.
var reserved = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "case": true, "esac": true,
	"for": true, "select": true, "while": true, "until": true, "do": true, "done": true,
	"function": true, "time": true, "coproc": true, "!": true, "[[": true, "]]": true, "{": true, "}": true,
}

func (r *shellReader) finish(b *builder, parts []part) []part {
	b.endWord()
	end := r.i
	if b.textEnd >= 0 {
		end = b.textEnd
	}
	text := trimBlanks(r.s[b.start:end])
	if b.pendKind != "" {
		b.setOpaque("a redirection without a target")
	}
	pt := part{text: text, words: b.words, prog: -1, redir: b.redir, dynamic: b.dynamic, opaque: b.opaque}
	for i, w := range b.words {
		if isAssignment(w) {
			continue
		}
		pt.prog = i
		if b.expands[i] {
			pt.progDynamic = true
			pt.setDynamic("a program named by an expansion")
		}
		if reserved[w] {
			pt.setOpaque("the compound command " + w)
		}
		break
	}
	if text != "" || len(b.inner) > 0 {
		if text != "" {
			parts = append(parts, pt)
		}
		parts = append(parts, b.inner...)
	}
	return parts
}

func (p *part) setDynamic(why string) {
	if p.dynamic == "" {
		p.dynamic = why
	}
}

func (p *part) setOpaque(why string) {
	if p.opaque == "" {
		p.opaque = why
	}
}

// isAssignment reports whether a word is NAME=value (or NAME+=value).
func isAssignment(w string) bool {
	eq := strings.IndexByte(w, '=')
	if eq <= 0 {
		return false
	}
	name := strings.TrimSuffix(w[:eq], "+")
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return name != ""
}

// list reads simple commands up to the end, or up to the ) that closes a
// $( or <( (when closer is ')'), and returns them.
func (r *shellReader) list(closer byte, depth int) ([]part, error) {
	if depth > maxNesting {
		return nil, fmt.Errorf("substitutions nested more than %d deep", maxNesting)
	}
	var parts []part
	b := &builder{start: r.i, textEnd: -1}
	next := func() {
		parts = r.finish(b, parts)
		b = &builder{start: r.i, textEnd: -1}
	}
	for r.i < len(r.s) {
		c := r.s[r.i]
		if b.textEnd >= 0 && c != '\n' {
			r.i++ // inside a comment
			continue
		}
		switch {
		case c == ')' && closer == ')':
			parts = r.finish(b, parts)
			return parts, nil
		case c == ' ' || c == '\t' || c == '\r':
			b.endWord()
			r.i++
		case c == '\n' || c == ';':
			if c == ';' && r.i+1 < len(r.s) && (r.s[r.i+1] == ';' || r.s[r.i+1] == '&') {
				b.setOpaque("a case clause")
			}
			next()
			r.i++
			b.start = r.i
		case c == '&':
			if r.i+1 < len(r.s) && r.s[r.i+1] == '>' {
				b.endWord()
				if err := r.redirect(b, depth); err != nil {
					return nil, err
				}
				continue
			}
			next()
			if r.i+1 < len(r.s) && r.s[r.i+1] == '&' {
				r.i++
			}
			r.i++
			b.start = r.i
		case c == '|':
			next()
			if r.i+1 < len(r.s) && (r.s[r.i+1] == '|' || r.s[r.i+1] == '&') {
				r.i++
			}
			r.i++
			b.start = r.i
		case c == '<' || c == '>':
			if r.i+1 < len(r.s) && r.s[r.i+1] == '(' {
				// <(…) and >(…): process substitution, a word.
				r.i += 2
				inner, err := r.list(')', depth+1)
				if err != nil {
					return nil, err
				}
				if r.i >= len(r.s) {
					return nil, fmt.Errorf("a %c( is not closed", c)
				}
				r.i++
				b.inner = append(b.inner, inner...)
				b.setDynamic("process substitution " + string(c) + "(…)")
				b.inWord, b.wordExp = true, true
				b.word.WriteString("<(…)")
				continue
			}
			// A word of digits right before it is the descriptor.
			if b.inWord && !b.quoted && !b.wordExp && isDigits(b.word.String()) {
				b.word.Reset()
				b.inWord = false
			} else {
				b.endWord()
			}
			if err := r.redirect(b, depth); err != nil {
				return nil, err
			}
		case c == '(' || c == ')':
			b.endWord()
			b.setOpaque("a subshell or function ( … )")
			if c == ')' {
				return nil, fmt.Errorf("a ) at byte %d closes nothing", r.i+1)
			}
			// Skip to the matching ) so that what is inside is not read as
			// separate commands.
			if err := r.skipParens(); err != nil {
				return nil, err
			}
		case c == '#' && !b.inWord:
			b.endWord()
			b.textEnd = r.i
			r.i++
		default:
			if err := r.wordChar(b, depth); err != nil {
				return nil, err
			}
		}
	}
	if closer == ')' {
		return nil, fmt.Errorf("a $( or ( is not closed")
	}
	parts = r.finish(b, parts)
	return parts, nil
}

// skipParens skips a parenthesised group starting at r.i, quotes and
// nesting included.
func (r *shellReader) skipParens() error {
	depth := 0
	for r.i < len(r.s) {
		switch c := r.s[r.i]; c {
		case '\\':
			r.i += 2
			continue
		case '\'':
			j := strings.IndexByte(r.s[r.i+1:], '\'')
			if j < 0 {
				return fmt.Errorf("a ' is not closed")
			}
			r.i += j + 2
			continue
		case '"':
			if err := r.skipDouble(); err != nil {
				return err
			}
			continue
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				r.i++
				return nil
			}
		}
		r.i++
	}
	return fmt.Errorf("a ( is not closed")
}

func (r *shellReader) skipDouble() error {
	for j := r.i + 1; j < len(r.s); j++ {
		switch r.s[j] {
		case '\\':
			j++
		case '"':
			r.i = j + 1
			return nil
		}
	}
	return fmt.Errorf(`a " is not closed`)
}

// redirect reads a redirection operator at r.i and notes its target as
// the next word.
func (r *shellReader) redirect(b *builder, depth int) error {
	s := r.s
	op := ""
	for _, o := range []string{"&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", ">>", ">|", ">&", "<", ">"} {
		if strings.HasPrefix(s[r.i:], o) {
			op = o
			break
		}
	}
	r.i += len(op)
	switch op {
	case "<<", "<<-":
		b.setOpaque("a here-document (<<)")
		b.pendKind = "<"
	case ">&", "<&":
		b.pendKind = op
	case "<<<":
		b.pendKind = "<<<"
	default:
		b.pendKind = ">"
	}
	for r.i < len(s) && (s[r.i] == ' ' || s[r.i] == '\t') {
		r.i++
	}
	if r.i >= len(s) || strings.IndexByte(";&|<>()\n", s[r.i]) >= 0 {
		b.setOpaque("a redirection without a target")
		b.pendKind = ""
		return nil
	}
	// The target is the next word: read it now.
	for r.i < len(s) && strings.IndexByte(" \t\r;&|<>()\n", s[r.i]) < 0 {
		if err := r.wordChar(b, depth); err != nil {
			return err
		}
	}
	b.endWord()
	return nil
}

// wordChar reads one piece of a word at r.i: a plain character, an escape,
// a quoted string or an expansion.
func (r *shellReader) wordChar(b *builder, depth int) error {
	s := r.s
	c := s[r.i]
	b.inWord = true
	switch c {
	case '\\':
		if r.i+1 < len(s) {
			if s[r.i+1] != '\n' {
				b.word.WriteByte(s[r.i+1])
			}
			r.i += 2
			return nil
		}
		b.word.WriteByte('\\')
		r.i++
	case '\'':
		j := strings.IndexByte(s[r.i+1:], '\'')
		if j < 0 {
			return fmt.Errorf("a ' is not closed")
		}
		b.word.WriteString(s[r.i+1 : r.i+1+j])
		b.quoted = true
		r.i += j + 2
	case '"':
		b.quoted = true
		r.i++
		for r.i < len(s) {
			d := s[r.i]
			switch {
			case d == '"':
				r.i++
				return nil
			case d == '\\' && r.i+1 < len(s):
				if strings.IndexByte("$`\"\\\n", s[r.i+1]) >= 0 {
					if s[r.i+1] != '\n' {
						b.word.WriteByte(s[r.i+1])
					}
				} else {
					b.word.WriteByte('\\')
					b.word.WriteByte(s[r.i+1])
				}
				r.i += 2
			case d == '$' || d == '`':
				if err := r.expansion(b, depth, true); err != nil {
					return err
				}
			default:
				b.word.WriteByte(d)
				r.i++
			}
		}
		return fmt.Errorf(`a " is not closed`)
	case '$', '`':
		return r.expansion(b, depth, false)
	case '*', '?', '[', '{', '~':
		if c != '~' {
			b.wordExp = true
		}
		b.word.WriteByte(c)
		r.i++
	default:
		b.word.WriteByte(c)
		r.i++
	}
	return nil
}

// expansion reads $…, ${…}, $(…), $((…)) or `…` at r.i.
func (r *shellReader) expansion(b *builder, depth int, inQuotes bool) error {
	s := r.s
	if s[r.i] == '`' {
		// Find the closing backquote; \` inside does not close it.
		var inner strings.Builder
		j := r.i + 1
		for ; j < len(s) && s[j] != '`'; j++ {
			if s[j] == '\\' && j+1 < len(s) && strings.IndexByte("$`\\", s[j+1]) >= 0 {
				j++
			}
			inner.WriteByte(s[j])
		}
		if j >= len(s) {
			return fmt.Errorf("a ` is not closed")
		}
		sub := &shellReader{s: inner.String()}
		parts, err := sub.list(0, depth+1)
		if err != nil {
			return err
		}
		b.inner = append(b.inner, parts...)
		b.setDynamic("a `…` substitution")
		b.wordExp = true
		b.word.WriteString("`…`")
		r.i = j + 1
		return nil
	}
	// s[r.i] == '$'
	if r.i+1 >= len(s) {
		b.word.WriteByte('$')
		r.i++
		return nil
	}
	switch n := s[r.i+1]; {
	case n == '(' && r.i+2 < len(s) && s[r.i+2] == '(':
		b.setOpaque("an arithmetic expansion $((…))")
		r.i++
		return r.skipParens()
	case n == '(':
		r.i += 2
		parts, err := r.list(')', depth+1)
		if err != nil {
			return err
		}
		if r.i >= len(s) {
			return fmt.Errorf("a $( is not closed")
		}
		r.i++
		b.inner = append(b.inner, parts...)
		b.setDynamic("a $(…) substitution")
		b.wordExp = true
		b.word.WriteString("$(…)")
		return nil
	case n == '{':
		end := strings.IndexByte(s[r.i:], '}')
		if end < 0 {
			return fmt.Errorf("a ${ is not closed")
		}
		body := s[r.i+2 : r.i+end]
		if strings.ContainsAny(body, "$`(") {
			b.setOpaque("a ${…} expansion with a substitution inside")
		}
		b.word.WriteString(s[r.i : r.i+end+1])
		b.wordExp = true
		r.i += end + 1
		return nil
	case n == '_' || n >= 'a' && n <= 'z' || n >= 'A' && n <= 'Z':
		j := r.i + 1
		for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
			j++
		}
		b.word.WriteString(s[r.i:j])
		b.wordExp = true
		r.i = j
		return nil
	case n >= '0' && n <= '9' || strings.IndexByte("@*#?$!-", n) >= 0:
		b.word.WriteString(s[r.i : r.i+2])
		b.wordExp = true
		r.i += 2
		return nil
	case (n == '\'' || n == '"') && !inQuotes:
		// $'…' and $"…": quoted text; read the quote next.
		r.i++
		if n == '\'' {
			b.setOpaque("a $'…' string")
		}
		return r.wordChar(b, depth)
	}
	b.word.WriteByte('$')
	r.i++
	return nil
}

// trimBlanks cuts the blanks the shell separates words with from both ends
// of s, and nothing else: a vertical tab or a form feed is part of a word
// to the shell, so "\vgit" is not the command git.
func trimBlanks(s string) string { return strings.Trim(s, " \t\r\n") }
