package redact

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	key  = "sk-proj-abc123XYZ"
	pass = `p@ss"w\rd<1>&`
)

func TestString(t *testing.T) {
	r := New(key, pass, "short", "")
	tests := []struct {
		name, in, want string
	}{
		{"none", "nothing secret here", "nothing secret here"},
		{"key", "bad key " + key + "!", "bad key [REDACTED]!"},
		{"key twice", key + key, "[REDACTED][REDACTED]"},
		{"key json escaped", `{"m":"p@ss\"w\\rd\u003c1\u003e\u0026"}`, `{"m":"[REDACTED]"}`},
		{"key url escaped", "https://h/x?k=" + strings.ReplaceAll("p%40ss%22w%5Crd%3C1%3E%26", "", ""), "https://h/x?k=[REDACTED]"},
		{"short values are not secrets", "a short word", "a short word"},
		{"userinfo", "POST http://user:hunter2@127.0.0.1:8/v1/chat: 401", "POST http://user:[REDACTED]@127.0.0.1:8/v1/chat: 401"},
		{"token as user", "git clone https://ghp_abcdef@github.com/o/r", "git clone https://[REDACTED]@github.com/o/r"},
		{"userinfo in json", `{"url":"postgres://u:pw@db:5432/x"}`, `{"url":"postgres://u:[REDACTED]@db:5432/x"}`},
		{"userinfo ipv6", "http://u:p@[::1]:80/", "http://u:[REDACTED]@[::1]:80/"},
		{"at in path is not userinfo", "https://example.com/@user and mailto:a@b", "https://example.com/@user and mailto:a@b"},
		{"no scheme", "://x@y", "://x@y"},
		{"two urls", "http://a:b@h1 and ftp://c@h2/", "http://a:[REDACTED]@h1 and ftp://[REDACTED]@h2/"},
		{"bearer", "> Authorization: Bearer abc.def.ghi\r\n> Accept: */*", "> Authorization: Bearer [REDACTED]\r\n> Accept: */*"},
		{"basic lower", "authorization: basic dXNlcjpwYXNz", "authorization: basic [REDACTED]"},
		{"proxy", "Proxy-Authorization: Basic Zm9v", "Proxy-Authorization: Basic [REDACTED]"},
		{"x-api-key", "x-api-key: sk-ant-123\nnext", "x-api-key: [REDACTED]\nnext"},
		{"json header", `{"Authorization": "Bearer tok", "X-Api-Key":"k2"}`, `{"Authorization": "Bearer [REDACTED]", "X-Api-Key":"[REDACTED]"}`},
		{"escaped json header", `"{\"authorization\":\"Bearer tok\"}"`, `"{\"authorization\":\"Bearer [REDACTED]\"}"`},
		{"env line", "OPENAI_API_KEY=sk-live-1\nHOME=/root", "OPENAI_API_KEY=[REDACTED]\nHOME=/root"},
		{"query", "https://h/p?api_key=abc&x=1", "https://h/p?api_key=[REDACTED]&x=1"},
		{"aws", "Authorization: AWS4-HMAC-SHA256 Credential=AKIA/x, SignedHeaders=host, Signature=ab12", "Authorization: AWS4-HMAC-SHA256 [REDACTED]"},
		{"list", "api_key=abc, user=x", "api_key=[REDACTED], user=x"},
		{"variable reference", `headers: {Authorization: "Bearer ${DOCS_TOKEN}"}`, `headers: {Authorization: "Bearer ${DOCS_TOKEN}"}`},
		{"prose", "Authorization failed; check OPENAI_API_KEY", "Authorization failed; check OPENAI_API_KEY"},
		{"not a credential name", "myapikey: x, authorization_url: https://h/a", "myapikey: x, authorization_url: https://h/a"},
		{"go assignment", "apiKey := cfg.APIKey", "apiKey := cfg.APIKey"},
		{"empty value", "Authorization: \nx", "Authorization: \nx"},
		{"already redacted", "Authorization: Bearer [REDACTED]", "Authorization: Bearer [REDACTED]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.String(tt.in)
			if got != tt.want {
				t.Errorf("String(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			if again := r.String(got); again != got {
				t.Errorf("not idempotent: %q becomes %q", got, again)
			}
		})
	}
}

