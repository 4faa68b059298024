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
//   - Validate, Workspace's methods and Func's tools are safe for
//     concurrent use and never panic on malformed input. A Workspace made
//     by NewWorkspace holds its root directory open until Close.
//   - Approver serialises its prompts: at most one question is put to the
//     user at a time, whatever the number of agents asking. The summary it
//     is given (Summarize) shows terminal control characters as escapes.
//     Denials tell the model what happened and how the user can allow
//     such calls.
//   - A tool that is a Gate (package rule wraps tools so, with the rules of
//     the agent's definition) is judged by Executor before anything else:
//     a denied call never runs and is never put to the Approver; a call a
//     rule asks about goes to the Approver whatever the tool, with the rule
//     named in the request.
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
// Workspace's methods return an *EscapeError (which matches
// ErrOutsideWorkspace with errors.Is) for paths that lead outside the root,
// and ErrClosed after Close. Registry.Add wraps ErrDuplicate.
//
// # Confinement
//
// A Workspace refuses paths that climb out of the root with "..",
// absolute paths elsewhere, and symbolic links that lead outside, and
// follows links that stay inside, relative or absolute. Its file
// operations (OpenFile, Stat, MkdirAll, OpenDir, WalkDir) resolve the path
// and act on it in one step through an os.Root, which follows a link only
// while it stays inside the root: a process that swaps a directory for a
// link while a tool works can make the call fail, never reach outside.
// Resolve and Local only describe the tree as it was; what acts on a file
// must use the file operations. Not confined: file systems mounted inside
// the root, and a file's other hard links, which may lie outside (package
// builtin refuses files with several links by default). Commands run with
// run_command are not confined by a Workspace.
package tool
