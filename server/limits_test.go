package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
)

// waitUntil polls cond until it holds, failing after failsafe.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(failsafe)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStalledBody sends requests whose body stops halfway, to a route that
// reads it and to ones that do not: the server closes each connection once
// the body's time is up instead of keeping it open.
func TestStalledBody(t *testing.T) {
	f := newFixture(t, fixtureOptions{token: "tok", bodyTimeout: 50 * time.Millisecond})
	addr := strings.TrimPrefix(f.srv.URL, "http://")
	for _, c := range []struct{ name, path, auth string }{
		{"read by the handler", "/api/runs", "tok"},
		{"refused without the token", "/api/runs", ""},
		{"no route", "/api/nothing", "tok"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// The failsafe only turns a connection kept open into a failure.
			conn.SetReadDeadline(time.Now().Add(failsafe))
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"task\": ", c.path, addr, c.auth)
			_, err = io.ReadAll(conn)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the connection with a stalled body is still open after %s", failsafe)
			}
		})
	}
}

// TestSlowStreamReader opens an event stream and stops reading it: the
// server drops the stream once a write cannot go out in time, instead of
// blocking on it for ever.
func TestSlowStreamReader(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	f := newFixture(t, fixtureOptions{
		writeTimeout: 50 * time.Millisecond,
		// Every event is sent as a megabyte, so the socket's buffers fill.
		redact: func(ev cadre.Event) cadre.Event {
			ev.Type, ev.Data = cadre.EventWarning, cadre.Warning{Message: big}
			return ev
		},
	})
	id := f.start(RunRequest{Task: "Write the report."})
	f.waitFor(id, "seven agents", func(v *runView) bool { return len(v.Tree.Agents) == 7 })

	conn, err := net.Dial("tcp", strings.TrimPrefix(f.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/runs/%s/events HTTP/1.1\r\nHost: %s\r\n\r\n", id, strings.TrimPrefix(f.srv.URL, "http://"))
	waitUntil(t, "the stream to open", func() bool { return f.server.streams.Load() == 1 })
	// Read nothing: the server's writes stall, and the stream is dropped.
	waitUntil(t, "the stream of a client that does not read to be dropped", func() bool { return f.server.streams.Load() == 0 })
}

// TestStreamLimit checks that the server serves at most MaxStreams event
// streams at once and refuses more with a 503 that says why.
func TestStreamLimit(t *testing.T) {
	f := newFixture(t, fixtureOptions{maxStreams: 2})
	id := f.start(RunRequest{Task: "Write the report."})
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	first, cancelFirst := context.WithCancel(ctx)
	res1 := f.stream(first, id, "")
	defer res1.Body.Close()
	res2 := f.stream(ctx, id, "")
	defer res2.Body.Close()

	var e struct{ Error string }
	if st := f.do("GET", "/api/runs/"+id+"/events", nil, &e); st != http.StatusServiceUnavailable || !strings.Contains(e.Error, "2 event streams open") {
		t.Errorf("a third stream: %d %q, want 503 saying how many are open", st, e.Error)
	}
	// Once one closes, another may open.
	cancelFirst()
	res1.Body.Close()
	waitUntil(t, "the first stream to close", func() bool { return f.server.streams.Load() == 1 })
	res3 := f.stream(ctx, id, "")
	res3.Body.Close()
}
