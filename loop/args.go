package loop

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Most arguments a model writes for a subagent tool are a flat JSON object
// of strings (and, for send_agent_message, a boolean), each a parameter of
// the tool, with the required ones present. quickArgs reads such an object
// into subagentArgs in one pass, checking it against the tool's parameters
// as it goes. It declines (ok false) anything it is not certain to read as
// the full path does (json.Valid, schema.Check, then json.Unmarshal): other
// value types, keys that are not exactly a parameter's name, escaped keys,
// repeated keys, a missing required parameter, a value of the wrong type.
// The full path then reads the arguments, and writes every error message.

// argKind is how quickArgs reads one parameter of a subagent tool.
type argKind uint8

const (
	argSlow   argKind = iota // a type quickArgs does not read: decline
	argString                // {"type":"string"}
	argBool                  // {"type":"boolean"}
)

// argParam is one parameter of a subagent tool.
type argParam struct {
	name string
	kind argKind
}

// argShape is the parameters of one subagent tool, from its schema.
type argShape struct {
	params []argParam
	// required has bit i set for each required params[i].
	required uint32
}

// argShapes are the shapes of the subagent tools' parameters, read once
// from their schemas; they are never changed.
var argShapes = func() map[string]*argShape {
	m := make(map[string]*argShape, len(subagentSpecs))
	for name, spec := range subagentSpecs {
		sh, err := readArgShape(spec.Parameters)
		if err != nil {
			panic(fmt.Sprintf("loop: the schema of %s: %v", name, err))
		}
		m[name] = sh
	}
	return m
}()

