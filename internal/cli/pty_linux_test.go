package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"
)

// These tests run the cadre binary on a pseudo-terminal, as a user at a
// terminal would, and read the screen through a small terminal emulator.

// openPty opens a pseudo-terminal of the given size and returns its
// master side, which the test reads, and its slave side, the terminal the
// process writes to.
func openPty(t *testing.T, cols, rows int) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal on this machine (%v): the live tree is tested on a terminal only", err)
	}
	var n uint32
	if err := ptyIoctl(m, syscall.TIOCSPTLCK, unsafe.Pointer(new(int32))); err != nil {
		m.Close()
		t.Skipf("cannot unlock the pseudo-terminal: %v", err)
	}
	if err := ptyIoctl(m, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		m.Close()
		t.Skipf("cannot find the pseudo-terminal's number: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("cannot open the pseudo-terminal's slave side: %v", err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	setPtySize(t, s, cols, rows)
	return m, s
}

func ptyIoctl(f *os.File, req uint, arg unsafe.Pointer) error {
	c, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := c.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, uintptr(req), uintptr(arg))
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

func setPtySize(t *testing.T, f *os.File, cols, rows int) {
	t.Helper()
	ws := struct{ Row, Col, X, Y uint16 }{uint16(rows), uint16(cols), 0, 0}
	if err := ptyIoctl(f, syscall.TIOCSWINSZ, unsafe.Pointer(&ws)); err != nil {
		t.Fatalf("set the terminal's size: %v", err)
	}
}

// screen is a terminal emulator that knows enough of ANSI to show what
// cadre draws: printable text (wide characters take two cells), carriage
// return, line feed with scrolling, cursor movement, erase in line and in
// display. Lines that scroll off the top are kept.
type screen struct {
	cols, rows int
	cells      [][]rune // rows × cols; 0 is an empty cell, wideTail the right half of a wide character
	row, col   int
	scrolled   []string // lines that scrolled off the top, oldest first
	wraps      int      // lines too long for the screen, which the terminal wrapped
	escapes    int      // control sequences seen
	pending    []byte   // the start of a sequence or character cut by a read
	// replies are what the terminal answers to the program (the cursor's
	// position, when asked), not yet sent.
	replies []string
}

const wideTail = -1

func newScreen(cols, rows int) *screen {
	s := &screen{cols: cols, rows: rows}
	for range rows {
		s.cells = append(s.cells, make([]rune, cols))
	}
	return s
}

// resize changes the width as xterm does: lines are cut, not rewrapped.
func (s *screen) resize(cols int) {
	for i, r := range s.cells {
		n := make([]rune, cols)
		copy(n, r)
		s.cells[i] = n
	}
	s.cols = cols
	s.col = min(s.col, cols)
}

func (s *screen) Write(p []byte) (int, error) {
	b := append(s.pending, p...)
	s.pending = nil
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == 0x1b:
			n := s.escape(b[i:])
			if n == 0 {
				s.pending = append([]byte(nil), b[i:]...)
				return len(p), nil
			}
			s.escapes++
			i += n
			continue
		case c == '\r':
			s.col = 0
		case c == '\n':
			s.lineFeed()
		case c == '\b':
			s.col = max(s.col-1, 0)
		case c < 0x20 || c == 0x7f:
		default:
			if !utf8.FullRune(b[i:]) {
				s.pending = append([]byte(nil), b[i:]...)
				return len(p), nil
			}
			r, n := utf8.DecodeRune(b[i:])
			s.put(r)
			i += n
			continue
		}
		i++
	}
	return len(p), nil
}

func (s *screen) put(r rune) {
	w := runeWidth(r)
	if w == 0 {
		return
	}
	if s.col+w > s.cols {
		s.wraps++
		s.col = 0
		s.lineFeed()
	}
	s.cells[s.row][s.col] = r
	if w == 2 {
		s.cells[s.row][s.col+1] = wideTail
	}
	s.col += w
}

func (s *screen) lineFeed() {
	if s.row < s.rows-1 {
		s.row++
		return
	}
	s.scrolled = append(s.scrolled, s.line(0))
	copy(s.cells, s.cells[1:])
	s.cells[s.rows-1] = make([]rune, s.cols)
}

