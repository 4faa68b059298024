package tool

import (
	"encoding/json"

	"github.com/cadre-ai/cadre/schema"
)

// ErrInvalidSchema is wrapped by Validate when the schema itself cannot be
// read: the fault is the tool's, not the arguments'. It is schema.ErrInvalid.
var ErrInvalidSchema = schema.ErrInvalid

// A ValidationError lists what is wrong with a tool call's arguments (see
// schema.ValidationError).
type ValidationError = schema.ValidationError

// Validate checks args, the JSON a model wrote for a tool call, against
// the JSON Schema of the tool's parameters, as schema.Validate does. Empty
// args count as {}. It returns nil, a *ValidationError, or an error
// wrapping ErrInvalidSchema.
func Validate(params, args json.RawMessage) error {
	return schema.Validate(params, args)
}

// decodeJSON reads exactly one JSON value, keeping numbers as json.Number.
func decodeJSON(b []byte) (any, error) { return schema.Decode(b) }

// jsonType names the JSON type of a value read by decodeJSON.
func jsonType(v any) string { return schema.TypeName(v) }
