package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ErrInvalid is wrapped by Validate and Compile when the schema itself
// cannot be read: the fault is the schema's author's, not the value's.
var ErrInvalid = errors.New("schema: invalid JSON Schema")

// A ValidationError lists what is wrong with a value, such as a tool call's
// arguments. Each problem names the argument and says what was expected, in
// words a model can act on, such as
//
//	argument "path": expected string, got number
//	missing required argument "task"
type ValidationError struct {
	Problems []string
}

func (e *ValidationError) Error() string {
	if len(e.Problems) == 0 {
		return "invalid arguments"
	}
	return strings.Join(e.Problems, "; ")
}

// Validate checks args, the JSON a model wrote (a tool call's arguments, or a
// report), against schema, a JSON Schema such as a tool's parameters. Empty
// args count as {}. It returns nil, a *ValidationError, or an error wrapping
// ErrInvalid.
//
// It understands the part of JSON Schema tools use: "type" (one name or a
// list), "properties", "required", "enum", "const",
// "additionalProperties" (false or a schema), and "items" (a schema),
// applied recursively to nested objects and arrays. Other keywords are
// ignored. The arguments must be a JSON object. An optional property (one
// not listed in "required") may be null, meaning absent, whatever its type:
// many models write null for arguments they leave out. An empty schema
// accepts any object.
func Validate(schema, args json.RawMessage) error {
	sc, err := Compile(schema)
	if err != nil {
		return err
	}
	return sc.Check(args)
}

// A Schema is a schema read once, to check many values against (see
// Validate). It is safe for concurrent use.
type Schema struct {
	s map[string]any // never changed after Compile
}

// Compile reads a schema; an empty one accepts any object. The error wraps
// ErrInvalid.
func Compile(schema json.RawMessage) (*Schema, error) {
	var s map[string]any
	if len(bytes.TrimSpace(schema)) > 0 {
		v, err := Decode(schema)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		switch v := v.(type) {
		case map[string]any:
			s = v
		case nil:
		default:
			return nil, fmt.Errorf("%w: the schema is a JSON %s, not an object", ErrInvalid, TypeName(v))
		}
	}
	return &Schema{s: s}, nil
}

// Check checks arguments against the schema, as Validate does.
func (sc *Schema) Check(args json.RawMessage) error {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	v, err := Decode(args)
	if err != nil {
		return &ValidationError{Problems: []string{"the arguments are not valid JSON: " + err.Error()}}
	}
	if _, ok := v.(map[string]any); !ok {
		return &ValidationError{Problems: []string{"the arguments must be a JSON object, got " + TypeName(v)}}
	}
	var c checker
	c.check("", sc.s, v)
	if len(c.problems) > 0 {
		return &ValidationError{Problems: c.problems}
	}
	return nil
}

// Decode reads exactly one JSON value, keeping numbers as json.Number, as
// the checker sees it.
func Decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("unexpected text after the JSON value")
	}
	return v, nil
}

type checker struct {
	problems []string
}

func (c *checker) add(format string, a ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, a...))
}

// where names the value at path for a message.
func where(path string) string {
	if path == "" {
		return "the arguments"
	}
	return strconv.Quote(path)
}

func (c *checker) check(path string, s map[string]any, v any) {
	if s == nil {
		return
	}
	if types := schemaTypes(s["type"]); len(types) > 0 {
		if !slices.ContainsFunc(types, func(t string) bool { return hasType(v, t) }) {
			c.add("argument %s: expected %s, got %s", where(path), strings.Join(types, " or "), TypeName(v))
			return
		}
	}
	if enum, ok := s["enum"].([]any); ok {
		if !slices.ContainsFunc(enum, func(e any) bool { return jsonEqual(e, v) }) {
			opts := make([]string, len(enum))
			for i, e := range enum {
				opts[i] = compact(e)
			}
			c.add("argument %s: must be one of %s, got %s", where(path), strings.Join(opts, ", "), compact(v))
			return
		}
	}
	if cv, ok := s["const"]; ok && !jsonEqual(cv, v) {
		c.add("argument %s: must be %s, got %s", where(path), compact(cv), compact(v))
		return
	}
	switch v := v.(type) {
	case map[string]any:
		c.object(path, s, v)
	case []any:
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range v {
				c.check(fmt.Sprintf("%s[%d]", path, i), items, e)
			}
		}
	}
}

func (c *checker) object(path string, s map[string]any, v map[string]any) {
	props, _ := s["properties"].(map[string]any)
	required := map[string]bool{}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			name, ok := r.(string)
			if !ok || required[name] {
				continue
			}
			required[name] = true
			if _, present := v[name]; !present {
				c.add("missing required argument %q", join(path, name))
			}
		}
	}
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var unexpected []string
	for _, k := range keys {
		val := v[k]
		if ps, ok := props[k]; ok {
			if val == nil && !required[k] {
				continue
			}
			sub, _ := ps.(map[string]any)
			c.check(join(path, k), sub, val)
			continue
		}
		switch ap := s["additionalProperties"].(type) {
		case bool:
			if !ap {
				unexpected = append(unexpected, strconv.Quote(join(path, k)))
			}
		case map[string]any:
			c.check(join(path, k), ap, val)
		}
	}
	if len(unexpected) == 0 {
		return
	}
	what := "unexpected argument " + unexpected[0]
	if len(unexpected) > 1 {
		what = "unexpected arguments " + strings.Join(unexpected, ", ")
	}
	allowed := make([]string, 0, len(props))
	for p := range props {
		allowed = append(allowed, p)
	}
	slices.Sort(allowed)
	if len(allowed) == 0 {
		c.add("%s: %s takes no arguments", what, whereObject(path))
	} else {
		c.add("%s: %s accepts only %s", what, whereObject(path), strings.Join(allowed, ", "))
	}
}

func whereObject(path string) string {
	if path == "" {
		return "the tool"
	}
	return strconv.Quote(path)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// schemaTypes reads a "type" keyword: a name or a list of names.
func schemaTypes(t any) []string {
	switch t := t.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func hasType(v any, t string) bool {
	switch t {
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		return ok && isInteger(n)
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "null":
		return v == nil
	}
	// An unknown type name is the schema's fault; do not blame the model.
	return true
}

func isInteger(n json.Number) bool {
	if _, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return true
	}
	f, err := strconv.ParseFloat(string(n), 64)
	return err == nil && !math.IsInf(f, 0) && f == math.Trunc(f)
}

// TypeName names the JSON type of a value read by Decode: "object",
// "array", "string", "number", "boolean" or "null".
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case json.Number, float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// jsonEqual compares two decoded JSON values; numbers compare by value.
func jsonEqual(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		if a == bn {
			return true
		}
		af, err1 := strconv.ParseFloat(string(a), 64)
		bf, err2 := strconv.ParseFloat(string(bn), 64)
		return err1 == nil && err2 == nil && af == bf
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return false
		}
		for i := range a {
			if !jsonEqual(a[i], bs[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, av := range a {
			bv, ok := bm[k]
			if !ok || !jsonEqual(av, bv) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

// compact renders a decoded JSON value for a message, cut if long.
func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	const max = 80
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
