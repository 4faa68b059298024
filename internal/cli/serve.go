package cli

import (
	"context"
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
	run    runFlags
	listen string
	token  string
	hosts  []string
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

The first line on stdout is the page's address. The run flags (--model,
--approve, the limits…) are the defaults of the runs started here; a request
may choose its own model, root agent, limits and approval mode. Approvals of
writes and commands (--approve ask, the default) wait for an answer on the page.

cadre serve listens on 127.0.0.1 unless --listen says otherwise; any other
address needs a token (--token or CADRE_TOKEN), which every request must carry:
open the page once as http://ADDRESS/?token=TOKEN, or send the header
"Authorization: Bearer TOKEN".`,
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
	fl.StringVar(&f.token, "token", "", "token every request must carry; needed to listen beyond this machine (env CADRE_TOKEN)")
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
	fmt.Fprintln(a.io.Stdout, hs.url)
	fmt.Fprintf(a.io.Stderr, "cadre: serving runs at %s (Ctrl+C stops)\n", hs.url)
	if token != "" {
		fmt.Fprintf(a.io.Stderr, "cadre: open %s?token=… with the token once; the browser keeps it\n", hs.url)
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

// serveOn starts serving h on ln.
func serveOn(ln net.Listener, h http.Handler) *httpServer {
	base, cancel := context.WithCancel(context.Background())
	hs := &httpServer{
		srv:    &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return base }},
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
