package local

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
)

// asReadBack returns an input as it reads back from its JSON, and true,
// when it can tell without decoding the JSON, so that roundTrip need not
// decode it to know what a replay will step. encoding/json changes a
// value on the way out and back in three ways that matter here: invalid
// UTF-8 in a string becomes U+FFFD, an empty slice under omitempty comes
// back nil, and a json.RawMessage comes back compacted and with <, > and
// & escaped. asReadBack sets the empty slices of a start's config to nil
// (the engine builds them empty) and takes an input free of the rest as
// it is; the others (media, a created agent's definition with its own
// encoding, raw JSON that is not already in its written form, empty
// slices further in) are left to the decoder.
//
// TestSameAfterJSONFields fails when a field is added to a type checked
// here, and TestRoundTripProperty checks the answer against the decoder on
// random inputs.
func asReadBack(in loop.Input) (loop.Input, bool) {
	if v, ok := in.(loop.Start); ok {
		c := &v.Config
		if len(c.Tools) == 0 {
			c.Tools = nil
		}
		if len(c.Withheld) == 0 {
			c.Withheld = nil
		}
		if len(c.Rules) == 0 {
			c.Rules = nil
		}
		if len(c.Catalog) == 0 {
			c.Catalog = nil
		}
		if len(c.OutputSchema) == 0 {
			c.OutputSchema = nil
		}
		return v, sameAfterJSON(v)
	}
	return in, sameAfterJSON(in)
}

// sameAfterJSON reports whether an input reads back from its JSON exactly
// as it is (see asReadBack).
func sameAfterJSON(in loop.Input) bool {
	switch v := in.(type) {
	case loop.Spawned:
		return validUTF8(v.Ref, string(v.Child), v.Err)
	case loop.ChildReport:
		return validUTF8(string(v.Child), v.Text)
	case loop.ChildEnded:
		return validUTF8(string(v.Child), string(v.Status), v.Error)
	case loop.ChildQuestion:
		return validUTF8(string(v.Child), v.Question)
	case loop.Answer:
		return validUTF8(v.Text, v.Err)
	case loop.InboxMessage:
		return validUTF8(string(v.From), v.Text)
	case loop.Wake:
		return validUTF8(string(v.From), v.Text)
	case loop.Cancel:
		return validUTF8(v.Reason)
	case loop.Timeout:
		return true
	case loop.Start:
		return sameConfig(&v.Config) && validUTF8(v.Task, string(v.ConfigFrom)) && sameMessages(v.Messages)
	case loop.ModelResult:
		return validUTF8(v.Err) && (v.Response == nil || sameResponse(v.Response))
	case loop.ToolResults:
		for i := range v.Results {
			r := &v.Results[i]
			if r.Media != nil || !validUTF8(r.CallID, r.Content) {
				return false
			}
		}
		return true
	}
	return false
}

func sameConfig(c *loop.Config) bool {
	if !validUTF8(string(c.ID), string(c.Parent), c.Definition, c.Model, c.System,
		string(c.Report), string(c.Protocol), string(c.Mode)) {
		return false
	}
	if !omitted(len(c.Tools), c.Tools == nil) || !omitted(len(c.Withheld), c.Withheld == nil) ||
		!omitted(len(c.Rules), c.Rules == nil) || !omitted(len(c.Catalog), c.Catalog == nil) ||
		!omitted(len(c.OutputSchema), c.OutputSchema == nil) {
		return false
	}
	for i := range c.Tools {
		t := &c.Tools[i]
		if !validUTF8(t.Name, t.Description) || !sameRaw(t.Parameters) {
			return false
		}
	}
	if !validUTF8(c.Withheld...) || !validUTF8(c.Delegation...) {
		return false
	}
	for i := range c.Rules {
		rs := &c.Rules[i]
		if !validUTF8(rs.Definition) {
			return false
		}
		for j := range rs.Rules {
			r := &rs.Rules[j]
			if !validUTF8(r.Tool, r.Pattern, string(r.Syntax), string(r.Action), r.Source, r.Where, r.Group) {
				return false
			}
		}
	}
	for i := range c.Catalog {
		if !validUTF8(c.Catalog[i].Name) {
			return false
		}
	}
	return c.OutputSchema == nil || sameRaw(c.OutputSchema)
}

func sameResponse(r *cadre.Response) bool {
	return sameMessage(&r.Message) && validUTF8(r.StopReason, r.Model)
}

func sameMessages(ms []cadre.Message) bool {
	for i := range ms {
		if !sameMessage(&ms[i]) {
			return false
		}
	}
	return true
}

func sameMessage(m *cadre.Message) bool {
	if m.Media != nil || !omitted(len(m.ToolCalls), m.ToolCalls == nil) ||
		!validUTF8(string(m.Role), m.Content, m.ToolCallID, m.ToolName) {
		return false
	}
	for i := range m.ToolCalls {
		c := &m.ToolCalls[i]
		if !validUTF8(c.ID, c.Name, c.Arguments) {
			return false
		}
	}
	return true
}

// omitted reports whether a slice under omitempty reads back as it is:
// an empty one is not written, so only a nil one does.
func omitted(n int, isNil bool) bool { return n > 0 || isNil }

// sameRaw reports whether raw JSON is written as it is: already compact,
// valid UTF-8, and free of the characters encoding/json escapes (<, >, &,
// U+2028, U+2029). "null" is left to the decoder.
func sameRaw(b json.RawMessage) bool {
	if len(b) == 0 || string(b) == "null" || !utf8.Valid(b) {
		return false
	}
	in := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && (b[i+2] == 0xA8 || b[i+2] == 0xA9): // U+2028, U+2029
			return false
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return json.Valid(b)
}

func validUTF8(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}
