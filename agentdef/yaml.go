package agentdef

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/cadre-ai/cadre/internal/yamlcheck"
)

// A field is one key of the frontmatter with its value and place.
type field struct {
	key   string
	value any
	// text is the source text of a scalar value, used when a number or a
	// boolean stands where text is expected ("description: 2024").
	text string
	// line and col locate the key, vline and vcol the value, in the file.
	line, col   int
	vline, vcol int
	// raw is set when the value was recovered as text by the line reader.
	raw bool
	// node is the value as parsed, for fields whose order or places
	// matter (permission); off is added to its lines (a field recovered
	// from a block of lines is parsed on its own).
	node ast.Node
	off  int
	// src is the block the field was parsed from, to count the lines of
	// node's places as the file does (see nodePos).
	src []byte
}

// nodePos is the place in the file of p, a place in f's node.
func (f *field) nodePos(p *token.Position) (line, col int) {
	l, c := lfPos(f.src, p.Line, p.Column)
	return l + f.off, c
}

// yamlError is a YAML parse failure at a place in the parsed text.
type yamlError struct {
	msg       string
	line, col int
	// notMapping is set when the YAML is valid but is not key: value pairs.
	notMapping bool
}

// parseYAML decodes a block of key: value pairs. Positions are those of
// the block, its lines counted as the file's are (see lfPos); an empty
// block has no fields.
func parseYAML(src []byte) ([]field, *yamlError) {
	fields, yerr := parseYAMLAt(src)
	for i := range fields {
		f := &fields[i]
		f.src = src
		f.line, f.col = lfPos(src, f.line, f.col)
		f.vline, f.vcol = lfPos(src, f.vline, f.vcol)
	}
	if yerr != nil {
		yerr.line, yerr.col = lfPos(src, yerr.line, yerr.col)
	}
	return fields, yerr
}

// lfPos converts a position in src as the YAML parser counts lines (a line
// ends at \n, \r\n or a lone \r) to one as the file counts them, where
// only \n ends a line: a lone carriage return in a frontmatter line would
// otherwise move a diagnostic down, and to the start of the line.
func lfPos(src []byte, line, col int) (int, int) {
	if line <= 1 || bytes.IndexByte(src, '\r') < 0 {
		return line, col
	}
	yl, fl := 1, 1
	lineStart, ylStart := 0, 0 // of the file's line, and of the parser's
	for i := 0; i < len(src) && yl < line; i++ {
		switch src[i] {
		case '\n':
			yl, fl = yl+1, fl+1
			lineStart, ylStart = i+1, i+1
		case '\r':
			if i+1 == len(src) || src[i+1] != '\n' {
				yl++
				ylStart = i + 1
			}
		}
	}
	return fl, col + utf8.RuneCount(src[lineStart:ylStart])
}

// parseYAMLAt is parseYAML with the parser's own positions. The parser is
// third-party code: a panic inside it becomes an error, since malformed
// input must not crash the caller.
func parseYAMLAt(src []byte) (fields []field, yerr *yamlError) {
	defer func() {
		if r := recover(); r != nil {
			fields, yerr = nil, &yamlError{msg: fmt.Sprintf("the YAML parser failed: %v", r)}
		}
	}()
	file, err := parser.ParseBytes(src, 0)
	if err != nil {
		return nil, toYAMLError(err)
	}
	if err := yamlcheck.Check(file); err != nil {
		// Decoding it would expand every alias: a few hundred bytes of a
		// cloned repository's file could exhaust the memory of cadre.
		xe := err.(*yamlcheck.Error)
		return nil, &yamlError{msg: err.Error(), line: xe.Line, col: xe.Column}
	}
	if len(file.Docs) == 0 || file.Docs[0] == nil || file.Docs[0].Body == nil {
		return nil, nil
	}
	body := file.Docs[0].Body
	m, ok := body.(*ast.MappingNode)
	if !ok {
		if _, null := body.(*ast.NullNode); null {
			return nil, nil
		}
		e := &yamlError{notMapping: true, msg: "found " + nodeKind(body) + " instead of key: value fields"}
		if tk := body.GetToken(); tk != nil && tk.Position != nil {
			e.line, e.col = tk.Position.Line, tk.Position.Column
		}
		return nil, e
	}
	var values map[string]any
	if err := yaml.NodeToValue(body, &values); err != nil { // the document already parsed
		return nil, toYAMLError(err)
	}
	for _, mv := range m.Values {
		if mv == nil || mv.Key == nil {
			continue
		}
		tk := mv.Key.GetToken()
		if tk == nil || tk.Value == "<<" {
			continue
		}
		f := field{key: tk.Value, value: values[tk.Value]}
		if tk.Position != nil {
			f.line, f.col = tk.Position.Line, tk.Position.Column
		}
		f.vline, f.vcol = f.line, f.col
		f.node = mv.Value
		if mv.Value != nil {
			if vt := mv.Value.GetToken(); vt != nil && vt.Position != nil {
				f.vline, f.vcol = vt.Position.Line, vt.Position.Column
				switch mv.Value.(type) {
				case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
					f.text = vt.Value
				}
			}
		}
		fields = append(fields, f)
	}
	return fields, nil
}

func toYAMLError(err error) *yamlError {
	var ye yaml.Error
	if errors.As(err, &ye) {
		e := &yamlError{msg: ye.GetMessage()}
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			e.line, e.col = tk.Position.Line, tk.Position.Column
		}
		return e
	}
	return &yamlError{msg: err.Error()}
}

func nodeKind(n ast.Node) string {
	switch n.(type) {
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode, *ast.LiteralNode:
		return "plain text"
	case *ast.IntegerNode, *ast.FloatNode:
		return "a number"
	case *ast.BoolNode:
		return "true or false"
	}
	return "a " + n.Type().String()
}

// kindOf names the YAML kind of a decoded value for messages.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case string:
		return "text"
	case bool:
		return "true/false"
	case []any:
		return "list"
	case map[string]any:
		return "mapping"
	case uint64, int64, int, float64:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}
