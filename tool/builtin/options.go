package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/tool"
)

// Tool names.
const (
	NameReadFile    = "read_file"
	NameListFiles   = "list_files"
	NameSearchFiles = "search_files"
	NameWriteFile   = "write_file"
	NameEditFile    = "edit_file"
	NameRunCommand  = "run_command"
	NameWebFetch    = "web_fetch"
)

// Defaults of Options. A zero field in Options means its default.
const (
	// DefaultReadLimit is how many lines read_file shows when the call
	// gives no limit, and the most it shows in one call.
	DefaultReadLimit = 2000
	// DefaultMaxLineLength is the number of bytes of a line read_file shows
	// before cutting it.
	DefaultMaxLineLength = 2000
	// DefaultMaxReadBytes bounds the text of one read_file result, about
	// 25,000 tokens: a page of long lines ends early, and says where to
	// read on.
	DefaultMaxReadBytes = 100_000
	// DefaultMaxListFiles is how many paths list_files returns.
	DefaultMaxListFiles = 1000
	// DefaultMaxSearchMatches is how many matching lines search_files
	// returns.
	DefaultMaxSearchMatches = 200
	// DefaultMaxSearchFileSize is the size above which search_files skips
	// a file and edit_file refuses one.
	DefaultMaxSearchFileSize = 10 << 20
	// DefaultCommandTimeout bounds a run_command call that gives no
	// timeout_seconds.
	DefaultCommandTimeout = 120 * time.Second
	// DefaultMaxCommandTimeout is the most a call's timeout_seconds may ask.
	DefaultMaxCommandTimeout = 600 * time.Second
	// DefaultMaxCommandOutput is how many bytes of a command's combined
	// output run_command returns: the head and the tail, with a note of
	// what was left out between them.
	DefaultMaxCommandOutput = 30_000
	// DefaultShell runs commands as DefaultShell -c command.
	DefaultShell = "sh"
	// DefaultFetchTimeout bounds a web_fetch call.
	DefaultFetchTimeout = 30 * time.Second
	// DefaultMaxFetchBytes is how much of a response body web_fetch reads.
	DefaultMaxFetchBytes = 1 << 20
	// DefaultUserAgent is the User-Agent header of web_fetch.
	DefaultUserAgent = "cadre-web-fetch/1"
)

// Options tune the built-in tools. The zero value gives the defaults.
type Options struct {
	ReadLimit         int
	MaxLineLength     int
	MaxReadBytes      int
	MaxListFiles      int
	MaxSearchMatches  int
	MaxSearchFileSize int64
	// AllowHardLinks lets the file tools read, search, write and edit a
	// regular file that has more than one hard link. By default such a
	// file is refused (search_files skips it and says so): its other
	// names may lie outside the workspace, so it can be a door to a file
	// the workspace does not hold. Allowed, write_file and edit_file
	// change such a file in place, so every name sees the change.
	AllowHardLinks bool

	CommandTimeout    time.Duration
	MaxCommandTimeout time.Duration
	MaxCommandOutput  int
	// Shell is the program that runs a command line with -c.
	Shell string
	// Env is the environment of commands; nil means the environment of the
	// current process. Either way, CleanEnv removes the variables that hold
	// secrets before a command sees it.
	Env []string
	// SecretEnv names more variables commands must not see, besides those
	// CleanEnv's rules find: the variables a program reads its keys from.
	SecretEnv []string
	// PassEnv names variables commands see even though CleanEnv would
	// remove them.
	PassEnv []string
	// Sandbox, when not nil, confines every command with bubblewrap (see
	// Sandbox); nil runs commands unconfined, in the workspace directory
	// only. Check a Sandbox with Probe before using it.
	Sandbox *Sandbox
	// ProcessDir, when not empty, is a folder where run_command records
	// the process group of each unconfined command while it runs, so that
	// KillLeftovers can stop what a process that died left behind. It is
	// created when first needed and hidden from sandboxed commands.
	ProcessDir string

	// HTTPClient makes web_fetch's requests, as it is. Nil, the default,
	// means a client of web_fetch's own that connects only to public
	// addresses (see RefusedError), the FetchAllow rules aside, and uses
	// no proxy. A client given here decides alone where it connects: the
	// addresses are not checked. Its own Timeout, if any, applies on top
	// of FetchTimeout.
	HTTPClient    *http.Client
	FetchTimeout  time.Duration
	MaxFetchBytes int64
	UserAgent     string
	// FetchAllow lets web_fetch connect to hosts, ports, addresses and
	// networks it refuses by default.
	FetchAllow []FetchRule
	// FetchAllowWhere says where a person adds a rule, in the message of a
	// refusal, such as "webFetch.allow in .cadre/config.yaml"; empty
	// means "builtin.Options.FetchAllow".
	FetchAllowWhere string
	// Resolver looks up host names for web_fetch; nil means
	// net.DefaultResolver.
	Resolver Resolver

	// WebSearch is the service web_search asks. Without a provider the
	// tool is still offered (agent files name it) and each call says how
	// to configure one.
	WebSearch SearchBackend
}