// escape carries out the sequence at the start of b and returns its
// length, or 0 when b holds only its start.
func (s *screen) escape(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	if b[1] != '[' {
		return 2 // ESC and one character: nothing cadre sends
	}
	end := 2
	for end < len(b) && (b[end] < 0x40 || b[end] > 0x7e) {
		end++
	}
	if end == len(b) {
		return 0
	}
	params := string(b[2:end])
	n := 0
	if params != "" && !strings.HasPrefix(params, "?") {
		n, _ = strconv.Atoi(strings.Split(params, ";")[0])
	}
	atLeast1 := max(n, 1)
	clear := func(row, from, to int) {
		for c := from; c < to; c++ {
			s.cells[row][c] = 0
		}
	}
	switch b[end] {
	case 'n': // device status report: "6" asks where the cursor is
		if params == "6" {
			s.replies = append(s.replies, fmt.Sprintf("\x1b[%d;%dR", s.row+1, s.col+1))
		}
	case 'A':
		s.row = max(s.row-atLeast1, 0)
	case 'B':
		s.row = min(s.row+atLeast1, s.rows-1)
	case 'C':
		s.col = min(s.col+atLeast1, s.cols-1)
	case 'D':
		s.col = max(s.col-atLeast1, 0)
	case 'G':
		s.col = min(atLeast1-1, s.cols-1)
	case 'H':
		s.row, s.col = 0, 0
		if parts := strings.Split(params, ";"); len(parts) == 2 {
			r, _ := strconv.Atoi(parts[0])
			c, _ := strconv.Atoi(parts[1])
			s.row, s.col = min(max(r, 1), s.rows)-1, min(max(c, 1), s.cols)-1
		}
	case 'K':
		switch n {
		case 0:
			clear(s.row, min(s.col, s.cols), s.cols)
		case 1:
			clear(s.row, 0, min(s.col+1, s.cols))
		case 2:
			clear(s.row, 0, s.cols)
		}
	case 'J':
		switch n {
		case 0:
			clear(s.row, min(s.col, s.cols), s.cols)
			for r := s.row + 1; r < s.rows; r++ {
				clear(r, 0, s.cols)
			}
		case 1:
			for r := 0; r < s.row; r++ {
				clear(r, 0, s.cols)
			}
			clear(s.row, 0, min(s.col+1, s.cols))
		case 2:
			for r := range s.rows {
				clear(r, 0, s.cols)
			}
		}
	}
	return end + 1
}

