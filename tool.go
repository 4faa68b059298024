package cadre

import (
	"context"
	"encoding/json"
)

// A Tool is something an agent can ask to run.
//
// Call receives the arguments as the model wrote them, already checked to be
// a JSON object. An error returned by Call is reported to the model as a
// failed tool result; it does not stop the agent.
type Tool interface {
	Spec() ToolSpec
	Call(ctx context.Context, args json.RawMessage) (string, error)
}

// A Mutator is a Tool that changes something outside the agent (writes a
// file, runs a command). Such calls go through the approval policy and are
// not repeated blindly when an interrupted run resumes.
type Mutator interface {
	Tool
	Mutates() bool
}

// Mutates reports whether t declares that it changes something.
func Mutates(t Tool) bool {
	m, ok := t.(Mutator)
	return ok && m.Mutates()
}
