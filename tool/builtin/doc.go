// Package builtin provides the tools every cadre agent may be given:
// read_file, list_files, search_files, write_file, edit_file, run_command
// and web_fetch.
//
// # Confinement
//
// File tools are confined to a tool.Workspace: every path a model gives is
// resolved and opened through it in one step (an os.Root), so paths that
// climb out of the root, absolute paths elsewhere and symbolic links
// leading outside — along the path or at its end, dangling or not — are
// refused, even when another process swaps a directory for such a link
// while the tool works. Links that stay inside work. Paths in results are
// relative to the root, so a model can pass them back. list_files and
// search_files walk through the root and never follow a symbolic link
// while walking: list_files lists links to files inside the root, leaves
// out links to directories, and only counts links that lead outside or
// nowhere; search_files reads regular files only. Named pipes, sockets and
// devices are never opened.
//
// A regular file with more than one hard link may be a door to a file
// outside the workspace: read_file, write_file and edit_file refuse it
// with a *HardLinkError, and search_files skips it and says so, unless
// Options.AllowHardLinks. The link count is the one of the opened file.
//
// run_command runs in the root directory with an environment cleaned of
// secrets (CleanEnv). With Options.Sandbox it runs inside bubblewrap on
// Linux: the workspace writable except cadre's and git's control files,
// the rest of the file system read-only, credential stores hidden, a
// /tmp, /dev and /proc of its own, no network (nor the host's sockets in
// /run) unless allowed, no capabilities even under root, and nothing it
// starts outliving the call or cadre (see Sandbox). Without one, what the
// command touches is not confined; ProtectProcess keeps it from reading
// cadre's own environment. Either way it, write_file and
// edit_file are mutating tools (cadre.Mutator) that go through approval.
//
// # Processes
//
// A command runs in a process group of its own, killed when the call
// ends; on a time-out or cancel its own process is killed too, wherever
// it moved. On Linux the command is killed when cadre dies (a parent-death
// signal, sent from a thread that lives as long as the command); a
// sandboxed command takes everything it started with it. An unconfined
// command's group is recorded in Options.ProcessDir while it runs, and
// KillLeftovers kills what a dead cadre left there. A process that left
// the group (setsid) of an unconfined command is out of reach.
//
// web_fetch connects only to public addresses. Each connection, the first
// and each redirect's, is checked on the address it is about to reach,
// after the host name was resolved: loopback, private, link-local, shared,
// multicast, reserved and cloud metadata addresses are refused with a
// *RefusedError (which lists them), whatever form the URL writes them in,
// unless a FetchRule of Options.FetchAllow allows them. It uses no proxy.
//
// # Bounds
//
// Every tool bounds its output (lines, bytes, files, matches, time) with an
// Options field whose zero value means the documented default, and says in
// its result what it cut or skipped and how to see the rest.
//
// # Files
//
// write_file and edit_file write a temporary file in the file's folder and
// rename it over the file, so that a reader sees the old content or the
// new and a failed write leaves the old; the file keeps its mode, its
// owner where it can (else it is written in place), and its \r\n line
// endings when the model writes \n (read_file shows lines without their
// endings). Other attributes, such as extended attributes, are not kept.
// An allowed file with several hard links is written in place, so that
// every name sees the change.
// edit_file replaces text that occurs exactly once and, when it does not,
// says where it occurs or why it may not match; it refuses a file larger
// than Options.MaxSearchFileSize.
//
// Neither changes a control file of the workspace (a *ProtectedError):
// .cadre/, .claude/, .opencode/, .mcp.json, a .git file, and git's config,
// hooks, info and worktree links, at any depth (cadre run in a subfolder
// loads the agents and settings of every folder up to the root), with the
// folder core.hooksPath names, judged on the path with its links
// resolved. What is written there takes effect outside any confinement
// (cadre's configuration, an agent given every tool, a hook git runs); the
// user makes such changes. The command sandbox keeps those at the root
// read-only, and tells of nested ones a command makes or changes.
//
// A model's pattern cannot make a call run away: a glob is matched in time
// proportional to its segments times a path's depth and is refused past
// 4096 bytes, a regular expression past 3000 compiled instructions, and
// read_file and search_files look at the call's context inside a long line
// or file, not only between them.
//
// # Concurrency and errors
//
// The tools are safe for concurrent use: the calls of one model reply run
// at once. The write_file and edit_file returned by New change any one
// file one call at a time, so that concurrent edits of a file are all
// kept. Failures are returned as errors whose text names the tool, says
// what went wrong and what to do instead.
package builtin
