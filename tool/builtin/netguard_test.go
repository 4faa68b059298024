package builtin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeResolver answers lookups from a table: the i-th lookup of a host
// gets its i-th answer (the last one once they run out).
type fakeResolver struct {
	answers map[string][][]netip.Addr
	mu      sync.Mutex
	calls   map[string]int
}

func (f *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	n := f.calls[host]
	f.calls[host]++
	list, ok := f.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host (fake resolver)", Name: host, IsNotFound: true}
	}
	return list[min(n, len(list)-1)], nil
}

func (f *fakeResolver) lookups() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		n += c
	}
	return n
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

// countingServer is a test server that counts the requests it gets.
type countingServer struct {
	*httptest.Server
	hits atomic.Int32
}

func newCountingServer(t *testing.T, h http.HandlerFunc) *countingServer {
	t.Helper()
	s := &countingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		if h != nil {
			h(w, r)
			return
		}
		w.Write([]byte("the admin page of a local service"))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *countingServer) port() string {
	u, _ := url.Parse(s.URL)
	return u.Port()
}

func rules(t *testing.T, specs ...string) []FetchRule {
	t.Helper()
	var out []FetchRule
	for _, s := range specs {
		r, err := ParseFetchRule(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// Every form of a local or private address is refused before anything is
// sent, none of them by asking DNS.
func TestWebFetchRefusesLocalAddresses(t *testing.T) {
	srv := newCountingServer(t, nil)
	p := srv.port()
	res := &fakeResolver{}
	wf := NewWebFetch(Options{Resolver: res})
	tests := []struct{ name, url, want string }{
		{"loopback", "http://127.0.0.1:" + p + "/admin", `127.0.0.1 is a loopback address (this machine); web_fetch does not connect to loopback, private, link-local, metadata or other non-public addresses unless they are allowed. If this is intended, the user can add "127.0.0.1:` + p + `" to builtin.Options.FetchAllow`},
		{"loopback_other", "http://127.8.9.10:" + p + "/", "127.8.9.10 is a loopback address"},
		{"localhost", "http://localhost:" + p + "/admin", `localhost resolves to 127.0.0.1, which is a loopback address (this machine)`},
		{"localhost_upper_dot", "http://LocalHost.:" + p + "/admin", `resolves to 127.0.0.1, which is a loopback address`},
		{"sub_localhost", "http://app.localhost:" + p + "/", "app.localhost resolves to 127.0.0.1, which is a loopback address"},
		{"ipv6_loopback", "http://[::1]:" + p + "/admin", `::1 is a loopback address (this machine)`},
		{"ipv4_mapped", "http://[::ffff:127.0.0.1]:" + p + "/admin", "::ffff:127.0.0.1 stands for 127.0.0.1, which is a loopback address"},
		{"ipv4_mapped_hex", "http://[::ffff:7f00:1]:" + p + "/admin", `stands for 127.0.0.1, which is a loopback address (this machine); web_fetch does not connect to loopback, private, link-local, metadata or other non-public addresses unless they are allowed. If this is intended, the user can add "127.0.0.1:` + p + `"`},
		{"decimal", "http://2130706433:" + p + "/admin", "2130706433 stands for 127.0.0.1, which is a loopback address"},
		{"hex", "http://0x7f000001:" + p + "/", "stands for 127.0.0.1, which is a loopback address"},
		{"dotted_hex", "http://0x7f.0.0.1:" + p + "/", "stands for 127.0.0.1, which is a loopback address"},
		{"octal", "http://0177.0.0.1:" + p + "/", "stands for 127.0.0.1, which is a loopback address"},
		{"short", "http://127.1:" + p + "/", "127.1 stands for 127.0.0.1, which is a loopback address"},
		{"unspecified", "http://0.0.0.0:" + p + "/", "0.0.0.0 is an unspecified address (it reaches this machine)"},
		{"unspecified_short", "http://0:" + p + "/", "0 stands for 0.0.0.0, which is an unspecified address"},
		{"unspecified_v6", "http://[::]:" + p + "/", ":: is an unspecified address"},
		{"metadata", "http://169.254.169.254/latest/meta-data/", `169.254.169.254 is a cloud metadata endpoint; web_fetch does not connect`},
		{"metadata_decimal", "http://2852039166/latest/meta-data/", "2852039166 stands for 169.254.169.254, which is a cloud metadata endpoint"},
		{"metadata_v6", "http://[fd00:ec2::254]/latest/", "fd00:ec2::254 is a cloud metadata endpoint"},
		{"metadata_alibaba", "http://100.100.100.200/latest/meta-data/", "100.100.100.200 is a cloud metadata endpoint"},
		{"metadata_azure_wire", "http://168.63.129.16/", "168.63.129.16 is a cloud metadata endpoint"},
		{"metadata_ecs", "http://169.254.170.2/v2/credentials", "169.254.170.2 is a cloud metadata endpoint"},
		{"link_local", "http://169.254.1.2/", "169.254.1.2 is a link-local address"},
		{"link_local_v6", "http://[fe80::1%25eth0]:8080/", "fe80::1%eth0 stands for fe80::1, which is a link-local address; web_fetch does not connect to loopback, private, link-local, metadata or other non-public addresses unless they are allowed. If this is intended, the user can add \"[fe80::1]:8080\""},
		{"private_10", "http://10.1.2.3/", "10.1.2.3 is a private network address"},
		{"private_172", "http://172.16.0.1/", "172.16.0.1 is a private network address"},
		{"private_192", "https://192.168.1.1/", "192.168.1.1 is a private network address"},
		{"private_v6", "http://[fd12:3456::1]/", "fd12:3456::1 is a private network address"},
		{"cgnat", "http://100.64.0.1/", "100.64.0.1 is a shared (carrier-grade NAT) address"},
		{"multicast", "http://224.0.0.1/", "224.0.0.1 is a multicast address"},
		{"multicast_v6", "http://[ff02::1]/", "ff02::1 is a multicast address"},
		{"broadcast", "http://255.255.255.255/", "255.255.255.255 is the broadcast address"},
		{"reserved", "http://240.0.0.1/", "240.0.0.1 is a reserved address"},
		{"nat64", "http://[64:ff9b::7f00:1]:" + p + "/", "64:ff9b::7f00:1 is a NAT64 form of a loopback address"},
		{"sixtofour", "http://[2002:a00:1::1]/", "2002:a00:1::1 is a 6to4 form of a private network address"},
		{"ipv4_compatible", "http://[::7f00:1]/", "is a reserved address (IPv4-compatible IPv6)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := call(t, wf, map[string]any{"url": tt.url})
			if err == nil {
				t.Fatalf("fetched: %q", got)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q\ndoes not contain %q", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "web_fetch: ") || !strings.Contains(err.Error(), " was not fetched: ") {
				t.Errorf("error %q does not say which URL was not fetched", err)
			}
		})
	}
	if n := srv.hits.Load(); n != 0 {
		t.Errorf("the local server got %d requests", n)
	}
	if n := res.lookups(); n != 0 {
		t.Errorf("%d DNS lookups for hosts that are addresses", n)
	}
}

// A host name is judged by the addresses it resolves to: all of them.
func TestWebFetchRefusesNamesOfLocalAddresses(t *testing.T) {
	srv := newCountingServer(t, nil)
	res := &fakeResolver{answers: map[string][][]netip.Addr{
		"intranet.test": {addrs("127.0.0.1")},
		"mixed.test":    {addrs("93.184.215.14", "10.0.0.7")},
		"mapped.test":   {addrs("::ffff:192.168.0.1")},
		"meta.test":     {addrs("169.254.169.254")},
	}}
	wf := NewWebFetch(Options{Resolver: res, FetchAllowWhere: "webFetch.allow in .cadre/config.yaml"})
	tests := []struct{ name, url, want string }{
		{"loopback", "http://intranet.test:" + srv.port() + "/admin",
			`intranet.test resolves to 127.0.0.1, which is a loopback address (this machine); web_fetch does not connect to loopback, private, link-local, metadata or other non-public addresses unless they are allowed. If this is intended, the user can add "intranet.test:` + srv.port() + `" to webFetch.allow in .cadre/config.yaml`},
		{"one_private_of_two", "http://mixed.test/", "mixed.test resolves to 10.0.0.7, which is a private network address"},
		{"mapped", "http://mapped.test/", "mapped.test resolves to 192.168.0.1, which is a private network address"},
		{"metadata", "http://meta.test/computeMetadata/v1/", "meta.test resolves to 169.254.169.254, which is a cloud metadata endpoint"},
		{"unknown", "http://nowhere.test/", "no such host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := call(t, wf, map[string]any{"url": tt.url})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %q, %v\nwant an error containing %q", got, err, tt.want)
			}
		})
	}
	if n := srv.hits.Load(); n != 0 {
		t.Errorf("the local server got %d requests", n)
	}
}