func TestStringLongestFirst(t *testing.T) {
	r := New("abcdefgh", "abcdefghijkl")
	if got := r.String("xabcdefghijkly"); got != "x[REDACTED]y" {
		t.Errorf("got %q: the longer secret must be hidden whole", got)
	}
}

func TestMaskIsNotASecret(t *testing.T) {
	r := New("REDACTED", "[REDACTED]")
	if got := r.String("a [REDACTED] b"); got != "a [REDACTED] b" {
		t.Errorf("got %q", got)
	}
}

func TestNil(t *testing.T) {
	var r *Redactor
	if got := r.String("http://u:p@h/ " + key); got != "http://u:[REDACTED]@h/ "+key {
		t.Errorf("nil redactor: %q", got)
	}
	if got := r.Values(key); got != key {
		t.Errorf("nil Values: %q", got)
	}
	if !r.Empty() || !New("x").Empty() || New(key).Empty() {
		t.Error("Empty")
	}
	if got := r.With(key).String(key); got != Mask {
		t.Errorf("nil With: %q", got)
	}
}

func TestValues(t *testing.T) {
	r := New(key)
	in := "url http://u:p@h/ and Authorization: Bearer x and " + key
	if got, want := r.Values(in), "url http://u:p@h/ and Authorization: Bearer x and [REDACTED]"; got != want {
		t.Errorf("Values = %q, want %q", got, want)
	}
	r2 := r.With("another-secret-9")
	if got := r2.Values(key + " another-secret-9"); got != "[REDACTED] [REDACTED]" {
		t.Errorf("With: %q", got)
	}
	if got := r.Values("another-secret-9"); got != "another-secret-9" {
		t.Errorf("With changed its receiver: %q", got)
	}
}

func TestError(t *testing.T) {
	r := New(key)
	if r.Error(nil) != nil {
		t.Fatal("nil error")
	}
	plain := errors.New("no secret")
	if r.Error(plain) != plain {
		t.Error("an error without a secret must be returned as it is")
	}
	base := &fs.PathError{Op: "open", Path: "/x", Err: fs.ErrNotExist}
	err := r.Error(fmt.Errorf("key %s: %w", key, base))
	if err.Error() != "key [REDACTED]: open /x: file does not exist" {
		t.Errorf("message %q", err)
	}
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) {
		t.Error("the redacted error must wrap the original")
	}
}

