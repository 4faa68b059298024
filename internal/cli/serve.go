package cli

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/server"
)

// DefaultListen is the address cadre serve listens on.
const DefaultListen = "127.0.0.1:7788"

// serveFlags are the flags of cadre serve: those of cadre run that choose
// how runs are made, and the server's own.
type serveFlags struct {
	run     runFlags
	listen  string
	token   string
	noToken bool
	hosts   []string
}

func (a *app) newServeCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve a web page and an HTTP API to start, watch and steer runs",
		Long: `Serve cadre on a local address: a web page that lists the runs, starts new
ones and shows each run's agent tree live (stop any agent, answer questions and
approvals), a JSON API for other programs (described at /api/openapi.json), and
each run's events as Server-Sent Events.

Every request must carry the server's token, since whoever can start a run
can run commands as you: give one with --token or CADRE_TOKEN, or cadre serve
makes a random one. The first line on stdout is the page's address to open,
with the token it made after #token= (a token you gave is not printed).
Programs send the header "Authorization: Bearer TOKEN".

The run flags (--model, --approve, the limits…) are the settings of the runs
started here, and the most a request may ask for: a request may choose its
own model and root agent, a stricter approval mode and smaller limits, never
looser ones. Approvals of writes and commands (--approve ask, the default)
wait for an answer on the page.

cadre serve listens on 127.0.0.1 unless --listen says otherwise. --no-token
serves without a token, on a loopback address only; then any user or
program of this machine can run commands as you.`,
		Example: `  cadre serve --model openai:gpt-4o-mini
  cadre serve --listen 127.0.0.1:0 --model ollama:llama3.2
  CADRE_TOKEN=$(openssl rand -hex 16) cadre serve --listen 0.0.0.0:7788 --host devbox.lan -m openai:gpt-4o`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.flagConfig(&f.run)
			if err != nil {
				return err
			}
			return a.serve(cmd.Context(), cfg, &f)
		},
	}
	f.run.register(cmd)
	for _, name := range []string{"json", "no-tree", "resume", "serve"} {
		_ = cmd.Flags().MarkHidden(name)
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", DefaultListen, "address to listen on, host:port (port 0 picks a free one)")
	fl.StringVar(&f.token, "token", "", "token every request must carry (prefer env CADRE_TOKEN: other users can read a command's arguments); without one, a random token is made")
	fl.BoolVar(&f.noToken, "no-token", false, "serve without a token, on a loopback address only: any user or program of this machine can then run commands as you")
	fl.StringArrayVar(&f.hosts, "host", nil, "a host name the server is reached by, besides localhost and IP addresses (repeatable)")
	return cmd
}

// serve runs the server until ctx ends or the user presses Ctrl+C; then it
// stops the runs it started, which can be resumed later.
func (a *app) serve(ctx context.Context, cfg *config, f *serveFlags) error {
	if cfg.Model == "" {
		return errNoModel
	}
	if f.run.json || f.run.noTree || f.run.resume || f.run.serve != "" {
		return errors.New("cadre serve shows runs on its page: --json, --no-tree, --resume and --serve are for cadre run")
	}
	token := cmpOr(f.token, a.io.Getenv("CADRE_TOKEN"))
	if f.token != "" {
		// Every user of the machine can read a process's arguments.
		fmt.Fprintln(a.io.Stderr, tokenFlagWarning)
	}
	made := false
	switch {
	case f.noToken && token != "":
		return errors.New("--no-token serves without a token, but one is given (--token or CADRE_TOKEN): drop one or the other")
	case f.noToken:
		if err := checkLoopback("--no-token", f.listen); err != nil {
			return err
		}
	case token == "":
		var err error
		if token, err = newToken(); err != nil {
			return err
		}
		made = true
	}
	if err := checkListen(f.listen, token); err != nil {
		return err
	}
	w, err := a.wire(ctx, cfg, &console{w: a.io.Stderr})
	if err != nil {
		return err
	}
	defer w.close()

	set := newEngineSet(w.engine)
	approvals := &server.Approvals{}
	srv := server.New(set, w.displayStore(), server.Options{
		Start:      a.runStarter(cfg, w, set, approvals),
		Approvals:  approvals,
		Token:      token,
		Hosts:      f.hosts,
		Redact:     func(ev cadre.Event) cadre.Event { return redactEvent(w.redact, ev) },
		RedactText: w.redact.String,
		Logger:     w.engine.Logger,
	})
	hs, err := listen(f.listen, srv)
	if err != nil {
		return err
	}
	open := hs.url
	if made {
		open = pageLink(hs.url, token)
	}
	fmt.Fprintln(a.io.Stdout, open)
	fmt.Fprintf(a.io.Stderr, "cadre: serving runs at %s (Ctrl+C stops)\n", hs.url)
	switch {
	case made:
		fmt.Fprintf(a.io.Stderr, "cadre: open %s\ncadre: its token lets whoever holds it run commands as you; programs send it as \"Authorization: Bearer TOKEN\"\n", open)
	case token != "":
		fmt.Fprintf(a.io.Stderr, "cadre: open %s#token=TOKEN with the token (--token or CADRE_TOKEN), or send it as \"Authorization: Bearer TOKEN\"\n", hs.url)
	default:
		fmt.Fprintln(a.io.Stderr, noTokenWarning)
	}

	stop := ctx.Done()
	select {
	case <-stop:
	case <-a.io.Interrupts:
		fmt.Fprintln(a.io.Stderr, "cadre: stopping the server; runs still going are cancelled (cadre resume carries them on)")
	case err = <-hs.failed:
	}
	hs.close()
	set.close("the server stopped")
	return err
}

