package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/jsonw"
)

// An agent's record written with its first journal entry (AppendAgent)
// is kept in that entry's row, in the column record, rather than in the
// agents table; the agent's next record goes to the agents table, whose
// row then hides the one in the journal (see migration 6). What a
// delegated child costs the store is mostly rows: this takes one row of
// agents and its update away from each.

// appendRecord appends the record of a row of agents, less its run and
// ID (the journal row's), as a JSON object: the columns of agents under
// their names, its times as stored, each that is zero or empty left out
// (a new agent's are most of them).
func appendRecord(b []byte, row *agentRow) []byte {
	a := row.rec
	str := func(name, v string) {
		if v != "" {
			b = jsonw.AppendString(append(append(append(b, ",\""...), name...), "\":"...), v)
		}
	}
	num := func(name string, v int64) {
		if v != 0 {
			b = strconv.AppendInt(append(append(append(b, ",\""...), name...), "\":"...), v, 10)
		}
	}
	b = jsonw.AppendString(append(b, `{"started":`...), row.started)
	str("parent", string(a.Parent))
	num("depth", int64(a.Depth))
	str("definition", a.Definition)
	str("model", a.Model)
	str("task", a.Task)
	str("status", string(a.Status))
	num("turns", int64(a.Turns))
	num("tokens_in", a.Usage.InputTokens)
	num("tokens_out", a.Usage.OutputTokens)
	if ended, ok := row.ended.(string); ok {
		str("ended", ended)
	}
	str("result", a.Result)
	str("error", a.Error)
	return append(b, '}')
}

// storedRecord is a record as appendRecord writes it.
type storedRecord struct {
	Parent     string  `json:"parent"`
	Depth      int     `json:"depth"`
	Definition string  `json:"definition"`
	Model      string  `json:"model"`
	Task       string  `json:"task"`
	Status     string  `json:"status"`
	Turns      int     `json:"turns"`
	TokensIn   int64   `json:"tokens_in"`
	TokensOut  int64   `json:"tokens_out"`
	Started    string  `json:"started"`
	Ended      *string `json:"ended"`
	Result     string  `json:"result"`
	Error      string  `json:"error"`
}

// decodeRecord reads back the record appendRecord wrote for agent id of
// run.
func decodeRecord(run, id string, data []byte) (*cadre.AgentRecord, error) {
	var r storedRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("the record kept in its journal: %w", err)
	}
	a := &cadre.AgentRecord{Run: run, ID: cadre.AgentID(id), Parent: cadre.AgentID(r.Parent), Depth: r.Depth,
		Definition: r.Definition, Model: r.Model, Task: r.Task, Status: cadre.Status(r.Status), Turns: r.Turns,
		Result: r.Result, Error: r.Error}
	a.Usage.InputTokens, a.Usage.OutputTokens = r.TokensIn, r.TokensOut
	var err error
	if a.Started, err = parseTime(r.Started); err != nil {
		return nil, fmt.Errorf("started: %w", err)
	}
	if r.Ended != nil {
		if a.Ended, err = parseTime(*r.Ended); err != nil {
			return nil, fmt.Errorf("ended: %w", err)
		}
	}
	return a, nil
}

// keptWithEntry reports whether AppendAgent keeps a's record in the row of
// entries[0]: when that entry is the agent's own.
func keptWithEntry(a *cadre.AgentRecord, entries []cadre.JournalEntry) bool {
	return len(entries) > 0 && entries[0].Run == a.Run && entries[0].Agent == a.ID
}

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
		a, err := decodeRecord(run, id, k.data)
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
