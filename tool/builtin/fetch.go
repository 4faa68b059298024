package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/tool"
)

// WebFetch is the web_fetch tool: it GETs an http or https URL and returns
// the status and the body as text, HTML reduced to its text. It does not
// mutate anything.
//
// It connects only to public addresses: the address of every connection,
// the first and those of redirects, is checked after the host name is
// resolved, and a loopback, private, link-local, metadata or other
// non-public address is refused with a *RefusedError unless a FetchRule of
// Options.FetchAllow allows it. It uses no proxy, whatever the environment
// says. (A client given as Options.HTTPClient replaces all of this.)
type WebFetch struct {
	client *http.Client
	guard  *guard // nil with Options.HTTPClient
	opts   Options
}

var _ cadre.Tool = (*WebFetch)(nil)

// NewWebFetch returns the web_fetch tool, using opts.HTTPClient when set.
func NewWebFetch(opts Options) *WebFetch {
	opts = opts.withDefaults()
	var g *guard
	c := &http.Client{}
	if opts.HTTPClient != nil {
		cc := *opts.HTTPClient // a copy, to add the redirect check below
		c = &cc
	} else {
		g = newGuard(opts.FetchAllow, opts.Resolver, opts.FetchAllowWhere, opts.FetchTimeout)
		c.Transport = &http.Transport{
			Proxy:                 nil, // a proxy would connect where the guard cannot see
			DialContext:           g.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          10,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		}
	}
	next := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
			return &redirectError{to: req.URL.Redacted(), why: "which is not an http or https URL: only those are fetched"}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= maxRedirects {
			return &redirectError{to: req.URL.Redacted(), why: fmt.Sprintf("after %d redirects already; it seems to redirect in a loop", len(via))}
		}
		return nil
	}
	return &WebFetch{client: c, guard: g, opts: opts}
}

// maxRedirects is how many redirects web_fetch follows, as net/http does.
const maxRedirects = 10

// A redirectError is a redirect web_fetch does not follow.
type redirectError struct{ to, why string }

func (e *redirectError) Error() string { return "it redirects to " + e.to + ", " + e.why }

type fetchArgs struct {
	URL string `json:"url"`
}

// Spec implements cadre.Tool.
func (t *WebFetch) Spec() cadre.ToolSpec {
	return cadre.ToolSpec{
		Name: NameWebFetch,
		Description: fmt.Sprintf("Fetch a web page or file with an HTTP GET and return the status line and the body as text; HTML is reduced to its text. "+
			"Only http and https URLs on the public internet: local and private network addresses are refused unless the user allowed them. At most %d bytes of the body are read, and the request is abandoned after %d seconds.",
			t.opts.MaxFetchBytes, int(t.opts.FetchTimeout.Seconds())),
		Parameters: json.RawMessage(`{
	"type": "object",
	"properties": {
		"url": {"type": "string", "description": "The http:// or https:// URL to fetch."}
	},
	"required": ["url"],
	"additionalProperties": false
}`),
	}
}

