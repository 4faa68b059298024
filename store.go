package cadre

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ErrNotFound is returned by a Store when a run or agent does not exist.
var ErrNotFound = errors.New("cadre: not found")

// A RunRecord is what a Store keeps about a run.
type RunRecord struct {
	ID      string    `json:"id"`
	Task    string    `json:"task"`
	Status  Status    `json:"status"`
	Model   string    `json:"model,omitempty"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"`
	Usage   Usage     `json:"usage"`
	Answer  string    `json:"answer,omitempty"`
	Error   string    `json:"error,omitempty"`
	Agents  int       `json:"agents"`
	// Config is the run's settings as JSON, kept so a resumed run uses the
	// same limits, workspace and models.
	Config json.RawMessage `json:"config,omitempty"`
}

// An AgentRecord is what a Store keeps about one agent of a run.
type AgentRecord struct {
	Run        string    `json:"run"`
	ID         AgentID   `json:"id"`
	Parent     AgentID   `json:"parent,omitempty"`
	Depth      int       `json:"depth"`
	Definition string    `json:"definition"`
	Model      string    `json:"model,omitempty"`
	Task       string    `json:"task"`
	Status     Status    `json:"status"`
	Turns      int       `json:"turns"`
	Usage      Usage     `json:"usage"`
	Started    time.Time `json:"started"`
	Ended      time.Time `json:"ended,omitzero"`
	Result     string    `json:"result,omitempty"`
	Error      string    `json:"error,omitempty"`
}

// A JournalEntry is one loop Input as it was fed to an agent's state
// machine. Seq numbers an agent's entries from 1 with no gaps; replaying
// them in order rebuilds the agent's state.
type JournalEntry struct {
	Run   string          `json:"run"`
	Agent AgentID         `json:"agent"`
	Seq   int64           `json:"seq"`
	Kind  string          `json:"kind"`
	Data  json.RawMessage `json:"data"`
	Time  time.Time       `json:"time"`
	// Sum is the entry's checksum (see Checksum) as the store kept it when
	// the entry was written: a Store sets it in Append, whatever it was,
	// and returns it from Journal. Zero means the entry has none: it was
	// written before the store kept checksums. Verify compares it with the
	// entry's content.
	Sum uint32 `json:"sum,omitempty"`
	// Lease, when set, is the token of the writer's lease on Run: the
	// store writes the batch only if that lease still holds the run,
	// checked in the same transaction, and fails it with a *LeaseError
	// wrapping ErrLeaseLost otherwise. It is not stored.
	Lease string `json:"-"`
}

// Store keeps runs durably: the records, every agent's journal, and the
// events. Implementations are safe for concurrent use, and several runs may
// share one store.
//
// A run has one owner at a time, which holds its lease (see Lease): an
// owner stamps its journal entries with its lease's token, and Append
// refuses them once another process has taken the run over.
//
// Append and AppendEvents take batches; an implementation writes each batch
// in one transaction, so a crash keeps a prefix of batches, never a partial
// one. Appending a journal entry whose (run, agent, seq) already exists is
// an error. Append stores each entry's Checksum with it (and sets its Sum),
// and Journal returns the entries as stored, Sum included, without
// checking them: whoever replays a journal verifies it
// (JournalEntry.Verify), so that what is intact can still be read beside
// what is damaged.
//
// A Store keeps copies of what it is given: once a call has returned, the
// caller may change or reuse the records, entries, Data and events it
// passed (the engine reuses the buffers of journal entries), and what a
// call returns is the caller's (package storetest checks both for run
// records and journal entries).
type Store interface {
	CreateRun(ctx context.Context, r *RunRecord) error
	UpdateRun(ctx context.Context, r *RunRecord) error
	GetRun(ctx context.Context, id string) (*RunRecord, error)
	// ListRuns returns runs, newest first; limit <= 0 means all.
	ListRuns(ctx context.Context, limit int) ([]*RunRecord, error)

	// PutAgent creates or replaces an agent's record.
	PutAgent(ctx context.Context, a *AgentRecord) error
	ListAgents(ctx context.Context, run string) ([]*AgentRecord, error)

	Append(ctx context.Context, entries []JournalEntry) error
	// Journal returns an agent's entries in Seq order.
	Journal(ctx context.Context, run string, agent AgentID) ([]JournalEntry, error)

	// AppendEvents stores events and sets their Seq, increasing per run.
	AppendEvents(ctx context.Context, events []Event) error
	// Events returns a run's events with Seq greater than after, in order.
	Events(ctx context.Context, run string, after int64) ([]Event, error)

	// AcquireLease makes req.Owner the owner of req.Run for req.TTL, by
	// the store's clock, when no lease holds the run, the one that does
	// has expired, or its token is req.Replace. Otherwise it fails with a
	// *LeaseError wrapping ErrRunOwned that names the holder. The run
	// need not be recorded yet: an engine takes the lease of a new run
	// before it records it, so no reader sees a run that nobody owns.
	AcquireLease(ctx context.Context, req LeaseRequest) (*Lease, error)
	// RenewLease extends the lease of token on run to ttl from now. It
	// fails with a *LeaseError wrapping ErrLeaseLost when that lease no
	// longer holds the run; a lease that expired but was not taken over
	// is renewed.
	RenewLease(ctx context.Context, run, token string, ttl time.Duration) (*Lease, error)
	// ReleaseLease ends the lease of token on run. Releasing a lease that
	// no longer holds the run does nothing.
	ReleaseLease(ctx context.Context, run, token string) error
	// Lease returns the lease that holds run, expired or not, or an error
	// wrapping ErrNotFound when there is none (it was released, or never
	// taken).
	Lease(ctx context.Context, run string) (*Lease, error)

	Close() error
}
