package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/cadre-ai/cadre"
)

func (a *app) newChatCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "chat [RUN]",
		Short: "Talk with the agents: each line you type is a task, then a follow-up in the same run",
		Long: `Open a session at the terminal. The first line you type starts a run; every
line after it is a follow-up to the same run, which keeps its whole history and
its subagents. With RUN (a run id, a prefix, or "last") the session follows up
that run. The live tree and the answer show as for cadre run.

While a turn runs you may type commands; other lines wait for the turn to end.

On a terminal the line is edited as in a shell (arrows, Home/End, Ctrl+A/E/W/U,
Up and Down through the lines typed before, Ctrl+R to search them, Tab to
complete a command). Ctrl+C clears the line; on an empty line while a turn
runs it stops the turn, not the session. Ctrl+D on an empty line leaves. The
lines typed, except answers to approvals and questions and lines that start
with a space, are kept in $XDG_STATE_HOME/cadre/chat_history (else
~/.local/state/cadre/chat_history); CADRE_HISTORY=off keeps none, and
CADRE_HISTORY=/path/file keeps them in that file.

  /agents          the run's agents
  /stop [AGENT]    stop the current turn, or only AGENT and what it started
  /cancel          abort the current turn at once
  /runs            the latest runs
  /model [MODEL]   show the model, or use MODEL from the next turn on
  /help            this list
  /exit            leave (or Ctrl+D)

Without a terminal, lines are read from stdin all the same, one per turn.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.flagConfig(&f)
			if err != nil {
				return err
			}
			arg := ""
			if len(args) == 1 {
				arg = args[0]
			}
			return a.chat(cmd.Context(), cfg, &f, arg)
		},
	}
	f.register(cmd)
	return cmd
}

// chatHelp lists the session's commands.
const chatHelp = `/agents  /stop [AGENT]  /cancel  /runs  /model [MODEL]  /help  /exit`

// A chatSession is an interactive session: one run, followed up line by
// line. Its console is the one every turn's run uses, so that prompts for
// approvals and questions get the lines typed while they wait, and the
// session's commands get the others.
type chatSession struct {
	con *console
	// ed reads the lines on a terminal; nil when they are read plain.
	ed *lineEditor
	// lines are the lines typed that are not answers to a prompt.
	lines chan string
	done  chan struct{} // closed when stdin ends

	mu  sync.Mutex
	eng cadre.Engine // the engine of the turn going on, nil between turns
	run string
}

// attach records the engine running the current turn (nil when it ends).
func (s *chatSession) attach(eng cadre.Engine, run string) {
	s.mu.Lock()
	s.eng, s.run = eng, run
	s.mu.Unlock()
}

func (s *chatSession) current() (cadre.Engine, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.eng, s.run
}

// chat runs the interactive session.
func (a *app) chat(ctx context.Context, cfg *config, f *runFlags, arg string) error {
	if cfg.Model == "" && arg == "" {
		return errNoModel
	}
	tty := isTerminal(a.io.Stderr)
	in, _ := a.io.Stdin.(*os.File)
	if in == nil {
		return errors.New("cadre chat reads what you type from stdin, which is not a file here")
	}
	s := &chatSession{lines: make(chan string), done: make(chan struct{})}
	edit := tty && isTerminal(in) && useLineEditor(in, a.io.Getenv("TERM"))
	var typed []byte // while the terminal was asked where its cursor is
	if edit {
		edit, typed = answersCursor(in, terminalFile(a.io.Stderr), cursorWait)
		if !edit {
			fmt.Fprintln(a.io.Stderr, "cadre: this terminal did not say where its cursor is when asked, which line editing needs: lines are read as typed, without arrow keys, history or Tab. Set TERM=dumb to skip the question.")
			// Typed in raw mode, a line ends with a carriage return.
			typed = bytes.ReplaceAll(typed, []byte("\r"), []byte("\n"))
		}
	}
	var lines io.Reader = in
	if len(typed) > 0 {
		lines = io.MultiReader(bytes.NewReader(typed), in)
	}
	if edit {
		stop, err := a.startLineEditor(s, lines)
		if err != nil {
			return err
		}
		defer stop()
	} else {
		a.readPlainLines(s, lines, isTerminal(in), tty)
	}
	a.session = s
	defer func() { a.session = nil }()

	run := ""
	if arg != "" {
		rec, err := a.runToContinue(ctx, cfg, arg)
		if err != nil {
			return err
		}
		if err := a.recordedSettings(cfg, f, rec); err != nil {
			return err
		}
		run = rec.ID
		s.say(fmt.Sprintf("cadre: following up run %s (%s): %s", rec.ID, rec.Status, clipText(rec.Task, 80)))
	} else if tty {
		s.say("cadre: type a task; then each line is a follow-up. " + chatHelp)
	}
	var queued []string
	for {
		var line string
		if len(queued) > 0 {
			line, queued = queued[0], queued[1:]
		} else {
			s.showPrompt(a, tty)
			var ok bool
			if line, ok = s.next(a); !ok {
				if tty && s.ed == nil {
					fmt.Fprintln(a.io.Stderr)
				}
				return nil
			}
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "/"):
			if s.command(ctx, a, cfg, line, run) {
				return nil
			}
			continue
		}
		// A turn: the first starts the run, later ones follow it up. Lines
		// typed meanwhile are commands, or wait for their turn.
		if s.ed != nil {
			s.ed.setPrompt("")
		}
		turnDone := make(chan struct{})
		exit := false
		go func() {
			for {
				select {
				case l := <-s.lines:
					l = strings.TrimSpace(l)
					switch {
					case strings.HasPrefix(l, "/"):
						exit = s.command(ctx, a, cfg, l, run) || exit
					case l != "":
						queued = append(queued, l)
						s.say("(sent when this turn ends)")
					}
				case <-turnDone:
					return
				}
			}
		}()
		var err error
		if run == "" {
			err = a.execute(ctx, cfg, f, func(ctx context.Context, eng cadre.Engine) (string, error) {
				id, err := eng.Start(ctx, line, cadre.StartOptions{})
				run = id
				return id, err
			})
		} else {
			var rec *cadre.RunRecord
			if rec, err = a.runToContinue(ctx, cfg, run); err == nil {
				err = a.continueWith(ctx, cfg, f, rec, line)
			}
		}
		turnDone <- struct{}{}
		if err != nil {
			s.say("cadre: " + a.redact.Load().Error(err).Error())
		}
		if exit {
			return nil
		}
	}
}

// readPlainLines reads the session's lines from in as they come, with no
// editing of cadre's own: from a pipe, or from a terminal the line editor
// cannot drive.
func (a *app) readPlainLines(s *chatSession, in io.Reader, inTTY, tty bool) {
	if !tty {
		// The session's lines and the turns' output are written from more
		// than one goroutine, to a writer that may not expect that.
		a.io.Stderr = &lockedWriter{w: a.io.Stderr}
	}
	s.con = &console{w: a.io.Stderr}
	raw := a.stdinLines(in)
	// The session's own reader of lines, which the prompts of approvals
	// and questions are given theirs from.
	prompts := &lineReader{lines: make(chan string)}
	if tty && inTTY {
		s.con.in = prompts
	}
	go func() {
		defer close(s.done)
		for {
			line, err := raw.next(context.Background())
			if err != nil {
				return
			}
			if s.con.asking.Load() {
				prompts.lines <- line
				continue
			}
			s.lines <- line
		}
	}()
}

// continueWith follows up rec in the session, with the session's config.
func (a *app) continueWith(ctx context.Context, cfg *config, f *runFlags, rec *cadre.RunRecord, msg string) error {
	return a.execute(ctx, cfg, f, func(ctx context.Context, eng cadre.Engine) (string, error) {
		c, ok := eng.(cadre.Continuer)
		if !ok {
			return "", errors.New("this engine cannot follow up runs")
		}
		return rec.ID, c.Continue(ctx, rec.ID, msg)
	})
}

// next returns the next line typed, or false when stdin has ended or the
// user asked to leave. Ctrl+C at the prompt does not leave.
func (s *chatSession) next(a *app) (string, bool) {
	for {
		select {
		case l := <-s.lines:
			return l, true
		case <-s.done:
			return "", false
		case <-a.io.Interrupts:
			if s.ed != nil {
				s.say("(Ctrl+C stops a turn; type /exit or press Ctrl+D to leave)")
				continue
			}
			s.say("\n(Ctrl+C stops a turn; type /exit to leave)")
			fmt.Fprint(a.io.Stderr, "› ")
		}
	}
}

// showPrompt shows that the session waits for a line.
func (s *chatSession) showPrompt(a *app, tty bool) {
	switch {
	case s.ed != nil:
		s.ed.setPrompt("› ")
	case tty:
		fmt.Fprint(a.io.Stderr, "› ")
	}
}

func (s *chatSession) say(line string) { s.con.println(line) }

// command carries out one of the session's commands and reports whether
// the session ends.
func (s *chatSession) command(ctx context.Context, a *app, cfg *config, line, run string) bool {
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	eng, live := s.current()
	switch name {
	case "/exit", "/quit":
		if eng != nil {
			_ = eng.Cancel(ctx, live, cadre.CancelOptions{Reason: "the session ended"})
		}
		return true
	case "/help":
		s.say(chatHelp)
	case "/stop", "/cancel":
		if eng == nil {
			s.say("nothing is running")
			return false
		}
		opts := cadre.CancelOptions{Agent: cadre.AgentID(arg), Reason: "stopped by the user"}
		if name == "/cancel" {
			opts = cadre.CancelOptions{Abort: true, Reason: "cancelled by the user"}
		}
		if err := eng.Cancel(ctx, live, opts); err != nil {
			s.say("cadre: " + err.Error())
		} else if arg != "" {
			s.say("stopping " + arg)
		} else {
			s.say("stopping the turn")
		}
	case "/agents":
		if run == "" && live == "" {
			s.say("no run yet: type a task")
			return false
		}
		if live == "" {
			live = run
		}
		var tree *cadre.Tree
		var err error
		if eng != nil {
			tree, err = eng.Tree(ctx, live)
		} else {
			tree, err = a.storedTree(ctx, cfg, live)
		}
		if err != nil {
			s.say("cadre: " + err.Error())
			return false
		}
		for _, ag := range tree.Agents {
			s.say(fmt.Sprintf("%s%s  %s  %s", strings.Repeat("  ", ag.Depth), ag.ID, ag.Status, clipText(ag.Task, 70)))
		}
	case "/runs":
		st, _, err := a.existingStore(ctx, cfg)
		if err != nil {
			s.say("cadre: " + err.Error())
			return false
		}
		defer st.Close()
		runs, err := st.ListRuns(ctx, 10)
		if err != nil {
			s.say("cadre: " + err.Error())
			return false
		}
		for _, r := range runs {
			s.say(fmt.Sprintf("%s  %s  %s", r.ID, r.Status, clipText(r.Task, 70)))
		}
	case "/model":
		if arg == "" {
			s.say("model: " + cfg.Model)
			return false
		}
		cfg.Model = arg
		s.say("model: " + arg + " (from the next turn on)")
	default:
		s.say(fmt.Sprintf("unknown command %s; the commands are: %s", name, chatHelp))
	}
	return false
}

// storedTree reads a run's agents from the store.
func (a *app) storedTree(ctx context.Context, cfg *config, run string) (*cadre.Tree, error) {
	st, _, err := a.existingStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	recs, err := st.ListAgents(ctx, run)
	if err != nil {
		return nil, err
	}
	t := &cadre.Tree{Run: run}
	for _, r := range recs {
		t.Agents = append(t.Agents, cadre.AgentInfo{ID: r.ID, Depth: r.Depth, Status: r.Status, Task: r.Task})
	}
	return t, nil
}

// lockedWriter serializes the writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
