package loop

import (
	"encoding/json"
	"fmt"
)

// Decode turns a journaled input back into an Input.
func Decode(kind string, data []byte) (Input, error) {
	var (
		in  Input
		err error
	)
	switch kind {
	case Start{}.Kind():
		var v Start
		err = json.Unmarshal(data, &v)
		in = v
	case ModelResult{}.Kind():
		var v ModelResult
		err = json.Unmarshal(data, &v)
		in = v
	case ToolResults{}.Kind():
		var v ToolResults
		err = json.Unmarshal(data, &v)
		in = v
	case Spawned{}.Kind():
		var v Spawned
		err = json.Unmarshal(data, &v)
		in = v
	case ChildReport{}.Kind():
		var v ChildReport
		err = json.Unmarshal(data, &v)
		in = v
	case ChildEnded{}.Kind():
		var v ChildEnded
		err = json.Unmarshal(data, &v)
		in = v
	case InboxMessage{}.Kind():
		var v InboxMessage
		err = json.Unmarshal(data, &v)
		in = v
	case Timeout{}.Kind():
		var v Timeout
		err = json.Unmarshal(data, &v)
		in = v
	case Cancel{}.Kind():
		var v Cancel
		err = json.Unmarshal(data, &v)
		in = v
	default:
		return nil, fmt.Errorf("loop: unknown journal entry kind %q (written by a newer cadre?)", kind)
	}
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
