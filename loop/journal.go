package loop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/cadre-ai/cadre"
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
	case Wake{}.Kind():
		dec = decodeAs[Wake]
	default:
		return nil, fmt.Errorf("loop: unknown journal entry kind %q (was the run written by a newer cadre?)", kind)
	}
	in, err := dec(data)
	if err != nil {
		return nil, fmt.Errorf("loop: decode %s entry: %w", kind, err)
	}
	if in, err = readOld(in, data); err != nil {
		return nil, fmt.Errorf("loop: decode %s entry: %w", kind, err)
	}
	return in, nil
}

// KindInputs is the kind of a journal entry that holds several inputs,
// stepped in turn: an agent that takes several inputs in one step (a
// parent told of many children at once) journals them as one entry, which
// a store writes as one row. Its data is an object whose "inputs" list
// holds each input's kind and data:
//
//	{"inputs":[{"kind":"child_report","data":{…}},{"kind":"child_ended","data":{…}}]}
//
// An entry of one input is written under that input's own kind, as before
// there were entries of several.
const KindInputs = "inputs"

// DecodeEntry turns a journal entry back into its inputs: one, or the
// inputs of an entry of kind KindInputs, in order.
func DecodeEntry(kind string, data []byte) ([]Input, error) {
	if kind != KindInputs {
		in, err := Decode(kind, data)
		if err != nil {
			return nil, err
		}
		return []Input{in}, nil
	}
	var batch struct {
		Inputs []struct {
			Kind string          `json:"kind"`
			Data json.RawMessage `json:"data"`
		} `json:"inputs"`
	}
	if err := json.Unmarshal(data, &batch); err != nil {
		return nil, fmt.Errorf("loop: decode %s entry: %w", kind, err)
	}
	if len(batch.Inputs) == 0 {
		return nil, fmt.Errorf("loop: decode %s entry: it holds no inputs", kind)
	}
	out := make([]Input, len(batch.Inputs))
	for i, x := range batch.Inputs {
		if x.Kind == KindInputs {
			return nil, fmt.Errorf("loop: decode %s entry: input %d of %d is itself an entry of several inputs", kind, i+1, len(batch.Inputs))
		}
		in, err := Decode(x.Kind, x.Data)
		if err != nil {
			return nil, fmt.Errorf("input %d of %d: %w", i+1, len(batch.Inputs), err)
		}
		out[i] = in
	}
	return out, nil
}

// readOld reads the durations of a journal entry written when they were
// whole numbers of seconds: a Start's config timeout_seconds and a
// Timeout's seconds.
func readOld(in Input, data []byte) (Input, error) {
	switch v := in.(type) {
	case Start:
		if v.Config.Timeout != 0 || !bytes.Contains(data, []byte(`"timeout_seconds"`)) {
			return in, nil
		}
		var old struct {
			Config struct {
				TimeoutSeconds json.Number `json:"timeout_seconds"`
			} `json:"config"`
		}
		err := json.Unmarshal(data, &old)
		if err == nil {
			v.Config.Timeout, err = cadre.ParseSecondsJSON(old.Config.TimeoutSeconds)
		}
		return v, err
	case Timeout:
		if v.Limit != 0 {
			return in, nil
		}
		var old struct {
			Seconds json.Number `json:"seconds"`
		}
		err := json.Unmarshal(data, &old)
		if err == nil {
			v.Limit, err = cadre.ParseSecondsJSON(old.Seconds)
		}
		return v, err
	}
	return in, nil
}

// seconds writes a duration for a message: as whole seconds ("300s") when
// it is a whole number of them.
func seconds(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
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
