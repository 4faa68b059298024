package scripted

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// A Script maps keys (an agent ID, a definition name, a glob pattern or
// "*") to the replies played for them. The package documentation describes
// how a reply is chosen.
type Script struct {
	// Name says where the script came from, usually its file path; errors
	// name it.
	Name string
	// Agents holds the replies of each key.
	Agents map[string][]Reply

	// pos records where each key and reply were written, for errors.
	pos map[string]*keyPos
}

type keyPos struct {
	key     position
	replies []position
}

type position struct{ line, col int }

// A Reply is one scripted model reply.
type Reply struct {
	// When, if set, plays this reply whenever the new input contains it.
	When       string     `yaml:"when,omitempty" json:"when,omitempty"`
	Text       string     `yaml:"text,omitempty" json:"text,omitempty"`
	ToolCalls  []ToolCall `yaml:"tool_calls,omitempty" json:"tool_calls,omitempty"`
	Usage      *Usage     `yaml:"usage,omitempty" json:"usage,omitempty"`
	StopReason string     `yaml:"stop_reason,omitempty" json:"stop_reason,omitempty"`
	// Delay is waited before the first chunk.
	Delay time.Duration `yaml:"delay,omitempty" json:"delay,omitempty"`
	// Hang blocks, after the text, until the caller's context is done.
	Hang bool `yaml:"hang,omitempty" json:"hang,omitempty"`
	// Error fails the call with this message, after the text.
	Error string `yaml:"error,omitempty" json:"error,omitempty"`
	// Status fails the call with this HTTP-like status, after the text.
	Status int `yaml:"status,omitempty" json:"status,omitempty"`
	// Repeat makes the last turn reply answer every later turn too.
	Repeat bool `yaml:"repeat,omitempty" json:"repeat,omitempty"`
}

// A ToolCall is a scripted tool call.
type ToolCall struct {
	// ID defaults to "call_<turn>_<n>", n counting from 1 in the reply.
	ID        string    `yaml:"id,omitempty" json:"id,omitempty"`
	Name      string    `yaml:"name" json:"name"`
	Arguments Arguments `yaml:"arguments,omitempty" json:"arguments,omitempty"`
}

// Arguments are a tool call's arguments as the model would write them. In
// a script file they are a YAML object, encoded as JSON, or a string, kept
// as is (which is how a script feeds a loop invalid JSON). Empty means "{}".
type Arguments string

// UnmarshalYAML implements yaml.InterfaceUnmarshaler.
func (a *Arguments) UnmarshalYAML(unmarshal func(any) error) error {
	var v any
	if err := unmarshal(&v); err != nil {
		return err
	}
	switch x := v.(type) {
	case nil:
		*a = ""
	case string:
		*a = Arguments(x)
	default:
		b, err := json.Marshal(jsonable(x))
		if err != nil {
			return fmt.Errorf("arguments cannot be written as JSON: %w", err)
		}
		*a = Arguments(b)
	}
	return nil
}

// jsonable turns maps with non-string keys into maps encoding/json takes.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonable(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = jsonable(e)
		}
		return x
	}
	return v
}

// Usage is a scripted token count.
type Usage struct {
	Input  int64 `yaml:"input" json:"input"`
	Output int64 `yaml:"output" json:"output"`
	// Cached is the part of Input read from a prompt cache.
	Cached int64 `yaml:"cached,omitempty" json:"cached,omitempty"`
}

// A ParseError reports a script that cannot be used, and where.
type ParseError struct {
	File         string
	Line, Column int // 0 when unknown
	Msg          string
}

func (e *ParseError) Error() string {
	file := e.File
	if file == "" {
		file = "script"
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", file, e.Line, e.Column, e.Msg)
	}
	return file + ": " + e.Msg
}

// Load reads and parses the script file at path and returns a model that
// plays it.
func Load(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scripted: read script: %w (the model name is scripted:<path to a script file>)", err)
	}
	s, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	return New(s)
}

// Parse decodes and checks a script. name says where data came from and is
// used in errors, which are *ParseErrors.
func Parse(data []byte, name string) (_ *Script, err error) {
	// The YAML parser is third-party code and has panicked on malformed
	// input; that is an error in the file, not a crash.
	defer func() {
		if r := recover(); r != nil {
			err = &ParseError{File: name, Msg: fmt.Sprintf("the YAML could not be read (its parser failed: %v): check the file's syntax", r)}
		}
	}()
	s := &Script{Name: name}
	if err := yaml.UnmarshalWithOptions(data, &s.Agents, yaml.Strict()); err != nil {
		if pe := badDelay(data, name); pe != nil {
			return nil, pe
		}
		return nil, yamlError(name, err)
	}
	s.pos = positions(data)
	if err := s.check(); err != nil {
		return nil, err
	}
	return s, nil
}

func yamlError(name string, err error) error {
	var ye yaml.Error
	if errors.As(err, &ye) {
		pe := &ParseError{File: name, Msg: ye.GetMessage()}
		if strings.Contains(pe.Msg, "where sequence is expected") {
			pe.Msg += `: each key maps to a list of replies, written "- text: ..."`
		}
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			pe.Line, pe.Column = tk.Position.Line, tk.Position.Column
		}
		return pe
	}
	return &ParseError{File: name, Msg: err.Error()}
}

