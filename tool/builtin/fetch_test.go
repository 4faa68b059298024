package builtin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func fetchServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("hello " + r.UserAgent()))
	})
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<html><head><title>T</title><style>p{}</style></head><body><h1>Head &amp; more</h1><p>One <b>two</b></p><script>alert(1)</script><ul><li>a</li><li>b</li></ul></body></html>`))
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"a":1}`))
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such page", http.StatusNotFound)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(strings.Repeat("0123456789", 100)))
	})
	mux.HandleFunc("/binary", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n...."))
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/text", http.StatusFound)
	})
	mux.HandleFunc("/to-file", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=ISO-8859-1")
		w.Write([]byte("<p>caf\xe9 \x93quoted\x94</p>"))
	})
	mux.HandleFunc("/broken-utf8", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok \xff\xfe end"))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // answers only when the client gives up
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestWebFetch(t *testing.T) {
	srv := fetchServer(t)
	// web_fetch's own client, which refuses local addresses unless allowed.
	allow := rules(t, strings.TrimPrefix(srv.URL, "http://"))
	wf := NewWebFetch(Options{FetchAllow: allow, UserAgent: "tester"})
	small := NewWebFetch(Options{FetchAllow: allow, MaxFetchBytes: 10})
	quick := NewWebFetch(Options{FetchAllow: allow, FetchTimeout: 200 * time.Millisecond})
	tests := []struct {
		name    string
		tool    *WebFetch
		url     string
		want    string
		wantErr string
	}{
		{name: "text", url: srv.URL + "/text", want: "HTTP/1.1 200 OK\nContent-Type: text/plain; charset=utf-8\n\nhello tester"},
		{name: "html", url: srv.URL + "/page", want: "HTTP/1.1 200 OK\nContent-Type: text/html\n\nT\n\n# Head & more\n\nOne two\n\n- a\n- b\n"},
		{name: "json", url: srv.URL + "/json", want: "HTTP/1.1 200 OK\nContent-Type: application/json\n\n{\"a\":1}"},
		{name: "size_cap", tool: small, url: srv.URL + "/big", want: "HTTP/1.1 200 OK\nContent-Type: text/plain\n\n0123456789\n\n(the body was cut at 10 bytes)"},
		{name: "binary", url: srv.URL + "/binary", want: "HTTP/1.1 200 OK\nContent-Type: image/png\n\n(12 bytes of image/png content, not shown)"},
		{name: "redirect", url: srv.URL + "/moved", want: "HTTP/1.1 200 OK\nURL: " + srv.URL + "/text\nContent-Type: text/plain; charset=utf-8\n\nhello tester"},
		{name: "latin1", url: srv.URL + "/latin1", want: "HTTP/1.1 200 OK\nContent-Type: text/html; charset=ISO-8859-1\n\ncafé “quoted”\n"},
		{name: "invalid_utf8", url: srv.URL + "/broken-utf8", want: "HTTP/1.1 200 OK\nContent-Type: text/plain; charset=utf-8\n\nok \uFFFD end"},
		{name: "redirect_to_file", url: srv.URL + "/to-file",
			wantErr: "web_fetch: " + srv.URL + "/to-file was not fetched: it redirects to file:///etc/passwd, which is not an http or https URL"},
		{name: "redirect_loop", url: srv.URL + "/loop", wantErr: "after 10 redirects already; it seems to redirect in a loop"},
		{name: "not_found", url: srv.URL + "/missing", wantErr: "answered 404 Not Found:\nHTTP/1.1 404 Not Found\nContent-Type: text/plain; charset=utf-8\n\nno such page"},
		{name: "time_cap", tool: quick, url: srv.URL + "/slow", wantErr: "did not answer within 200ms"},
		{name: "file_scheme", url: "file:///etc/passwd", wantErr: "is not an http or https URL"},
		{name: "ftp_scheme", url: "ftp://example.com/x", wantErr: "is not an http or https URL"},
		{name: "no_host", url: "http:///path", wantErr: "has no host"},
		{name: "not_a_url", url: "http://[::1", wantErr: "is not a valid URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := tt.tool
			if tl == nil {
				tl = wf
			}
			got, err := call(t, tl, map[string]any{"url": tt.url})
			checkResult(t, got, err, tt.want, tt.wantErr)
		})
	}
}

