package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/redact"
)

// Defaults of Config.
const (
	// DefaultConnectTimeout bounds starting a server, the MCP handshake and
	// listing its tools. Servers run with npx or uvx may download
	// themselves on first use, hence the generous time.
	DefaultConnectTimeout = 60 * time.Second
	// DefaultStopTimeout is how long Close waits for a stdio server to exit
	// after closing its stdin, and again after SIGTERM, before killing it.
	DefaultStopTimeout = 2 * time.Second
	// DefaultClientName is how the Client introduces itself to servers.
	DefaultClientName = "cadre"
	// DefaultMaxResultBytes is how much of a tool's result reaches the
	// model; the rest is cut, with a note saying so.
	DefaultMaxResultBytes = 100_000
	// DefaultMaxMediaBytes bounds one image or sound of a tool's result;
	// DefaultMaxResultMediaBytes all of those of one result. Over them,
	// the model reads why the rest was not passed on: the bytes of every
	// item end up in the run's journal, and a server should not be able
	// to fill it.
	DefaultMaxMediaBytes       = 5_000_000
	DefaultMaxResultMediaBytes = 20_000_000
	// DefaultCallTimeout bounds one call of a tool: long enough for a
	// tool that builds or tests, short of holding an agent for good when
	// a server never answers.
	DefaultCallTimeout = 10 * time.Minute
)

// Config configures a Client. Only Servers is needed; the rest have
// working zero values.
type Config struct {
	// Servers are the MCP servers to use, by name. The name is the SERVER
	// of the tools' names mcp__SERVER__TOOL.
	Servers map[string]ServerConfig
	// ConnectTimeout bounds connecting to one server and listing its
	// tools; 0 means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// StopTimeout is how long Close gives a stdio server to exit, first
	// after closing its stdin and again after SIGTERM; 0 means
	// DefaultStopTimeout.
	StopTimeout time.Duration
	// HTTPClient reaches the servers configured with a URL. Nil means
	// http.DefaultTransport, with no overall timeout (a call lasts as long
	// as the tool takes).
	HTTPClient *http.Client
	// MaxResultBytes is how much of a tool's result is returned; 0 means
	// DefaultMaxResultBytes.
	MaxResultBytes int
	// MaxMediaBytes bounds the bytes of one image or sound of a result,
	// MaxResultMediaBytes those of all the images and sounds of one
	// result; 0 means DefaultMaxMediaBytes and DefaultMaxResultMediaBytes.
	MaxMediaBytes, MaxResultMediaBytes int
	// CallTimeout bounds one call of a tool: a call without an answer by
	// then is given up, with an error that says so; 0 means
	// DefaultCallTimeout.
	CallTimeout time.Duration
	// Name and Version are how the Client introduces itself to servers;
	// empty means DefaultClientName and "dev".
	Name, Version string
	// Logger receives the SDK's records and a debug record of each call.
	// Nil means no logging.
	Logger *slog.Logger
	// Environ is the environment, as KEY=value lines, that stdio servers
	// take the variables they inherit from (see ServerConfig.Env). Nil
	// means the environment of this process.
	Environ []string
	// Redactor hides secrets in the errors of servers and in what their
	// tools return: the credentials their configuration holds, the keys
	// of the program. Nil hides URL userinfo and credential headers in
	// errors only.
	Redactor *redact.Redactor
}

// A ServerConfig says how to reach one MCP server: set Command (a program
// speaking MCP on its stdin and stdout) or URL (a streamable HTTP
// endpoint), or Transport.
type ServerConfig struct {
	// Command and Args start the server. Command is looked up in PATH
	// when it has no slash.
	Command string
	Args    []string
	// Env sets variables for the server. A stdio server does not get the
	// whole environment of cadre, which holds API keys: it gets the
	// variables DefaultEnv names, those EnvPassthrough names, and Env,
	// which wins over both.
	Env map[string]string
	// EnvPassthrough names more variables of cadre's environment that the
	// server gets, when they are set: NAME, or PREFIX* for every variable
	// whose name starts with PREFIX ("*" alone for all of them).
	EnvPassthrough []string
	// Dir is the server's working directory; empty means cadre's.
	Dir string

	// URL is the server's streamable HTTP endpoint.
	URL string
	// Headers are sent with every request to URL (an Authorization
	// header, for instance).
	Headers map[string]string

	// CallTimeout bounds one call of a tool of this server; 0 means
	// Config.CallTimeout.
	CallTimeout time.Duration

	// Transport, when set, is used instead of Command and URL: a server
	// in the same process (sdk.NewInMemoryTransports) or a transport of
	// one's own.
	Transport sdk.Transport
}

