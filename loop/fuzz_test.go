package loop_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/cadre-ai/cadre/loop"
)

var journalKinds = []string{
	loop.Start{}.Kind(), loop.ModelResult{}.Kind(), loop.ToolResults{}.Kind(),
	loop.Spawned{}.Kind(), loop.ChildReport{}.Kind(), loop.ChildEnded{}.Kind(),
	loop.ChildQuestion{}.Kind(), loop.Answer{}.Kind(), loop.AgentCreated{}.Kind(),
	loop.InboxMessage{}.Kind(), loop.Timeout{}.Kind(), loop.Cancel{}.Kind(),
	loop.KindInputs,
}

// FuzzJournal feeds arbitrary journal entries through DecodeEntry and
// Step, entries of several inputs included. A damaged or hostile journal
// must give errors, never a panic, and whatever decodes must step.
//
// The input is a sequence of entries, one per line: a kind index byte and
// the entry's JSON.
func FuzzJournal(f *testing.F) {
	f.Add([]byte("\x00{\"task\":\"hi\",\"tools\":[{\"name\":\"read_file\",\"parameters\":{ \"type\": \"object\" }}]}\n" +
		"\x01{\"response\":{\"message\":{\"role\":\"assistant\",\"content\":\"done\"}}}"))
	f.Add([]byte("\x00{\"task\":\"x\"}\n\x01{\"response\":{\"message\":{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"1\",\"name\":\"spawn_agent\",\"arguments\":\"{\\\"task\\\":\\\"t\\\"}\"}]}}}\n\x03{}\n\x04{\"child\":\"root/general.1\",\"report\":\"r\"}"))
	f.Add([]byte("\x0b{}\n\x0a{}\n\x07{\"answer\":\"\xff\"}"))
	f.Add([]byte("\x00{\"task\":\"x\",\"config_from\":\"root/w.1\"}\n\x0c{\"inputs\":[{\"kind\":\"spawned\",\"data\":{\"ref\":\"1\",\"child\":\"root/w.2\"}},{\"kind\":\"child_ended\",\"data\":{\"child\":\"root/w.2\",\"status\":\"done\"}}]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := loop.New()
		for _, line := range bytes.Split(data, []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			kind := journalKinds[int(line[0])%len(journalKinds)]
			ins, err := loop.DecodeEntry(kind, line[1:])
			if err != nil {
				continue
			}
			for _, in := range ins {
				s.Step(in)
				// An input that decoded encodes again, and that encoding
				// decodes: a journal written by this version can always be
				// read back.
				b, err := json.Marshal(in)
				if err != nil {
					t.Fatalf("encode decoded %s entry: %v", in.Kind(), err)
				}
				if _, err := loop.Decode(in.Kind(), b); err != nil {
					t.Fatalf("decode re-encoded %s entry %s: %v", in.Kind(), b, err)
				}
			}
		}
	})
}
