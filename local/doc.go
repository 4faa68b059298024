// Package local is the in-process engine: it drives every agent of a run
// with the deterministic state machine of package loop, one owner goroutine
// per live agent, and carries out what the loop asks for.
//
// # Goroutines
//
// A Run owns one goroutine per live agent, one event pump and one watcher
// (the caller's context and the run's time limit). An agent's goroutine
// owns the goroutines of its model call, its tool calls and its questions to
// the user, and waits for them before it exits. An agent that finishes for
// any reason cancels its children that are still alive and ends only after
// they have ended, so no agent outlives its parent and descendants always
// end first. Run.Wait returns after every goroutine of the run has exited.
//
// # Inputs and the journal
//
// Everything that happens to an agent reaches its goroutine through its
// mailbox (unbounded, so agents never block on each other), is appended to
// the Store's journal, and only then is fed to loop.State.Step. A child's
// Start is journaled, and its record written, before its parent learns it
// exists. Replaying an agent's journal through Step rebuilds its state:
// Engine.Resume does that for every agent of a run, then lets each carry on
// (see its documentation for what is repeated and what is not). When the
// store fails, the run's agents are cancelled rather than going on with work
// that could not be resumed, and the run ends as failed.
//
// # Ownership
//
// A run with a Store has one owner at a time (see cadre.Lease). Start and
// Resume take the run's lease before anything else; Resume fails with a
// *cadre.LeaseError wrapping cadre.ErrRunOwned, naming the owner, while
// another live process holds it, and takes it over at once when the owner
// was a process of this machine that has exited (see Abandoned). A
// goroutine the run owns renews the lease every third of Config.LeaseTTL
// and is stopped and waited for when the run ends, after the run's record
// says so; then the lease is released. Every journal entry carries the
// lease's token, so the store refuses it once another process has the
// run. When the lease is lost (the store refuses a renewal or an append,
// or no renewal has succeeded for a whole TTL), the run stops at once: its
// calls are aborted, it ends as failed, and it writes nothing more to the
// store, whose records are the new owner's.
//
// # Events
//
// Events are published in the order they are produced, with Run, Agent,
// Parent, Depth and Time set. The pump writes them to the Store and calls
// each Handler in turn, from one goroutine, so handlers see events in order
// and need no locking between calls. A slow handler delays later events; it
// never blocks an agent (the queue in front of the pump is unbounded).
//
// # Limits
//
// Depth is enforced by the loop. The engine enforces the run-wide limits:
// MaxConcurrent (a semaphore held during model and tool calls, so a parent
// waiting for its children never holds a slot; a new agent is queued until
// it gets its first slot), MaxAgents and the cycle detector (spawns refused
// with an error the model can act on), the token budget (warning at 80%,
// then no new model calls), inactivity timeouts per agent, and the run's
// timeout.
package local
