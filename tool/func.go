package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cadre-ai/cadre"
)

// A FuncTool is a cadre.Tool made from a Go function by Func. It is safe
// for concurrent use if its function is.
type FuncTool[T any] struct {
	spec    cadre.ToolSpec
	fn      func(ctx context.Context, args T) (string, error)
	mutates bool
	summary func(args T) string
}

var _ cadre.Mutator = (*FuncTool[struct{}])(nil)
var _ Summarizer = (*FuncTool[struct{}])(nil)

// A FuncOption changes a tool made by Func.
type FuncOption[T any] func(*FuncTool[T])

// Mutating marks the tool as changing something outside the agent, so its
// calls go through approval.
func Mutating[T any]() FuncOption[T] {
	return func(t *FuncTool[T]) { t.mutates = true }
}

// WithSummary sets how a call is described to the person asked to approve
// it. Without it, the summary is the tool's name and its raw arguments.
func WithSummary[T any](fn func(args T) string) FuncOption[T] {
	return func(t *FuncTool[T]) { t.summary = fn }
}

// Func makes a tool from fn. Each call's arguments are checked against
// spec.Parameters with Validate, then decoded into a T with encoding/json,
// and fn is called with them. A schema mismatch or a decoding failure is
// returned as an error naming the tool, and fn is not called.
func Func[T any](spec cadre.ToolSpec, fn func(ctx context.Context, args T) (string, error), opts ...FuncOption[T]) *FuncTool[T] {
	t := &FuncTool[T]{spec: spec, fn: fn}
	for _, o := range opts {
		o(t)
	}
	return t
}

// Spec implements cadre.Tool.
func (t *FuncTool[T]) Spec() cadre.ToolSpec { return t.spec }

// Mutates implements cadre.Mutator.
func (t *FuncTool[T]) Mutates() bool { return t.mutates }

// Call implements cadre.Tool.
func (t *FuncTool[T]) Call(ctx context.Context, args json.RawMessage) (string, error) {
	v, err := Decode[T](t.spec, args)
	if err != nil {
		return "", err
	}
	return t.fn(ctx, v)
}

// Summary implements Summarizer.
func (t *FuncTool[T]) Summary(args json.RawMessage) string {
	if t.summary != nil {
		if v, err := Decode[T](t.spec, args); err == nil {
			return t.summary(v)
		}
	}
	return defaultSummary(t.spec.Name, args)
}

// Decode checks args against spec.Parameters and decodes them into a T.
// Empty args count as {}. Errors name the tool and say what to fix.
func Decode[T any](spec cadre.ToolSpec, args json.RawMessage) (T, error) {
	var v T
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	if err := Validate(spec.Parameters, args); err != nil {
		return v, fmt.Errorf("invalid arguments for %s: %w", spec.Name, err)
	}
	if err := json.Unmarshal(args, &v); err != nil {
		// Validate takes 3.0 and 1e2 for integers, as JSON Schema does;
		// encoding/json does not. Write such numbers as integers and try
		// again.
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) || !strings.HasPrefix(te.Value, "number") {
			return v, fmt.Errorf("invalid arguments for %s: %w", spec.Name, err)
		}
		fixed, ferr := integralNumbers(args)
		if ferr != nil {
			return v, fmt.Errorf("invalid arguments for %s: %w", spec.Name, err)
		}
		var zero T
		v = zero
		if err := json.Unmarshal(fixed, &v); err != nil {
			return v, fmt.Errorf("invalid arguments for %s: %w", spec.Name, err)
		}
	}
	return v, nil
}

// integralNumbers rewrites the numbers of a JSON document that have an
// integer value, such as 3.0 or 1e2, as integers.
func integralNumbers(doc []byte) ([]byte, error) {
	v, err := decodeJSON(doc)
	if err != nil {
		return nil, err
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case json.Number:
			if _, err := v.Int64(); err == nil {
				return v
			}
			if f, err := v.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
				return json.Number(strconv.FormatInt(int64(f), 10))
			}
			return v
		case []any:
			for i := range v {
				v[i] = walk(v[i])
			}
		case map[string]any:
			for k := range v {
				v[k] = walk(v[k])
			}
		}
		return v
	}
	return json.Marshal(walk(v))
}
