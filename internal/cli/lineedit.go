package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/ergochat/readline"
	"golang.org/x/term"
)

// historyLimit is the number of lines cadre chat remembers, in the session
// and in its history file.
const historyLimit = 1000

// chatCommands are the session's commands, which Tab completes.
var chatCommands = []string{"/agents", "/stop", "/cancel", "/runs", "/model", "/help", "/exit"}

// A lineEditor reads the lines of cadre chat on a terminal with the keys a
// shell gives: moving and deleting by character and word, Up and Down
// through the lines typed before, Ctrl+R to search them, Tab to complete a
// command. The line being typed sits at the bottom of the screen. What the
// session writes to the terminal goes through the editor's writers, which
// clear that line, write, and draw it again below, so output written by
// other goroutines never lands in what the user is typing.
//
// Its methods may be called from any goroutine; readLine from one at a
// time.
type lineEditor struct {
	rl          *readline.Instance
	screen, out *os.File // stderr, and stdout when it is a terminal
	// typed is the length of the line as of the last key pressed before
	// Enter, Ctrl+C or Ctrl+D.
	typed atomic.Int32
	// wmu is held by whatever draws on the editor's screen from outside
	// it (writes, prompts), and by the editor itself while it handles a
	// key that ends the line: readline empties its buffer then without
	// the lock its own drawing takes. held says the editor holds it; it is
	// used by the goroutine reading lines alone.
	wmu  sync.Mutex
	held bool

	mu       sync.Mutex
	prompt   string // the session's prompt: "› " between turns, "" during one
	question string // the last line of a question waiting for its answer
	shown    string // the prompt on screen
	hist     *historyFile
}

// newLineEditor reads lines from in, a terminal, and draws them on screen,
// the terminal stderr is. out is stdout when it is a terminal too, else
// nil. past are the lines of earlier sessions, oldest first, which Up
// recalls.
func newLineEditor(in io.Reader, screen, out *os.File, past []string) (*lineEditor, error) {
	second := out
	if second == nil {
		second = screen
	}
	e := &lineEditor{prompt: "› ", shown: "› ", screen: screen, out: out}
	rl, err := readline.NewFromConfig(&readline.Config{
		Prompt:                 e.prompt,
		HistoryLimit:           historyLimit,
		DisableAutoSaveHistory: true, // answers to questions are not kept
		HistorySearchFold:      true,
		AutoComplete:           commandCompleter(chatCommands),
		FuncFilterInputRune: func(r rune) (rune, bool) {
			switch r {
			case readline.CharEnter, readline.CharCtrlJ, readline.CharInterrupt, readline.CharEOT:
				e.hold()
			}
			return r, true
		},
		Listener: func(line []rune, _ int, _ rune) ([]rune, int, bool) {
			e.release() // the key did not end the line
			e.typed.Store(int32(len(line)))
			return nil, 0, false
		},
		EOFPrompt: "\n", // Ctrl+D ends the line with nothing shown
		Stdin:     in,
		Stdout:    screen,
		// The editor's second writer is stdout's (see writers).
		Stderr:         second,
		FuncIsTerminal: func() bool { return true },
		FuncGetSize:    e.size,
	})
	if err != nil {
		return nil, fmt.Errorf("set up the terminal for cadre chat: %w", err)
	}
	e.rl = rl
	for _, l := range past {
		_ = rl.SaveToHistory(l)
	}
	return e, nil
}

// useLineEditor reports whether lines typed on in, a terminal, are read
// with the line editor: in must be the process's stdin, whose terminal
// modes the editor sets, and the terminal must answer the editor's
// questions about the cursor, which a dumb one does not.
func useLineEditor(in *os.File, termName string) bool {
	return in.Fd() == os.Stdin.Fd() && termName != "dumb"
}

// promptWriter writes to a terminal through the line editor, above the
// line being typed.
type promptWriter struct {
	file *os.File // the terminal under it
	w    io.Writer
	ed   *lineEditor
}

func (p *promptWriter) Write(b []byte) (int, error) {
	p.ed.wmu.Lock()
	defer p.ed.wmu.Unlock()
	return p.w.Write(b)
}

// hold keeps others from drawing while the editor ends a line.
func (e *lineEditor) hold() {
	if !e.held {
		e.wmu.Lock()
		e.held = true
	}
}

func (e *lineEditor) release() {
	if e.held {
		e.held = false
		e.wmu.Unlock()
	}
}

