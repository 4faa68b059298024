// Package temporal is the engine that runs agents on Temporal, so that a
// run spreads over many machines and survives the loss of any of them.
//
// Each agent is a workflow (AgentWorkflow) whose code steps the same
// deterministic loop as the local engine: model calls and tool calls are
// activities, a child agent is a child workflow, and reports, messages,
// answers and cancellations reach a running agent as signals, in the order
// they were sent. A run is a workflow too (RunWorkflow): it builds and
// starts the root, and is the one authority on the run-wide limits (the
// number of agents, repeated tasks, the token budget and the number of
// model calls at once: unlike the local engine's, the limit does not
// count tool calls, which only each worker's activity slots bound), which
// agents ask for by signal whatever worker
// runs them. Workflow IDs derive from the run and agent IDs, so a start
// that is retried never makes a second agent. An agent whose history
// reaches Config.HistoryLimit events continues as new with its journal of
// inputs, from which the loop's state is rebuilt. So does the run's
// workflow, which records a few events for every model call of the run:
// it carries the limits' counts, the concurrency slots held and asked for,
// the requests not yet handled and the end of the run's time limit, and
// learns of the root's end from the root, which it no longer has as a
// child (runs started by workers from before this keep the root as a
// child and never continue as new). A root workflow that ends without
// saying how after the run's workflow has continued as new (terminated
// from outside, say) is noticed when the run is cancelled or its time
// limit passes: the run then ends as cancelled.
//
// An agent's inactivity limit (its definition's timeout) holds as on the
// local engine: the agent fails when a call of its shows no sign of life for
// that long. While a model call waits for a concurrency slot or tools run,
// a workflow timer counts from the agent's last sign of life (an input it
// stepped, a model call begun); a model call in flight keeps the limit
// itself, since only the worker making it sees the reply stream in, and
// gives up when no chunk came for that long. Unlike on the local engine,
// inputs the agent receives while its model call is in flight do not put
// that call's limit back.
//
// Workers write the agents' events and records to the shared cadre.Store
// (PostgreSQL when workers run on several machines); Engine reads them
// from there. When a worker dies, Temporal gives its work to another
// within 30 seconds with the default timeouts (see
// DefaultHeartbeatTimeout); a model call whose result is in the history is
// never made again. Events written by a worker that died just after
// writing them may be written once more by the worker that takes over.
package temporal