func TestJSON(t *testing.T) {
	r := New(key, pass)
	tests := []struct{ name, in, want string }{
		{"unchanged", `{"a":"b"}`, `{"a":"b"}`},
		{"value", `{"error":"bad key ` + key + `","n":1}`, `{"error":"bad key [REDACTED]","n":1}`},
		{"escaped value", `["p@ss\"w\\rd\u003c1\u003e\u0026"]`, `["[REDACTED]"]`},
		{"raw form of an escaped value is not JSON's", `["p@ss"]`, `["p@ss"]`},
		{"userinfo", `{"u":"https://a:b@h/"}`, `{"u":"https://a:[REDACTED]@h/"}`},
		{"header", `{"headers":{"Authorization":"Bearer t"}}`, `{"headers":{"Authorization":"Bearer [REDACTED]"}}`},
		{"not json", `key ` + key, `key [REDACTED]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(r.JSON([]byte(tt.in)))
			if got != tt.want {
				t.Errorf("JSON(%s)\n got %s\nwant %s", tt.in, got, tt.want)
			}
			if json.Valid([]byte(tt.in)) && !json.Valid([]byte(got)) {
				t.Errorf("the result is not JSON: %s", got)
			}
		})
	}
	// A document as it is passes through without a copy.
	in := []byte(`{"a":1}`)
	if out := r.JSON(in); &out[0] != &in[0] {
		t.Error("JSON copied a document without secrets")
	}
}

func TestValue(t *testing.T) {
	r := New(key)
	type usage struct {
		In  int    `json:"in"`
		Msg string `json:"msg"`
	}
	data := map[string]any{
		"error":   "failed: " + key,
		"count":   3,
		"nested":  []any{"http://u:p@h/", map[string]any{"x-api-key": "abc"}},
		"headers": map[string]any{"Authorization": "Bearer tok", "Accept": "*/*"},
		"keep":    map[string]any{"a": "b"},
		"usage":   usage{In: 1, Msg: "x"},
		"leaky":   usage{In: 1, Msg: key},
		"raw":     json.RawMessage(`{"k":"` + key + `"}`),
		"strings": []string{"fine", key},
	}
	got := r.Value(data).(map[string]any)
	want := map[string]any{
		"error":   "failed: [REDACTED]",
		"count":   3,
		"nested":  []any{"http://u:[REDACTED]@h/", map[string]any{"x-api-key": "[REDACTED]"}},
		"headers": map[string]any{"Authorization": "Bearer [REDACTED]", "Accept": "*/*"},
		"keep":    map[string]any{"a": "b"},
		"usage":   usage{In: 1, Msg: "x"},
		"leaky":   map[string]any{"in": float64(1), "msg": "[REDACTED]"},
		"raw":     json.RawMessage(`{"k":"[REDACTED]"}`),
		"strings": []any{"fine", "[REDACTED]"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Value (-want +got):\n%s", diff)
	}
	if data["error"] != "failed: "+key || data["headers"].(map[string]any)["Authorization"] != "Bearer tok" {
		t.Error("Value changed its argument")
	}
	clean := map[string]any{"a": "b", "n": []any{"c"}}
	if out := r.Value(clean).(map[string]any); fmt.Sprintf("%p", out) != fmt.Sprintf("%p", clean) {
		t.Error("Value copied a map without secrets")
	}
}

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"OPENAI_API_KEY": true, "GITHUB_TOKEN": true, "AWS_SECRET_ACCESS_KEY": true, "PGPASSWORD": true,
		"DOCS_APIKEY": true, "gh_pat": true, "NPM_AUTH_TOKEN": true, "MY_CREDENTIALS": true,
		"PATH": false, "SSH_AUTH_SOCK": false, "XAUTHORITY": false, "HOME": false, "KEYBOARD": false, "TOKENIZERS_PARALLELISM": false, "PWD": false, "LANG": false,
	} {
		if got := SecretName(name); got != want {
			t.Errorf("SecretName(%s) = %v, want %v", name, got, want)
		}
	}
}

func TestURLSecrets(t *testing.T) {
	for in, want := range map[string][]string{
		"https://user:pass@host/v1": {"pass"},
		"http://u:p%40ss@h":         {"p@ss"},
		"http://token@h":            {"token"},
		"http://h/v1":               nil,
		"127.0.0.1:11434":           nil,
		"%":                         nil,
	} {
		if got := URLSecrets(in); !slices.Equal(got, want) {
			t.Errorf("URLSecrets(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzString(f *testing.F) {
	f.Add("Authorization: Bearer x http://u:p@h/ "+key, key)
	f.Add(`{"api_key":"v","u":"s3://a@b"}`, "secret-value")
	f.Fuzz(func(t *testing.T, s, secret string) {
		r := New(secret)
		got := r.String(s)
		if again := r.String(got); again != got {
			t.Fatalf("not idempotent: %q → %q → %q", s, got, again)
		}
		if len(strings.TrimSpace(secret)) >= MinSecretLen && strings.Contains(got, secret) && !strings.Contains(secret, Mask) {
			t.Fatalf("the secret %q is still in %q", secret, got)
		}
		if json.Valid([]byte(s)) && !json.Valid(r.JSON([]byte(s))) {
			t.Fatalf("JSON(%q) is not JSON: %q", s, r.JSON([]byte(s)))
		}
	})
}

func BenchmarkString(b *testing.B) {
	page := strings.Repeat("An ordinary line of a fetched page, about 64 bytes long, no secret.\n", 16_000) // 1 MB
	withSecret := page[:len(page)/2] + "token " + key + " and Authorization: Bearer abc\n" + page[len(page)/2:]
	r := New(key, "another-long-secret-value", "https://u:p@example.com")
	for _, c := range []struct{ name, s string }{{"clean_1MB", page}, {"secret_1MB", withSecret}, {"short", "model call failed: HTTP 500"}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.s)))
			for b.Loop() {
				r.String(c.s)
			}
		})
	}
}
