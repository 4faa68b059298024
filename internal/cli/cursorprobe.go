package cli

import "time"

// cursorWait is how long cadre chat waits for a terminal to say where its
// cursor is before it reads lines without the line editor.
const cursorWait = 2 * time.Second

// cursorReport reports whether b holds a terminal's answer to where its
// cursor is: ESC [ row ; column R.
func cursorReport(b []byte) bool {
	for i := 0; i+1 < len(b); i++ {
		if b[i] != 0x1b || b[i+1] != '[' {
			continue
		}
		j, digits, semis := i+2, 0, 0
		for ; j < len(b); j++ {
			c := b[j]
			switch {
			case c >= '0' && c <= '9':
				digits++
				continue
			case c == ';' && digits > 0 && semis == 0:
				semis++
				digits = 0
				continue
			case c == 'R' && semis == 1 && digits > 0:
				return true
			}
			break
		}
	}
	return false
}
