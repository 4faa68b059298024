// Package redact removes secrets from text before a person, a log, a store
// or a model sees it.
//
// A Redactor knows two kinds of secret:
//
//   - known values: the API keys, passwords and tokens the program was
//     given (New), found wherever they occur, also in their JSON- and
//     URL-escaped forms. Values shorter than MinSecretLen are ignored: they
//     would match ordinary text.
//   - patterns that are secret whatever their value: the userinfo of a URL
//     (https://user:password@host keeps user and hides the password; a
//     lone user, often a token, is hidden whole), and the value of an
//     Authorization, Proxy-Authorization, X-Api-Key or Api-Key header, or
//     of an api_key or apikey setting (its scheme word, such as Bearer, is
//     kept). A value that is a ${VAR} reference is left as it is.
//
// String, Error, JSON and Value apply both. Values applies the known values
// only: it is meant for text a program goes on working with, such as a
// file a model reads and may edit, where hiding every URL's userinfo would
// change the text under its feet.
//
// What is hidden becomes Mask. Redaction is idempotent, and text without
// a secret is returned as it is, without copying.
//
// A nil *Redactor applies the patterns only. A Redactor is immutable and
// safe for concurrent use.
package redact

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// Mask replaces every secret.
const Mask = "[REDACTED]"

// MinSecretLen is the length below which a known value is not redacted:
// short values match ordinary words. The patterns hide short passwords in
// URLs and headers all the same.
const MinSecretLen = 8

// A Redactor hides a set of known secret values and the secret patterns.
// The zero value and nil hide the patterns only.
type Redactor struct {
	values []string // as given, for With
	// text are the forms searched for in text, json those in JSON text
	// (where a raw value with characters JSON escapes cannot occur as
	// such); longest first, so that a secret containing another is hidden
	// whole.
	text, json       []string
	textRep, jsonRep *strings.Replacer
}

// New returns a Redactor for the secret values given. Values shorter than
// MinSecretLen once trimmed, and parts of Mask, are ignored.
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	seenText, seenJSON := map[string]bool{}, map[string]bool{}
	add := func(list *[]string, seen map[string]bool, v string) {
		if len(v) >= MinSecretLen && !seen[v] {
			seen[v] = true
			*list = append(*list, v)
		}
	}
	for _, s := range secrets {
		// A part of Mask would grow with every pass.
		if len(strings.TrimSpace(s)) < MinSecretLen || strings.Contains(Mask, s) || slices.Contains(r.values, s) {
			continue
		}
		r.values = append(r.values, s)
		forms := variants(s)
		for _, f := range forms {
			add(&r.text, seenText, f)
		}
		for _, f := range forms[1:] { // the escaped forms
			add(&r.json, seenJSON, f)
		}
		if forms[1] == s {
			add(&r.json, seenJSON, s)
		}
	}
	r.textRep = replacer(r.text)
	r.jsonRep = replacer(r.json)
	return r
}

// variants returns s as it is, then as JSON writes it inside a string
// (with and without HTML escaping), then URL-escaped, as a query value and
// as a path segment.
func variants(s string) []string {
	out := []string{s}
	var b bytes.Buffer
	for _, html := range []bool{true, false} {
		b.Reset()
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(s)
		q := strings.TrimSuffix(b.String(), "\n")
		out = append(out, q[1:len(q)-1])
	}
	return append(out, url.QueryEscape(s), url.PathEscape(s))
}

func replacer(values []string) *strings.Replacer {
	if len(values) == 0 {
		return nil
	}
	slices.SortStableFunc(values, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(values))
	for _, v := range values {
		pairs = append(pairs, v, Mask)
	}
	return strings.NewReplacer(pairs...)
}

// With returns a Redactor that hides the values of r and secrets.
func (r *Redactor) With(secrets ...string) *Redactor {
	if r == nil {
		return New(secrets...)
	}
	return New(append(slices.Clone(r.values), secrets...)...)
}

// Empty reports whether r knows no secret values (it still hides the
// patterns).
func (r *Redactor) Empty() bool { return r == nil || len(r.text) == 0 }

// String returns s with the known values and the secret patterns hidden.
func (r *Redactor) String(s string) string {
	if s == "" {
		return s
	}
	return patterns(r.Values(s))
}

