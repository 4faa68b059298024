package postgres_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/model/scripted"
)

// terminate ends every connection to the test's database but the one it
// uses, as a restart of the server or an administrator would.
func terminate(t *testing.T, dsn string) int {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	err = c.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend') AS x`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// When every connection of the store is ended in the middle of a run (the
// server restarted, or an administrator ended them), the store makes the
// write that found its connection ended again over a new one, and the run
// goes on.
func TestRunGoesOnWhenConnectionsEnd(t *testing.T) {
	dsn, _ := schemaDSN(t)
	s := open(t, dsn)
	defer s.Close()
	ctx := context.Background()
	var once sync.Once
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent != cadre.RootID {
			once.Do(func() {
				if n := terminate(t, dsn); n == 0 {
					t.Error("no connection of the store was ended")
				}
			})
		}
		return delegate(ctx, req)
	})
	e := local.New(delegateConfig(s, m))
	id, err := e.Start(ctx, "find it", cadre.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := e.Wait(ctx, id); err != nil || res.Answer != "the answer" {
		t.Fatalf("the run: %v, status %s", err, res.Status)
	}
}

// proxy forwards connections to the server until it is stopped, as a
// server that goes away and comes back at the same address would.
type proxy struct {
	t      *testing.T
	addr   string // where it listens
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	p := &proxy{t: t, target: target}
	p.start("127.0.0.1:0")
	t.Cleanup(p.stop)
	return p
}

func (p *proxy) start(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			p.wg.Go(func() { io.Copy(up, c); up.Close() })
			p.wg.Go(func() { io.Copy(c, up); c.Close() })
		}
	})
}

// stop closes the listener and every connection, and waits for them.
func (p *proxy) stop() {
	p.mu.Lock()
	if p.ln != nil {
		p.ln.Close()
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

// When the server goes away in the middle of a run, the run stops: it
// fails, saying that the connection to PostgreSQL was lost and how to
// carry the run on; once the server is back, a resume completes it.
func TestRunStopsWhenServerGoesAway(t *testing.T) {
	dsn, _ := schemaDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Skip("CADRE_TEST_POSTGRES is not a URL")
	}
	p := newProxy(t, u.Host)
	u.Host = p.addr
	s := open(t, u.String())
	defer s.Close()
	ctx := context.Background()
	var once sync.Once
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent != cadre.RootID {
			once.Do(p.stop)
		}
		return delegate(ctx, req)
	})
	cfg := delegateConfig(s, m)
	cfg.LeaseTTL = time.Second // the lease cannot be released while the server is away
	e := local.New(cfg)
	id, err := e.Start(ctx, "find it", cadre.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Wait(ctx, id)
	re, ok := errors.AsType[*cadre.RunError](err)
	if !ok || res.Status != cadre.StatusFailed {
		t.Fatalf("the run: %v, status %s; want it failed", err, res.Status)
	}
	t.Logf("the run stopped: %s", re.Reason)
	for _, want := range []string{"store failed", "the connection to PostgreSQL at " + p.addr, "was lost", "cadre resume " + id} {
		if !strings.Contains(re.Reason, want) {
			t.Errorf("the reason lacks %q", want)
		}
	}
	p.start(p.addr)
	cfg = delegateConfig(s, scripted.Func(delegate))
	cfg.LeaseTTL = time.Second
	again := local.New(cfg)
	// The stopped run's lease could not be released: it expires.
	deadline := time.Now().Add(time.Minute)
	for {
		err = again.Resume(ctx, id)
		if !errors.Is(err, cadre.ErrRunOwned) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if res, err := again.Wait(ctx, id); err != nil || res.Answer != "the answer" {
		t.Fatalf("the resumed run: %v, status %s", err, res.Status)
	}
}
