package jsonw

import (
	"encoding/json"
	"testing"
)

// FuzzAppendString holds AppendString to encoding/json's escaping:
// the same bytes for every string, valid UTF-8 or not.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "\"\\/", "\b\f\n\r\t\x00\x01\x1f\x7f", "<b>&amp;</b>", "\u2028\u2029", "é日本🎉", "bad \xff\xfe", "\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString([]byte("x"), s); string(got[1:]) != string(want) || got[0] != 'x' {
			t.Fatalf("AppendString(%q) = %s, json.Marshal writes %s", s, got[1:], want)
		}
	})
}
