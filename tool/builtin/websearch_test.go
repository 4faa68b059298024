package builtin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// searxngServer answers like a SearXNG instance's /search?format=json.
func searxngServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/search" || r.URL.Query().Get("format") != "json" {
			http.Error(w, "Forbidden", http.StatusForbidden) // what SearXNG says when json is off
			return
		}
		q := r.URL.Query().Get("q")
		w.Header().Set("Content-Type", "application/json")
		// The shape of SearXNG's answer, fields it adds besides.
		json.NewEncoder(w).Encode(map[string]any{
			"query":             q,
			"number_of_results": 0,
			"results": []map[string]any{
				{"url": "https://go.dev/doc/", "title": "Documentation - The Go Programming Language", "content": "The Go programming   language is an open source project.", "engine": "duckduckgo", "engines": []string{"duckduckgo", "brave"}, "score": 2.5, "category": "general"},
				{"url": "https://pkg.go.dev/std", "title": "Standard library", "content": "Packages of " + q, "engine": "google", "score": 1.2},
				{"url": "https://example.org/go", "title": "", "content": "", "engine": "bing"},
			},
			"answers": []any{}, "corrections": []any{}, "infoboxes": []any{}, "suggestions": []string{"golang tutorial"}, "unresponsive_engines": []any{},
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// braveServer answers like the Brave Search API's web search.
func braveServer(t *testing.T, token string) (*httptest.Server, *http.Request) {
	var seen http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = *r.Clone(context.Background())
		if r.Header.Get("X-Subscription-Token") != token {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"type":"ErrorResponse","error":{"id":"x","status":401,"code":"SUBSCRIPTION_TOKEN_INVALID","detail":"The provided subscription token is invalid."}}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"type":"search","query":{"original":"` + r.URL.Query().Get("q") + `","more_results_available":true},
"mixed":{"type":"mixed","main":[{"type":"web","index":0,"all":false}]},
"web":{"type":"search","results":[
 {"title":"The <strong>Go</strong> Programming Language","url":"https://go.dev/","is_source_local":false,"description":"<strong>Go</strong> is an open source programming language &amp; more.","profile":{"name":"Go"},"language":"en","family_friendly":true,"type":"search_result"},
 {"title":"golang/go","url":"https://github.com/golang/go","description":"The Go programming language","type":"search_result"},
 {"title":"Blog","url":"https://blog.golang.org/x","description":"news","type":"search_result"}
],"family_friendly":true}}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func callSearch(t *testing.T, tl *WebSearch, args string) (string, error) {
	t.Helper()
	return tl.Call(t.Context(), json.RawMessage(args))
}

func TestWebSearchSearXNG(t *testing.T) {
	srv := searxngServer(t)
	tl := NewWebSearch(SearchBackend{Provider: SearchSearXNG, URL: srv.URL + "/"})
	out, err := callSearch(t, tl, `{"query":"go stdlib"}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`Results for "go stdlib"`,
		"1. Documentation - The Go Programming Language\n   https://go.dev/doc/\n   The Go programming language is an open source project.",
		"2. Standard library\n   https://pkg.go.dev/std\n   Packages of go stdlib",
		"3. https://example.org/go\n   https://example.org/go\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	out, err = callSearch(t, tl, `{"query":"go","allowed_domains":["PKG.go.dev"]}`)
	if err != nil || strings.Contains(out, "https://go.dev/doc/") || strings.Contains(out, "example.org") || !strings.Contains(out, "1. Standard library") {
		t.Errorf("allowed_domains pkg.go.dev: %v\n%s", err, out)
	}
	out, err = callSearch(t, tl, `{"query":"go","blocked_domains":["https://go.dev/"]}`)
	if err != nil || strings.Contains(out, "go.dev/") || !strings.Contains(out, "1. https://example.org/go") {
		t.Errorf("blocked_domains go.dev, its subdomain too: %v\n%s", err, out)
	}
	out, err = callSearch(t, tl, `{"query":"go","max_results":1}`)
	if err != nil || !strings.Contains(out, "1. Documentation") || strings.Contains(out, "2. ") {
		t.Errorf("one result: %v\n%s", err, out)
	}
	out, err = callSearch(t, tl, `{"query":"go","allowed_domains":["nowhere.test"]}`)
	if err != nil || !strings.Contains(out, `No results for "go"`) {
		t.Errorf("nothing allowed: %v\n%s", err, out)
	}
}

func TestWebSearchBrave(t *testing.T) {
	srv, seen := braveServer(t, "tok-123")
	tl := NewWebSearch(SearchBackend{Provider: SearchBrave, URL: srv.URL + "/res/v1/web/search", APIKey: "tok-123"})
	out, err := callSearch(t, tl, `{"query":"golang","max_results":2}`)
	if err != nil {
		t.Fatal(err)
	}
	if q := seen.URL.Query(); q.Get("q") != "golang" || q.Get("count") != "2" || seen.Header.Get("Accept") != "application/json" {
		t.Errorf("request %s, Accept %q", seen.URL, seen.Header.Get("Accept"))
	}
	if !strings.Contains(out, "1. The Go Programming Language\n   https://go.dev/\n   Go is an open source programming language & more.") ||
		!strings.Contains(out, "2. golang/go") || strings.Contains(out, "3. ") {
		t.Errorf("results, markup removed, two of them:\n%s", out)
	}

	bad := NewWebSearch(SearchBackend{Provider: SearchBrave, URL: srv.URL, APIKey: "wrong"})
	if _, err := callSearch(t, bad, `{"query":"golang"}`); err == nil || !strings.Contains(err.Error(), "Brave Search refused the request (401 Unauthorized): check the API key") {
		t.Errorf("a bad key: %v", err)
	}
}

func TestWebSearchErrors(t *testing.T) {
	none := NewWebSearch(SearchBackend{NotConfigured: "web search is not set up: add webSearch to the config"})
	if _, err := callSearch(t, none, `{"query":"x"}`); err == nil || err.Error() != "web search is not set up: add webSearch to the config" {
		t.Errorf("no backend: %v", err)
	}
	if _, err := callSearch(t, NewWebSearch(SearchBackend{}), `{"query":"x"}`); err == nil || !strings.Contains(err.Error(), "not configured") {
		t.Errorf("no backend, no message: %v", err)
	}
	srv := searxngServer(t)
	tl := NewWebSearch(SearchBackend{Provider: SearchSearXNG, URL: srv.URL})
	if _, err := callSearch(t, tl, `{"query":"  "}`); err == nil || !strings.Contains(err.Error(), "query is empty") {
		t.Errorf("an empty query: %v", err)
	}
	if _, err := callSearch(t, tl, `{"query": 3}`); err == nil || !strings.Contains(err.Error(), "not valid") {
		t.Errorf("a number as the query: %v", err)
	}

	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html>search page</html>"))
	}))
	defer html.Close()
	if _, err := callSearch(t, NewWebSearch(SearchBackend{Provider: SearchSearXNG, URL: html.URL}), `{"query":"x"}`); err == nil ||
		!strings.Contains(err.Error(), "SearXNG did not answer with the JSON expected (does the instance allow format json") {
		t.Errorf("an instance answering HTML: %v", err)
	}
	limited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "slow down", http.StatusTooManyRequests)
	}))
	defer limited.Close()
	if _, err := callSearch(t, NewWebSearch(SearchBackend{Provider: SearchBrave, URL: limited.URL, APIKey: "k"}), `{"query":"x"}`); err == nil ||
		!strings.Contains(err.Error(), "too many requests") {
		t.Errorf("429: %v", err)
	}
	limited.Close()
	if _, err := callSearch(t, NewWebSearch(SearchBackend{Provider: SearchBrave, URL: limited.URL + "/?key=secret", APIKey: "k"}), `{"query":"x"}`); err == nil ||
		!strings.Contains(err.Error(), "could not be reached") || strings.Contains(err.Error(), "secret") {
		t.Errorf("a closed server: %v", err)
	}
}

func TestSearchBackendCheck(t *testing.T) {
	for _, c := range []struct {
		b    SearchBackend
		want string
	}{
		{SearchBackend{}, ""},
		{SearchBackend{Provider: SearchSearXNG, URL: "http://localhost:8888"}, ""},
		{SearchBackend{Provider: SearchSearXNG}, "needs url"},
		{SearchBackend{Provider: SearchSearXNG, URL: "localhost:8888"}, "is not an http or https address"},
		{SearchBackend{Provider: SearchBrave, APIKey: "k"}, ""},
		{SearchBackend{Provider: SearchBrave}, "needs an API key"},
		{SearchBackend{Provider: "google"}, `provider "google" is not one cadre knows: use searxng or brave`},
	} {
		err := c.b.Check()
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.b, err, c.want)
		}
	}
}

// A search service that redirects to another host is not followed there:
// the key would go with the request.
func TestWebSearchNoRedirectToAnotherHost(t *testing.T) {
	var leaked string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked = r.Header.Get("X-Subscription-Token")
		w.Write([]byte(`{"web":{"results":[]}}`))
	}))
	defer other.Close()
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	brave := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherURL+"/steal", http.StatusFound)
	}))
	defer brave.Close()
	_, err := callSearch(t, NewWebSearch(SearchBackend{Provider: SearchBrave, URL: brave.URL, APIKey: "k-secret"}), `{"query":"x"}`)
	if err == nil || !strings.Contains(err.Error(), "another host than the one configured") || leaked != "" {
		t.Errorf("a redirect to another host: %v; the other host got the key %q", err, leaked)
	}
}

// Nor is a redirect from https to http on the same host: the key would go
// unencrypted.
func TestWebSearchNoRedirectToPlainHTTP(t *testing.T) {
	ws := NewWebSearch(SearchBackend{Provider: SearchBrave, APIKey: "k-secret"})
	first, _ := http.NewRequest("GET", DefaultBraveURL+"?q=x", nil)
	next, _ := http.NewRequest("GET", strings.Replace(DefaultBraveURL, "https://", "http://", 1)+"?q=x", nil)
	err := ws.b.Client.CheckRedirect(next, []*http.Request{first})
	if err == nil || !strings.Contains(err.Error(), "from https to http") {
		t.Fatalf("redirect from %s to %s: %v", first.URL, next.URL, err)
	}
	same, _ := http.NewRequest("GET", DefaultBraveURL+"?q=y", nil)
	if err := ws.b.Client.CheckRedirect(same, []*http.Request{first}); err != nil {
		t.Errorf("a redirect within the service: %v", err)
	}
}
