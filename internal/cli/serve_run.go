package cli

import (
	"context"
	"fmt"
	"net"

	"github.com/spf13/cobra"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/server"
	"github.com/cadre-ai/cadre/tool"
)

// registerServe adds --serve to cadre run.
func (f *runFlags) registerServe(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.serve, "serve", "", "serve the run's live page and API at this address while it runs (--serve alone: "+DefaultListen+"); requests carry CADRE_TOKEN, or a random token printed with the page's address")
	fl.Lookup("serve").NoOptDefVal = DefaultListen
}

// runPage serves the page of the one run cadre run --serve runs: the
// address is taken before the run starts, the page is served once it has
// an ID, and it stops when the run has ended.
type runPage struct {
	a         *app
	con       *console
	ln        net.Listener
	token     string
	made      bool // the token was made here, and is shown with the address
	approvals *server.Approvals
	id        string
	ready     chan struct{} // closed once id is set
	hs        *httpServer
}

// prepareRunPage takes the page's address, when --serve asks for one.
// Without a terminal to ask on, the run's questions and approvals wait for
// answers from the page; with one, the terminal asks, and the page may
// answer the root's questions first.
func (a *app) prepareRunPage(f *runFlags, w *wiring, con *console) (*runPage, error) {
	if f.serve == "" {
		return nil, nil
	}
	token, made := a.io.Getenv("CADRE_TOKEN"), false
	if token == "" {
		var err error
		if token, err = newToken(); err != nil {
			return nil, err
		}
		made = true
	}
	if err := checkListen(f.serve, token); err != nil {
		return nil, fmt.Errorf("--serve: %w", err)
	}
	ln, err := net.Listen("tcp", f.serve)
	if err != nil {
		return nil, fmt.Errorf("--serve %s: %w (choose another address, or port 0 for a free one)", f.serve, err)
	}
	p := &runPage{a: a, con: con, ln: ln, token: token, made: made, approvals: &server.Approvals{}, ready: make(chan struct{})}
	if !con.canAsk() {
		if w.approver != nil && w.approver.Prompt == nil {
			w.approver.Prompt = func(ctx context.Context, req tool.ApprovalRequest) (bool, error) {
				select {
				case <-p.ready:
				case <-ctx.Done():
					return false, context.Cause(ctx)
				}
				return p.approvals.Prompt(p.id)(ctx, req)
			}
		}
		if w.engine.AskUser == nil {
			w.engine.AskUser = local.AwaitAnswer
		}
	}
	return p, nil
}

// serve starts serving the run's page.
func (p *runPage) serve(eng cadre.Engine, w *wiring, id string) {
	if p == nil {
		return
	}
	p.id = id
	close(p.ready)
	srv := server.New(eng, w.displayStore(), server.Options{
		Approvals:  p.approvals,
		Token:      p.token,
		Redact:     func(ev cadre.Event) cadre.Event { return redactEvent(w.redact, ev) },
		RedactText: w.redact.String,
		Logger:     w.engine.Logger,
	})
	p.hs = serveOn(p.ln, srv)
	page := p.hs.url + "runs/" + id
	if p.made {
		page = pageLink(page, p.token)
	}
	p.con.println(fmt.Sprintf("cadre: watch and steer this run at %s", page))
}

// close stops the page.
func (p *runPage) close() {
	if p == nil {
		return
	}
	if p.hs != nil {
		p.hs.close()
		return
	}
	p.ln.Close()
}