// A redirect is checked as the first request is: an allowed server cannot
// lead web_fetch to another local one.
func TestWebFetchRefusesRedirectToLocal(t *testing.T) {
	inner := newCountingServer(t, nil)
	outer := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, inner.URL+"/admin", http.StatusFound)
	})
	wf := NewWebFetch(Options{FetchAllow: rules(t, "127.0.0.1:"+outer.port())})
	got, err := call(t, wf, map[string]any{"url": outer.URL + "/go"})
	want := fmt.Sprintf("web_fetch: %s/go was not fetched: it redirects to %s/admin, and 127.0.0.1 is a loopback address (this machine)", outer.URL, inner.URL)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got %q, %v\nwant an error starting %q", got, err, want)
	}
	if outer.hits.Load() != 1 || inner.hits.Load() != 0 {
		t.Errorf("requests: %d to the allowed server, %d to the other; want 1 and 0", outer.hits.Load(), inner.hits.Load())
	}
}

func TestWebFetchAllow(t *testing.T) {
	srv := newCountingServer(t, nil)
	p := srv.port()
	res := &fakeResolver{answers: map[string][][]netip.Addr{
		"intranet.test":      {addrs("127.0.0.1")},
		"svc.corp.test":      {addrs("127.0.0.1")},
		"intranet.test.evil": {addrs("127.0.0.1")},
	}}
	tests := []struct {
		name  string
		allow []string
		url   string
		ok    bool
	}{
		{"address_and_port", []string{"127.0.0.1:" + p}, srv.URL + "/", true},
		{"address", []string{"127.0.0.1"}, srv.URL + "/", true},
		{"network", []string{"127.0.0.0/8"}, srv.URL + "/", true},
		{"other_port", []string{"127.0.0.1:1"}, srv.URL + "/", false},
		{"other_network", []string{"10.0.0.0/8"}, srv.URL + "/", false},
		{"host_name", []string{"intranet.test"}, "http://intranet.test:" + p + "/", true},
		{"host_name_and_port", []string{"intranet.test:" + p}, "http://intranet.test:" + p + "/", true},
		{"host_name_other_port", []string{"intranet.test:1"}, "http://intranet.test:" + p + "/", false},
		{"host_name_is_not_a_suffix", []string{"intranet.test"}, "http://intranet.test.evil:" + p + "/", false},
		{"subdomains", []string{"*.corp.test"}, "http://svc.corp.test:" + p + "/", true},
		{"localhost", []string{"localhost:" + p}, "http://localhost:" + p + "/", true},
		{"address_rule_does_not_open_localhost_name", []string{"127.0.0.1:" + p}, "http://localhost:" + p + "/", false},
		{"mapped_address_rule", []string{"[::ffff:127.0.0.1]:" + p}, srv.URL + "/", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := srv.hits.Load()
			wf := NewWebFetch(Options{Resolver: res, FetchAllow: rules(t, tt.allow...)})
			got, err := call(t, wf, map[string]any{"url": tt.url})
			switch {
			case tt.ok && (err != nil || !strings.Contains(got, "the admin page")):
				t.Fatalf("allowed by %v, got %q, %v", tt.allow, got, err)
			case !tt.ok && err == nil:
				t.Fatalf("fetched %q though %v does not allow it", got, tt.allow)
			case !tt.ok && !errors.As(err, new(*RefusedError)) && !strings.Contains(err.Error(), "loopback"):
				t.Fatalf("error %v is not a refusal", err)
			}
			if hit := srv.hits.Load() - before; tt.ok != (hit == 1) {
				t.Errorf("%d requests reached the server", hit)
			}
		})
	}
}