// Values returns s with the known values hidden, and nothing else.
func (r *Redactor) Values(s string) string {
	if r == nil || r.textRep == nil || !containsAny(s, r.text) {
		return s
	}
	return r.textRep.Replace(s)
}

func containsAny(s string, values []string) bool {
	for _, v := range values {
		if strings.Contains(s, v) {
			return true
		}
	}
	return false
}

// Error returns err with a redacted message, or err itself when its
// message holds no secret. The result wraps err, so errors.Is and
// errors.As see through it; the errors they find are not redacted.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	red := r.String(msg)
	if red == msg {
		return err
	}
	return &redacted{msg: red, err: err}
}

type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }

// JSON returns the JSON document raw with the secrets in its strings
// hidden, or raw itself when it holds none. Text that is not JSON is
// redacted as text.
func (r *Redactor) JSON(raw []byte) []byte {
	if len(raw) == 0 {
		return raw
	}
	s := string(raw)
	red := s
	if r != nil && r.jsonRep != nil && containsAny(s, r.json) {
		red = r.jsonRep.Replace(s)
	}
	red = patterns(red)
	if red == s {
		return raw
	}
	if json.Valid([]byte(red)) || !json.Valid(raw) {
		return []byte(red)
	}
	// A pattern ran across the document's structure: redact it value by
	// value instead.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return []byte(red)
	}
	b, err := json.Marshal(r.Value(v))
	if err != nil {
		return []byte(red)
	}
	return b
}

// Value returns v with the secrets in its strings hidden: strings, and
// the strings inside maps, slices and JSON documents (json.RawMessage).
// In a map, the value of a key that names a credential header, such as
// Authorization, is hidden whole. Other values are redacted through their
// JSON form: when that holds a secret, the result is the redacted JSON
// decoded into maps and slices. What holds no secret is returned as it
// is; nothing is changed in place.
func (r *Redactor) Value(v any) any {
	out, _ := r.value(v)
	return out
}

// value is Value, reporting whether anything was hidden.
func (r *Redactor) value(v any) (any, bool) {
	switch v := v.(type) {
	case nil, bool, int, int64, float64, json.Number:
		return v, false
	case string:
		s := r.String(v)
		return s, s != v
	case json.RawMessage:
		b := r.JSON(v)
		return json.RawMessage(b), !bytes.Equal(b, v)
	case map[string]any:
		var out map[string]any
		for k, x := range v {
			y, changed := r.value(x)
			if s, ok := y.(string); ok && credentialKey(k) {
				if m := maskCredential(s); m != s {
					y, changed = m, true
				}
			}
			if !changed {
				continue
			}
			if out == nil {
				out = maps.Clone(v)
			}
			out[k] = y
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []any:
		var out []any
		for i, x := range v {
			y, changed := r.value(x)
			if !changed {
				continue
			}
			if out == nil {
				out = slices.Clone(v)
			}
			out[i] = y
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v, false
	}
	red := r.JSON(b)
	if bytes.Equal(red, b) {
		return v, false
	}
	var out any
	if json.Unmarshal(red, &out) != nil {
		return Mask, true
	}
	return out, true
}

// SecretName reports whether an environment variable's name says its
// value is a secret: a part of the name, split at _, is KEY, TOKEN,
// SECRET, PASSWORD or the like (OPENAI_API_KEY, GITHUB_TOKEN,
// AWS_SECRET_ACCESS_KEY, PGPASSWORD).
func SecretName(name string) bool {
	for part := range strings.SplitSeq(strings.ToUpper(name), "_") {
		switch part {
		case "KEY", "KEYS", "APIKEY", "TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWD",
			"PASSPHRASE", "CREDENTIAL", "CREDENTIALS", "PAT":
			return true
		}
		for _, suffix := range []string{"APIKEY", "TOKEN", "SECRET", "PASSWORD"} {
			if strings.HasSuffix(part, suffix) {
				return true
			}
		}
	}
	return false
}

// URLSecrets returns the credentials of s, when s is a URL with userinfo:
// the password ("password" of https://user:password@host), or the user
// when there is no password (a token, as in https://token@host). Callers
// add them to a Redactor's values, so that the credentials are hidden
// also where they occur without the URL around them. It returns nothing
// for anything else.
func URLSecrets(s string) []string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.User == nil {
		return nil
	}
	if p, ok := u.User.Password(); ok {
		return []string{p}
	}
	return []string{u.User.Username()}
}