// positions finds where each key and reply is written. It is best effort:
// a document of another shape has already failed to decode.
func positions(data []byte) map[string]*keyPos {
	f, err := parser.ParseBytes(data, 0)
	if err != nil || len(f.Docs) == 0 {
		return nil
	}
	m, ok := f.Docs[0].Body.(*ast.MappingNode)
	if !ok {
		return nil
	}
	out := map[string]*keyPos{}
	for _, mv := range m.Values {
		kt := mv.Key.GetToken()
		if kt == nil {
			continue
		}
		kp := &keyPos{key: at(mv.Key)}
		if seq, ok := mv.Value.(*ast.SequenceNode); ok {
			for _, v := range seq.Values {
				kp.replies = append(kp.replies, at(v))
			}
		}
		out[kt.Value] = kp
	}
	return out
}

// badDelay finds a delay that is not a Go duration, whose decoding error
// would carry no position.
func badDelay(data []byte, name string) error {
	f, err := parser.ParseBytes(data, 0)
	if err != nil || len(f.Docs) == 0 {
		return nil
	}
	m, ok := f.Docs[0].Body.(*ast.MappingNode)
	if !ok {
		return nil
	}
	for _, mv := range m.Values {
		seq, ok := mv.Value.(*ast.SequenceNode)
		if !ok {
			continue
		}
		for _, v := range seq.Values {
			rm, ok := v.(*ast.MappingNode)
			if !ok {
				continue
			}
			for _, f := range rm.Values {
				if f.Key.GetToken() == nil || f.Key.GetToken().Value != "delay" {
					continue
				}
				var d time.Duration
				if err := yaml.NodeToValue(f.Value, &d); err != nil {
					p := at(f.Value)
					return &ParseError{File: name, Line: p.line, Column: p.col, Msg: fmt.Sprintf("delay %q is not a duration: write it like 150ms, 2s or 1m30s", f.Value.String())}
				}
			}
		}
	}
	return nil
}

func at(n ast.Node) position {
	if m, ok := n.(*ast.MappingNode); ok && len(m.Values) > 0 {
		n = m.Values[0].Key
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		return position{tk.Position.Line, tk.Position.Column}
	}
	return position{}
}

// errAt returns a ParseError for key (and reply i when i >= 0).
func (s *Script) errAt(key string, i int, format string, args ...any) error {
	pe := &ParseError{File: s.Name, Msg: fmt.Sprintf(format, args...)}
	if kp := s.pos[key]; kp != nil {
		p := kp.key
		if i >= 0 && i < len(kp.replies) {
			p = kp.replies[i]
		}
		pe.Line, pe.Column = p.line, p.col
	}
	if pe.Line == 0 {
		where := fmt.Sprintf("key %q", key)
		if i >= 0 {
			where += fmt.Sprintf(", reply %d", i+1)
		}
		pe.Msg = where + ": " + pe.Msg
	}
	return pe
}

// check reports the first problem of s.
func (s *Script) check() error {
	if len(s.Agents) == 0 {
		return &ParseError{File: s.Name, Msg: `the script has no replies: map agent keys to lists of replies, for example "*": [{text: "done"}]`}
	}
	for _, key := range sortedKeys(s.Agents) {
		if strings.TrimSpace(key) == "" {
			return s.errAt(key, -1, "empty key: use an agent id, a definition name, a glob pattern or \"*\"")
		}
		if _, err := path.Match(key, ""); err != nil {
			return s.errAt(key, -1, "key %q is not a valid glob pattern (path.Match syntax): %v", key, err)
		}
		replies := s.Agents[key]
		if len(replies) == 0 {
			return s.errAt(key, -1, "key %q has no replies: give it a list of at least one", key)
		}
		lastTurn := -1
		for i, r := range replies {
			if r.When == "" {
				lastTurn = i
			}
		}
		for i, r := range replies {
			for j, tc := range r.ToolCalls {
				if strings.TrimSpace(tc.Name) == "" {
					return s.errAt(key, i, "tool call %d has no name", j+1)
				}
			}
			if r.Status != 0 && (r.Status < 100 || r.Status > 599) {
				return s.errAt(key, i, "status %d is not an HTTP status: use 100 to 599, such as 429 or 500", r.Status)
			}
			if r.Delay < 0 {
				return s.errAt(key, i, "delay %v is negative", r.Delay)
			}
			if r.Usage != nil && (r.Usage.Input < 0 || r.Usage.Output < 0) {
				return s.errAt(key, i, "usage cannot be negative")
			}
			if r.Repeat && (r.When != "" || i != lastTurn) {
				return s.errAt(key, i, "repeat is only allowed on the last reply without when")
			}
			if r.Hang && (r.Error != "" || r.Status != 0) {
				return s.errAt(key, i, "a reply that hangs cannot also fail with error or status")
			}
		}
	}
	return nil
}
