// Package builtin provides the tools every cadre agent may be given:
// read_file, list_files, search_files, write_file, edit_file, run_command
// and web_fetch.
//
// File tools are confined to a tool.Workspace: every path a model gives is
// resolved with Workspace.Resolve, so paths that climb out of the root,
// absolute paths elsewhere and symbolic links leading outside are refused.
// Paths in results are relative to the root, so a model can pass them back.
// list_files and search_files do not follow symbolic links while walking.
// run_command runs in the root directory; what the command itself touches is
// not confined, which is why it, write_file and edit_file are mutating tools
// (cadre.Mutator) that go through approval.
//
// Every tool bounds its output (lines, files, matches, bytes, time) with an
// Options field whose zero value means the documented default, and says so
// in its result when it cut something. Failures are returned as errors
// whose text tells the model what went wrong and what to do instead.
//
// The tools are safe for concurrent use and keep no state between calls.
package builtin
