package mcp

import (
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cadre-ai/cadre"
)

// headerTransport adds the configured headers to every request to a
// server, and remembers the last refusal the server sent, so an error can
// give its HTTP status and what the server said.
//
// It also bounds a response that is one message (anything but an event
// stream, whose events the SDK bounds one by one) to maxBody bytes, 0
// meaning maxResponseBytes: the SDK reads such a body whole, and a server
// must not be able to make cadre hold as much as it sends.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	// origin is the configured URL's scheme, host and port: the headers
	// (a token, most often) go to it alone, never to where a redirect
	// leads.
	origin  string
	maxBody int64

	mu      sync.Mutex
	refusal string // such as `HTTP 401 Unauthorized: "bad token"`
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 && originOf(req.URL) == t.origin {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		limit := t.maxBody
		if limit <= 0 {
			limit = maxResponseBytes
		}
		resp.Body = &cappedBody{r: resp.Body, left: limit, limit: limit, url: req.URL.Redacted()}
	}
	if resp.StatusCode < 400 {
		return resp, nil
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

// originOf returns u's scheme, host and port, the port written even when
// it is the scheme's default.
func originOf(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// sameOriginRedirects is the redirect policy of a server's client: a
// redirect is followed only within the configured URL's origin, where the
// request (tool arguments included) was meant to go.
func sameOriginRedirects(server, origin string) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if originOf(req.URL) != origin {
			return fmt.Errorf("MCP server %s redirected to %s, away from its configured url (%s); cadre does not follow it there, since the request and the configured headers would go with it: set the server's url to where it should be reached", server, req.URL.Redacted(), origin)
		}
		if len(via) >= 10 {
			return fmt.Errorf("MCP server %s redirected 10 times; it seems to redirect in a loop", server)
		}
		return nil
	}
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

// maxResponseBytes bounds an HTTP response that is one message, as the
// SDK bounds one message of a server run as a command.
const maxResponseBytes = sdk.DefaultMaxLineLength

// cappedBody is a response body that fails once more than limit bytes are
// read from it.
type cappedBody struct {
	r     io.ReadCloser
	left  int64
	limit int64
	url   string
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more says whether the body ends at the limit.
		var one [1]byte
		if n, err := b.r.Read(one[:]); n == 0 {
			return 0, err
		}
		return 0, fmt.Errorf("the response from %s is over %s, the most cadre reads of one message from an MCP server", b.url, cadre.ByteSize(int(b.limit)))
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.r.Close() }
