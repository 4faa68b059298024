// Package jsonw writes JSON by appending to a byte slice, byte for byte as
// encoding/json writes the same values, for the paths where encoding/json's
// reflection and allocations show: journal entries and events.
package jsonw

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// AppendString appends s as a JSON string, escaped as encoding/json
// escapes it: quote and backslash, \b \f \n \r \t, other control
// characters and <, >, &, U+2028 and U+2029 as \u escapes, and each byte of
// invalid UTF-8 as \ufffd. FuzzAppendString holds it to json.Marshal.
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	retry := 0 // where the word test is next worth trying: not within a word that failed it
	for i := 0; i < len(s); {
		if i >= retry && i+8 <= len(s) {
			j := skipPlain(s, i)
			retry = j + 8
			if j > i {
				i = j
				continue
			}
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Masks of plain8: each byte of the word set to 0x01, or to 0x80.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// skipPlain returns where, from i on, the first word of 8 bytes of s
// that holds a byte needing more than a copy starts (or the last whole
// word ends). A byte needs more unless it is ASCII, not a control
// character, and none of " \ < > &. Looking at 8 bytes as one word makes
// AppendString about three times as fast as a test per byte on text such
// as a prompt (BenchmarkAppendString). In w-n*ones&^w, a byte below n sets
// the high bit of its place, and a byte equal to c is below 1 once w is
// xored with c*ones; neither sets the high bit of a word that has no such
// byte.
func skipPlain(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		_ = s[i+7] // one bounds check for the word
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		q, bs, lt, gt, amp := w^('"'*ones), w^('\\'*ones), w^('<'*ones), w^('>'*ones), w^('&'*ones)
		special := w | (w-0x20*ones)&^w |
			(q-ones)&^q | (bs-ones)&^bs | (lt-ones)&^lt | (gt-ones)&^gt | (amp-ones)&^amp
		if special&highs != 0 {
			break
		}
	}
	return i
}

// AppendFloat appends f as encoding/json writes a float64: the shortest
// decimal that reads back as f, in exponent form below 1e-6 and from 1e21
// on (with a two-digit exponent at least). It reports false for NaN and
// the infinities, which JSON cannot hold.
func AppendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 is written 1e-7.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}
