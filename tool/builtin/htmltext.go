package builtin

import (
	"html"
	"strings"
)

// skippedElement reports whether an HTML element's content is not text
// to read.
func skippedElement(name string) bool {
	switch name {
	case "script", "style", "noscript", "template", "svg":
		return true
	}
	return false
}

// blockElement reports whether an element starts and ends on a line of its
// own.
func blockElement(name string) bool {
	switch name {
	case "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "fieldset",
		"figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr",
		"li", "main", "nav", "ol", "p", "pre", "section", "table", "tr", "ul", "title", "body", "html":
		return true
	}
	return false
}

// htmlText reduces an HTML document to its readable text, roughly: tags
// go, scripts and styles go with their content, block elements become line
// breaks, list items get a dash, headings a #, entities are decoded and
// runs of blank space shrink. It never fails; broken markup gives rougher
// text.
func htmlText(doc string) string {
	var out strings.Builder
	var text strings.Builder // text since the last tag, entities still encoded
	flush := func() {
		if text.Len() > 0 {
			out.WriteString(html.UnescapeString(text.String()))
			text.Reset()
		}
	}
	lastGT := strings.LastIndexByte(doc, '>')
	for i := 0; i < len(doc); {
		c := doc[i]
		if i > lastGT {
			// No tag can end from here on: the rest is text.
			text.WriteString(doc[i:])
			break
		}
		if c != '<' {
			text.WriteByte(c)
			i++
			continue
		}
		rest := doc[i:]
		switch {
		case strings.HasPrefix(rest, "<!--"):
			end := strings.Index(rest[4:], "-->")
			if end < 0 {
				i = len(doc)
			} else {
				i += 4 + end + 3
			}
			continue
		case strings.HasPrefix(rest, "<!") || strings.HasPrefix(rest, "<?"):
			end := strings.IndexByte(rest, '>')
			if end < 0 {
				i = len(doc)
			} else {
				i += end + 1
			}
			continue
		}
		name, closing, end, ok := readTag(rest)
		if !ok {
			text.WriteByte(c) // a lone "<" is text
			i++
			continue
		}
		flush()
		i += end
		if !closing && skippedElement(name) {
			// Skip to the matching close tag.
			closeAt := indexFold(doc[i:], "</"+name)
			if closeAt < 0 {
				i = len(doc)
				continue
			}
			i += closeAt
			if gt := strings.IndexByte(doc[i:], '>'); gt >= 0 {
				i += gt + 1
			} else {
				i = len(doc)
			}
			continue
		}
		switch {
		case name == "li" && !closing:
			out.WriteString("\n- ")
		case len(name) == 2 && name[0] == 'h' && name[1] >= '1' && name[1] <= '6' && !closing:
			out.WriteString("\n\n" + strings.Repeat("#", int(name[1]-'0')) + " ")
		case name == "td" || name == "th":
			out.WriteString(" ")
		case name == "li":
		case blockElement(name):
			out.WriteString("\n")
			if name == "p" || name == "tr" || name == "table" || name == "blockquote" || name == "pre" {
				out.WriteString("\n")
			}
		}
	}
	flush()
	return tidyText(out.String())
}

// maxTagLen bounds how far readTag honours quotes in attributes, so that
// text full of stray quotes and "<" stays linear to read.
const maxTagLen = 1024

// readTag reads the tag at the start of s ("<a href=x>", "</p>", "<br/>"):
// its lower-case name, whether it closes, and its length. Quoted attribute
// values may hold ">". A tag that is never closed is not a tag.
func readTag(s string) (name string, closing bool, n int, ok bool) {
	i := 1
	if i < len(s) && s[i] == '/' {
		closing = true
		i++
	}
	start := i
	for i < len(s) && (isLetter(s[i]) || (i > start && (s[i] >= '0' && s[i] <= '9' || s[i] == '-' || s[i] == ':'))) {
		i++
	}
	if i == start {
		return "", false, 0, false
	}
	name = strings.ToLower(s[start:i])
	var quote byte
	for ; i < len(s) && i < maxTagLen; i++ {
		switch {
		case quote != 0:
			if s[i] == quote {
				quote = 0
			}
		case s[i] == '"' || s[i] == '\'':
			quote = s[i]
		case s[i] == '>':
			return name, closing, i + 1, true
		}
	}
	// A quote that never closes, or a tag too long to be one: end the tag
	// at the first ">", quotes or not.
	if gt := strings.IndexByte(s, '>'); gt >= 0 {
		return name, closing, gt + 1, true
	}
	return "", false, 0, false // never closed: not a tag
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// indexFold is strings.Index ignoring ASCII case of substr, which is lower
// case.
func indexFold(s, substr string) int {
	for i := 0; i+len(substr) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(substr)], substr) {
			return i
		}
	}
	return -1
}

// tidyText shrinks spaces within lines, trims lines and keeps at most one
// blank line in a row.
func tidyText(s string) string {
	var b strings.Builder
	blank := true // at the start, drop blank lines
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.Join(strings.Fields(line), " ")
		if line == "" {
			if !blank {
				b.WriteString("\n")
			}
			blank = true
			continue
		}
		b.WriteString(line)
		b.WriteString("\n")
		blank = false
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}
