package tagproto

import "strings"

// TagExtract returns the trimmed content between the first opening tag and
// the last closing tag named tag, and whether both were found in that order.
// See the package documentation for what counts as a tag.
func TagExtract(text, tag string) (content string, ok bool) {
	_, contentStart, closeStart, _, ok := outerBlock(text, tag)
	if !ok {
		return "", false
	}
	return strings.TrimSpace(text[contentStart:closeStart]), true
}

// TagStrip returns text without the block TagExtract reads, opening and
// closing tags included. The text around the block is kept byte for byte;
// when there is no block, text is returned unchanged.
func TagStrip(text, tag string) string {
	openStart, _, _, closeEnd, ok := outerBlock(text, tag)
	if !ok {
		return text
	}
	return text[:openStart] + text[closeEnd:]
}

// TagExtractAll returns the trimmed contents of every block named tag, in
// order, pairing each opening tag with the nearest closing tag after it. It
// returns nil when there is no complete block.
func TagExtractAll(text, tag string) []string {
	var out []string
	cursor := 0
	for cursor < len(text) {
		_, contentStart := findOpen(text, tag, cursor)
		if contentStart < 0 {
			break
		}
		closeStart, closeEnd := findClose(text, tag, contentStart)
		if closeStart < 0 {
			break
		}
		out = append(out, strings.TrimSpace(text[contentStart:closeStart]))
		cursor = closeEnd
	}
	return out
}

// outerBlock locates the first opening tag and the last closing tag.
func outerBlock(text, tag string) (openStart, contentStart, closeStart, closeEnd int, ok bool) {
	openStart, contentStart = findOpen(text, tag, 0)
	if openStart < 0 {
		return 0, 0, 0, 0, false
	}
	closeStart, closeEnd = findLastClose(text, tag)
	if closeStart < contentStart {
		return 0, 0, 0, 0, false
	}
	return openStart, contentStart, closeStart, closeEnd, true
}

// findOpen returns the start and end (one past ">") of the first opening
// tag at or after from, or -1, -1.
func findOpen(text, tag string, from int) (start, end int) {
	if tag == "" {
		return -1, -1
	}
	for i := from; i < len(text); {
		j := strings.IndexByte(text[i:], '<')
		if j < 0 {
			return -1, -1
		}
		j += i
		k := j + 1 + len(tag)
		if hasFoldAt(text, j+1, tag) && k < len(text) {
			switch {
			case text[k] == '>':
				return j, k + 1
			case isSpace(text[k]):
				m := strings.IndexByte(text[k:], '>')
				if m < 0 {
					return -1, -1 // no ">" left: no later tag can end either
				}
				return j, k + m + 1
			}
		}
		i = j + 1
	}
	return -1, -1
}

// findClose returns the start and end of the first closing tag at or after
// from, or -1, -1.
func findClose(text, tag string, from int) (start, end int) {
	if tag == "" {
		return -1, -1
	}
	for i := from; i < len(text); {
		j := strings.Index(text[i:], "</")
		if j < 0 {
			return -1, -1
		}
		j += i
		if end := closeEndAt(text, j, tag); end > 0 {
			return j, end
		}
		i = j + 2
	}
	return -1, -1
}

// findLastClose returns the start and end of the last closing tag, or -1, -1.
func findLastClose(text, tag string) (start, end int) {
	if tag == "" {
		return -1, -1
	}
	for i := len(text); i > 0; {
		j := strings.LastIndex(text[:i], "</")
		if j < 0 {
			return -1, -1
		}
		if end := closeEndAt(text, j, tag); end > 0 {
			return j, end
		}
		i = j
	}
	return -1, -1
}

// closeEndAt reports the end of a closing tag starting at j ("</" already
// checked), or -1.
func closeEndAt(text string, j int, tag string) int {
	if !hasFoldAt(text, j+2, tag) {
		return -1
	}
	k := j + 2 + len(tag)
	for k < len(text) && isSpace(text[k]) {
		k++
	}
	if k < len(text) && text[k] == '>' {
		return k + 1
	}
	return -1
}

// hasFoldAt reports whether text[i:] starts with name, ignoring case.
func hasFoldAt(text string, i int, name string) bool {
	return i+len(name) <= len(text) && strings.EqualFold(text[i:i+len(name)], name)
}

func isSpace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\f', '\v':
		return true
	}
	return false
}