// Call implements cadre.Tool.
func (t *WebFetch) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	a, err := tool.Decode[fetchArgs](t.Spec(), raw)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(strings.TrimSpace(a.URL))
	if err != nil {
		return "", fmt.Errorf("web_fetch: %q is not a valid URL: %w", a.URL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("web_fetch: %q is not an http or https URL: only those can be fetched", a.URL)
	}
	if u.Host == "" {
		return "", fmt.Errorf("web_fetch: %q has no host: give a full URL such as https://example.com/page", a.URL)
	}
	ctx, cancel := context.WithTimeout(ctx, t.opts.FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("web_fetch: %w", err)
	}
	req.Header.Set("User-Agent", t.opts.UserAgent)
	req.Header.Set("Accept", "text/html, text/plain, text/markdown, application/json, */*;q=0.5")
	resp, err := t.client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("web_fetch: %s did not answer within %s", u.Redacted(), t.opts.FetchTimeout)
		}
		var re *redirectError
		if errors.As(err, &re) {
			return "", fmt.Errorf("web_fetch: %s was not fetched: %v", u.Redacted(), re)
		}
		var refused *RefusedError
		if errors.As(err, &refused) {
			var ue *url.Error
			if errors.As(err, &ue) && ue.URL != u.String() {
				return "", fmt.Errorf("web_fetch: %s was not fetched: it redirects to %s, and %v", u.Redacted(), redactedURL(ue.URL), refused)
			}
			return "", fmt.Errorf("web_fetch: %s was not fetched: %v", u.Redacted(), refused)
		}
		return "", fmt.Errorf("web_fetch: GET %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, t.opts.MaxFetchBytes+1))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("web_fetch: %s did not send its whole answer within %s", u.Redacted(), t.opts.FetchTimeout)
		}
		return "", fmt.Errorf("web_fetch: read the answer of %s: %w", u.Redacted(), err)
	}
	cut := int64(len(body)) > t.opts.MaxFetchBytes
	if cut {
		body = body[:t.opts.MaxFetchBytes]
	}

	ctype := resp.Header.Get("Content-Type")
	if ctype == "" {
		ctype = http.DetectContentType(body)
	}
	media, params, _ := mime.ParseMediaType(ctype)
	text := decodeText(body, params["charset"])
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", resp.Proto, resp.Status)
	if final := resp.Request.URL.String(); final != u.String() {
		fmt.Fprintf(&b, "URL: %s\n", resp.Request.URL.Redacted())
	}
	fmt.Fprintf(&b, "Content-Type: %s\n\n", ctype)
	switch {
	case media == "text/html" || media == "application/xhtml+xml":
		b.WriteString(htmlText(text))
	case isText(media):
		b.WriteString(text)
	default:
		fmt.Fprintf(&b, "(%s of %s content, not shown)", plural(len(body), "byte"), media)
	}
	if cut {
		fmt.Fprintf(&b, "\n\n(the body was cut at %d bytes)", t.opts.MaxFetchBytes)
	}
	out := b.String()
	if resp.StatusCode >= 400 {
		return "", fmt.Errorf("web_fetch: %s answered %s:\n%s", u.Redacted(), resp.Status, out)
	}
	return out, nil
}

// redactedURL is s without the password of its userinfo.
func redactedURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return s
}

func isText(media string) bool {
	if strings.HasPrefix(media, "text/") {
		return true
	}
	switch media {
	case "application/json", "application/xml", "application/javascript", "application/x-yaml",
		"application/yaml", "application/toml", "application/x-sh", "application/ld+json":
		return true
	}
	return strings.HasSuffix(media, "+json") || strings.HasSuffix(media, "+xml")
}

// decodeText turns a body in charset into valid UTF-8. It knows UTF-8 and
// the Latin-1 family (ISO-8859-1, Windows-1252, ASCII); other bytes that
// are not UTF-8 become U+FFFD.
func decodeText(body []byte, charset string) string {
	switch strings.ToLower(charset) {
	case "iso-8859-1", "iso8859-1", "latin1", "l1", "windows-1252", "cp1252", "us-ascii", "ascii":
		// The bytes 0x80-0x9f of Windows-1252, which pages labelled
		// ISO-8859-1 use too; the five unassigned ones stay C1 controls.
		cp1252 := [32]rune{
			'€', 0x81, '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', 0x8d, 'Ž', 0x8f,
			0x90, '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', 0x9d, 'ž', 'Ÿ',
		}
		var b strings.Builder
		b.Grow(len(body))
		for _, c := range body {
			switch {
			case c >= 0x80 && c < 0xa0:
				b.WriteRune(cp1252[c-0x80])
			default:
				b.WriteRune(rune(c))
			}
		}
		return b.String()
	}
	return strings.ToValidUTF8(string(body), "\uFFFD")
}
