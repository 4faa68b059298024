package mcp

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// headerTransport adds the configured headers to every request to a
// server, and remembers the last refusal the server sent, so an error can
// give its HTTP status and what the server said.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string

	mu      sync.Mutex
	refusal string // such as `HTTP 401 Unauthorized: "bad token"`
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode < 400 {
		return resp, err
	}
	// Read a little of the body for the message, and give the rest back.
	head := make([]byte, 300)
	n, _ := io.ReadFull(resp.Body, head)
	head = head[:n]
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(strings.NewReader(string(head)), resp.Body), resp.Body}
	msg := fmt.Sprintf("HTTP %s from %s %s", resp.Status, req.Method, req.URL.Redacted())
	if body := strings.Join(strings.Fields(strings.ToValidUTF8(string(head), "")), " "); body != "" {
		msg += fmt.Sprintf(": %q", body)
	}
	t.mu.Lock()
	t.refusal = msg
	t.mu.Unlock()
	return resp, nil
}

// lastRefusal returns the last HTTP error status the server answered
// with, or "".
func (t *headerTransport) lastRefusal() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.refusal
}

// httpHint says what to check for a refusal with this message.
func httpHint(name, refusal string) string {
	switch {
	case strings.Contains(refusal, "HTTP 401"), strings.Contains(refusal, "HTTP 403"):
		return fmt.Sprintf("check the credentials in the headers of mcpServers.%s", name)
	case strings.Contains(refusal, "HTTP 404"), strings.Contains(refusal, "HTTP 405"):
		return fmt.Sprintf("check the url of mcpServers.%s: it must be the server's streamable HTTP endpoint (often ending in /mcp)", name)
	}
	return fmt.Sprintf("check the url and headers of mcpServers.%s, and that the server is up", name)
}