// A metadata address is opened only by a rule naming it, not by a network
// or host name that covers it.
func TestWebFetchMetadataNeedsItsOwnRule(t *testing.T) {
	srv := newCountingServer(t, nil)
	res := &fakeResolver{answers: map[string][][]netip.Addr{"metadata.google.internal": {addrs("169.254.169.254")}}}
	for _, tt := range []struct {
		allow []string
		url   string
		ok    bool
	}{
		{[]string{"169.254.0.0/16"}, "http://169.254.169.254/x", false},
		{[]string{"169.254.0.0/16"}, "http://169.254.1.1/x", true},
		{[]string{"metadata.google.internal"}, "http://metadata.google.internal/x", false},
		{[]string{"169.254.169.254"}, "http://169.254.169.254/x", true},
		{[]string{"169.254.169.254:80"}, "http://169.254.169.254/x", true},
		// The same endpoint inside an IPv6 address a gateway translates.
		{[]string{"64:ff9b::/96"}, "http://[64:ff9b::a9fe:a9fe]/x", false},
		{[]string{"2002::/16"}, "http://[2002:a9fe:a9fe::1]/x", false},
		{[]string{"::/0"}, "http://[::a9fe:a9fe]/x", false},
		{[]string{"64:ff9b::/96"}, "http://[64:ff9b::a9fe:101]/x", true},
	} {
		t.Run(strings.Join(tt.allow, ",")+"_"+tt.url, func(t *testing.T) {
			wf := NewWebFetch(Options{Resolver: res, FetchAllow: rules(t, tt.allow...)})
			var dialled []string
			wf.guard.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
				dialled = append(dialled, addr)
				return new(net.Dialer).DialContext(ctx, network, srv.Listener.Addr().String())
			}
			_, err := call(t, wf, map[string]any{"url": tt.url})
			if tt.ok != (err == nil) {
				t.Fatalf("allow %v: error %v", tt.allow, err)
			}
			if !tt.ok && len(dialled) != 0 {
				t.Errorf("dialled %v", dialled)
			}
		})
	}
}

