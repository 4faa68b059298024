package agentdef

import "testing"

// TestLFLine: the YAML parser ends a line at \n, \r\n or a lone \r; the
// file's lines end at \n only, and diagnostics name those.
func TestLFLine(t *testing.T) {
	src := []byte("a\rb\nc\r\nd\r\re\n")
	for yl, want := range map[int]int{1: 1, 2: 1, 3: 2, 4: 3, 5: 3, 6: 3, 7: 4, 9: 4} {
		if got := lfLine(src, yl); got != want {
			t.Errorf("YAML line %d is file line %d, want %d", yl, got, want)
		}
	}
	if got := lfLine([]byte("a\nb\n"), 2); got != 2 {
		t.Errorf("without carriage returns, line 2 became %d", got)
	}
}