// tokenFlagWarning is what cadre says when the token is given as --token.
const tokenFlagWarning = "cadre: warning: a token given with --token can be read by every user of this machine in its process list " +
	"(ps), and whoever has it can run commands as you: give it in CADRE_TOKEN instead, or let cadre serve make one"

// noTokenWarning is what cadre says when it serves without a token.
const noTokenWarning = "cadre: warning: serving without a token (--no-token): any user or program of this machine can start runs here, and so run commands as you"

// newToken makes a random token: 32 bytes from crypto/rand, URL-safe.
func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make the server's token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// pageLink is the address of a page of the server with the token to open
// it with, in the fragment, which the browser does not send: the page
// takes it from there.
func pageLink(page, token string) string {
	return page + "#token=" + token
}

// checkLoopback refuses an address beyond this machine for what (a flag
// that turns the token off).
func checkLoopback(what, addr string) error {
	if err := checkListen(addr, ""); err != nil {
		return fmt.Errorf("%s is only for an address of this machine (127.0.0.1 or localhost), which --listen %s is not: drop %s and let cadre serve make a token", what, addr, what)
	}
	return nil
}

// checkListen refuses an address beyond this machine without a token.
func checkListen(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %s is not an address: write it as host:port, such as %s", addr, DefaultListen)
	}
	if token != "" || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--listen %s reaches beyond this machine, so the server needs a token: pass --token or set CADRE_TOKEN (for example to the output of openssl rand -hex 16)", addr)
}

// httpServer is a listening HTTP server.
type httpServer struct {
	srv    *http.Server
	url    string
	cancel context.CancelFunc // ends the requests' contexts, event streams too
	failed chan error         // receives Serve's error, if it stops by itself
	done   chan struct{}
}

// listen starts serving h on addr.
func listen(addr string, h http.Handler) (*httpServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w (choose another address with --listen, or port 0 for a free one)", addr, err)
	}
	return serveOn(ln, h), nil
}

// Bounds of the server's connections: the time to send a request's
// headers, and how long a kept-alive connection may wait for the next
// request. Bodies and event streams are bounded by the server package
// (server.Options).
const (
	headerTimeout = 10 * time.Second
	idleTimeout   = 2 * time.Minute
)

// serveOn starts serving h on ln.
func serveOn(ln net.Listener, h http.Handler) *httpServer {
	base, cancel := context.WithCancel(context.Background())
	hs := &httpServer{
		srv: &http.Server{Handler: h, ReadHeaderTimeout: headerTimeout, IdleTimeout: idleTimeout,
			BaseContext: func(net.Listener) context.Context { return base }},
		url:    "http://" + urlHost(ln.Addr().String()) + "/",
		cancel: cancel,
		failed: make(chan error, 1),
		done:   make(chan struct{}),
	}
	go func() {
		defer close(hs.done)
		if err := hs.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			hs.failed <- fmt.Errorf("serve on %s: %w", ln.Addr(), err)
		}
	}()
	return hs
}

// urlHost is the host:port to show for a listening address: an address
// of every interface is shown as this machine's loopback.
func urlHost(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// close stops the server: event streams end, other requests get a few
// seconds to finish.
func (hs *httpServer) close() {
	hs.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.srv.Shutdown(ctx); err != nil {
		hs.srv.Close()
	}
	<-hs.done
}

// displayStore is the store as the server shows it: journals redacted too,
// since the server only reads them.
func (w *wiring) displayStore() cadre.Store {
	if rs, ok := w.store.(*redactStore); ok {
		c := *rs
		c.journal = true
		return &c
	}
	return w.store
}