// The address is checked where the connection is made: a name that
// resolves to a public address once and to a local one the next time
// (DNS rebinding) is refused the second time, and nothing connects to
// the address of a lookup that was not checked.
func TestWebFetchChecksAtDial(t *testing.T) {
	var hits []string
	var mu sync.Mutex
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, r.URL.Path)
		mu.Unlock()
		if r.URL.Path == "/start" {
			// A new connection for the next request, and so a new lookup.
			w.Header().Set("Connection", "close")
			http.Redirect(w, r, "/secret", http.StatusFound)
			return
		}
		w.Write([]byte("secret"))
	})
	res := &fakeResolver{answers: map[string][][]netip.Addr{"rebind.test": {addrs("198.51.100.7"), addrs("127.0.0.1")}}}
	wf := NewWebFetch(Options{Resolver: res})
	var dialled []string
	wf.guard.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialled = append(dialled, addr)
		if addr != "198.51.100.7:"+srv.port() {
			return nil, fmt.Errorf("the test routes only the public address, not %s", addr)
		}
		// The "public" server is the test server.
		return new(net.Dialer).DialContext(ctx, network, srv.Listener.Addr().String())
	}
	got, err := call(t, wf, map[string]any{"url": "http://rebind.test:" + srv.port() + "/start"})
	want := "it redirects to http://rebind.test:" + srv.port() + "/secret, and rebind.test resolves to 127.0.0.1, which is a loopback address"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %q, %v\nwant an error containing %q", got, err, want)
	}
	if len(dialled) != 1 || res.lookups() != 2 {
		t.Errorf("dialled %v after %d lookups; want one dial, to the public address, and two lookups", dialled, res.lookups())
	}
	if len(hits) != 1 || hits[0] != "/start" {
		t.Errorf("the server got %v", hits)
	}
}

