package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

func writeIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeTable writes rows as columns two spaces apart, each line starting
// with prefix. right marks the columns aligned to the right. The last
// column is not padded.
func writeTable(w io.Writer, prefix string, header []string, rows [][]string, right []bool) {
	all := rows
	if header != nil {
		all = append([][]string{header}, rows...)
	}
	var widths []int
	for _, row := range all {
		for i, cell := range row {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	for _, row := range all {
		var b strings.Builder
		b.WriteString(prefix)
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
			if i > 0 {
				b.WriteString("  ")
			}
			switch {
			case i < len(right) && right[i]:
				b.WriteString(pad + cell)
			case i == len(row)-1:
				b.WriteString(cell)
			default:
				b.WriteString(cell + pad)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// durationText writes a duration the way people read one: 850ms, 4.2s,
// 1m12s, 2h3m0s, 3d4h.
func durationText(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d < day:
		return d.Round(time.Second).String()
	}
	d = d.Round(time.Hour)
	return fmt.Sprintf("%dd%dh", d/day, d%day/time.Hour)
}

// tokensText writes a token count short: 950, 12.3k, 123k, 1.2M.
func tokensText(n int64) string {
	short := func(v float64, unit string) string {
		if v >= 100 {
			return fmt.Sprintf("%.0f%s", v, unit)
		}
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") + unit
	}
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 999_500:
		return short(float64(n)/1e3, "k")
	}
	return short(float64(n)/1e6, "M")
}

// startedText is a start time in the local zone, to the second.
func startedText(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func countText(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func indentLines(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}