// writers returns the writers that print above the line being typed: one
// for the terminal the line is on (stderr), and one for stdout, which is
// nil unless stdout is a terminal too.
func (e *lineEditor) writers() (errw, outw *promptWriter) {
	errw = &promptWriter{file: e.screen, w: e.rl.Stdout(), ed: e}
	if e.out != nil {
		outw = &promptWriter{file: e.out, w: e.rl.Stderr(), ed: e}
	}
	return errw, outw
}

// readLine waits for the next line. It returns readline.ErrInterrupt on
// Ctrl+C, which clears the line, and io.EOF on Ctrl+D on an empty line or
// when the terminal or the editor is closed.
func (e *lineEditor) readLine() (string, error) {
	defer e.release()
	return e.rl.ReadLine()
}

// typedBefore is the length of the line when Ctrl+C or Ctrl+D was pressed.
func (e *lineEditor) typedBefore() int { return int(e.typed.Load()) }

// remember adds a line the user typed to the history, in the session and
// in the history file. A line that starts with a space is not kept (as in
// shells), so a line with a secret in it can be kept out. An error writing
// the file is returned once; the file is not written again.
func (e *lineEditor) remember(line string) error {
	if strings.TrimSpace(line) == "" || strings.HasPrefix(line, " ") {
		e.forget()
		return nil
	}
	line = strings.TrimSpace(line)
	_ = e.rl.SaveToHistory(line) // in memory: cannot fail
	e.mu.Lock()
	h := e.hist
	e.mu.Unlock()
	if h == nil {
		return nil
	}
	if err := h.add(line); err != nil {
		e.mu.Lock()
		e.hist = nil
		e.mu.Unlock()
		h.close()
		return err
	}
	return nil
}

// forget ends the line just read without keeping it in the history (an
// answer to a question).
func (e *lineEditor) forget() { _ = e.rl.SaveToHistory("") }

// setPrompt sets the prompt the line shows when no question waits.
func (e *lineEditor) setPrompt(p string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.prompt = p
	e.showLocked()
}

// ask shows the prompt of a question on the line, until it is called with
// "".
func (e *lineEditor) ask(prompt string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.question = prompt
	e.showLocked()
}

// shownPrompt is the prompt on screen.
func (e *lineEditor) shownPrompt() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.shown
}

// rows is the number of rows text takes on the terminal.
func (e *lineEditor) rows(text string) int {
	w, _ := e.size()
	return max(1, (displayWidth(text)+w-1)/w)
}

// size is the terminal's width and height, or the defaults when it does
// not say.
func (e *lineEditor) size() (int, int) {
	w, h, err := term.GetSize(int(e.screen.Fd()))
	if err != nil || w <= 0 || h <= 0 {
		return defaultTreeWidth, defaultTreeHeight
	}
	return w, h
}

func (e *lineEditor) showLocked() {
	p := e.prompt
	if e.question != "" {
		p = e.question
	}
	if p == e.shown {
		return
	}
	e.shown = p
	e.wmu.Lock()
	defer e.wmu.Unlock()
	e.rl.SetPrompt(p)
	e.rl.Refresh()
}

// close gives the terminal back as it was and makes a readLine going on
// return io.EOF.
func (e *lineEditor) close() {
	e.rl.Close()
	e.mu.Lock()
	h := e.hist
	e.hist = nil
	e.mu.Unlock()
	if h != nil {
		h.close()
	}
}

// commandCompleter completes the session's commands at the start of a
// line, when what is typed is the start of one command alone. (Offering
// several would open readline's menu of candidates, whose keys end the
// line in ways the editor does not see; the commands differ by their
// first letter.)
type commandCompleter []string

func (c commandCompleter) Do(line []rune, pos int) ([][]rune, int) {
	typed := string(line[:pos])
	if !strings.HasPrefix(typed, "/") || strings.ContainsAny(typed, " \t") {
		return nil, 0
	}
	var rest [][]rune
	for _, name := range c {
		if strings.HasPrefix(name, typed) {
			rest = append(rest, []rune(name[len(typed):]+" "))
		}
	}
	if len(rest) != 1 {
		return nil, 0
	}
	return rest, pos
}