// The last check is on the socket itself: the dialer web_fetch uses does
// not connect to an address that DialContext did not approve.
func TestGuardControl(t *testing.T) {
	srv := newCountingServer(t, nil)
	g := newGuard(nil, nil, "here", 0)
	target := srv.Listener.Addr().String()
	if c, err := g.dialer.DialContext(context.Background(), "tcp", target); err == nil {
		c.Close()
		t.Fatal("the dialer connected without an approved address")
	} else if !strings.Contains(err.Error(), "is not the address that was checked") {
		t.Fatalf("error %v", err)
	}
	ap := netip.MustParseAddrPort(target)
	other := netip.AddrPortFrom(ap.Addr(), ap.Port()+1)
	ctx := context.WithValue(context.Background(), approvedKey{}, other)
	if c, err := g.dialer.DialContext(ctx, "tcp", target); err == nil {
		c.Close()
		t.Fatal("the dialer connected to an address other than the approved one")
	}
	ctx = context.WithValue(context.Background(), approvedKey{}, ap)
	c, err := g.dialer.DialContext(ctx, "tcp", target)
	if err != nil {
		t.Fatalf("the approved address: %v", err)
	}
	c.Close()
}

// web_fetch's own transport takes no proxy from the environment: a proxy
// would make the connections the guard cannot see.
func TestWebFetchUsesNoProxy(t *testing.T) {
	wf := NewWebFetch(Options{})
	tr, ok := wf.client.Transport.(*http.Transport)
	if !ok || tr.Proxy != nil || tr.DialContext == nil {
		t.Fatalf("transport %#v: want an *http.Transport with no Proxy and the guard's DialContext", wf.client.Transport)
	}
}

func TestParseFetchRule(t *testing.T) {
	good := []struct {
		in   string
		host string
		addr string
		port uint16
		ok   []string // host:port or addr:port that match
		not  []string
	}{
		{in: "intranet.example.com", ok: []string{"intranet.example.com:80", "INTRANET.example.com.:8080"}, not: []string{"example.com:80", "a.intranet.example.com:80"}},
		{in: "intranet.example.com:8080", ok: []string{"intranet.example.com:8080"}, not: []string{"intranet.example.com:80"}},
		{in: "*.corp.example", ok: []string{"a.corp.example:1", "b.a.corp.example:1"}, not: []string{"corp.example:1", "xcorp.example:1"}},
		{in: "127.0.0.1", ok: []string{"127.0.0.1:1", "[::ffff:127.0.0.1]:2"}, not: []string{"127.0.0.2:1"}},
		{in: "127.0.0.1:8080", ok: []string{"127.0.0.1:8080"}, not: []string{"127.0.0.1:8081"}},
		{in: "[::1]:8080", ok: []string{"[::1]:8080"}, not: []string{"[::1]:80"}},
		{in: "[fd00::1]", ok: []string{"[fd00::1]:1"}, not: []string{"[fd00::2]:1"}},
		{in: "fd00::1", ok: []string{"[fd00::1]:1"}},
		{in: " 10.0.0.0/8 ", ok: []string{"10.255.0.1:443"}, not: []string{"11.0.0.1:443"}},
		{in: "10.1.2.3/8", ok: []string{"10.9.9.9:1"}},
		{in: "fd00::/8", ok: []string{"[fd12::1]:1"}, not: []string{"[fe80::1]:1"}},
	}
	for _, tt := range good {
		t.Run(tt.in, func(t *testing.T) {
			r, err := ParseFetchRule(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if r.String() != tt.in {
				t.Errorf("String() = %q", r.String())
			}
			check := func(hp string, want bool) {
				h, p, _ := net.SplitHostPort(hp)
				port, _ := strconv.Atoi(p)
				name := strings.TrimSuffix(strings.ToLower(h), ".")
				a, err := netip.ParseAddr(h)
				if err == nil {
					name = ""
				} else {
					a = netip.MustParseAddr("127.0.0.1") // what a name resolved to
				}
				if got := r.matches(name, a.Unmap(), uint16(port)); got != want {
					t.Errorf("matches(%s) = %v, want %v", hp, got, want)
				}
			}
			for _, hp := range tt.ok {
				check(hp, true)
			}
			for _, hp := range tt.not {
				check(hp, false)
			}
		})
	}
	bad := map[string]string{
		"":                    "it is empty",
		"http://example.com/": "not a URL",
		"example.com/path":    "a network is written",
		"example.com:http":    `the port "http"`,
		"example.com:0":       `the port "0"`,
		"example.com:70000":   `the port "70000"`,
		"fd00::1:8080x":       "in brackets",
		"exa mple.com":        "not a URL",
		"bad_-.com!":          "a host name has letters",
		"-x.com":              "a host name has letters",
		"10.0.0.0/33":         "a network is written",
		"2130706433":          "usual dotted form",
		"[fe80::1%eth0]:80":   "with a zone",
		"user@example.com":    "not a URL",
		"example.com?x":       "not a URL",
	}
	for in, want := range bad {
		t.Run("bad_"+in, func(t *testing.T) {
			_, err := ParseFetchRule(in)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("ParseFetchRule(%q) = %v, want an error containing %q", in, err, want)
			}
		})
	}
}

