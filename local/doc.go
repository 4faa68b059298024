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
// the Store's journal, and only then is fed to loop.State.Step. What is fed
// is the input as the journal gives it back, encoded and decoded again, not
// the input as it was made: JSON does not keep every value as it is
// (json.RawMessage is compacted, invalid UTF-8 becomes U+FFFD), and this
// way a replay steps exactly what the live agent stepped. A child's Start
// is journaled, and its record written, before its parent learns it
// exists. Replaying an agent's journal through Step rebuilds its state:
// Engine.Resume does that for every agent of a run, then lets each carry on
// (see its documentation for what is repeated and what is not). When the
// store fails, the run is cancelled rather than going on with work that
// could not be resumed; an input that cannot be journaled is refused (a
// child that cannot be started is reported to its parent as such). Without
// a Store nothing is journaled and the inputs are stepped as they are.
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
