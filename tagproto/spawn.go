package tagproto

import "strings"

// SpawnMode says how the tasks of a spawn block run.
type SpawnMode string

// Spawn modes. Parallel tasks run at the same time; each Sequential task
// runs after the previous one and sees its result.
const (
	Parallel   SpawnMode = "parallel"
	Sequential SpawnMode = "sequential"
)

// A SpawnTask is one <agent …/> element of a spawn block.
type SpawnTask struct {
	// Task is what the subagent must do; never empty.
	Task string
	// Name is the definition to run, from the name attribute; empty means
	// a general subagent.
	Name string
	// Context is optional background for this task, from the context
	// attribute.
	Context string
}

// A SpawnBlock is the first <spawn_agents> block of a reply.
type SpawnBlock struct {
	Mode SpawnMode
	// Tasks holds at least one task, in the order written.
	Tasks []SpawnTask
	// Before is the text before the block, trimmed.
	Before string
}

const (
	spawnElement = "spawn_agents"
	agentElement = "agent"
)

// ParseSpawn reads the first <spawn_agents> block of reply. It reports false
// when there is no well-formed block with at least one task. See the package
// documentation for the exact rules.
func ParseSpawn(reply string) (*SpawnBlock, bool) {
	openStart := findElement(reply, spawnElement, 0)
	if openStart < 0 {
		return nil, false
	}
	closeStart, _ := findClose(reply, spawnElement, 0)
	if closeStart < openStart {
		return nil, false // no closing tag, or it comes first
	}
	attrs, bodyStart, selfClosing, ok := parseTag(reply[:closeStart], openStart+1+len(spawnElement))
	if !ok || selfClosing {
		return nil, false
	}
	b := &SpawnBlock{Mode: Parallel, Before: strings.TrimSpace(reply[:openStart])}
	if mode, _ := attrs.get("mode"); strings.EqualFold(strings.TrimSpace(mode), string(Sequential)) {
		b.Mode = Sequential
	}
	body := reply[:closeStart]
	for i := bodyStart; ; {
		at := findElement(body, agentElement, i)
		if at < 0 {
			break
		}
		attrs, end, _, ok := parseTag(body, at+1+len(agentElement))
		if !ok {
			break // unterminated element: keep what was read
		}
		i = end
		task, _ := attrs.get("task")
		if task = strings.TrimSpace(task); task == "" {
			continue
		}
		name, _ := attrs.get("name")
		context, _ := attrs.get("context")
		b.Tasks = append(b.Tasks, SpawnTask{
			Task:    task,
			Name:    strings.TrimSpace(name),
			Context: strings.TrimSpace(context),
		})
	}
	if len(b.Tasks) == 0 {
		return nil, false
	}
	return b, true
}

// TextBeforeSpawn returns the trimmed text before the reply's spawn block,
// or the whole reply trimmed when it holds no block (as ParseSpawn decides).
func TextBeforeSpawn(reply string) string {
	if b, ok := ParseSpawn(reply); ok {
		return b.Before
	}
	return strings.TrimSpace(reply)
}

// findElement returns the index of the first "<name" at or after from that
// is followed by white space, "/" or ">", or -1.
func findElement(text, name string, from int) int {
	for i := from; i < len(text); {
		j := strings.IndexByte(text[i:], '<')
		if j < 0 {
			return -1
		}
		j += i
		k := j + 1 + len(name)
		if hasFoldAt(text, j+1, name) && k < len(text) && (isSpace(text[k]) || text[k] == '/' || text[k] == '>') {
			return j
		}
		i = j + 1
	}
	return -1
}

type attr struct{ name, value string }

type attrList []attr

// get returns the value of the first attribute called name, ignoring case.
func (l attrList) get(name string) (string, bool) {
	for _, a := range l {
		if strings.EqualFold(a.name, name) {
			return a.value, true
		}
	}
	return "", false
}

// parseTag reads attributes from s[i:], just after an element name, up to
// and including the ">" that ends the tag. It returns the index after ">"
// and whether the tag was self-closing; ok is false when the tag does not
// end within s.
func parseTag(s string, i int) (attrs attrList, end int, selfClosing, ok bool) {
	for i < len(s) {
		c := s[i]
		switch {
		case isSpace(c):
			i++
			continue
		case c == '>':
			return attrs, i + 1, false, true
		case c == '/' && i+1 < len(s) && s[i+1] == '>':
			return attrs, i + 2, true, true
		}
		n := i
		for n < len(s) && !isSpace(s[n]) && !strings.ContainsRune("=/>\"'", rune(s[n])) {
			n++
		}
		if n == i {
			i++ // stray "/", "=" or quote: skip it
			continue
		}
		name := s[i:n]
		i = n
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) || s[i] != '=' {
			attrs = append(attrs, attr{name: name})
			continue
		}
		i++
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) {
			return nil, 0, false, false
		}
		var value string
		if q := s[i]; q == '"' || q == '\'' {
			raw, after, closed := quoted(s, i+1, q)
			if !closed {
				return nil, 0, false, false
			}
			value, i = decodeValue(raw), after
		} else {
			n := i
			for n < len(s) && !isSpace(s[n]) && s[n] != '>' && !(s[n] == '/' && n+1 < len(s) && s[n+1] == '>') {
				n++
			}
			value, i = decodeValue(s[i:n]), n
		}
		attrs = append(attrs, attr{name: name, value: value})
	}
	return nil, 0, false, false
}

// quoted returns the raw text from s[i:] up to the first quote q that is not
// escaped by a backslash, and the index after that quote.
func quoted(s string, i int, q byte) (raw string, after int, closed bool) {
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++ // the next byte is escaped, whatever it is
		case q:
			return s[i:j], j + 1, true
		}
	}
	return "", 0, false
}

// decodeValue resolves backslash escapes of quotes and backslashes and the
// five predefined XML entities.
func decodeValue(raw string) string {
	if !strings.ContainsAny(raw, `\&`) {
		return raw
	}
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c == '\\' && i+1 < len(raw) {
			switch raw[i+1] {
			case '"', '\'', '\\':
				b.WriteByte(raw[i+1])
				i++
				continue
			}
		}
		if c == '&' {
			if r, n := entityAt(raw[i:]); n > 0 {
				b.WriteByte(r)
				i += n - 1
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// entityAt decodes a predefined XML entity at the start of s.
func entityAt(s string) (byte, int) {
	for _, e := range [...]struct {
		name string
		char byte
	}{{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}} {
		if strings.HasPrefix(s, e.name) {
			return e.char, len(e.name)
		}
	}
	return 0, 0
}
