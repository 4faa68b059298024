package redact

import (
	"slices"
	"strings"
)

// patterns hides the secret patterns in s: URL userinfo and credential
// headers. It returns s itself when there is nothing to hide.
func patterns(s string) string {
	return headers(userinfo(s))
}

// userinfo hides the userinfo of every URL in s: scheme://user:password@
// becomes scheme://user:[REDACTED]@, and scheme://token@ becomes
// scheme://[REDACTED]@.
func userinfo(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "://")
		if j < 0 {
			break
		}
		j += i
		start := j + 3
		k := j
		for k > 0 && schemeChar(s[k-1]) {
			k--
		}
		for k < j && !letter(s[k]) { // a scheme starts with a letter
			k++
		}
		end, at := start, -1
		for end < len(s) && !authorityEnd(s[end]) {
			if s[end] == '@' {
				at = end
			}
			end++
		}
		i = max(end, start)
		if k == j || at <= start {
			continue
		}
		ui := s[start:at]
		repl := Mask
		if user, _, ok := strings.Cut(ui, ":"); ok && user != "" && !strings.Contains(user, Mask) {
			repl = user + ":" + Mask
		}
		if ui == repl || strings.HasSuffix(ui, Mask) {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(repl)
		last = at
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func letter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

func schemeChar(c byte) bool {
	return letter(c) || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

// authorityEnd reports whether c ends the authority of a URL in text: the
// URL's own delimiters, white space, and what quotes or escapes it in
// JSON, HTML or markdown.
func authorityEnd(c byte) bool {
	switch c {
	case '/', '?', '#', ' ', '\t', '\r', '\n', '"', '\\', '<', '>', '`', '{', '}', '|', '^':
		return true
	}
	return c < 0x20 || c == 0x7f
}

// credentialNames are the names, in lower case, whose values are
// credentials: HTTP headers (Authorization and Proxy-Authorization,
// X-Api-Key, Api-Key) and settings (api_key, apikey).
var credentialNames = []string{"authorization", "api-key", "api_key", "apikey"}

// credentialKey reports whether a map key names a credential: one of
// credentialNames, maybe after a prefix ending in - or _ (x-api-key,
// OPENAI_API_KEY).
func credentialKey(k string) bool {
	k = strings.ToLower(k)
	for _, n := range credentialNames {
		if k == n || strings.HasSuffix(k, n) && (k[len(k)-len(n)-1] == '-' || k[len(k)-len(n)-1] == '_') {
			return true
		}
	}
	return false
}

// headers hides the values of credentials written as name: value or
// name=value, quoted or not (Authorization: Bearer x, "x-api-key": "y",
// api_key=z).
func headers(s string) string {
	// Every credential name starts with an a: find those quickly, in
	// either case, and look closer only there.
	var found [][2]int
	for _, a := range []byte{'a', 'A'} {
		for i := 0; ; i++ {
			k := strings.IndexByte(s[i:], a)
			if k < 0 {
				break
			}
			i += k
			n := credentialAt(s, i)
			if n == 0 {
				continue
			}
			vs, ve := credentialValue(s, i+n)
			if vs < 0 {
				continue
			}
			found = append(found, [2]int{vs, ve})
			i = ve - 1
		}
	}
	if len(found) == 0 {
		return s
	}
	slices.SortFunc(found, func(a, b [2]int) int { return a[0] - b[0] })
	var b strings.Builder
	last := 0
	for _, f := range found {
		if f[0] < last {
			continue // inside a value already hidden
		}
		v := s[f[0]:f[1]]
		m := maskCredential(v)
		if m == v {
			continue
		}
		b.WriteString(s[last:f[0]])
		b.WriteString(m)
		last = f[1]
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// credentialAt returns the length of the credential name at s[i:], or 0.
// The name must not continue a word (OPENAI_API_KEY and x-api-key count,
// myapikey does not).
func credentialAt(s string, i int) int {
	if i+1 >= len(s) || s[i+1]|0x20 != 'u' && s[i+1]|0x20 != 'p' {
		return 0
	}
	if i > 0 && (letter(s[i-1]) || '0' <= s[i-1] && s[i-1] <= '9') {
		return 0
	}
	for _, n := range credentialNames {
		if len(s)-i >= len(n) && strings.EqualFold(s[i:i+len(n)], n) {
			return len(n)
		}
	}
	return 0
}

// credentialValue finds the value after a credential name ending at j:
// closing quotes, then : or =, then an opening quote. It returns the
// value's bounds, or -1 when what follows the name is not a value.
func credentialValue(s string, j int) (int, int) {
	skip := func(set string) {
		for j < len(s) && strings.IndexByte(set, s[j]) >= 0 {
			j++
		}
	}
	skip(`"'\`)
	skip(" \t")
	if j >= len(s) || s[j] != ':' && s[j] != '=' {
		return -1, -1
	}
	j++
	if j < len(s) && s[j] == '=' { // :=
		return -1, -1
	}
	skip(" \t")
	q := j
	skip(`"'\`)
	quoted := j > q
	start := j
	// An unquoted value ends at the end of the line, or at what ends a
	// value in a query string, a list or a markup; at a comma only when it
	// has no space before it: "AWS4-HMAC-SHA256 Credential=…, Signature=…"
	// is one value, "api_key=abc, user=x" ends at the comma.
	for j < len(s) {
		if strings.HasPrefix(s[j:], Mask) {
			j += len(Mask)
			continue
		}
		c := s[j]
		if c == '\r' || c == '\n' || c == '"' || c == '\'' || c == '\\' ||
			!quoted && (c == '&' || c == '<' || c == '>' || c == ']' || c == '}' || c == ')' || c == ',' && !strings.ContainsRune(s[start:j], ' ')) {
			break
		}
		j++
	}
	end := j
	for end > start && (s[end-1] == ' ' || s[end-1] == '\t') {
		end--
	}
	if end == start {
		return -1, -1
	}
	return start, end
}

// maskCredential hides a credential's value, keeping its scheme word
// ("Bearer [REDACTED]"). A value already hidden, or a reference to a
// variable (${TOKEN}, $TOKEN), is kept.
func maskCredential(v string) string {
	rest, kept := v, ""
	if sp := strings.IndexAny(v, " \t"); sp > 0 && schemeWord(v[:sp]) {
		kept = v[:sp+1]
		rest = strings.TrimLeft(v[sp+1:], " \t")
	}
	if rest == "" || rest == Mask || strings.HasPrefix(rest, "$") {
		return v
	}
	return kept + Mask
}

// schemeWord reports whether w is an authorization scheme such as Bearer,
// Basic or AWS4-HMAC-SHA256.
func schemeWord(w string) bool {
	if w == "" || !letter(w[0]) {
		return false
	}
	for i := 0; i < len(w); i++ {
		if !schemeChar(w[i]) && w[i] != '_' {
			return false
		}
	}
	return true
}