// readArgShape reads the parameters of a tool's schema. A parameter whose
// schema has more than a "type" of string or boolean (and a description) is
// read by the full path only.
func readArgShape(raw json.RawMessage) (*argShape, error) {
	var s struct {
		Type                 string                                `json:"type"`
		Properties           map[string]map[string]json.RawMessage `json:"properties"`
		Required             []string                              `json:"required"`
		AdditionalProperties json.RawMessage                       `json:"additionalProperties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if s.Type != "object" || s.AdditionalProperties != nil {
		return nil, fmt.Errorf("quick reading needs a plain object schema")
	}
	if len(s.Properties) > 32 {
		return nil, fmt.Errorf("%d parameters, more than 32", len(s.Properties))
	}
	sh := &argShape{}
	for name, p := range s.Properties {
		if strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == '"' || r == '\\' || r >= utf8.RuneSelf }) {
			return nil, fmt.Errorf("the parameter name %q is not plain ASCII without escapes", name)
		}
		kind := argSlow
		var t string
		if err := json.Unmarshal(p["type"], &t); err == nil {
			switch t {
			case "string":
				kind = argString
			case "boolean":
				kind = argBool
			}
		}
		for k := range p {
			if k != "type" && k != "description" {
				kind = argSlow
			}
		}
		switch {
		case kind == argString && !new(subagentArgs).setString(name, ""):
			return nil, fmt.Errorf("the string parameter %q has no field in subagentArgs", name)
		case kind == argBool && name != "steering":
			return nil, fmt.Errorf("the boolean parameter %q has no field in subagentArgs", name)
		}
		sh.params = append(sh.params, argParam{name: name, kind: kind})
	}
	for _, r := range s.Required {
		found := false
		for i := range sh.params {
			if sh.params[i].name == r {
				found = true
				sh.required |= 1 << i
			}
		}
		if !found {
			return nil, fmt.Errorf("required parameter %q is not among the properties", r)
		}
	}
	return sh, nil
}

// setString stores v in the string field of the parameter name.
func (a *subagentArgs) setString(name, v string) bool {
	switch name {
	case "agent":
		a.Agent = v
	case "task":
		a.Task = v
	case "context":
		a.Context = v
	case "prompt":
		a.Prompt = v
	case "name":
		a.Name = v
	case "text":
		a.Text = v
	case "agentId":
		a.AgentID = v
	case "question":
		a.Question = v
	case "answer":
		a.Answer = v
	case "handle":
		a.Handle = v
	case "input":
		a.Input = v
	case "description":
		a.Description = v
	case "instructions":
		a.Instructions = v
	case "model":
		a.Model = v
	default:
		return false
	}
	return true
}

// quickArgs reads raw, trimmed arguments that are not empty, into args for
// the tool sh describes; see the comment at the top of the file.
func quickArgs(sh *argShape, raw string, args *subagentArgs) bool {
	if sh == nil {
		return false
	}
	p := argReader{s: raw}
	if !p.byte('{') {
		return false
	}
	var seen uint32
	p.space()
	if !p.byte('}') {
		for {
			p.space()
			key, ok := p.plainKey()
			if !ok {
				return false
			}
			i := sh.index(key)
			if i < 0 || seen&(1<<i) != 0 {
				return false
			}
			seen |= 1 << i
			p.space()
			if !p.byte(':') {
				return false
			}
			p.space()
			prm := &sh.params[i]
			switch {
			case p.peek() == 'n':
				// null: absent, for an optional parameter.
				if sh.required&(1<<i) != 0 || !p.word("null") {
					return false
				}
			case prm.kind == argString:
				v, ok := p.str()
				if !ok || !args.setString(prm.name, v) {
					return false
				}
			case prm.kind == argBool:
				// steering is the one boolean parameter (see readArgShape).
				switch {
				case p.word("true"):
					args.Steering = true
				case p.word("false"):
					args.Steering = false
				default:
					return false
				}
			default:
				return false
			}
			p.space()
			if p.byte('}') {
				break
			}
			if !p.byte(',') {
				return false
			}
		}
	}
	p.space()
	return p.i == len(p.s) && seen&sh.required == sh.required
}

func (sh *argShape) index(key string) int {
	for i := range sh.params {
		if sh.params[i].name == key {
			return i
		}
	}
	return -1
}

// argReader reads JSON tokens from s.
type argReader struct {
	s string
	i int
}

func (p *argReader) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

// space skips JSON's white space (not Unicode's).
func (p *argReader) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *argReader) byte(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

func (p *argReader) word(w string) bool {
	if len(p.s)-p.i >= len(w) && p.s[p.i:p.i+len(w)] == w {
		p.i += len(w)
		return true
	}
	return false
}

// plainKey reads a key up to the next quote, as it is written: a key
// with an escape matches no parameter name (readArgShape refuses names
// that need one) and is declined.
func (p *argReader) plainKey() (string, bool) {
	if !p.byte('"') {
		return "", false
	}
	n := strings.IndexByte(p.s[p.i:], '"')
	if n < 0 {
		return "", false
	}
	key := p.s[p.i : p.i+n]
	p.i += n + 1
	return key, true
}

// str reads a JSON string as encoding/json does: invalid UTF-8 and lone
// surrogates become U+FFFD. A string without escapes or invalid UTF-8 is
// a substring of s, with no copy.
func (p *argReader) str() (string, bool) {
	if !p.byte('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			v := p.s[start:p.i]
			p.i++
			return v, true
		case c < 0x20:
			return "", false
		case c == '\\':
			return p.unquote(start)
		case c < utf8.RuneSelf:
			p.i++
		default:
			r, n := utf8.DecodeRuneInString(p.s[p.i:])
			if r == utf8.RuneError && n == 1 {
				return p.unquote(start)
			}
			p.i += n
		}
	}
	return "", false
}

// unquote reads the rest of a string that starts at start and needs
// decoding.
func (p *argReader) unquote(start int) (string, bool) {
	b := make([]byte, 0, p.i-start+16)
	b = append(b, p.s[start:p.i]...)
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return string(b), true
		case c < 0x20:
			return "", false
		case c == '\\':
			p.i++
			if p.i >= len(p.s) {
				return "", false
			}
			e := p.s[p.i]
			p.i++
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", false
				}
				if utf16.IsSurrogate(r) {
					// A pair makes one rune; a lone half is U+FFFD.
					if p.i+1 < len(p.s) && p.s[p.i] == '\\' && p.s[p.i+1] == 'u' {
						save := p.i
						p.i += 2
						r2, ok := p.hex4()
						if !ok {
							return "", false
						}
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							b = utf8.AppendRune(b, dec)
							continue
						}
						p.i = save
					}
					r = utf8.RuneError
				}
				b = utf8.AppendRune(b, r)
			default:
				return "", false
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			p.i++
		default:
			r, n := utf8.DecodeRuneInString(p.s[p.i:])
			p.i += n
			b = utf8.AppendRune(b, r) // invalid bytes become U+FFFD one by one
		}
	}
	return "", false
}

func (p *argReader) hex4() (rune, bool) {
	if len(p.s)-p.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range []byte(p.s[p.i : p.i+4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	p.i += 4
	return r, true
}
