// Package local is the in-process engine: it drives every agent of a run
// with the deterministic state machine of package loop, one owner goroutine
// per live agent, and carries out what the loop asks for.
//
// Engine implements cadre.Engine and cadre.Answerer; the contract and its
// guarantees are in package cadre's documentation. An Engine holds each run
// it starts or resumes while it goes on and, after it ends, its result
// until 8 more runs have ended, and (without a store) its latest events
// until another run ends; Wait, Tree and Events read what it no longer
// holds from the store.
//
// # Goroutines
//
// A run owns one goroutine per live agent, one event pump (when there is a
// store) and one timer (when the run has a time limit). An agent's goroutine
// owns the goroutines of its model call, its tool calls and its questions to
// the user, and waits for them before it exits. An agent that finishes for
// any reason cancels its children that are still alive and ends only after
// they have ended, so no agent outlives its parent and descendants always
// end first. Engine.Wait returns after every goroutine of the run has
// exited. Watching a run starts no goroutine: the sequence Events returns
// runs in the watcher's own.
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
// exists and before the child steps anything after it; with a store that
// writes to disk, its first model call is made while that write goes on
// (a run that stops before the write is done starts the child again from
// its parent's journal, which never recorded it). Replaying an agent's
// journal through Step rebuilds its state: Engine.Resume does that for
// every agent of a run, then lets each carry on
// (see its documentation for what is repeated and what is not). When the
// store fails, the run is cancelled rather than going on with work that
// could not be resumed; an input that cannot be journaled is refused (a
// child that cannot be started is reported to its parent as such). Without
// a Store nothing is journaled and the inputs are stepped as they are.
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
// Parent, Depth and Time set. With a store, the pump writes them to it in
// batches, from one goroutine, and only then hands them, numbered, to the
// run's watchers; an agent never waits for the store or a watcher (the
// queue in front of the pump is unbounded).
//
// Watchers read a ring of the run's latest Config.EventBuffer events
// (DefaultEventBuffer), each at its own position, so publishing never
// waits for them and one watcher's pace does not affect another's. The
// ring keeps everything from the run's first event until it is full, so a
// watcher that starts right after Start or Resume misses nothing (unless
// the run has already produced EventBuffer events). A watcher
// whose next event has been overwritten receives one events_skipped event
// in its place, with the count of events it missed and the Seq range of the
// stored ones (read them with Store.Events(run, AfterSeq)), then goes on
// from the oldest event kept. Streamed text (model_delta) is in the ring but
// not in the store.
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
// # Images and sounds
//
// A tool that is a cadre.MediaTool is called through CallMedia, still by
// way of the Runner (its arguments checked, its rules, the approval policy,
// its text redacted): the Runner sees the text, which describes each item,
// and the items go beside it on the loop.ToolResult, then on the tool
// message of the next model call. Events carry the text only; the journal
// holds the items' bytes, so a replay or a resumed run has them too.
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
