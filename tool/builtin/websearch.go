package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cadre-ai/cadre"
)

// NameWebSearch is the name of the web search tool.
const NameWebSearch = "web_search"

// Search providers of SearchBackend.Provider.
const (
	// SearchSearXNG queries a SearXNG instance's JSON API
	// (GET URL/search?q=…&format=json; the instance must allow the json
	// format in its settings).
	SearchSearXNG = "searxng"
	// SearchBrave queries the Brave Search API with a subscription token.
	SearchBrave = "brave"
)

// DefaultBraveURL is the Brave Search API's web search endpoint.
const DefaultBraveURL = "https://api.search.brave.com/res/v1/web/search"

// Limits of one web_search call.
const (
	defaultSearchResults = 8
	maxSearchResults     = 20
	maxSearchBody        = 4 << 20
)

// SearchBackend is where web_search sends its queries: a service the user
// chose and configured, so it is reached as configured (a SearXNG
// instance on the user's own network included), while the model chooses
// only the query.
type SearchBackend struct {
	// Provider is SearchSearXNG or SearchBrave.
	Provider string
	// URL is the SearXNG instance's base URL, or the Brave endpoint
	// (empty means DefaultBraveURL).
	URL string
	// APIKey is Brave's subscription token.
	APIKey string
	// Client makes the requests; nil means a client with Timeout.
	Client *http.Client
	// Timeout bounds one search; zero means 20 seconds.
	Timeout time.Duration
	// NotConfigured, when Provider is empty, is the message a call
	// returns, saying how to set a backend up.
	NotConfigured string
}

// Check reports what is wrong with b, in words for the person who wrote
// the configuration.
func (b SearchBackend) Check() error {
	switch b.Provider {
	case "":
		return nil
	case SearchSearXNG:
		if b.URL == "" {
			return errors.New("provider searxng needs url: the address of the SearXNG instance, such as http://localhost:8888")
		}
	case SearchBrave:
		if b.APIKey == "" {
			return errors.New("provider brave needs an API key: set apiKeyEnv to the variable that holds it (BRAVE_API_KEY by default), and that variable")
		}
	default:
		return fmt.Errorf("provider %q is not one cadre knows: use searxng or brave", b.Provider)
	}
	if b.URL != "" {
		u, err := url.Parse(b.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("url %q is not an http or https address", b.URL)
		}
	}
	return nil
}

// WebSearch is the web_search tool: it asks the configured search service
// and returns the results' titles, addresses and snippets. Without a
// backend every call fails with a message saying how to configure one.
type WebSearch struct {
	b SearchBackend
}

var _ cadre.Tool = (*WebSearch)(nil)

// NewWebSearch returns the web_search tool for b.
func NewWebSearch(b SearchBackend) *WebSearch {
	if b.Timeout <= 0 {
		b.Timeout = 20 * time.Second
	}
	if b.Provider == SearchBrave && b.URL == "" {
		b.URL = DefaultBraveURL
	}
	if b.Client == nil {
		b.Client = &http.Client{Timeout: b.Timeout}
	}
	// The service is reached as configured and nowhere else: a redirect
	// to another host would carry the key (Go keeps custom headers such
	// as Brave's X-Subscription-Token across hosts), and one from https
	// to http would send it in clear.
	c := *b.Client
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Host != via[0].URL.Host {
			return fmt.Errorf("the search service redirected to %s, another host than the one configured; not followed", req.URL.Host)
		}
		if req.URL.Scheme != via[0].URL.Scheme {
			return fmt.Errorf("the search service redirected from %s to %s; the key goes only to the scheme, host and port configured, so it was not followed: configure the URL the service now wants", via[0].URL.Scheme, req.URL.Scheme)
		}
		if len(via) >= 5 {
			return errors.New("the search service redirected more than 5 times")
		}
		return nil
	}
	b.Client = &c
	return &WebSearch{b: b}
}

// Spec implements cadre.Tool.
func (t *WebSearch) Spec() cadre.ToolSpec {
	return cadre.ToolSpec{
		Name: NameWebSearch,
		Description: "Search the web and return the top results: title, address and a snippet of each. " +
			"Use it to find pages, then web_fetch to read one. allowed_domains and blocked_domains keep or drop results by site.",
		Parameters: json.RawMessage(`{
	"type": "object",
	"properties": {
		"query": {"type": "string", "description": "What to search for."},
		"max_results": {"type": "integer", "description": "How many results to return (default 8, at most 20)."},
		"allowed_domains": {"type": "array", "items": {"type": "string"}, "description": "Only results from these sites (and their subdomains)."},
		"blocked_domains": {"type": "array", "items": {"type": "string"}, "description": "No results from these sites (and their subdomains)."}
	},
	"required": ["query"],
	"additionalProperties": false
}`),
	}
}

type webSearchArgs struct {
	Query          string   `json:"query"`
	MaxResults     int      `json:"max_results"`
	AllowedDomains []string `json:"allowed_domains"`
	BlockedDomains []string `json:"blocked_domains"`
}

// searchResult is one result of any provider.
type searchResult struct {
	Title, URL, Snippet string
}

