package mcp

import (
	"bytes"
	"encoding/json"
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
		filter := &responseFilter{w: &out, cancelled: map[string]bool{}}
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
