package local

import (
	"context"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/journal"
	"github.com/cadre-ai/cadre/loop"
)

// A journaled is one input of an agent's journal, with the entry that holds
// it: an entry of kind loop.KindInputs holds several.
type journaled struct {
	Seq  int64  // the entry's
	Kind string // the input's
	In   loop.Input
}

// journalInputs decodes entries of store s into their inputs, in order,
// a Start with the configuration it takes from another agent's.
func journalInputs(t testing.TB, s cadre.Store, entries []cadre.JournalEntry) []journaled {
	t.Helper()
	var out []journaled
	var rd *journal.Reader
	for _, e := range entries {
		if rd == nil {
			rd = &journal.Reader{Store: s, Run: e.Run}
		}
		ins, err := rd.Inputs(context.Background(), e)
		if err != nil {
			t.Fatalf("%s, journal entry %d: %v", e.Agent, e.Seq, err)
		}
		for _, in := range ins {
			out = append(out, journaled{Seq: e.Seq, Kind: in.Kind(), In: in})
		}
	}
	return out
}
