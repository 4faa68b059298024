package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cadre-ai/cadre"
)

// An agent's record written with its first journal entry (AppendAgent)
// is kept in that entry's row, in the column record, rather than in the
// agents table; the agent's next record goes to the agents table, whose
// row then hides the one in the journal (see migration 6). What a
// delegated child costs the store is mostly rows: this takes one row of
// agents and its update away from each.

// recordFormat is the first byte of a kept record: the layout that
// follows, for a later build to tell it from another.
const recordFormat = 1

// appendRecord appends the record of a row of agents, less its run and
// ID (the journal row's): recordFormat, then the columns of agents in
// their order, each string as its length (a uvarint) and its bytes, each
// number a varint, and the end time an empty string when there is none.
// It is read by this package alone, on every ListAgents: binary reads
// back in a tenth of the time JSON takes.
func appendRecord(b []byte, row *agentRow) []byte {
	a := row.rec
	str := func(v string) { b = append(binary.AppendUvarint(b, uint64(len(v))), v...) }
	num := func(v int64) { b = binary.AppendVarint(b, v) }
	b = append(b, recordFormat)
	str(string(a.Parent))
	num(int64(a.Depth))
	str(a.Definition)
	str(a.Model)
	str(a.Task)
	str(string(a.Status))
	num(int64(a.Turns))
	num(a.Usage.InputTokens)
	num(a.Usage.OutputTokens)
	str(row.started)
	ended, _ := row.ended.(string)
	str(ended)
	str(a.Result)
	str(a.Error)
	return b
}

// decodeRecord reads back the record appendRecord wrote for agent id of
// run.
func decodeRecord(run, id string, data []byte) (*cadre.AgentRecord, error) {
	bad := func(what string) error {
		return fmt.Errorf("the record kept in its journal (%d bytes) is damaged at its %s", len(data), what)
	}
	switch {
	case len(data) == 0:
		return nil, errors.New("the record kept in its journal is empty")
	case data[0] != recordFormat:
		return nil, fmt.Errorf("the record kept in its journal has format %d, which this build does not know: a newer cadre wrote it", data[0])
	}
	rest := data[1:]
	var err error
	str := func(what string) string {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			if err == nil {
				err = bad(what)
			}
			rest = nil
			return ""
		}
		v := string(rest[k : k+int(n)])
		rest = rest[k+int(n):]
		return v
	}
	num := func(what string) int64 {
		v, k := binary.Varint(rest)
		if k <= 0 {
			if err == nil {
				err = bad(what)
			}
			rest = nil
			return 0
		}
		rest = rest[k:]
		return v
	}
	a := &cadre.AgentRecord{Run: run, ID: cadre.AgentID(id)}
	a.Parent = cadre.AgentID(str("parent"))
	a.Depth = int(num("depth"))
	a.Definition = str("definition")
	a.Model = str("model")
	a.Task = str("task")
	a.Status = cadre.Status(str("status"))
	a.Turns = int(num("turns"))
	a.Usage.InputTokens = num("input tokens")
	a.Usage.OutputTokens = num("output tokens")
	started, ended := str("start time"), str("end time")
	a.Result = str("result")
	a.Error = str("error")
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, bad("end, which has bytes after the last column")
	}
	if a.Started, err = parseTime(started); err != nil {
		return nil, fmt.Errorf("the record kept in its journal: started: %w", err)
	}
	if ended != "" {
		if a.Ended, err = parseTime(ended); err != nil {
			return nil, fmt.Errorf("the record kept in its journal: ended: %w", err)
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