// kind names the transport of sc for listings and errors.
func (sc ServerConfig) kind() string {
	switch {
	case sc.Transport != nil:
		return "custom"
	case sc.URL != "":
		return "http"
	}
	return "stdio"
}

// describe says where sc leads, such as "stdio: npx -y server" or
// "http: https://example.com/mcp".
func (sc ServerConfig) describe() string {
	switch sc.kind() {
	case "custom":
		return fmt.Sprintf("custom: %T", sc.Transport)
	case "http":
		return "http: " + sc.URL
	}
	return "stdio: " + sc.commandLine()
}

// commandLine is Command and Args as one line.
func (sc ServerConfig) commandLine() string {
	return strings.Join(append([]string{sc.Command}, sc.Args...), " ")
}

// A Client connects to MCP servers and offers their tools as cadre tools.
// Use NewClient, then Connect, then Tools; Close stops every server.
type Client struct {
	cfg    Config
	sdk    *sdk.Client
	logger *slog.Logger

	// ctx ends when Close begins, which aborts the calls in flight.
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	connected bool
	closed    bool
	servers   map[string]*server
	// connecting and calls count Connect and the tool calls under way;
	// Add only under mu while not closed.
	connecting sync.WaitGroup
	calls      sync.WaitGroup
}

// NewClient returns a Client for cfg. It starts nothing.
func NewClient(cfg Config) *Client {
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = DefaultStopTimeout
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.MaxResultBytes <= 0 {
		cfg.MaxResultBytes = DefaultMaxResultBytes
	}
	if cfg.MaxMediaBytes <= 0 {
		cfg.MaxMediaBytes = DefaultMaxMediaBytes
	}
	if cfg.MaxResultMediaBytes <= 0 {
		cfg.MaxResultMediaBytes = DefaultMaxResultMediaBytes
	}
	if cfg.Name == "" {
		cfg.Name = DefaultClientName
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{
		cfg:    cfg,
		logger: logger,
		sdk: sdk.NewClient(&sdk.Implementation{Name: cfg.Name, Version: cfg.Version}, &sdk.ClientOptions{
			Logger: logger,
			// No roots, sampling or elicitation: cadre only calls tools.
			Capabilities: &sdk.ClientCapabilities{},
		}),
		ctx:     ctx,
		cancel:  cancel,
		servers: map[string]*server{},
	}
}

// Connect starts or reaches every configured server at once, completes the
// MCP handshake and lists its tools. It returns when each has succeeded or
// failed: the error joins one *ServerError per server that failed, in the
// order of their names, and the servers that succeeded are ready. A Client
// connects once; later calls return an error.
func (c *Client) Connect(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	if c.connected {
		c.mu.Unlock()
		return errors.New("mcp: Connect was already called")
	}
	c.connected = true
	for name, sc := range c.cfg.Servers {
		c.servers[name] = &server{name: name, cfg: sc, client: c}
	}
	c.connecting.Add(1)
	defer c.connecting.Done()
	c.mu.Unlock()

	// Close gives up on connections under way.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()

	var wg sync.WaitGroup
	for _, s := range c.servers {
		wg.Go(func() { s.connect(ctx) })
	}
	wg.Wait()
	// Two servers' tools may come out with one name (server fs_ with tool
	// delete, server fs with tool _delete): the later server, by name, is
	// not used, as cadre could not tell which a call or a rule means.
	owner := map[string]string{}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.servers)) {
		s := c.servers[name]
		for _, t := range s.tools {
			if first, taken := owner[t.spec.Name]; taken && s.err == nil {
				s.err = &ServerError{Server: name, Op: "list tools",
					Err:  fmt.Errorf("its tool %q becomes %s, the name of a tool of the MCP server %s", t.remote, t.spec.Name, first),
					Hint: "give one of the two servers another name in the config"}
			}
		}
		if s.err != nil {
			s.tools = nil
		} else {
			for _, t := range s.tools {
				owner[t.spec.Name] = name
			}
		}
		if err := s.err; err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Tools returns the tools of every connected server, sorted by name.
func (c *Client) Tools() []cadre.Tool {
	var out []cadre.Tool
	for _, s := range c.Servers() {
		for _, t := range s.Tools {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b cadre.Tool) int { return strings.Compare(a.Spec().Name, b.Spec().Name) })
	return out
}

// ServerInfo is what a Client knows of one server after Connect.
type ServerInfo struct {
	// Name is the server's configured name.
	Name string
	// Transport is "stdio", "http" or "custom"; Target is the command line
	// or URL.
	Transport, Target string
	// Tools are the server's tools, sorted by name; nil when it failed.
	Tools []*Tool
	// Err says why the server could not be used; nil when it connected.
	Err error
}

// Servers describes every configured server, sorted by name.
func (c *Client) Servers() []ServerInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []ServerInfo
	for _, name := range slices.Sorted(maps.Keys(c.servers)) {
		s := c.servers[name]
		info := ServerInfo{Name: name, Transport: s.cfg.kind(), Target: c.cfg.Redactor.String(s.cfg.describe()), Err: s.err}
		if s.err == nil {
			info.Tools = slices.Clone(s.tools)
		}
		out = append(out, info)
	}
	return out
}