func (s *screen) line(r int) string {
	var b strings.Builder
	for _, c := range s.cells[r] {
		switch c {
		case 0:
			b.WriteByte(' ')
		case wideTail:
		default:
			b.WriteRune(c)
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// lines is what the screen shows, without the empty lines at the bottom.
func (s *screen) lines() []string {
	var out []string
	for r := range s.rows {
		out = append(out, s.line(r))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// history is every line written: those scrolled off, then the screen.
func (s *screen) history() []string {
	return append(append([]string(nil), s.scrolled...), s.lines()...)
}

func (s *screen) String() string { return strings.Join(s.lines(), "\n") }

// ptyRun is one run of the binary with its stderr (and stdin) on a
// pseudo-terminal.
type ptyRun struct {
	screen *screen
	raw    bytes.Buffer // all the terminal received
	stdout string       // when stdout was a pipe
	code   int
}

type ptyOptions struct {
	cols, rows int
	// stdoutPipe sends stdout to a pipe rather than the terminal.
	stdoutPipe bool
	// watch is called with the screen after each read from the terminal.
	watch func(s *screen)
	// resize, if set, is called after each read; when it returns a width
	// the terminal is resized to it.
	resize func(s *screen) int
	// master is set to the terminal's master side, which watch may write
	// to as if typing.
	master *os.File
	// env are variables set for the process (KEY=value), after those
	// every run gets.
	env []string
	// mute makes the terminal one that never says where its cursor is.
	mute bool
}

// runOnPty runs the cadre binary with args in dir on a pseudo-terminal
// and reads the terminal until the process exits. A run that does not end
// within a minute fails the test.
func runOnPty(t *testing.T, dir string, opt *ptyOptions, args ...string) *ptyRun {
	t.Helper()
	bin := cadreBinary(t)
	master, slave := openPty(t, opt.cols, opt.rows)
	opt.master = master
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"HOME=" + testHome(t), "PATH=" + os.Getenv("PATH"), "TERM=xterm"}, opt.env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	var stdout bytes.Buffer
	if opt.stdoutPipe {
		cmd.Stdout = &stdout
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close() // the process has its own; the master reads EOF (EIO) when it exits
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	chunks := make(chan []byte)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 4096)
			n, err := master.Read(buf)
			if n > 0 {
				chunks <- buf[:n]
			}
			if err != nil {
				return
			}
		}
	}()

	run := &ptyRun{screen: newScreen(opt.cols, opt.rows)}
	deadline := time.After(time.Minute)
	for open := true; open; {
		select {
		case b, ok := <-chunks:
			if !ok {
				open = false
				break
			}
			run.raw.Write(b)
			run.screen.Write(b)
			for _, r := range run.screen.replies {
				if !opt.mute {
					master.Write([]byte(r))
				}
			}
			run.screen.replies = nil
			if opt.watch != nil {
				opt.watch(run.screen)
			}
			if opt.resize != nil {
				if w := opt.resize(run.screen); w > 0 {
					run.screen.resize(w)
					setPtySize(t, master, w, opt.rows)
				}
			}
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("cadre did not end within a minute; the screen:\n%s", run.screen)
		}
	}
	var err error
	select {
	case err = <-waited:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("cadre closed the terminal but did not exit")
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		run.code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	run.stdout = stdout.String()
	return run
}

var (
	// An agent's line: its mark and name, indented by depth, its status,
	// turns and tokens (left out on a narrow screen), elapsed time and
	// task (cut with … to fit).
	treeRootLine  = regexp.MustCompile(`^(\S) root +(queued|running|waiting|done|failed|cancelled)(?: +turns \d+ +[\d.]+[kM]? tok)? +[\d.hms]+ +(.+)$`)
	treeChildLine = regexp.MustCompile(`^  (\S) (alpha|beta)\.1 +(queued|running|waiting|done|failed|cancelled)(?: +turns \d+ +[\d.]+[kM]? tok)? +[\d.hms]+ +(.+)$`)
	treeHidden    = regexp.MustCompile(`^… (\d+) more agents not shown: `)
	treeBudget    = regexp.MustCompile(`^tokens \d+ of 500k budget \(\d+%\)$`)
)

// TestPtyTree runs a delegation on a terminal and reads the tree off the
// screen while it runs and once it has ended.
func TestPtyTree(t *testing.T) {
	dir, model := scriptedProject(t, fruitScript)
	tests := []struct {
		name       string
		cols, rows int
		resizeTo   int // resize the terminal to this width once the tree shows
		stdoutPipe bool
		allAgents  bool // the frames have room for every agent
	}{
		{name: "wide", cols: 100, rows: 30, allAgents: true},
		{name: "answer on a pipe", cols: 100, rows: 30, stdoutPipe: true, allAgents: true},
		{name: "narrowed mid-run", cols: 100, rows: 30, resizeTo: 50, allAgents: true},
		{name: "too short for the tree", cols: 60, rows: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			type sighting struct{ first, last int }
			seen := map[string]*sighting{} // "alpha.1 running" → the reads after which the screen first and last showed it
			reads, resizedAt := 0, 0
			var tooWide []string
			opt := ptyOptions{cols: tt.cols, rows: tt.rows, stdoutPipe: tt.stdoutPipe}
			opt.watch = func(s *screen) {
				reads++
				for _, l := range s.lines() {
					key := ""
					if m := treeRootLine.FindStringSubmatch(l); m != nil {
						key = "root " + m[2]
					} else if m := treeChildLine.FindStringSubmatch(l); m != nil {
						key = m[2] + ".1 " + m[3]
					}
					if key == "" {
						continue
					}
					if displayWidth(l) > s.cols-1 && (resizedAt == 0 || reads > resizedAt+1) {
						tooWide = append(tooWide, l)
					}
					if seen[key] == nil {
						seen[key] = &sighting{first: reads}
					}
					seen[key].last = reads
				}
			}
			if tt.resizeTo > 0 {
				opt.resize = func(s *screen) int {
					if resizedAt > 0 || seen["root waiting"] == nil {
						return 0
					}
					resizedAt = reads
					return tt.resizeTo
				}
			}
			run := runOnPty(t, dir, &opt, "run", "--store", "none", "--approve", "none", "--max-concurrent", "1", "-m", model, "Count the fruit")
			scr := run.screen
			hist := scr.history()
			everything := strings.Join(hist, "\n")
			if run.code != 0 {
				t.Fatalf("exit %d; the terminal:\n%s", run.code, everything)
			}
			for _, l := range tooWide {
				t.Errorf("line wider than the terminal: %q", l)
			}
			if tt.resizeTo > 0 && resizedAt == 0 {
				t.Fatal("the tree never showed the root waiting, so the terminal was not resized")
			}

			// While the children worked, the screen showed the root waiting,
			// each child running (one queued while the other had the only
			// slot), and then everything done, never going back.
			if tt.allAgents {
				for _, key := range []string{"root waiting", "alpha.1 running", "beta.1 running", "root done", "alpha.1 done", "beta.1 done"} {
					if seen[key] == nil {
						t.Errorf("the screen never showed %q; seen %v; the terminal:\n%s", key, keys(seen), everything)
					}
				}
				if seen["alpha.1 queued"] == nil && seen["beta.1 queued"] == nil {
					t.Errorf("the screen never showed a child queued; seen %v", keys(seen))
				}
				for _, who := range []string{"root", "alpha.1", "beta.1"} {
					done := seen[who+" done"]
					for _, st := range []string{"queued", "running", "waiting"} {
						if s := seen[who+" "+st]; s != nil && done != nil && s.last > done.first {
							t.Errorf("%s was shown %s after it was shown done", who, st)
						}
					}
				}
			}

			// The last frame: the root, its children indented below it (or a
			// line counting them), the budget line, then the answer.
			top := -1
			for i, l := range hist {
				if treeRootLine.MatchString(l) {
					top = i
				}
			}
			if top < 0 {
				t.Fatalf("no root line on the terminal:\n%s", everything)
			}
			frame := hist[top:]
			if tt.stdoutPipe {
				if run.stdout != fruitAnswer+"\n" {
					t.Errorf("stdout %q, want the answer", run.stdout)
				}
				if strings.Contains(everything, fruitAnswer) {
					t.Errorf("the answer is on the terminal though stdout is a pipe:\n%s", everything)
				}
			} else {
				if frame[len(frame)-1] != fruitAnswer {
					t.Errorf("the last line on the terminal is %q, want the answer:\n%s", frame[len(frame)-1], everything)
				}
				frame = frame[:len(frame)-1]
			}
			width := scr.cols
			for _, l := range frame {
				if displayWidth(l) > width-1 {
					t.Errorf("a line of the last frame is %d cells wide on a terminal of %d: %q", displayWidth(l), width, l)
				}
			}
			want := []*regexp.Regexp{treeRootLine, treeChildLine, treeChildLine, treeBudget}
			if !tt.allAgents {
				want = []*regexp.Regexp{treeRootLine, treeHidden, treeBudget}
			}
			if len(frame) != len(want) {
				t.Fatalf("the last frame has %d lines, want %d:\n%s", len(frame), len(want), strings.Join(frame, "\n"))
			}
			for i, re := range want {
				if !re.MatchString(frame[i]) {
					t.Errorf("line %d of the last frame is %q, want it to match %s", i, frame[i], re)
				}
			}
			if m := treeRootLine.FindStringSubmatch(frame[0]); m[1] != "✓" || m[2] != "done" {
				t.Errorf("root line at the end %q, want ✓ … done", frame[0])
			}
			if tt.allAgents {
				for _, l := range frame[1:3] {
					if m := treeChildLine.FindStringSubmatch(l); m != nil && (m[1] != "✓" || m[3] != "done") {
						t.Errorf("child line at the end %q, want ✓ … done", l)
					}
				}
				if tt.resizeTo == 0 {
					// The root calls its model twice; a child once, since
					// the reply that sends its report ends it.
					if !strings.Contains(frame[0], " turns 2 ") || !strings.Contains(frame[1], " turns 1 ") {
						t.Errorf("the lines of the last frame do not show the turns:\n%s", strings.Join(frame, "\n"))
					}
					for i, task := range []string{"Count the fruit", "Count the apples in the basket.", "Count the pears in the basket."} {
						if !strings.HasSuffix(frame[i], "  "+task) {
							t.Errorf("line %q does not end with the task %q", frame[i], task)
						}
					}
				}
			} else if !strings.HasPrefix(frame[1], "… 2 more agents not shown: 2 done") {
				t.Errorf("on %d rows the last frame counts the children as %q, want 2 done", tt.rows, frame[1])
			}

			// Each frame replaced the one before in place: the tree is on the
			// terminal once. (Not after a resize: a frame drawn for the old
			// width just before it may wrap and be erased only in part.)
			if tt.resizeTo == 0 {
				if scr.wraps > 0 {
					t.Errorf("%d lines were too long for the terminal and wrapped:\n%s", scr.wraps, everything)
				}
				roots, budgets := 0, 0
				for _, l := range hist {
					if treeRootLine.MatchString(l) {
						roots++
					}
					if treeBudget.MatchString(l) {
						budgets++
					}
				}
				if roots != 1 || budgets != 1 {
					t.Errorf("the terminal shows %d root lines and %d budget lines, want the last frame's alone:\n%s", roots, budgets, everything)
				}
			}
			t.Logf("the last screen (%dx%d):\n%s", scr.cols, scr.rows, scr)
		})
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestPtyTreeMidRun checks the layout of a frame drawn while the children
// work: the children are indented below the root, each line fits, and the
// root's text is below the agents with the budget line last.
func TestPtyTreeMidRun(t *testing.T) {
	dir, model := scriptedProject(t, fruitScript)
	var mid string
	opt := ptyOptions{cols: 80, rows: 24, watch: func(s *screen) {
		l := s.lines()
		if mid != "" || len(l) < 6 {
			return
		}
		if treeRootLine.MatchString(l[0]) && strings.Contains(l[0], "waiting") && treeChildLine.MatchString(l[1]) && treeChildLine.MatchString(l[2]) &&
			l[3] == "" && l[4] == "Splitting the work." && strings.HasPrefix(l[5], "tokens ") {
			mid = s.String()
		}
	}}
	run := runOnPty(t, dir, &opt, "run", "--store", "none", "--approve", "none", "-m", model, "Count the fruit")
	if run.code != 0 {
		t.Fatalf("exit %d; the screen:\n%s", run.code, run.screen)
	}
	if mid == "" {
		t.Fatalf("no frame showed the root waiting above its two children, its text and the budget; the last screen:\n%s", run.screen)
	}
	t.Logf("a frame mid-run:\n%s", mid)
}

// With --no-tree, or when stderr is a terminal but the tree is turned off,
// progress is plain lines with no escape sequences.
func TestPtyNoTree(t *testing.T) {
	dir, model := scriptedProject(t, fruitScript)
	run := runOnPty(t, dir, &ptyOptions{cols: 100, rows: 30, stdoutPipe: true}, "run", "--no-tree", "--store", "none", "--approve", "none", "-m", model, "Count the fruit")
	if run.code != 0 {
		t.Fatalf("exit %d; the screen:\n%s", run.code, run.screen)
	}
	if run.screen.escapes > 0 || bytes.IndexByte(run.raw.Bytes(), 0x1b) >= 0 {
		t.Errorf("the terminal received escape sequences: %q", run.raw.String())
	}
	if run.stdout != fruitAnswer+"\n" {
		t.Errorf("stdout %q, want the answer", run.stdout)
	}
	out := strings.Join(run.screen.history(), "\n")
	for _, want := range []string{
		"root ⇢ root/alpha.1 (alpha, sync): Count the apples in the basket.",
		"root ⇢ root/beta.1 (beta, sync): Count the pears in the basket.",
		"root/alpha.1 done",
		"root/beta.1 done",
		"Splitting the work.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the terminal lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "turns ") {
		t.Errorf("the terminal shows the tree:\n%s", out)
	}
}

// The emulator itself: frames erased in place leave one frame.
func TestPtyScreen(t *testing.T) {
	s := newScreen(10, 4)
	fmt.Fprint(s, "header\r\n")
	fmt.Fprint(s, "a 1\x1b[K\r\nb 1\x1b[K\r\n")
	fmt.Fprint(s, "\x1b[2A\r\x1b[Ja 2\x1b[K\r\nb 2\x1b[K\r\n")
	if got := strings.Join(s.lines(), "|"); got != "header|a 2|b 2" {
		t.Errorf("screen %q", got)
	}
	fmt.Fprint(s, "漢字漢字漢字\r\n") // 12 cells on 10 columns: wraps
	fmt.Fprint(s, "\x1b[")      // a sequence cut by a read
	fmt.Fprint(s, "1Aend")
	if got := strings.Join(s.history(), "|"); s.wraps != 1 || got != "header|a 2|b 2|漢字漢字漢|end" {
		t.Errorf("history %q, wraps %d", got, s.wraps)
	}
}

// Ctrl+C typed on the terminal stops a run shown as a tree: cadre exits
// 130 and the last frame shows every agent cancelled.
func TestPtyInterrupt(t *testing.T) {
	dir, model := scriptedProject(t, hangScript)
	sent := false
	var opt ptyOptions
	opt = ptyOptions{cols: 100, rows: 30, stdoutPipe: true, watch: func(s *screen) {
		if sent {
			return
		}
		running := 0
		for _, l := range s.lines() {
			if strings.Contains(l, " alpha.1 ") && strings.Contains(l, " running ") {
				running++
			}
		}
		if running == 2 {
			sent = true
			opt.master.Write([]byte{3}) // Ctrl+C: the terminal sends SIGINT to the foreground job
		}
	}}
	run := runOnPty(t, dir, &opt, "run", "--store", "none", "--approve", "none", "-m", model, "Count the fruit")
	hist := run.screen.history()
	everything := strings.Join(hist, "\n")
	if !sent {
		t.Fatalf("the screen never showed both alphas running:\n%s", everything)
	}
	t.Logf("the terminal after Ctrl+C:\n%s", everything)
	if run.code != 130 {
		t.Errorf("exit status %d after Ctrl+C, want 130", run.code)
	}
	if hist[len(hist)-1] != "cadre: interrupted by Ctrl+C" {
		t.Errorf("the last line is %q, want cadre's reason to stop", hist[len(hist)-1])
	}
	top := -1
	for i, l := range hist {
		if treeRootLine.MatchString(l) {
			top = i
		}
	}
	if top < 0 {
		t.Fatal("no root line on the terminal")
	}
	frame := hist[top : len(hist)-1]
	want := []string{`^⊘ root +cancelled `, `^  ⊘ alpha\.1 +cancelled `, `^  ⊘ beta\.1 +cancelled `, `^    ⊘ alpha\.1 +cancelled `, `^tokens `}
	if len(frame) != len(want) {
		t.Fatalf("the last frame has %d lines, want %d", len(frame), len(want))
	}
	for i, re := range want {
		if !regexp.MustCompile(re).MatchString(frame[i]) {
			t.Errorf("line %d of the last frame is %q, want it to match %s", i, frame[i], re)
		}
	}
	if t.Failed() {
		return
	}

	// The message about stopping goes through the console: the frame is
	// erased before it and drawn again below it, never over it.
	var problems []string
	if !strings.Contains(everything, "cadre: stopping the run (press Ctrl+C again to abort at once)") {
		problems = append(problems, "the message about stopping was erased")
	}
	if roots := len(slices.DeleteFunc(slices.Clone(hist), func(l string) bool { return !treeRootLine.MatchString(l) })); roots != 1 {
		problems = append(problems, fmt.Sprintf("the root is on the terminal %d times, not once: a frame was not erased", roots))
	}
	if len(problems) > 0 {
		t.Errorf("the screen after Ctrl+C: %s", strings.Join(problems, "; "))
	}
}
