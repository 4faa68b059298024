package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
)

// console is the terminal a run talks to: stderr, where the live tree is
// drawn, and stdin, where the user answers questions and approvals. It
// keeps the two from overwriting each other: a prompt first erases the
// tree's frame and holds the screen until it is answered (frames and
// lines wait; notes do not).
type console struct {
	w io.Writer
	// in reads stdin lines; nil when stdin or stderr is not a terminal.
	in *lineReader
	// question, when set, shows the last line of a question as the prompt
	// of the line the user edits (cadre chat's line editor), and is called
	// with "" when the question ends.
	question func(prompt string)

	mu    sync.Mutex // held while something is written
	frame int        // lines of the frame on screen
	shown []string   // the frame last drawn
	// open is set while a prompt waits for its line; answered is signalled
	// when it is cleared (made when first needed).
	open     bool
	answered *sync.Cond
	// asking is set while a prompt waits for its line, for readers that do
	// not hold mu.
	asking atomic.Bool
	// always are the tools allowed without asking (see promptApproval).
	always *allowed
}

// newConsole returns the console of a run, able to prompt only when both
// stdin and stderr are terminals.
func (a *app) newConsole() *console {
	if a.session != nil {
		return a.session.con
	}
	c := &console{w: a.io.Stderr}
	if in, ok := a.io.Stdin.(*os.File); ok && isTerminal(a.io.Stderr) && isTerminal(in) {
		c.in = a.stdinLines(in)
	}
	return c
}

// draw replaces the frame on screen with lines.
func (c *console) draw(lines []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waitLocked()
	var b strings.Builder
	c.eraseLocked(&b)
	for _, l := range lines {
		b.WriteString(l)
		b.WriteString("\x1b[K\n")
	}
	io.WriteString(c.w, b.String())
	c.frame = len(lines)
	c.shown = lines
}

// moved tells the console that the terminal moved the cursor rows rows
// down below the frame (a line ended with Ctrl+C), so that the frame and
// those rows are erased when the next frame is drawn.
func (c *console) moved(rows int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frame > 0 {
		c.frame += rows
	}
}

// entered moves a line the user typed, which the terminal shows below the
// frame over rows rows, above the frame, so that the frame is still drawn
// in place and the line stays on screen.
func (c *console) entered(line string, rows int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frame == 0 {
		return
	}
	var b strings.Builder
	c.frame += rows
	c.eraseLocked(&b)
	b.WriteString(line)
	b.WriteString("\n")
	for _, l := range c.shown {
		b.WriteString(l)
		b.WriteString("\x1b[K\n")
	}
	io.WriteString(c.w, b.String())
	c.frame = len(c.shown)
}

func (c *console) eraseLocked(b *strings.Builder) {
	if c.frame > 0 {
		fmt.Fprintf(b, "\x1b[%dA\r\x1b[J", c.frame)
		c.frame = 0
	}
}

// println writes a line below the screen's frame, which the next frame is
// drawn after.
func (c *console) println(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waitLocked()
	c.writeLineLocked(s)
}

// note writes a line as println does, without waiting for a prompt to be
// answered: what the user must see while a prompt waits (that Ctrl+C is
// stopping the run, which ends the prompt too).
func (c *console) note(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writeLineLocked(s)
}

func (c *console) writeLineLocked(s string) {
	var b strings.Builder
	c.eraseLocked(&b)
	b.WriteString(s)
	b.WriteString("\n")
	io.WriteString(c.w, b.String())
}

// keep leaves the current frame on screen for good: later output starts
// below it.
func (c *console) keep() {
	c.mu.Lock()
	c.frame = 0
	c.mu.Unlock()
}

// canAsk reports whether there is someone at a terminal to answer.
func (c *console) canAsk() bool { return c.in != nil }

// ask shows question (which should end with a prompt such as "[y/N] ") and
// returns the line the user types. It fails when ctx ends first or stdin is
// closed.
func (c *console) ask(ctx context.Context, question string) (string, error) {
	if c.in == nil {
		return "", errors.New("there is no terminal to ask on")
	}
	c.mu.Lock()
	c.waitLocked() // one prompt at a time
	c.open = true
	c.asking.Store(true)
	var b strings.Builder
	c.eraseLocked(&b)
	if c.question != nil {
		i := strings.LastIndexByte(question, '\n') + 1
		b.WriteString(question[:i])
		c.question(question[i:])
	} else {
		b.WriteString(question)
	}
	io.WriteString(c.w, b.String())
	c.mu.Unlock()
	// The lock is not held while the prompt waits, so that the reader of
	// lines, which the answer comes from, never waits for it.
	line, err := c.in.next(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.question != nil {
		c.question("")
	}
	c.open = false
	c.asking.Store(false)
	if c.answered != nil {
		c.answered.Broadcast()
	}
	if err != nil {
		io.WriteString(c.w, "\n")
		return "", err
	}
	return strings.TrimSpace(line), nil
}

// waitLocked waits, with mu held, until no prompt waits for its line.
func (c *console) waitLocked() {
	for c.open {
		if c.answered == nil {
			c.answered = sync.NewCond(&c.mu)
		}
		c.answered.Wait()
	}
}

// lineReader reads stdin a line at a time in a goroutine of its own, so a
// prompt can give up when its context ends. The goroutine lives as long as
// the process: it may be blocked in a read nobody can interrupt.
type lineReader struct {
	lines chan string
	err   error // set before lines is closed
}

func (a *app) stdinLines(in io.Reader) *lineReader {
	a.stdinOnce.Do(func() {
		lr := &lineReader{lines: make(chan string)}
		go func() {
			sc := bufio.NewScanner(in)
			for sc.Scan() {
				lr.lines <- sc.Text()
			}
			lr.err = sc.Err()
			if lr.err == nil {
				lr.err = io.EOF
			}
			close(lr.lines)
		}()
		a.stdin = lr
	})
	return a.stdin
}

func (lr *lineReader) next(ctx context.Context) (string, error) {
	select {
	case line, ok := <-lr.lines:
		if !ok {
			return "", fmt.Errorf("stdin was closed: %w", lr.err)
		}
		return line, nil
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
}
