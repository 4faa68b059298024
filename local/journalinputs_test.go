package local

import (
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
)

// A journaled is one input of an agent's journal, with the entry that holds
// it: an entry of kind loop.KindInputs holds several.
type journaled struct {
	Seq  int64  // the entry's
	Kind string // the input's
	In   loop.Input
}

// journalInputs decodes entries into their inputs, in order.
func journalInputs(t testing.TB, entries []cadre.JournalEntry) []journaled {
	t.Helper()
	var out []journaled
	for _, e := range entries {
		ins, err := loop.DecodeEntry(e.Kind, e.Data)
		if err != nil {
			t.Fatalf("%s, journal entry %d: %v", e.Agent, e.Seq, err)
		}
		for _, in := range ins {
			out = append(out, journaled{Seq: e.Seq, Kind: in.Kind(), In: in})
		}
	}
	return out
}