// Close stops every server: it aborts the calls in flight, ends each
// session and stops each process (see the package documentation). When
// ctx ends first, the processes that are left are killed; Close still
// returns only once they have been reaped, with ctx's error. Close may be
// called more than once.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	servers := make([]*server, 0, len(c.servers))
	for _, s := range c.servers {
		servers = append(servers, s)
	}
	c.mu.Unlock()
	// Cancelling the calls in flight tells their servers; let them say so
	// before the sessions end.
	c.cancel()
	c.connecting.Wait()
	callsDone := make(chan struct{})
	go func() {
		c.calls.Wait()
		close(callsDone)
	}()
	select {
	case <-callsDone:
	case <-ctx.Done():
	}
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() { s.close(ctx) })
	}
	wg.Wait()
	// With every session ended and process stopped, no call is left
	// waiting.
	<-callsDone
	return ctx.Err()
}

// isClosed reports whether Close has begun.
func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// beginCall counts a call in flight, or reports false when the Client is
// closed. A call that began must call c.calls.Done.
func (c *Client) beginCall() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.calls.Add(1)
	return true
}

// A server is one configured server and its session.
type server struct {
	name   string
	cfg    ServerConfig
	client *Client

	// Set by connect, read-only afterwards.
	session *sdk.ClientSession
	proc    *process         // nil unless started from Command
	http    *headerTransport // nil unless reached by URL
	tools   []*Tool
	err     error

	closeOnce sync.Once
}

// connect starts or reaches the server, completes the handshake and lists
// its tools, setting s.err on failure.
func (s *server) connect(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, s.client.cfg.ConnectTimeout)
	defer cancel()
	// A failure after the process started must not leave it running.
	defer func() {
		if s.err != nil {
			if se, ok := s.err.(*ServerError); ok {
				s.client.redact(se)
			}
			s.close(context.Background())
		}
	}()
	var t sdk.Transport
	switch s.cfg.kind() {
	case "custom":
		t = s.cfg.Transport
	case "http":
		base := http.DefaultTransport
		hc := s.client.cfg.HTTPClient
		if hc != nil && hc.Transport != nil {
			base = hc.Transport
		}
		u, err := url.Parse(s.cfg.URL)
		if err != nil {
			s.err = &ServerError{Server: s.name, Op: "start", Err: err, Hint: fmt.Sprintf("give mcpServers.%s a url such as https://example.com/mcp", s.name)}
			return
		}
		origin := originOf(u)
		s.http = &headerTransport{base: base, headers: s.cfg.Headers, origin: origin}
		client := &http.Client{Transport: s.http, CheckRedirect: sameOriginRedirects(s.name, origin)}
		if hc != nil {
			client.Jar = hc.Jar
			if hc.CheckRedirect != nil {
				client.CheckRedirect = hc.CheckRedirect
			}
		}
		t = &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: client, MaxRetries: 2}
	default:
		if s.cfg.Command == "" {
			s.err = &ServerError{Server: s.name, Op: "start", Err: errors.New("no command, URL or transport is configured"),
				Hint: fmt.Sprintf("give mcpServers.%s a command or a url", s.name)}
			return
		}
		p, pt, err := startProcess(s.cfg, s.client.cfg.Environ)
		if err != nil {
			s.err = startError(s.name, s.cfg, err)
			return
		}
		s.proc, t = p, pt
	}
	session, err := s.client.sdk.Connect(ctx, t, nil)
	if err != nil {
		s.err = s.failure(ctx, "connect", err)
		return
	}
	s.session = session
	var tools []*Tool
	for st, err := range session.Tools(ctx, nil) {
		if err != nil {
			s.err = s.failure(ctx, "list tools", err)
			return
		}
		if len(tools) == MaxTools {
			s.err = &ServerError{Server: s.name, Op: "list tools", Err: fmt.Errorf("the server offers more than %d tools", MaxTools),
				Hint: "cadre offers a model at most that many of one server: configure the server to offer fewer"}
			return
		}
		t, err := newTool(s, st)
		if err != nil {
			s.err = &ServerError{Server: s.name, Op: "list tools", Err: err, Hint: unusable}
			return
		}
		tools = append(tools, t)
	}
	slices.SortFunc(tools, func(a, b *Tool) int { return strings.Compare(a.spec.Name, b.spec.Name) })
	for i := 1; i < len(tools); i++ {
		if tools[i].spec.Name == tools[i-1].spec.Name {
			s.err = &ServerError{Server: s.name, Op: "list tools",
				Err:  fmt.Errorf("the tools %q and %q both become %s", tools[i-1].remote, tools[i].remote, tools[i].spec.Name),
				Hint: "cadre cannot tell them apart; " + unusable}
			return
		}
	}
	s.tools = tools
	s.client.logger.Debug("mcp server connected", "server", s.name, "tools", len(tools))
}

