package cadre

import (
	"errors"
	"fmt"
	"time"
)

// A run has one owner at a time: the process that carries it on. The owner
// holds the run's lease in the Store, renews it while it lives and releases
// it when the run ends; a process that dies stops renewing, and once the
// lease has expired another process may take the run over (cadre resume).
// Every journal entry an owner writes carries its lease's token, and the
// store refuses an entry whose token no longer holds the run, so two
// processes can never both add to a run's journal.
//
// Expiry is judged by the store's clock where it has one (PostgreSQL's
// now()); a store in a file judges it by the clock of the machine that
// reads it, which every process sharing the file shares.

// Errors of the lease, for errors.Is. A *LeaseError wraps one of them.
var (
	// ErrRunOwned: another process holds the run's lease, and it has not
	// expired.
	ErrRunOwned = errors.New("cadre: another process owns the run")
	// ErrLeaseLost: the lease the caller held is gone: another process
	// took the run over, or it was released.
	ErrLeaseLost = errors.New("cadre: the lease on the run was lost")
)

// StatusInterrupted is how readers show a run that did not end and that no
// live process owns: its owner died (a crash, kill -9, a reboot) or lost
// its lease. It is never stored; the run's record still says running.
// cadre resume carries such a run on.
const StatusInterrupted Status = "interrupted"

// A LeaseOwner says who holds a lease.
type LeaseOwner struct {
	// Host is the owner's host name, for people.
	Host string `json:"host"`
	// PID is the owner's process id.
	PID int `json:"pid"`
	// Process identifies the process more closely than its PID, so that
	// another process on the same machine can tell whether it still runs
	// (see local.Abandoned). Stores keep it as it is; empty means unknown.
	Process string `json:"process,omitempty"`
	// Token is random and new for each acquisition. It tells one holding
	// of the lease from any other, and fences the journal (see
	// JournalEntry.Lease). It is not shown to people.
	Token string `json:"-"`
}

// A Lease is a run's ownership as a Store keeps it.
type Lease struct {
	Run   string     `json:"run"`
	Owner LeaseOwner `json:"owner"`
	// Acquired is when Owner took the run; Renewed when it last renewed
	// the lease; Expires when the lease ends unless renewed. All three are
	// by the store's clock.
	Acquired time.Time `json:"acquired"`
	Renewed  time.Time `json:"renewed"`
	Expires  time.Time `json:"expires"`
	// Expired reports whether Expires had passed, by the store's clock,
	// when the lease was read. Another process may then take the run.
	Expired bool `json:"expired"`
}

// A LeaseRequest asks a Store for a run's lease.
type LeaseRequest struct {
	Run   string
	Owner LeaseOwner // Token must be set, and new
	// TTL is how long the lease lasts unless it is renewed.
	TTL time.Duration
	// Replace, when set, is the token of a lease that the caller knows is
	// dead although it has not expired (its process has exited): the
	// store gives the run to Owner if that lease still holds it.
	Replace string
}

// A LeaseError reports that a run's lease is held by another process, or
// that the caller's lease is gone. It wraps ErrRunOwned or ErrLeaseLost.
type LeaseError struct {
	Run string
	// Held is the lease that holds the run now; nil when none does.
	Held *Lease
	Err  error
}

func (e *LeaseError) Error() string {
	switch {
	case errors.Is(e.Err, ErrRunOwned) && e.Held != nil:
		return fmt.Sprintf("run %s is being run by another process: %s, since %s", e.Run, e.Held.Owner.Describe(), timeText(e.Held.Acquired))
	case errors.Is(e.Err, ErrRunOwned):
		return fmt.Sprintf("run %s is being run by another process", e.Run)
	case e.Held != nil:
		return fmt.Sprintf("this process no longer owns run %s: %s took it over at %s", e.Run, e.Held.Owner.Describe(), timeText(e.Held.Acquired))
	}
	return fmt.Sprintf("this process no longer owns run %s: its lease was released or taken away", e.Run)
}

func (e *LeaseError) Unwrap() error { return e.Err }

// Describe names the owner for people: "process 4242 on host build-1".
func (o LeaseOwner) Describe() string {
	if o.Host == "" {
		return fmt.Sprintf("process %d on an unknown host", o.PID)
	}
	return fmt.Sprintf("process %d on host %s", o.PID, o.Host)
}

func timeText(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}