func TestLegacyIPv4(t *testing.T) {
	for in, want := range map[string]string{
		"2130706433": "127.0.0.1", "0x7f000001": "127.0.0.1", "017700000001": "127.0.0.1",
		"127.1": "127.0.0.1", "127.0.1": "127.0.0.1", "0x7f.0.0.1": "127.0.0.1", "0177.0.0.01": "127.0.0.1",
		"10.0x10000": "10.1.0.0", "0": "0.0.0.0", "4294967295": "255.255.255.255",
	} {
		got, ok := legacyIPv4(in)
		if !ok || got.String() != want {
			t.Errorf("legacyIPv4(%q) = %v, %v; want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "example.com", "1.2.3.4.5", "256.0.0.1", "4294967296", "1.2.65536", "08", "0x", "1..2", "0xg", "1.2.3.-4"} {
		if got, ok := legacyIPv4(in); ok {
			t.Errorf("legacyIPv4(%q) = %v, want not an address", in, got)
		}
	}
}

func FuzzFetchRule(f *testing.F) {
	for _, s := range []string{"a.b:80", "[::1]:1", "10.0.0.0/8", "*.x.y", "0x7f.1", "[", ":", "/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseFetchRule(s)
		if err == nil {
			_ = r.matches("host", netip.MustParseAddr("127.0.0.1"), 80)
		}
		_, _ = legacyIPv4(s)
	})
}

// Of several addresses, the first that connects is used; one that fails
// leaves the others their turn.
func TestWebFetchTriesEachAddress(t *testing.T) {
	srv := newCountingServer(t, nil)
	res := &fakeResolver{answers: map[string][][]netip.Addr{"two.test": {addrs("2a00:1450:1::1", "198.51.100.7")}}}
	wf := NewWebFetch(Options{Resolver: res})
	var dialled []string
	wf.guard.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialled = append(dialled, addr)
		if _, ok := ctx.Deadline(); !ok {
			t.Errorf("dialling %s without a deadline", addr)
		}
		if strings.HasPrefix(addr, "[2a00:1450:1::1]") {
			return nil, errors.New("network is unreachable")
		}
		return new(net.Dialer).DialContext(ctx, network, srv.Listener.Addr().String())
	}
	got, err := call(t, wf, map[string]any{"url": "http://two.test/"})
	if err != nil || !strings.Contains(got, "the admin page") {
		t.Fatalf("got %q, %v", got, err)
	}
	if want := []string{"[2a00:1450:1::1]:80", "198.51.100.7:80"}; !slices.Equal(dialled, want) {
		t.Errorf("dialled %v, want %v", dialled, want)
	}
}

