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
// tree's frame and holds the screen until it is answered.
type console struct {
	w io.Writer
	// in reads stdin lines; nil when stdin or stderr is not a terminal.
	in *lineReader
	// question, when set, shows the last line of a question as the prompt
	// of the line the user edits (cadre chat's line editor), and is called
	// with "" when the question ends.
	question func(prompt string)

	mu     sync.Mutex // held while a frame is drawn or a prompt is open
	frame  int        // lines of the frame on screen
	shown  []string   // the frame last drawn
	closed bool
	// asking is set while a prompt waits for its line.
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
	defer c.mu.Unlock()
	c.asking.Store(true)
	defer c.asking.Store(false)
	var b strings.Builder
	c.eraseLocked(&b)
	if c.question != nil {
		i := strings.LastIndexByte(question, '\n') + 1
		b.WriteString(question[:i])
		c.question(question[i:])
		defer c.question("")
	} else {
		b.WriteString(question)
	}
	io.WriteString(c.w, b.String())
	line, err := c.in.next(ctx)
	if err != nil {
		io.WriteString(c.w, "\n")
		return "", err
	}
	return strings.TrimSpace(line), nil
}

// lineReader reads stdin a line at a time in a goroutine of its own, so a
// prompt can give up when its context ends. The goroutine lives as long as
// the process: it may be blocked in a read nobody can interrupt.
type lineReader struct {
	lines chan string
	err   error // set before lines is closed
}

func (a *app) stdinLines(in *os.File) *lineReader {
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
