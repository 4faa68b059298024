// Package rule enforces the tool rules of agent definitions
// (cadre.ToolRule): which commands, paths, URLs and agents an agent's calls
// may reach. Package agentdef reads the rules from agent files and checks
// each with Check; the local engine compiles each agent's chain of rule
// sets (its own definition's, then each ancestor's) and judges every call
// when it is made: ordinary tools through Guard, agents being started
// through Chain.Agent.
//
// # Evaluation
//
// For a call of tool T, the rules of a set whose Tool is T (or "*") are read
// from the last: the last rule that matches decides, and a call no rule
// matches is allowed. A chain takes the strictest answer of its sets (deny
// over ask over allow), so a subagent's rules only narrow its parent's.
// Allow lets the call go on (through the approval policy if the tool
// changes something); ask puts it to the approval policy whatever the tool;
// deny refuses it with a message naming the rule and what the rules allow.
//
// Rules that allow are matched narrowly and rules that deny or ask widely:
// when cadre cannot tell whether a call matches, it refuses the call rather
// than allow it. Letters are compared exactly for allow and ignoring case
// for deny and ask.
//
// # Commands
//
// A command line is taken apart into simple commands at ;, &, &&, ||, |, |&
// and newlines, and the commands inside $(…), `…`, <(…) and >(…) are taken
// out and judged too. Each simple command is judged on its own and the
// strictest answer holds, so Bash(git *) allows "git status" but not
// "git status; rm -rf x". The text a rule that allows is matched against is
// the simple command as written, without the operators around it; such a
// rule never allows a simple command that redirects to or from a file
// (2>&1 and /dev/null aside), holds a substitution, or that cadre cannot
// read (a subshell ( … ), a { … } group, if, for, while, case, a
// here-document, an unclosed quote). A rule that denies or asks matches the
// text as written, the words with their quotes removed, the words without
// leading VAR=value assignments, the program without its directory
// (/bin/rm as rm), and also the whole line. When a set has rules that deny
// or ask about some commands, a simple command it cannot read, whose
// program is named by an expansion, or whose program runs other commands
// (sh, bash, env, xargs, sudo, timeout, nohup, …) is refused, since those
// rules could not see what it runs. No rule can see into a script, a
// Makefile or an interpreter's code: denying some commands is a blocklist,
// and an allowlist is what confines an agent.
//
// # Paths
//
// The path of a file tool is resolved as the tool will resolve it: relative
// paths start at the workspace root, and symbolic links are followed, so a
// path is judged by where it leads; a path whose destination cannot be told
// is refused, and one that leads outside the workspace is refused by every
// rule about paths. It is then matched relative to the root, "/"-separated
// and cleaned. Rules about read_file, write_file and edit_file judge the
// file; rules about list_files and search_files judge everything below the
// directory the call reaches: when the patterns alone cannot tell, the
// files there are looked at (up to 20,000 entries). The rule check and the
// tool's own opening of the file are two steps: a process that swaps a
// link inside the workspace between them is not caught here.
//
// # URLs and agents
//
// A domain rule matches the host of the URL; a wildcard rule matches the
// URL as written (rules that allow require one without user:password@,
// backslashes or spaces). It judges the URL the model asks for: a redirect
// web_fetch follows is not judged again here. An agent rule matches the name of the definition
// an agent would be started from; a subagent without a definition is
// matched only by rules without a pattern.
//
// # Concurrency
//
// Sets and chains are immutable once made and safe for concurrent use; a
// guarded tool is as safe as the tool it guards.
package rule
