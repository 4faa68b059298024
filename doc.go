// Package cadre is the vocabulary of the cadre runtime: agent definitions,
// messages, tool calls, events, limits, and the few contracts that have more
// than one implementation (Model, Tool, Store).
//
// The package does no I/O and starts no goroutines. Everything that talks to
// a model server, a file system or a database lives in a sub-package named
// after what it wraps (model/openai, tool/builtin, sqlite, …) and is wired
// together by the command-line tool in internal/cli, or by your own program.
//
// A run starts a root agent on a task. Agents are driven by the deterministic
// state machine in package loop; the local engine (package local) executes
// what the loop asks for: model calls, tool calls, spawning children and
// delivering their reports, exactly once.
package cadre
