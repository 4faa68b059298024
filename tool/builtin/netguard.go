package builtin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A Resolver looks up the addresses of a host name. *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// A FetchRule lets web_fetch connect to addresses it refuses by default
// (see RefusedError). Make one with ParseFetchRule.
type FetchRule struct {
	text   string
	host   string       // a host name, lower case, without a trailing dot
	suffix bool         // host is a domain: its subdomains match, not itself
	prefix netip.Prefix // an address or a network, when host is empty
	port   uint16       // 0: any port
}

// ParseFetchRule reads a rule of the forms
//
//	intranet.example.com       a host name, any port
//	intranet.example.com:8080  a host name and port
//	*.corp.example.com         every subdomain of a domain
//	127.0.0.1, [::1]           an address, any port
//	127.0.0.1:8080, [::1]:8080 an address and port
//	10.0.0.0/8, fd00::/8       a network, any port
//
// A host name rule applies to the host as the URL names it, whatever
// addresses it resolves to. A cloud metadata address (169.254.169.254 and
// the like) is opened only by a rule naming that address itself, never by
// a network or a host name.
func ParseFetchRule(s string) (FetchRule, error) {
	r := FetchRule{text: s}
	in := strings.TrimSpace(s)
	bad := func(why string) (FetchRule, error) {
		return FetchRule{}, fmt.Errorf("%q is not a host, host:port, address or network: %s", s, why)
	}
	if in == "" {
		return bad("it is empty")
	}
	if strings.Contains(in, "://") || strings.ContainsAny(in, "?#@ ") {
		return bad("give the host alone, such as intranet.example.com:8080, not a URL")
	}
	if strings.Contains(in, "/") {
		p, err := netip.ParsePrefix(in)
		if err != nil {
			return bad("a network is written as an address and a prefix length, such as 10.0.0.0/8 or fd00::/8")
		}
		r.prefix = p.Masked()
		return r, nil
	}
	host := in
	if h, port, err := net.SplitHostPort(in); err == nil {
		n, perr := strconv.ParseUint(port, 10, 16)
		if perr != nil || n == 0 {
			return bad(fmt.Sprintf("the port %q is not a number from 1 to 65535", port))
		}
		host, r.port = h, uint16(n)
	} else if strings.HasPrefix(in, "[") && strings.HasSuffix(in, "]") {
		host = in[1 : len(in)-1]
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return bad("an address with a zone (%eth0) cannot be allowed; allow the address without it")
		}
		a = a.Unmap()
		r.prefix = netip.PrefixFrom(a, a.BitLen())
		return r, nil
	}
	if strings.Contains(host, ":") {
		return bad("write an IPv6 address with a port in brackets, such as [fd00::1]:8080")
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		host, r.suffix = rest, true
	}
	if !validHostName(host) {
		return bad("a host name has letters, digits, - and dots (and may start with *. for every subdomain)")
	}
	if _, ok := legacyIPv4(host); ok {
		return bad("write the address in the usual dotted form, such as 127.0.0.1")
	}
	r.host = host
	return r, nil
}

// String returns the rule as it was written.
func (r FetchRule) String() string { return r.text }

func validHostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// matches reports whether the rule allows a connection to addr, on port,
// for a URL whose host is host (a name in lower case, or "" when the URL
// gave an address).
func (r FetchRule) matches(host string, addr netip.Addr, port uint16) bool {
	if r.port != 0 && r.port != port {
		return false
	}
	switch {
	case isMetadata(addr):
		return r.host == "" && r.prefix.IsSingleIP() && r.prefix.Addr() == addr
	case r.host != "" && r.suffix:
		return host != "" && strings.HasSuffix(host, "."+r.host)
	case r.host != "":
		return host == r.host
	}
	return r.prefix.Contains(addr)
}

