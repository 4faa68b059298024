package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// rawPeer speaks JSON-RPC lines to a server over pipes, as a client that
// does not use the SDK would.
type rawPeer struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Scanner
	got chan map[string]any
}

func newRawPeer(t *testing.T, run RunFunc) *rawPeer {
	srv := NewAgentServer(AgentServerConfig{Agents: testAgents(), Run: run})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeStdio(ctx, inR, outW)
		outW.Close()
	}()
	p := &rawPeer{t: t, in: inW, out: bufio.NewScanner(outR), got: make(chan map[string]any, 100)}
	p.out.Buffer(nil, 1<<20)
	go func() {
		defer close(p.got)
		for p.out.Scan() {
			var m map[string]any
			if err := json.Unmarshal(p.out.Bytes(), &m); err != nil {
				m = map[string]any{"unparsed": p.out.Text()}
			}
			p.got <- m
		}
	}()
	t.Cleanup(func() { inW.Close(); cancel(); <-done })
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if r := p.next(); r["id"] != float64(0) || r["result"] == nil {
		t.Fatalf("initialize: %v", r)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return p
}

func (p *rawPeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// next is the next message from the server.
func (p *rawPeer) next() map[string]any {
	p.t.Helper()
	select {
	case m, ok := <-p.got:
		if !ok {
			p.t.Fatal("the server closed its output")
		}
		return m
	case <-time.After(60 * time.Second):
		p.t.Fatal("no message from the server")
	}
	return nil
}

func errorCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

// cadre mcp serve keeps to the protocol: unknown methods and malformed
// lines get the JSON-RPC errors and the server goes on; a cancelled call
// gets no response; a call with a progress token is told of its progress;
// tools carry annotations and structured output.
func TestServerConformance(t *testing.T) {
	started := make(chan struct{}, 1)
	cancelled := make(chan struct{})
	p := newRawPeer(t, func(ctx context.Context, agent, task, _ string) (string, error) {
		switch task {
		case "hang":
			started <- struct{}{}
			<-ctx.Done()
			close(cancelled)
			return "", ctx.Err()
		case "progress":
			ProgressFrom(ctx)("agent root/researcher.1 started")
			ProgressFrom(ctx)("report from root/researcher.1")
		}
		return "answer to " + task, nil
	})

	p.send(`{"jsonrpc":"2.0","id":1,"method":"no/such/method","params":{}}`)
	if r := p.next(); r["id"] != float64(1) || errorCode(r) != -32601 {
		t.Errorf("an unknown method: %v, want error -32601", r)
	}
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"`)
	if r := p.next(); errorCode(r) != -32700 {
		t.Errorf("a malformed line: %v, want error -32700", r)
	}
	p.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}`)
	r := p.next()
	if r["id"] != float64(3) || r["result"] == nil {
		t.Fatalf("the server stopped after a malformed line: %v", r)
	}
	tools := r["result"].(map[string]any)["tools"].([]any)
	for _, x := range tools {
		tl := x.(map[string]any)
		ann, _ := tl["annotations"].(map[string]any)
		if ann["readOnlyHint"] != false || ann["openWorldHint"] != true || ann["destructiveHint"] != true || tl["outputSchema"] == nil {
			t.Errorf("tool %v: annotations %v, outputSchema %v", tl["name"], ann, tl["outputSchema"])
		}
	}

	p.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"run_task","arguments":{"task":"progress"},"_meta":{"progressToken":"tok-4"}}}`)
	var notes []string
	for {
		m := p.next()
		if m["method"] == "notifications/progress" {
			params := m["params"].(map[string]any)
			if params["progressToken"] != "tok-4" {
				t.Errorf("progress for another token: %v", params)
			}
			notes = append(notes, fmt.Sprint(params["progress"], " ", params["message"]))
			continue
		}
		if m["id"] != float64(4) {
			t.Fatalf("unexpected %v", m)
		}
		res := m["result"].(map[string]any)
		if sc, _ := res["structuredContent"].(map[string]any); sc["answer"] != "answer to progress" {
			t.Errorf("structured content %v", res)
		}
		break
	}
	if strings.Join(notes, "|") != "1 agent root/researcher.1 started|2 report from root/researcher.1" {
		t.Errorf("progress notifications %q", notes)
	}

	p.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"run_task","arguments":{"task":"hang"}}}`)
	<-started
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"the user moved on"}}`)
	select {
	case <-cancelled:
	case <-time.After(60 * time.Second):
		t.Fatal("the cancelled call's run was not stopped")
	}
	p.send(`{"jsonrpc":"2.0","id":6,"method":"ping"}`)
	for {
		m := p.next()
		if m["id"] == float64(5) {
			t.Errorf("a response to the cancelled call: %v", m)
			continue
		}
		if m["id"] != float64(6) {
			t.Fatalf("unexpected %v", m)
		}
		break
	}
}