// unusable is the hint of a server whose tools cadre cannot offer a model
// as they are (the server is left out, its error told).
const unusable = "have the server's maker change its tools, or take the server out of the MCP configuration"

// failure describes an error of op (connect, list tools) with what is known
// of the server: whether its process exited, its stderr, its HTTP status.
func (s *server) failure(ctx context.Context, op string, err error) *ServerError {
	se := &ServerError{Server: s.name, Op: op, Err: err}
	switch {
	case s.proc != nil:
		// The handshake fails as the process exits; give it a moment to
		// be reaped so its status can be told. (A server that never
		// answered may exit too, once the failed handshake closes its
		// stdin.)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			se.Err = fmt.Errorf("no answer within %s", s.client.cfg.ConnectTimeout)
			se.Hint = fmt.Sprintf("check that %s is an MCP server speaking on stdin and stdout", s.cfg.commandLine())
		} else if s.proc.hasExited(time.Second) {
			se.Err = fmt.Errorf("the server exited (%s) before it answered", s.proc.exitStatus())
			se.Hint = fmt.Sprintf("check that %s runs on its own and speaks MCP on stdin and stdout", s.cfg.commandLine())
		}
		se.Stderr = s.proc.stderr.String()
	case s.http != nil:
		if r := s.http.lastRefusal(); r != "" {
			se.Err = errors.New(r)
			se.Hint = httpHint(s.name, r)
		} else if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			se.Err = fmt.Errorf("no answer from %s within %s", s.cfg.URL, s.client.cfg.ConnectTimeout)
			se.Hint = httpHint(s.name, "")
		} else {
			se.Hint = httpHint(s.name, "")
		}
	}
	return se
}

// redact hides the secrets of c's Redactor in se's cause, stderr and hint.
func (c *Client) redact(se *ServerError) *ServerError {
	r := c.cfg.Redactor
	se.Err, se.Stderr, se.Hint = r.Error(se.Err), r.String(se.Stderr), r.String(se.Hint)
	return se
}

// callFailure describes a failed call of the server's tool remote.
func (s *server) callFailure(remote string, err error) error {
	return s.client.redact(s.callError(remote, err))
}

func (s *server) callError(remote string, err error) *ServerError {
	op := "call " + remote
	if s.client.isClosed() {
		return &ServerError{Server: s.name, Op: op, Err: ErrClosed}
	}
	stopped := errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	se := &ServerError{Server: s.name, Op: op, Err: err}
	if s.proc != nil && s.proc.hasExited(200*time.Millisecond) {
		stopped = true
		se.Stderr = s.proc.stderr.String()
		se.Err = fmt.Errorf("%w (%s)", ErrServerStopped, s.proc.exitStatus())
	} else if stopped {
		se.Err = fmt.Errorf("%w: %v", ErrServerStopped, err)
	}
	if stopped {
		se.Hint = fmt.Sprintf("its tools (mcp__%s__…) cannot be used for the rest of this run; carry on without them", s.name)
	} else if s.http != nil {
		if r := s.http.lastRefusal(); r != "" {
			se.Err = fmt.Errorf("%v (%s)", err, r)
		}
	}
	return se
}

// close ends the session and stops the process, once.
func (s *server) close(ctx context.Context) {
	s.closeOnce.Do(func() {
		var wg sync.WaitGroup
		if s.session != nil {
			// Ending the session closes the process's stdin, which asks
			// it to exit; for HTTP, it ends the session on the server.
			wg.Go(func() { _ = s.session.Close() })
		}
		if s.proc != nil {
			s.proc.stop(ctx, s.client.cfg.StopTimeout)
		}
		wg.Wait()
	})
}

// toolName turns a server's tool name into a cadre tool name:
// mcp__SERVER__TOOL, with characters model APIs refuse in names replaced
// by _.
func toolName(server, tool string) string {
	return "mcp__" + server + "__" + badNameChars.ReplaceAllString(tool, "_")
}

var badNameChars = regexp.MustCompile(`[^A-Za-z0-9_-]`)