func (o Options) withDefaults() Options {
	set := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	set(&o.ReadLimit, DefaultReadLimit)
	set(&o.MaxLineLength, DefaultMaxLineLength)
	set(&o.MaxReadBytes, DefaultMaxReadBytes)
	set(&o.MaxListFiles, DefaultMaxListFiles)
	set(&o.MaxSearchMatches, DefaultMaxSearchMatches)
	set(&o.MaxCommandOutput, DefaultMaxCommandOutput)
	if o.MaxSearchFileSize <= 0 {
		o.MaxSearchFileSize = DefaultMaxSearchFileSize
	}
	if o.CommandTimeout <= 0 {
		o.CommandTimeout = DefaultCommandTimeout
	}
	if o.MaxCommandTimeout <= 0 {
		o.MaxCommandTimeout = DefaultMaxCommandTimeout
	}
	if o.CommandTimeout > o.MaxCommandTimeout {
		o.CommandTimeout = o.MaxCommandTimeout
	}
	if o.Shell == "" {
		o.Shell = DefaultShell
	}
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = DefaultFetchTimeout
	}
	if o.MaxFetchBytes <= 0 {
		o.MaxFetchBytes = DefaultMaxFetchBytes
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	if o.FetchAllowWhere == "" {
		o.FetchAllowWhere = "builtin.Options.FetchAllow"
	}
	return o
}

// New returns every built-in tool, confined to ws, in a fixed order:
// read_file, list_files, search_files, write_file, edit_file, run_command,
// web_fetch, web_search, todo_write, todo_read. Its write_file and edit_file change any one file one call at
// a time, so concurrent calls never lose an edit. Make the tools once and
// share them among agents.
func New(ws tool.Workspace, opts Options) []cadre.Tool {
	locks := new(pathLocks)
	write, edit := NewWriteFile(ws, opts), NewEditFile(ws, opts)
	write.locks, edit.locks = locks, locks
	return []cadre.Tool{
		NewReadFile(ws, opts),
		NewListFiles(ws, opts),
		NewSearchFiles(ws, opts),
		write,
		edit,
		NewRunCommand(ws, opts),
		NewWebFetch(opts),
		NewWebSearch(opts.WebSearch),
		loopTool{todoSpec(loop.ToolTodoWrite)},
		loopTool{todoSpec(loop.ToolTodoRead)},
	}
}

// todoSpec is the spec of the named task-list tool.
func todoSpec(name string) cadre.ToolSpec {
	for _, s := range loop.TodoSpecs() {
		if s.Name == name {
			return s
		}
	}
	panic("no task-list tool " + name)
}

// loopTool is a tool the agent loop answers itself (todo_write,
// todo_read): offered among the built-in tools so that agent files grant
// it like the others, it never reaches a runner.
type loopTool struct{ spec cadre.ToolSpec }

func (t loopTool) Spec() cadre.ToolSpec { return t.spec }

func (t loopTool) Call(context.Context, json.RawMessage) (string, error) {
	return "", fmt.Errorf("%s is answered by the agent loop, which keeps each agent's list; it cannot be called on its own", t.spec.Name)
}