// Call implements cadre.Tool.
func (t *WebSearch) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	var a webSearchArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", fmt.Errorf("the arguments are not valid: %v", err)
	}
	a.Query = strings.TrimSpace(a.Query)
	if a.Query == "" {
		return "", errors.New("query is empty: say what to search for")
	}
	if t.b.Provider == "" {
		msg := t.b.NotConfigured
		if msg == "" {
			msg = "web search is not configured for this run"
		}
		return "", errors.New(msg)
	}
	n := a.MaxResults
	if n <= 0 {
		n = defaultSearchResults
	}
	n = min(n, maxSearchResults)
	ctx, cancel := context.WithTimeout(ctx, t.b.Timeout)
	defer cancel()
	var (
		results []searchResult
		err     error
	)
	switch t.b.Provider {
	case SearchSearXNG:
		results, err = t.searxng(ctx, a.Query)
	case SearchBrave:
		results, err = t.brave(ctx, a.Query, n)
	default:
		err = t.b.Check()
	}
	if err != nil {
		return "", err
	}
	results = slices.DeleteFunc(results, func(r searchResult) bool {
		host := resultHost(r.URL)
		if len(a.AllowedDomains) > 0 && !slices.ContainsFunc(a.AllowedDomains, func(d string) bool { return inDomain(host, d) }) {
			return true
		}
		return slices.ContainsFunc(a.BlockedDomains, func(d string) bool { return inDomain(host, d) })
	})
	if len(results) > n {
		results = results[:n]
	}
	return formatResults(a.Query, results), nil
}

// searxng asks a SearXNG instance.
func (t *WebSearch) searxng(ctx context.Context, q string) ([]searchResult, error) {
	u, err := url.Parse(strings.TrimRight(t.b.URL, "/") + "/search")
	if err != nil {
		return nil, fmt.Errorf("the SearXNG address %q is not valid: %v", t.b.URL, err)
	}
	u.RawQuery = url.Values{"q": {q}, "format": {"json"}}.Encode()
	var body struct {
		Results []struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			Content string `json:"content"`
		} `json:"results"`
	}
	if err := t.get(ctx, u.String(), nil, "SearXNG", &body); err != nil {
		return nil, err
	}
	out := make([]searchResult, 0, len(body.Results))
	for _, r := range body.Results {
		out = append(out, searchResult{Title: r.Title, URL: r.URL, Snippet: r.Content})
	}
	return out, nil
}

// brave asks the Brave Search API.
func (t *WebSearch) brave(ctx context.Context, q string, n int) ([]searchResult, error) {
	u, err := url.Parse(t.b.URL)
	if err != nil {
		return nil, fmt.Errorf("the Brave Search address %q is not valid: %v", t.b.URL, err)
	}
	v := u.Query()
	v.Set("q", q)
	v.Set("count", strconv.Itoa(n))
	u.RawQuery = v.Encode()
	var body struct {
		Web struct {
			Results []struct {
				Title       string `json:"title"`
				URL         string `json:"url"`
				Description string `json:"description"`
			} `json:"results"`
		} `json:"web"`
	}
	h := http.Header{"X-Subscription-Token": {t.b.APIKey}}
	if err := t.get(ctx, u.String(), h, "Brave Search", &body); err != nil {
		return nil, err
	}
	out := make([]searchResult, 0, len(body.Web.Results))
	for _, r := range body.Web.Results {
		out = append(out, searchResult{Title: htmlText(r.Title), URL: r.URL, Snippet: htmlText(r.Description)})
	}
	return out, nil
}

// get GETs a JSON document into v; errors name the service.
func (t *WebSearch) get(ctx context.Context, u string, h http.Header, service string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("%s: %v", service, err)
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", DefaultUserAgent)
	resp, err := t.b.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s did not answer within %s", service, t.b.Timeout)
		}
		return fmt.Errorf("%s could not be reached: %v", service, redactURLError(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxSearchBody))
	if err != nil {
		return fmt.Errorf("%s: reading the answer: %v", service, err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%s refused the request (%s): check the API key or the instance's settings", service, resp.Status)
	case resp.StatusCode == http.StatusTooManyRequests:
		return fmt.Errorf("%s says too many requests (%s): wait before searching again", service, resp.Status)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("%s answered %s: %s", service, resp.Status, clipText(strings.TrimSpace(string(data)), 200))
	}
	if err := json.Unmarshal(data, v); err != nil {
		hint := ""
		if service == "SearXNG" {
			hint = " (does the instance allow format json under search.formats in its settings?)"
		}
		return fmt.Errorf("%s did not answer with the JSON expected%s: %v", service, hint, err)
	}
	return nil
}

// redactURLError drops the URL from a client error: it may hold a key.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// formatResults lists results for the model.
func formatResults(q string, rs []searchResult) string {
	if len(rs) == 0 {
		return fmt.Sprintf("No results for %q.", q)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Results for %q:\n", q)
	for i, r := range rs {
		title := strings.TrimSpace(r.Title)
		if title == "" {
			title = r.URL
		}
		fmt.Fprintf(&b, "\n%d. %s\n   %s\n", i+1, title, r.URL)
		if s := strings.Join(strings.Fields(r.Snippet), " "); s != "" {
			fmt.Fprintf(&b, "   %s\n", clipText(s, 400))
		}
	}
	return b.String()
}

// resultHost is the lower-case host of a result's address.
func resultHost(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return strings.ToLower(p.Hostname())
}

// inDomain reports whether host is domain or one of its subdomains.
func inDomain(host, domain string) bool {
	domain = strings.ToLower(strings.Trim(strings.TrimSpace(domain), "."))
	if d, err := url.Parse(domain); err == nil && d.Host != "" {
		domain = strings.ToLower(d.Hostname()) // a URL was given
	}
	return domain != "" && (host == domain || strings.HasSuffix(host, "."+domain))
}

// clipText cuts s to n bytes on a rune boundary, marking the cut.
func clipText(s string, n int) string {
	if c, cut := cutLine(s, n); cut {
		return c + "…"
	}
	return s
}