// historyPath is the file cadre chat keeps the lines typed in: the path
// CADRE_HISTORY names, none when it is "off", else chat_history in cadre's
// folder of the user's state directory ($XDG_STATE_HOME, or
// ~/.local/state). It is "" when history is not kept on disk.
func (a *app) historyPath() (string, error) {
	switch v := a.io.Getenv("CADRE_HISTORY"); {
	case v == "off":
		return "", nil
	case v != "":
		if !filepath.IsAbs(v) {
			return "", fmt.Errorf("CADRE_HISTORY=%s: set it to off to keep no history of cadre chat, or to the absolute path of the file to keep it in", v)
		}
		return v, nil
	}
	state := a.io.Getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(state) { // the XDG spec: a relative path is ignored
		home := a.home()
		if home == "" {
			return "", nil
		}
		state = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(state, "cadre", "chat_history"), nil
}

// A historyFile keeps the lines typed in cadre chat, one a line, oldest
// first, readable by its owner alone. Sessions append to it; it is cut to
// its last historyLimit lines when a session opens it.
type historyFile struct {
	path string
	mu   sync.Mutex
	f    *os.File
	last string // the line added last, which is not added twice in a row
}

// readNoFollow reads the file at path, refusing a link there (see
// noFollow) and anything but a regular file.
func readNoFollow(path string) ([]byte, error) {
	f, err := openNoFollow(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// appendNoFollow opens the file at path for appending, creating it if need
// be, refusing a link there (see noFollow) and anything but a regular file.
func appendNoFollow(path string) (*os.File, error) {
	return openNoFollow(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE)
}

func openNoFollow(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|noFollow, privateFile)
	if err != nil {
		return nil, linkRefused(err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("it is not a regular file but a %s: remove it, or set CADRE_HISTORY to the path of a file", fileKind(fi.Mode()))
		}
		return nil, err
	}
	return f, nil
}

// linkRefused says, of an open that met a link where it refuses one, what
// it met and what to do. (Linux and macOS say ELOOP, FreeBSD EMLINK.)
func linkRefused(err error) error {
	if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK) {
		return errors.New("it is a symbolic link, which cadre does not follow for its history: remove it, or set CADRE_HISTORY to the path of a file")
	}
	return err
}

// openHistory opens the history file at path, creating it and its folder
// if need be, and returns the lines it holds, the last limit of them.
func openHistory(path string, limit int) (*historyFile, []string, error) {
	fail := func(err error) (*historyFile, []string, error) {
		return nil, nil, fmt.Errorf("history file %s: %w (set CADRE_HISTORY=off to keep no history)", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), privateDir); err != nil {
		return fail(err)
	}
	// A link at path is refused, not followed: what is typed would be
	// appended to the file it names (a shell's startup file, say), which
	// would be made private too.
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return fail(fmt.Errorf("it is not a regular file but a %s: remove it, or set CADRE_HISTORY to the path of a file", fileKind(fi.Mode())))
	}
	b, err := readNoFollow(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail(err)
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(nil, len(b)+1)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			lines = append(lines, sc.Text())
		}
	}
	// Too many lines are cut; a last line cut short (by a crash) is ended,
	// so the next line starts on its own.
	if len(lines) > limit || len(b) > 0 && b[len(b)-1] != '\n' {
		lines = lines[max(len(lines)-limit, 0):]
		if err := replaceFile(path, strings.Join(lines, "\n")+"\n"); err != nil {
			return fail(err)
		}
	}
	// The open itself refuses a link put at path since it was checked
	// (where it can), and the file opened must be the one at path.
	f, err := appendNoFollow(path)
	if err != nil {
		return fail(err)
	}
	opened, err := f.Stat()
	if err == nil {
		var at fs.FileInfo
		if at, err = os.Lstat(path); err == nil && !os.SameFile(opened, at) {
			err = fmt.Errorf("it was replaced by a %s while cadre opened it: remove it, or set CADRE_HISTORY to the path of a file", fileKind(at.Mode()))
		}
	}
	if err != nil {
		f.Close()
		return fail(err)
	}
	// A file written by hand, or by another program, may be readable by
	// others: what was typed may hold anything.
	if err := f.Chmod(privateFile); err != nil {
		f.Close()
		return fail(err)
	}
	h := &historyFile{path: path, f: f}
	if len(lines) > 0 {
		h.last = lines[len(lines)-1]
	}
	return h, lines, nil
}

// fileKind names what a file that is not a regular file is.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m.IsDir():
		return "folder"
	}
	return "special file"
}

