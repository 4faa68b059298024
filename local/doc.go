// Package local is the in-process engine: it drives every agent of a run
// with the deterministic state machine of package loop, one owner goroutine
// per live agent, and carries out what the loop asks for.
//
// # Goroutines
//
// A Run owns one goroutine per live agent, one event pump and, with a Store,
// one journal writer. An agent's goroutine owns the goroutines of its model
// call and its tool calls and waits for them before it exits; Run.Wait
// returns after every goroutine of the run has exited. Nothing outlives its
// run.
//
// # Inputs and the journal
//
// Everything that happens to an agent reaches its goroutine through its
// mailbox (unbounded, so agents never block on each other), is appended to
// the Store's journal (group-committed with other agents' entries), and only
// then is fed to loop.State.Step. Replaying an agent's journal through Step
// rebuilds its state.
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
// waiting for its children never holds a slot; a new agent stays queued
// until it gets its first slot), MaxAgents and the cycle detector (spawns
// refused with an error the model can act on), the token budget (warning at
// 80%, then no new model calls), inactivity timeouts per agent, and the
// run's timeout.
package local
