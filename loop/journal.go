package loop

import (
	"encoding/json"
	"fmt"
)

// decoders turn a journaled input back into its type, by Kind.
func decodeAs[T Input](data []byte) (Input, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}

// Decode turns a journaled input back into an Input.
func Decode(kind string, data []byte) (Input, error) {
	var dec func([]byte) (Input, error)
	switch kind {
	case Start{}.Kind():
		dec = decodeAs[Start]
	case ModelResult{}.Kind():
		dec = decodeAs[ModelResult]
	case ToolResults{}.Kind():
		dec = decodeAs[ToolResults]
	case Spawned{}.Kind():
		dec = decodeAs[Spawned]
	case ChildReport{}.Kind():
		dec = decodeAs[ChildReport]
	case ChildEnded{}.Kind():
		dec = decodeAs[ChildEnded]
	case ChildQuestion{}.Kind():
		dec = decodeAs[ChildQuestion]
	case Answer{}.Kind():
		dec = decodeAs[Answer]
	case AgentCreated{}.Kind():
		dec = decodeAs[AgentCreated]
	case InboxMessage{}.Kind():
		dec = decodeAs[InboxMessage]
	case Timeout{}.Kind():
		dec = decodeAs[Timeout]
	case Cancel{}.Kind():
		dec = decodeAs[Cancel]
	default:
		return nil, fmt.Errorf("loop: unknown journal entry kind %q (was the run written by a newer cadre?)", kind)
	}
	in, err := dec(data)
	if err != nil {
		return nil, fmt.Errorf("loop: decode %s entry: %w", kind, err)
	}
	return in, nil
}

// Replay rebuilds a state from journaled inputs, discarding the actions
// they produced. The result is the state the agent had after the last one.
func Replay(inputs []Input) *State {
	s := New()
	for _, in := range inputs {
		s.Step(in)
	}
	return s
}
