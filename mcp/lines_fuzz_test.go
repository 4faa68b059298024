package mcp

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// Whatever a client writes, each non-blank line is either passed on as one
// JSON message or answered with one parse error, in order; cancellations
// are noted without a panic.
func FuzzForwardLines(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n",
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"` + "\n" + `{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n",
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}` + "\r\n\n  \n[1,2]\nnull\n",
		"\xff\xfe{}\n",
		`{"id":{"x":1},"method":"m"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var to, out bytes.Buffer
		filter := &responseFilter{w: &out}
		if err := forwardLines(bytes.NewReader(data), &to, filter); err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, l := range strings.Split(string(data), "\n") {
			if strings.TrimSpace(l) != "" {
				want++
			}
		}
		got := 0
		for _, l := range strings.Split(to.String(), "\n") {
			if l == "" {
				continue
			}
			got++
			if !json.Valid([]byte(l)) {
				t.Fatalf("passed on a line that is not JSON: %q", l)
			}
		}
		got += strings.Count(out.String(), "-32700")
		if got != want {
			t.Fatalf("%d lines in, %d passed on or refused", want, got)
		}
	})
}

// The filter keeps the requests in flight only: cancellations of requests
// the client never sent, or that were answered, leave nothing behind (a
// client sending them by the thousand grew its memory without end), and a
// cancelled request's response is dropped while others pass.
func TestResponseFilterHoldsOnlyRequestsInFlight(t *testing.T) {
	var out bytes.Buffer
	f := &responseFilter{w: &out}
	for i := range 10000 {
		f.seen([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + strconv.Itoa(i) + `}}`))
	}
	if len(f.inFlight) != 0 {
		t.Fatalf("%d marks kept for requests never sent", len(f.inFlight))
	}
	f.seen([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`))
	f.seen([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call"}`))
	f.seen([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`))
	if _, err := f.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" + `{"jsonrpc":"2.0","id":2,"result":{}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); strings.Contains(got, `"id":1`) || !strings.Contains(got, `"id":2`) {
		t.Errorf("written: %q; want the response to 2 only", got)
	}
	if len(f.inFlight) != 0 {
		t.Errorf("%d requests still held after their responses", len(f.inFlight))
	}
	// An ID the server writes its own way ("\u0061" as "a", 1.0 as 1) is
	// the same request; IDs of other kinds are not kept.
	f.seen([]byte(`{"jsonrpc":"2.0","id":"\u0061","method":"tools/call"}`))
	f.seen([]byte(`{"jsonrpc":"2.0","id":7.0,"method":"tools/call"}`))
	f.seen([]byte(`{"jsonrpc":"2.0","id":{"k":1},"method":"tools/call"}`))
	f.seen([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}`))
	if _, err := f.Write([]byte(`{"jsonrpc":"2.0","id":"a","result":{}}` + "\n" + `{"jsonrpc":"2.0","id":7,"result":{}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); strings.Contains(got, `"id":"a"`) || !strings.Contains(got, `"id":7`) {
		t.Errorf("written: %q; want the response to 7 only", got)
	}
	if len(f.inFlight) != 0 {
		t.Errorf("%d requests still held: %v", len(f.inFlight), f.inFlight)
	}
	// A response after the call ended, and a cancellation after it, keep nothing.
	f.seen([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`))
	if len(f.inFlight) != 0 {
		t.Errorf("a cancellation of an answered request was kept")
	}
}