// replaceFile writes text to path through a file beside it, which takes
// its place, so a crash leaves the old file or the new one.
func replaceFile(path, text string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(text)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// add appends line to the file, unless it is the line added last.
func (h *historyFile) add(line string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if line == h.last {
		return nil
	}
	if _, err := h.f.WriteString(line + "\n"); err != nil {
		return fmt.Errorf("history file %s: %w (set CADRE_HISTORY=off to keep no history)", h.path, err)
	}
	h.last = line
	return nil
}

func (h *historyFile) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.f.Close()
}

// startLineEditor reads the session's lines from in, a terminal, with the
// line editor, and makes what the session writes to the terminal go
// through it. Ctrl+C on an empty line while a turn runs is an interrupt,
// as the signal is without the editor (a.io.Interrupts); Ctrl+D on an
// empty line is /exit. It returns a function that gives the terminal
// back, which must be called before the session ends.
func (a *app) startLineEditor(s *chatSession, in io.Reader) (stop func(), err error) {
	path, err := a.historyPath()
	if err != nil {
		return nil, err
	}
	var hist *historyFile
	var past []string
	var histErr error
	if path != "" {
		hist, past, histErr = openHistory(path, historyLimit)
	}
	screen := terminalFile(a.io.Stderr)
	out := terminalFile(a.io.Stdout)
	if out != nil && !isTerminal(out) {
		out = nil
	}
	ed, err := newLineEditor(in, screen, out, past)
	if err != nil {
		if hist != nil {
			hist.close()
		}
		return nil, err
	}
	ed.hist = hist
	oldErr, oldOut, oldIntr := a.io.Stderr, a.io.Stdout, a.io.Interrupts
	errw, outw := ed.writers()
	a.io.Stderr = errw
	if outw != nil {
		a.io.Stdout = outw
	}
	prompts := &lineReader{lines: make(chan string)}
	s.ed = ed
	s.con = &console{w: a.io.Stderr, in: prompts, question: ed.ask}
	if histErr != nil {
		s.say("cadre: " + histErr.Error())
	}

	// Interrupts: the signals as before, and Ctrl+C typed while a turn
	// runs, which the terminal no longer turns into a signal while the
	// editor reads.
	intr := make(chan os.Signal, 2)
	a.io.Interrupts = intr
	quit := make(chan struct{})
	var wg sync.WaitGroup
	if oldIntr != nil {
		wg.Go(func() {
			for {
				select {
				case sig := <-oldIntr:
					select {
					case intr <- sig:
					default: // two are waiting already, as signal.Notify drops
					}
				case <-quit:
					return
				}
			}
		})
	}
	wg.Go(func() {
		defer close(s.done)
		for {
			line, err := ed.readLine()
			switch {
			case errors.Is(err, readline.ErrInterrupt):
				// The editor ended the line with ^C and went to the next.
				s.con.moved(ed.rows(ed.shownPrompt() + strings.Repeat("x", ed.typedBefore()) + "^C"))
				eng, _ := s.current()
				switch {
				case ed.typedBefore() > 0:
					// Ctrl+C cleared the line, as in a shell.
				case eng != nil || s.con.asking.Load():
					select {
					case intr <- os.Interrupt:
					default:
					}
				default:
					s.con.note("(type /exit or press Ctrl+D to leave)")
				}
				continue
			case err != nil:
				// Ctrl+D, the terminal gone, or the session ending. A
				// question waiting gets no answer.
				s.con.moved(1) // the editor went to the next line
				prompts.err = io.EOF
				close(prompts.lines)
				select {
				case s.lines <- "/exit":
				case <-quit:
				}
				return
			}
			if s.con.asking.Load() {
				ed.forget()
				ed.ask("")
				select {
				case prompts.lines <- line:
				case <-quit:
					return
				}
				continue
			}
			// The line stays on screen above the tree a turn draws.
			shown := ed.shownPrompt() + line
			s.con.entered(shown, ed.rows(shown))
			if err := ed.remember(line); err != nil {
				s.con.note("cadre: " + err.Error() + "; lines typed from now on are not kept")
			}
			ed.setPrompt("")
			select {
			case s.lines <- line:
			case <-quit:
				return
			}
		}
	})
	return func() {
		close(quit)
		ed.close()
		wg.Wait()
		a.io.Stderr, a.io.Stdout, a.io.Interrupts = oldErr, oldOut, oldIntr
	}, nil
}
