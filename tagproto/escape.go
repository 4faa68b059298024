package tagproto

import "strings"

// EscapeXML returns s with &, <, >, " and ' replaced by &amp;, &lt;, &gt;,
// &quot; and &apos;, ready for use as XML text or as a quoted attribute
// value. Other characters, invalid UTF-8 included, are kept as they are.
func EscapeXML(s string) string {
	i := strings.IndexAny(s, `&<>"'`)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		switch c := s[i]; c {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		case '\'':
			b.WriteString("&apos;")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
