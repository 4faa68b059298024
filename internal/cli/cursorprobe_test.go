package cli

import "testing"

func TestCutCursorReport(t *testing.T) {
	for _, tc := range []struct {
		in, rest string
		found    bool
	}{
		{"\x1b[12;40R", "", true},
		{"typed\x1b[1;1R", "typed", true},     // keys typed before the answer
		{"ab\x1b[1;1Rcd\r", "abcd\r", true},   // and after it, in the same read
		{"\x1b[A\x1b[3;7R", "\x1b[A", true},   // an arrow key, then the answer
		{"\x1b[12;40", "\x1b[12;40", false},   // cut short: the rest is still to come
		{"\x1b[;40R", "\x1b[;40R", false},     // no row
		{"\x1b[12;R", "\x1b[12;R", false},     // no column
		{"\x1b[12R", "\x1b[12R", false},       // one number only
		{"\x1b[1;2;3R", "\x1b[1;2;3R", false}, // three
		{"\x1b12;40R", "\x1b12;40R", false},   // no [
		{"12;40R", "12;40R", false},           // no escape
		{"\x1b[\x1b[5;5R", "\x1b[", true},     // a stray escape before the answer
		{"", "", false},
	} {
		rest, found := cutCursorReport([]byte(tc.in))
		if string(rest) != tc.rest || found != tc.found {
			t.Errorf("cutCursorReport(%q) = %q, %t; want %q, %t", tc.in, rest, found, tc.rest, tc.found)
		}
	}
}