// An address of one of this machine's interfaces reaches its services as
// loopback does: it is refused, whether the URL gives it or a name
// resolves to it, unless a rule allows it.
func TestWebFetchRefusesOwnAddresses(t *testing.T) {
	srv := newCountingServer(t, nil)
	res := &fakeResolver{answers: map[string][][]netip.Addr{"self.test": {addrs("198.51.100.9")}}}
	for _, tt := range []struct {
		name, url string
		allow     []string
		ok        bool
	}{
		{"address", "http://198.51.100.9/", nil, false},
		{"name", "http://self.test/", nil, false},
		{"mapped", "http://[::ffff:198.51.100.9]/", nil, false},
		{"allowed", "http://198.51.100.9/", []string{"198.51.100.9"}, true},
		{"another_public_address", "http://198.51.100.10/", nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wf := NewWebFetch(Options{Resolver: res, FetchAllow: rules(t, tt.allow...)})
			wf.guard.ownAddrs = func() (map[netip.Addr]bool, error) {
				return map[netip.Addr]bool{netip.MustParseAddr("198.51.100.9"): true}, nil
			}
			var dialled []string
			wf.guard.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
				dialled = append(dialled, addr)
				return new(net.Dialer).DialContext(ctx, network, srv.Listener.Addr().String())
			}
			got, err := call(t, wf, map[string]any{"url": tt.url})
			if tt.ok {
				if err != nil || !strings.Contains(got, "the admin page") {
					t.Fatalf("got %q, %v", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "198.51.100.9") || !strings.Contains(err.Error(), "an address of this machine (one of its network interfaces)") {
				t.Fatalf("got %q, %v; want a refusal naming this machine's address", got, err)
			}
			if len(dialled) != 0 {
				t.Errorf("dialled %v", dialled)
			}
		})
	}
	// When the addresses cannot be listed, nothing public is fetched
	// either: cadre cannot tell.
	wf := NewWebFetch(Options{Resolver: res})
	wf.guard.ownAddrs = func() (map[netip.Addr]bool, error) { return nil, errors.New("netlink: permission denied") }
	if got, err := call(t, wf, map[string]any{"url": "http://198.51.100.10/"}); err == nil ||
		!strings.Contains(err.Error(), "cannot tell whether 198.51.100.10 is an address of this machine") {
		t.Fatalf("got %q, %v", got, err)
	}
}

// The same on the real interfaces: a service listening on this machine's
// own non-loopback address is not reached.
func TestWebFetchRefusesOwnInterface(t *testing.T) {
	own, err := interfaceAddrs()
	if err != nil {
		t.Skip(err)
	}
	var addr netip.Addr
	for a := range own {
		if a.Is4() && refusal(a) == "" {
			addr = a
			break
		}
	}
	if !addr.IsValid() {
		t.Skip("this machine has no public IPv4 address on an interface to try")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(addr.String(), "0"))
	if err != nil {
		t.Skip(err)
	}
	srv := &countingServer{Server: httptest.NewUnstartedServer(nil)}
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { srv.hits.Add(1) })
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	got, err := call(t, NewWebFetch(Options{}), map[string]any{"url": srv.URL + "/"})
	if err == nil || !strings.Contains(err.Error(), "an address of this machine") {
		t.Fatalf("got %q, %v", got, err)
	}
	if srv.hits.Load() != 0 {
		t.Error("the server was reached")
	}
}

// A resolver that does not answer is given the fetch's time, not forever:
// the transport dials apart from the request's context, so the guard's
// lookup must have a deadline of its own.
func TestWebFetchBoundsTheLookup(t *testing.T) {
	res := &stuckResolver{}
	wf := NewWebFetch(Options{Resolver: res, FetchTimeout: 50 * time.Millisecond})
	if _, err := call(t, wf, map[string]any{"url": "http://slow.test/"}); err == nil {
		t.Fatal("fetched with a resolver that never answers")
	}
	if !res.hadDeadline.Load() {
		t.Error("the lookup's context had no deadline: it would run for ever")
	}
}

// stuckResolver answers only when its context ends.
type stuckResolver struct {
	hadDeadline atomic.Bool
}

func (r *stuckResolver) LookupNetIP(ctx context.Context, _, _ string) ([]netip.Addr, error) {
	if _, ok := ctx.Deadline(); ok {
		r.hadDeadline.Store(true)
	}
	<-ctx.Done()
	return nil, ctx.Err()
}