// A RefusedError is a connection web_fetch refused: to an address that is
// not on the public internet, which no FetchRule allows.
//
// Refused are loopback addresses (127.0.0.0/8, ::1, and the names
// localhost and *.localhost), private networks (10.0.0.0/8,
// 172.16.0.0/12, 192.168.0.0/16, fc00::/7), link-local addresses
// (169.254.0.0/16, fe80::/10), shared address space (100.64.0.0/10),
// unspecified (0.0.0.0/8, ::), multicast and broadcast addresses, other
// reserved ranges (192.0.0.0/24, 198.18.0.0/15, 240.0.0.0/4, fec0::/10,
// 100::/64, IPv4-compatible IPv6), NAT64 and 6to4 addresses whose IPv4
// address is refused, and cloud metadata endpoints (169.254.169.254,
// 169.254.170.2, 169.254.170.23, fd00:ec2::254, fd00:ec2::23,
// 100.100.100.200, 168.63.129.16, 192.0.0.192), and any address of one of
// this machine's network interfaces (its public address reaches its own
// services as loopback does). An IPv4 address written
// as an IPv6 one (::ffff:127.0.0.1) is judged as the IPv4 address, and a
// host written as a number (2130706433, 0x7f.1, 0177.0.0.1) as the
// address it stands for.
type RefusedError struct {
	// Host is the host as the URL gave it, Port the port connected to.
	Host string
	Port uint16
	// Addr is the address refused: what Host resolved to, or stands for.
	Addr netip.Addr
	// Resolved reports whether Host is a name that resolved to Addr
	// (rather than an address, in whatever form).
	Resolved bool
	// Reason says what kind of address it is, such as "a loopback
	// address (this machine)".
	Reason string
	// Allow is where rules are configured, for the message.
	Allow string
}

func (e *RefusedError) Error() string {
	what := e.Addr.String()
	rule := netip.AddrPortFrom(e.Addr, e.Port).String()
	switch {
	case e.Resolved:
		what = fmt.Sprintf("%s resolves to %s, which", e.Host, e.Addr)
		rule = net.JoinHostPort(strings.TrimSuffix(strings.ToLower(e.Host), "."), strconv.Itoa(int(e.Port)))
	case e.Host != "" && e.Host != what:
		what = fmt.Sprintf("%s stands for %s, which", e.Host, e.Addr)
	}
	return fmt.Sprintf("%s is %s; web_fetch does not connect to loopback, private, link-local, metadata or other non-public addresses unless they are allowed. "+
		"If this is intended, the user can add %q to %s", what, e.Reason, rule, e.Allow)
}

// metadataAddrs are the cloud metadata endpoints: AWS (IMDS, ECS, EKS pod
// identity, and IPv6 IMDS), GCP and Azure (169.254.169.254 as well),
// Alibaba Cloud, Azure's wire server, Oracle Cloud.
var metadataAddrs = map[netip.Addr]bool{
	netip.MustParseAddr("169.254.169.254"): true,
	netip.MustParseAddr("169.254.170.2"):   true,
	netip.MustParseAddr("169.254.170.23"):  true,
	netip.MustParseAddr("fd00:ec2::254"):   true,
	netip.MustParseAddr("fd00:ec2::23"):    true,
	netip.MustParseAddr("100.100.100.200"): true,
	netip.MustParseAddr("168.63.129.16"):   true,
	netip.MustParseAddr("192.0.0.192"):     true,
}

var (
	sharedSpace   = netip.MustParsePrefix("100.64.0.0/10")
	thisNetwork   = netip.MustParsePrefix("0.0.0.0/8")
	ietfProtocol  = netip.MustParsePrefix("192.0.0.0/24")
	benchmarking  = netip.MustParsePrefix("198.18.0.0/15")
	reservedV4    = netip.MustParsePrefix("240.0.0.0/4")
	broadcast     = netip.MustParseAddr("255.255.255.255")
	nat64         = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local    = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour     = netip.MustParsePrefix("2002::/16")
	v4Compatible  = netip.MustParsePrefix("::/96")
	siteLocal     = netip.MustParsePrefix("fec0::/10")
	discardOnly   = netip.MustParsePrefix("100::/64")
	documentation = netip.MustParsePrefix("2001:db8::/32")
)

// isMetadata reports whether a is a cloud metadata endpoint, written as
// itself or inside an IPv6 address that carries an IPv4 one (NAT64, 6to4,
// IPv4-compatible), which a gateway may translate to it.
func isMetadata(a netip.Addr) bool {
	if metadataAddrs[a] {
		return true
	}
	v4, ok := embeddedV4(a)
	return ok && metadataAddrs[v4]
}

