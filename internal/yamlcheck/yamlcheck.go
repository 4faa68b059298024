// Package yamlcheck bounds what a YAML document stands for once its
// aliases are expanded, before it is decoded. A decoder expands every
// alias (*name) into a copy of what its anchor (&name) holds, so a file of
// a few hundred bytes whose anchors each repeat the one before ten times
// stands for billions of values, and decoding it exhausts the memory of
// the process: agent files, skills and configs come from repositories a
// user clones, and must not be able to do that.
package yamlcheck

import (
	"fmt"

	"github.com/goccy/go-yaml/ast"
)

// MaxValues is the most values (scalars, mappings, sequences, keys) a
// document may stand for once its aliases are expanded: far more than any
// agent file or config holds.
const MaxValues = 100_000

// Error says that a document stands for too many values, and where the
// first alias is.
type Error struct {
	Line, Column int // of the first alias; 0 when unknown
}

func (e *Error) Error() string {
	return fmt.Sprintf("the YAML stands for more than %d values once its aliases (*name) are expanded: write the values out instead of repeating anchors", MaxValues)
}

// Check returns an *Error when the documents of f stand for more than
// MaxValues values once expanded, nil otherwise.
func Check(f *ast.File) error {
	c := counter{anchors: map[string]int{}}
	for _, d := range f.Docs {
		if d != nil {
			c.total = capped(c.total + c.count(d.Body))
		}
	}
	if c.total > MaxValues {
		return &Error{Line: c.line, Column: c.col}
	}
	return nil
}

// counter counts values, each number held at MaxValues+1 so that no sum
// overflows however deep the repetition goes.
type counter struct {
	anchors   map[string]int // what each anchor stands for
	total     int
	line, col int // of the first alias
}

func capped(n int) int { return min(n, MaxValues+1) }

func (c *counter) count(n ast.Node) int {
	switch n := n.(type) {
	case nil:
		return 0
	case *ast.AnchorNode:
		v := c.count(n.Value)
		if n.Name != nil {
			c.anchors[n.Name.String()] = v
		}
		return v
	case *ast.AliasNode:
		if c.line == 0 {
			if tk := n.GetToken(); tk != nil && tk.Position != nil {
				c.line, c.col = tk.Position.Line, tk.Position.Column
			}
		}
		if n.Value == nil {
			return 1
		}
		if v, ok := c.anchors[n.Value.String()]; ok {
			return v
		}
		return 1
	case *ast.TagNode:
		return c.count(n.Value)
	case *ast.MappingNode:
		sum := 1
		for _, mv := range n.Values {
			sum = capped(sum + c.count(mv))
		}
		return sum
	case *ast.MappingValueNode:
		return capped(c.count(n.Key) + c.count(n.Value))
	case *ast.SequenceNode:
		sum := 1
		for _, v := range n.Values {
			sum = capped(sum + c.count(v))
		}
		return sum
	}
	return 1
}
