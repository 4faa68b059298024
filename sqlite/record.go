package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/agentrec"
)

// An agent's record written with its first journal entry (AppendAgent)
// is kept in that entry's row, in the column record (see package
// agentrec), rather than in the agents table; the agent's next record goes
// to the agents table, whose row then hides the one in the journal (see
// migration 6). What a delegated child costs the store is mostly rows:
// this takes one row of agents and its update away from each.

// journalRecords adds to out (a run's rows of agents, by ID) the records
// kept in the run's journal of the agents out has no row for, each the one
// of its latest entry, and returns the whole sorted by Started, then ID,
// as ListAgents returns them.
func journalRecords(ctx context.Context, tx *sql.Tx, run string, out map[cadre.AgentID]*cadre.AgentRecord) ([]*cadre.AgentRecord, error) {
	rows, err := tx.QueryContext(ctx, `SELECT agent, seq, record FROM journal WHERE run = ? AND record IS NOT NULL`, run)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	type latest struct {
		seq  int64
		data []byte
	}
	var kept map[string]latest
	for rows.Next() {
		var (
			id  string
			seq int64
			rec []byte
		)
		if err := rows.Scan(&id, &seq, &rec); err != nil {
			return nil, err
		}
		if _, ok := out[cadre.AgentID(id)]; ok {
			continue
		}
		if kept == nil {
			kept = map[string]latest{}
		}
		if k, ok := kept[id]; !ok || seq > k.seq { // a later entry's replaces an earlier one's
			kept[id] = latest{seq, rec}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	list := make([]*cadre.AgentRecord, 0, len(out)+len(kept))
	for _, a := range out {
		list = append(list, a)
	}
	for id, k := range kept {
		a, err := agentrec.Decode(run, id, k.data)
		if err != nil {
			return nil, fmt.Errorf("agent %s: %w", id, err)
		}
		list = append(list, a)
	}
	slices.SortFunc(list, func(x, y *cadre.AgentRecord) int {
		if c := x.Started.Compare(y.Started); c != 0 {
			return c
		}
		return strings.Compare(string(x.ID), string(y.ID))
	})
	return list, nil
}
