package cli

import "time"

// cursorWait is how long cadre chat waits for a terminal to say where its
// cursor is before it reads lines without the line editor.
const cursorWait = 2 * time.Second

// cutCursorReport finds a terminal's answer to where its cursor is, ESC [
// row ; column R, in b, and returns b without it and whether it was there.
func cutCursorReport(b []byte) ([]byte, bool) {
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
				return append(b[:i:i], b[j+1:]...), true
			}
			break
		}
	}
	return b, false
}