// embeddedV4 returns the IPv4 address an IPv6 address of the NAT64, 6to4
// or IPv4-compatible forms carries.
func embeddedV4(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() || a.Is4In6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	switch {
	case nat64.Contains(a), nat64Local.Contains(a), v4Compatible.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// refusal says why web_fetch refuses to connect to a, or "" when a is a
// public address.
func refusal(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	switch {
	case !a.IsValid():
		return "not a valid address"
	case metadataAddrs[a]:
		return "a cloud metadata endpoint"
	case a.IsUnspecified(), a.Is4() && thisNetwork.Contains(a):
		return "an unspecified address (it reaches this machine)"
	case a.IsLoopback():
		return "a loopback address (this machine)"
	case a.IsPrivate():
		return "a private network address"
	case a.IsLinkLocalUnicast():
		return "a link-local address"
	case a.IsMulticast():
		return "a multicast address"
	case a == broadcast:
		return "the broadcast address"
	case sharedSpace.Contains(a):
		return "a shared (carrier-grade NAT) address"
	case ietfProtocol.Contains(a), benchmarking.Contains(a), reservedV4.Contains(a),
		siteLocal.Contains(a), discardOnly.Contains(a), documentation.Contains(a):
		return "a reserved address"
	case nat64.Contains(a), nat64Local.Contains(a):
		v4, _ := embeddedV4(a)
		if why := refusal(v4); why != "" {
			return "a NAT64 form of " + why
		}
	case sixToFour.Contains(a):
		v4, _ := embeddedV4(a)
		if why := refusal(v4); why != "" {
			return "a 6to4 form of " + why
		}
	case v4Compatible.Contains(a):
		return "a reserved address (IPv4-compatible IPv6)"
	}
	return ""
}

// legacyIPv4 reads a host written as inet_aton reads it: one to four
// parts, decimal, octal (leading 0) or hexadecimal (0x), the last part
// filling the bytes that remain (2130706433, 127.1, 0x7f.0.0.1,
// 0177.0.0.1). Some resolvers connect to such hosts; web_fetch judges
// them as the address they stand for.
func legacyIPv4(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if len(parts) > 4 || host == "" {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		base := 10
		switch {
		case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
			p, base = p[2:], 16
		case len(p) > 1 && p[0] == '0':
			p, base = p[1:], 8
		}
		v, err := strconv.ParseUint(p, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var n uint64
	last := len(vals) - 1
	for i, v := range vals[:last] {
		if v > 0xff {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*i)
	}
	if vals[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	n |= vals[last]
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// A guard dials web_fetch's connections. It resolves the host itself,
// refuses the whole host when any of its addresses is refused and no rule
// allows it (so a name cannot mix a public address with a private one),
// and connects only to the addresses it checked. The dialer's Control
// hook checks the address of each socket once more, just before it
// connects.
type guard struct {
	allow    []FetchRule
	resolver Resolver
	where    string // where rules are configured, for messages
	// timeout bounds a dial whose context has no deadline (the transport
	// dials apart from the request's context).
	timeout time.Duration
	dialer  net.Dialer
	// dial connects to an address already checked; tests replace it.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// ownAddrs returns this machine's interface addresses; tests replace
	// it.
	ownAddrs func() (map[netip.Addr]bool, error)
}

// interfaceAddrs returns the addresses of this machine's network
// interfaces, read at each call: they change as networks come and go.
func interfaceAddrs() (map[netip.Addr]bool, error) {
	nets, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("list the network interfaces' addresses: %w", err)
	}
	own := make(map[netip.Addr]bool, len(nets))
	for _, n := range nets {
		if p, err := netip.ParsePrefix(n.String()); err == nil {
			own[p.Addr().Unmap().WithZone("")] = true
		}
	}
	return own, nil
}

// approvedKey is the context key under which DialContext passes the
// address it checked to the Control hook.
type approvedKey struct{}

func newGuard(allow []FetchRule, resolver Resolver, where string, timeout time.Duration) *guard {
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	g := &guard{allow: allow, resolver: resolver, where: where, timeout: timeout}
	g.dialer.ControlContext = g.control
	g.dial = g.dialer.DialContext
	g.ownAddrs = interfaceAddrs
	return g
}

// DialContext connects to addr, a host and port, if it is allowed.
func (g *guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port64, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("the port %q is not a number from 0 to 65535", portText)
	}
	port := uint16(port64)
	// The transport dials apart from the request's context, without its
	// deadline: the lookup and the dial are bounded here, so that a
	// resolver or an address that never answers does not hold the call.
	if _, ok := ctx.Deadline(); !ok && g.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.timeout)
		defer cancel()
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs, name = []netip.Addr{a}, ""
	} else if a, ok := legacyIPv4(name); ok {
		addrs, name = []netip.Addr{a}, ""
	} else if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		// RFC 6761: such names are this machine, whatever DNS says.
		addrs = []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}
	} else {
		addrs, err = g.resolver.LookupNetIP(ctx, ipNetwork(network), host)
		if err != nil {
			return nil, err
		}
		if len(addrs) == 0 {
			return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
		}
	}
	var own map[netip.Addr]bool // this machine's addresses, read once needed
	for _, a := range addrs {
		why := refusal(a)
		if why == "" {
			// A public address of one of this machine's interfaces reaches
			// its services as loopback does (a server's public address).
			if own == nil {
				if own, err = g.ownAddrs(); err != nil {
					return nil, fmt.Errorf("web_fetch cannot tell whether %s is an address of this machine, so it does not connect: %w", a.Unmap().WithZone(""), err)
				}
			}
			if own[a.Unmap().WithZone("")] {
				why = "an address of this machine (one of its network interfaces)"
			}
		}
		if why != "" && !g.allowed(name, a, port) {
			return nil, &RefusedError{Host: host, Port: port, Addr: a.Unmap().WithZone(""), Resolved: name != "", Reason: why, Allow: g.where}
		}
	}
	var errs []error
	for i, a := range addrs {
		a = a.Unmap()
		if name == "" && a.Zone() == "" {
			a = a.WithZone(zoneOf(host))
		}
		target := netip.AddrPortFrom(a, port)
		conn, err := g.dialOne(context.WithValue(ctx, approvedKey{}, target), network, target.String(), len(addrs)-i)
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// minDialShare is the least time one address of several is given.
const minDialShare = 2 * time.Second

// dialOne connects to one of the left addresses still to try, giving it
// its share of the time that remains, as net.Dialer does, so that one
// address that does not answer leaves time for the others.
func (g *guard) dialOne(ctx context.Context, network, addr string, left int) (net.Conn, error) {
	if deadline, ok := ctx.Deadline(); ok && left > 1 {
		share := max(time.Until(deadline)/time.Duration(left), minDialShare)
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, share)
		defer cancel()
	}
	return g.dial(ctx, network, addr)
}

// zoneOf returns the zone of an IPv6 address such as fe80::1%eth0.
func zoneOf(host string) string {
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Zone()
	}
	return ""
}

// ipNetwork is the network to resolve names in for a dial network.
func ipNetwork(network string) string {
	switch network {
	case "tcp4", "udp4":
		return "ip4"
	case "tcp6", "udp6":
		return "ip6"
	}
	return "ip"
}

func (g *guard) allowed(host string, a netip.Addr, port uint16) bool {
	a = a.Unmap().WithZone("")
	for _, r := range g.allow {
		if r.matches(host, a, port) {
			return true
		}
	}
	return false
}

// control refuses to connect a socket to any address but the one
// DialContext checked.
func (g *guard) control(ctx context.Context, network, address string, _ syscall.RawConn) error {
	approved, _ := ctx.Value(approvedKey{}).(netip.AddrPort)
	got, err := netip.ParseAddrPort(address)
	if err != nil || !approved.IsValid() || got.Addr().Unmap().WithZone("") != approved.Addr().WithZone("") || got.Port() != approved.Port() {
		return fmt.Errorf("web_fetch: refused to connect to %s, which is not the address that was checked", address)
	}
	return nil
}
