package jsonw

import (
	"encoding/json"
	"math"
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
