package local

import (
	"context"
	"errors"

	"github.com/cadre-ai/cadre"
)

// An agentAppender is a Store that writes an agent's record and appends
// journal entries in one transaction, both or neither (the SQLite store
// does): a new agent's record and its Start then cost one sync to disk
// instead of two in a row.
type agentAppender interface {
	AppendAgent(ctx context.Context, a *cadre.AgentRecord, entries []cadre.JournalEntry) error
}

// AppendAgent writes the record and the entries, stamped with the lease's
// token, together when the store can, one after the other otherwise.
func (o ownedStore) AppendAgent(ctx context.Context, a *cadre.AgentRecord, entries []cadre.JournalEntry) error {
	aa, ok := o.Store.(agentAppender)
	if !ok {
		if err := o.PutAgent(ctx, a); err != nil {
			return err
		}
		return o.Append(ctx, entries)
	}
	if err := o.gone(); err != nil {
		return err
	}
	if l := o.run.lease; l != nil {
		for i := range entries {
			entries[i].Lease = l.owner.Token
		}
	}
	err := aa.AppendAgent(ctx, a, entries)
	if l := o.run.lease; l != nil && errors.Is(err, cadre.ErrLeaseLost) {
		l.give(err)
	}
	return err
}

// record is the agent's record as the live tree has it now.
func (r *run) record(a *agent) *cadre.AgentRecord {
	r.mu.Lock()
	in := *r.infos[a.id]
	r.mu.Unlock()
	rec := &cadre.AgentRecord{Run: r.id, ID: in.ID, Parent: in.Parent, Depth: in.Depth, Definition: in.Definition, Model: in.Model,
		Task: in.Task, Status: in.Status, Turns: in.Turns, Usage: in.Usage, Started: in.Started.UTC(), Result: in.Result, Error: in.Error}
	if !in.Ended.IsZero() {
		rec.Ended = in.Ended.UTC()
	}
	return rec
}
