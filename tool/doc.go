// Package tool holds what every cadre tool needs around its own work: a
// registry of tools by name, the check of the arguments a model writes
// against a tool's JSON Schema (done by package schema), a typed helper that turns a Go function into a cadre.Tool,
// confinement of paths to a workspace root, the approval policy for tools
// that change things, and an Executor that puts these together to run one
// tool call.
//
// # Contract
//
//   - Registry is safe for concurrent use once filled; Add may run
//     concurrently with reads.
//   - Validate, Workspace.Resolve and Func's tools are safe for concurrent
//     use and never panic on malformed input.
//   - Approver serialises its prompts: at most one question is put to the
//     user at a time, whatever the number of agents asking. The summary it
//     is given (Summarize) shows terminal control characters as escapes.
//     Denials tell the model what happened and how the user can allow
//     such calls.
//   - Decode, and so Func's tools, take integers written as 3.0 or 1e2,
//     which the schema check accepts too.
//   - Executor never panics and never returns a Go error: every failure —
//     unknown tool, arguments that are not a JSON object or do not match the
//     schema, a denied approval, a tool that fails or panics — becomes an
//     error result whose text tells the model what went wrong and what to
//     do next.
//
// # Errors
//
// Validate returns a *ValidationError listing every problem found.
// Workspace.Resolve returns an *EscapeError (which matches
// ErrOutsideWorkspace with errors.Is) for paths that lead outside the root.
// Registry.Add wraps ErrDuplicate.
//
// Workspace confinement guards against mistakes of a model: paths that climb
// out of the root with "..", absolute paths elsewhere, and symbolic links
// that lead outside. It checks the file system when the path is resolved; it
// is not a sandbox against a process that changes the tree at the same
// time. Commands run with run_command are not confined beyond their working
// directory; that is what approval is for.
package tool