type countingTransport struct {
	n    atomic.Int32
	next http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// A client given in the options is used as it is: it decides where it
// connects, so the loopback test server is reached without a rule.
func TestWebFetchUsesInjectedClient(t *testing.T) {
	srv := fetchServer(t)
	tr := &countingTransport{next: srv.Client().Transport}
	var redirects atomic.Int32
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		redirects.Add(1)
		return nil
	}}
	wf := NewWebFetch(Options{HTTPClient: client})
	if _, err := call(t, wf, map[string]any{"url": srv.URL + "/moved"}); err != nil {
		t.Fatal(err)
	}
	if tr.n.Load() != 2 || redirects.Load() != 1 {
		t.Errorf("the injected client made %d requests and checked %d redirects, want 2 and 1", tr.n.Load(), redirects.Load())
	}
	// The client is used, not changed: a refused scheme is web_fetch's own
	// check, on a copy.
	if _, err := call(t, wf, map[string]any{"url": srv.URL + "/to-file"}); err == nil || !strings.Contains(err.Error(), "not an http or https URL") {
		t.Errorf("redirect to file: %v", err)
	}
	if err := client.CheckRedirect(nil, nil); err != nil || redirects.Load() != 2 {
		t.Errorf("the injected client's CheckRedirect was replaced")
	}
}

func TestHTMLText(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "plain", in: "just text", want: "just text\n"},
		{name: "entities", in: "<p>a &lt;b&gt; &amp; &quot;c&quot; &#233;&nbsp;d</p>", want: "a <b> & \"c\" é d\n"},
		{name: "comments_and_doctype", in: "<!DOCTYPE html><!-- hidden --><p>shown</p>", want: "shown\n"},
		{name: "script_case", in: "<SCRIPT type=x>var a = '<p>';</SCRIPT >after", want: "after\n"},
		{name: "quoted_gt", in: `<a title="x > y" href="/">link</a>`, want: "link\n"},
		{name: "lone_lt", in: "a < b and c<d", want: "a < b and c<d\n"},
		{name: "table", in: "<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>", want: "a b\n\nc\n"},
		{name: "whitespace", in: "<div>  many   \n\n\n spaces </div>\n\n\n\n<div>x</div>", want: "many\n\nspaces\n\nx\n"},
		{name: "unclosed_script", in: "before<script>never closed", want: "before\n"},
		{name: "unclosed_tag", in: "text <a href=", want: "text <a href=\n"},
		{name: "heading_levels", in: "<h2>Sub</h2><h3>Subsub</h3>", want: "## Sub\n\n### Subsub\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := htmlText(tt.in); got != tt.want {
				t.Errorf("htmlText(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzHTMLText(f *testing.F) {
	f.Add("<p>a<script>b</script><!-- c")
	f.Add("<a href='>'>x</a><li>y<h1>z")
	f.Fuzz(func(t *testing.T, s string) {
		_ = htmlText(s) // must not panic
	})
}

func BenchmarkHTMLText(b *testing.B) {
	page := "<html><head><script>var x = '<div>';</script></head><body>" +
		strings.Repeat(`<div class="row"><h2>Title &amp; more</h2><p>Some <a href="/x?a=1&amp;b=2">linked</a> text, 3 < 4.</p><ul><li>one</li><li>two</li></ul></div>`, 2000) +
		"</body></html>"
	stray := strings.Repeat(`<a "`, 250_000) + ">" // stray quotes and tags, 1 MB
	for _, c := range []struct{ name, doc string }{{"page", page}, {"stray_quotes", stray}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.doc)))
			for b.Loop() {
				htmlText(c.doc)
			}
		})
	}
}
