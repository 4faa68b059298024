package jsonw

import (
	"encoding/json"
	"math"
	"strings"
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

// FuzzAppendFloat holds AppendFloat to encoding/json's numbers.
func FuzzAppendFloat(f *testing.F) {
	for _, x := range []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 0.1, 1e-6, 9.99e-7, 1e-7, 1.5e-300, 1e20, 1e21, 123456789e15, -2.5e-8, math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1)} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float64) {
		want, err := json.Marshal(x)
		got, ok := AppendFloat([]byte("x"), x)
		if (err == nil) != ok {
			t.Fatalf("AppendFloat(%v) ok=%v, json.Marshal error %v", x, ok, err)
		}
		if ok && (string(got[1:]) != string(want) || got[0] != 'x') {
			t.Fatalf("AppendFloat(%v) = %s, json.Marshal writes %s", x, got[1:], want)
		}
	})
}

// Every byte that needs escaping is seen at every place of a word, among
// plain bytes before and after it (FuzzAppendString's seeds are short).
func TestAppendStringEveryPlace(t *testing.T) {
	specials := []string{"\"", "\\", "<", ">", "&", "\x00", "\x1f", "\n", "\x7f", "é", "\xff", "\u2028"}
	for _, sp := range specials {
		for before := range 17 {
			s := strings.Repeat("a", before) + sp + strings.Repeat("z", 16)
			want, _ := json.Marshal(s)
			if got := AppendString(nil, s); string(got) != string(want) {
				t.Fatalf("AppendString(%q) = %s, json.Marshal writes %s", s, got, want)
			}
		}
	}
}

// BenchmarkAppendString is a system prompt's worth of plain text, the
// longest string a journal entry commonly holds, and as much text in
// Cyrillic, where every word needs the per-byte path.
func BenchmarkAppendString(b *testing.B) {
	for name, line := range map[string]string{
		"prompt":   "You do one unit of work and report it. Call send_agent_message once with the result.\n",
		"cyrillic": "Вы выполняете одну часть работы и сообщаете о ней родителю.\n",
	} {
		b.Run(name, func(b *testing.B) {
			s := strings.Repeat(line, 24)
			buf := make([]byte, 0, 4096)
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				buf = AppendString(buf[:0], s)
			}
		})
	}
}
