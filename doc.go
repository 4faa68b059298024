// Package cadre is the vocabulary of the cadre runtime: agent definitions,
// messages, tool calls, events, limits, and the few contracts that have more
// than one implementation (Model, Tool, Store, Engine).
//
// The package does no I/O and starts no goroutines. Everything that talks to
// a model server, a file system or a database lives in a sub-package named
// after what it wraps (model/openai, tool/builtin, sqlite, …) and is wired
// together by the command-line tool in internal/cli, or by your own program.
//
// A run starts a root agent on a task. Agents are driven by the deterministic
// state machine in package loop; an Engine executes what the loop asks for:
// model calls, tool calls, spawning children and delivering their reports.
// The local engine (package local) does it in the calling process.
//
// # The Engine contract
//
// Every Engine guarantees what follows; callers that rely on nothing else
// work with any of them.
//
// Runs. Start returns once the run is recorded (in the engine's store, when
// it has one) and its root agent exists; the context given to Start or
// Resume bounds that call only, never the run. A run ends when its root
// agent ends, when it is cancelled, or when its time limit (Limits.Timeout)
// passes. Wait reports how it ended: a Result with Status done, or, for a
// run that failed or was cancelled, the Result and a *RunError saying why.
//
// Agents. No agent outlives its parent: an agent that ends for any reason
// cancels its children that are still alive and ends only after they have.
// Every child's report reaches its parent exactly once, also across a crash
// and a Resume: the child's loop reports at most once in its life, the
// parent's loop accepts one report per child, and an engine that is not sure
// a report arrived delivers it again.
//
// Cancellation. Cancel without an agent cancels the whole run, with one its
// subtree. It is orderly: each agent is told, reports its cancellation to
// its parent, stops its calls in flight and ends after its own descendants,
// so agent_cancelled events come deepest first and a cancelled subtree's
// parent carries on with an error result for it. Cancel with Abort stops a
// whole run at once: every call in flight is aborted together. Cancelling a
// run that is ending or has ended is an error wrapping ErrNotRunning;
// cancelling an agent that has ended is an error naming it.
//
// Events. Every event of a run carries the run, the agent and, below the
// root, the parent and depth, and a payload of its type (see Payload and
// docs/events.md). Events are produced in a causal order: an agent's own
// events are in the order they happened, an agent_spawned comes before any
// event of the child, a child's end (agent_completed, agent_failed or
// agent_cancelled) comes before its parent's, and run_completed or
// run_failed is the run's last event. Stored events are numbered by Seq, from 1, in that order.
// Streamed text (model_delta) is given to watchers and not stored.
//
// Watching. Events returns a run's events as an iter.Seq2, in order, and
// ends after the run's last event. A watcher never slows the run: the engine
// keeps a bounded number of recent events for its watchers and does not
// wait for any of them. A watcher that falls further behind than that is
// never left to miss events silently: in place of the events it missed it
// receives one event of type EventSkipped (payload Skipped) saying how many
// it missed and the range of Seq of the stored ones, which
// Store.Events(run, AfterSeq) returns, and it goes on from the oldest event
// still kept. Each watcher reads at its own pace; several may watch one
// run.
//
// Questions. A root agent's question for the user (ask_caller) is an
// agent_question event; an engine that is an Answerer takes the answer from
// any caller through Answer.
//
// Errors. An unknown run is an error wrapping ErrNotFound; a run that
// exists but is not going on in the engine (it ended, or another process
// runs it) is one wrapping ErrNotRunning where the call needs a live run.
// Errors say what went wrong and which run or agent it was.
package cadre
