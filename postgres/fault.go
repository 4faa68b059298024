package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cadre-ai/cadre"
)

// CreateRun stores a new run. A run with the same ID must not exist.
func (s *Store) CreateRun(ctx context.Context, r *cadre.RunRecord) error {
	return s.again(func() error { return s.createRunOnce(ctx, r) })
}

// UpdateRun replaces a run's record. A zero Started and a nil Config keep
// the values stored when the run was created.
func (s *Store) UpdateRun(ctx context.Context, r *cadre.RunRecord) error {
	return s.again(func() error { return s.updateRunOnce(ctx, r) })
}

// PutAgent creates or replaces an agent's record. The run must exist.
func (s *Store) PutAgent(ctx context.Context, a *cadre.AgentRecord) error {
	if err := checkAgent(a); err != nil {
		return err
	}
	return s.submit(ctx, &write{op: "put agent %s", agents: []*cadre.AgentRecord{a},
		alone: func(ctx context.Context) error { return s.again(func() error { return s.putAgentOnce(ctx, a) }) }})
}

// Append adds journal entries in one transaction: all of them or none.
// It sets each entry's Sum to its checksum and stores it with the entry.
func (s *Store) Append(ctx context.Context, entries []cadre.JournalEntry) error {
	if len(entries) == 0 {
		return nil
	}
	if err := sumEntries(entries); err != nil {
		return err
	}
	return s.submit(ctx, &write{op: "append journal", entries: entries,
		alone: func(ctx context.Context) error { return s.again(func() error { return s.appendOnce(ctx, entries) }) }})
}

// AppendAgent creates or replaces an agent's record and appends journal
// entries to it in one transaction: all of them or none. The engine writes
// a new agent's record and its first entry so, for one commit instead of
// two in a row.
func (s *Store) AppendAgent(ctx context.Context, a *cadre.AgentRecord, entries []cadre.JournalEntry) error {
	if err := checkAgent(a); err != nil {
		return err
	}
	if err := sumEntries(entries); err != nil {
		return err
	}
	return s.submit(ctx, &write{op: "put agent %s and append to its journal",
		agents: []*cadre.AgentRecord{a}, entries: entries,
		alone: func(ctx context.Context) error {
			return s.again(func() error { return s.appendAgentOnce(ctx, a, entries) })
		}})
}

// AppendEvents stores events in one transaction, all or none of them, and
// sets their Seq: per run, one more than the run's last event. Seq values
// already set are ignored; after a failure they are left as they were.
func (s *Store) AppendEvents(ctx context.Context, events []cadre.Event) error {
	if len(events) == 0 {
		return nil
	}
	payload, err := eventPayloads(events)
	if err != nil {
		return err
	}
	return s.submit(ctx, &write{op: "append events", events: events, payload: payload, seqs: make([]int64, len(events)),
		alone: func(ctx context.Context) error {
			return s.again(func() error { return s.appendEventsOnce(ctx, events, payload) })
		}})
}

// again makes a write, and makes it once more over new connections when
// the server ended the connection it was made on before doing any of it:
// a restarted server, or an administrator's pg_terminate_backend, ends
// every connection of the pool, and the pool only learns of it as each
// one is used. A write that fails again, or that may have been applied
// (the connection broke while the server had it), is not made again; its
// error says that the connection was lost.
func (s *Store) again(write func() error) error {
	err := write()
	if err == nil || !(ended(err) || pgconn.SafeToRetry(err)) {
		return s.fault(err)
	}
	s.pool.Reset()
	return s.fault(write())
}

// ended reports whether err is the server ending the connection (SQLSTATE
// class 57P: an administrator's command, a crash, a restart). The server
// sends it instead of running what it was sent, so none of it was applied.
func ended(err error) bool {
	return strings.HasPrefix(pgCode(err), "57P")
}

// fault says, of an error that comes from losing the server, that it was
// lost, where, and what to do.
func (s *Store) fault(err error) error {
	if err == nil {
		return nil
	}
	var ne net.Error
	_, connect := errors.AsType[*pgconn.ConnectError](err)
	lost := ended(err) || connect || strings.HasPrefix(pgCode(err), "08") || errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
	if !lost {
		return err
	}
	return fmt.Errorf("postgres: the connection to PostgreSQL at %s was lost (the server stopped or restarted, or an administrator ended the connection): "+
		"check that the server runs and accepts connections (%w)", s.where, err)
}
