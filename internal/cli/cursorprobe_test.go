package cli

import "testing"

func TestCursorReport(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"\x1b[12;40R", true},
		{"typed\x1b[1;1R", true},  // keys typed before the answer
		{"\x1b[A\x1b[3;7R", true}, // an arrow key, then the answer
		{"\x1b[12;40", false},     // cut short: the rest is still to come
		{"\x1b[;40R", false},      // no row
		{"\x1b[12;R", false},      // no column
		{"\x1b[12R", false},       // one number only
		{"\x1b[1;2;3R", false},    // three
		{"\x1b12;40R", false},     // no [
		{"12;40R", false},         // no escape
		{"\x1b[\x1b[5;5R", true},  // a stray escape before the answer
		{"", false},
	} {
		if got := cursorReport([]byte(tc.in)); got != tc.want {
			t.Errorf("cursorReport(%q) = %t, want %t", tc.in, got, tc.want)
		}
	}
}
