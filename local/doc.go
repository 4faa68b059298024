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
// store fails, the run is cancelled rather than going on with work that
// could not be resumed.
//
// # Events
//
// Events are published in the order they are produced, with Run, Agent,
// Parent, Depth and Time set. The pump writes them to the Store and calls
// each Handler in turn, from one goroutine, so handlers see events in order
// and need no locking between calls. A slow handler delays later events; it
// never blocks an agent (the queue in front of the pump is unbounded).
//
// # Tool rules
//
// Each agent carries the rule sets of its definition and of every agent
// above it (loop.Config.Rules, journaled with its Start, so a resumed agent
// keeps them). Its tools are wrapped by rule.Guard when it is created, so
// every call it makes is judged where it is run, whatever the Runner; a
// tool.Executor also puts the calls a rule asks about to its approval
// policy. Every agent a Spawn asks for — by a tool call or a <spawn_agents>
// task, and again after a resume — is checked against the spawning agent's
// rules before it is created: a denial is the Spawned error the model sees,
// and a rule that asks goes to the Runner's approval policy when it is an
// Approver (and is refused otherwise). The delegation tools a child is
// granted are its parent's, narrowed by its definition.
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
