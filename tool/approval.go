package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/cadre-ai/cadre"
)

// ApprovalMode says how calls of mutating tools (cadre.Mutator) are
// approved. Tools that do not mutate are never asked about.
type ApprovalMode string

// Approval modes.
const (
	// ApproveAsk asks the Approver's Prompt about each mutating call. With
	// no Prompt (no terminal), every such call is denied, and the denial
	// says how to allow them.
	ApproveAsk ApprovalMode = "ask"
	// ApproveAll approves every mutating call without asking.
	ApproveAll ApprovalMode = "all"
	// ApproveNone denies every mutating call without asking; the denial
	// says how to allow them.
	ApproveNone ApprovalMode = "none"
)

// DefaultApprovalMode is the mode of an Approver whose Mode is empty.
const DefaultApprovalMode = ApproveAsk

// ParseApprovalMode reads a mode as a user writes it ("ask", "all",
// "none"); the empty string is DefaultApprovalMode.
func ParseApprovalMode(s string) (ApprovalMode, error) {
	switch m := ApprovalMode(s); m {
	case "":
		return DefaultApprovalMode, nil
	case ApproveAsk, ApproveAll, ApproveNone:
		return m, nil
	}
	return "", fmt.Errorf("unknown approval mode %q: use ask, all or none", s)
}

// An ApprovalRequest describes one call waiting for approval.
type ApprovalRequest struct {
	Agent   cadre.AgentID // the agent making the call
	Tool    string        // the tool's name
	Summary string        // what the call would do, in one line where possible
	// Rule, when set, says which rule of the agent's definition asks for
	// approval of this call (the tool may not change anything itself).
	Rule string
	// Args are the call's arguments as the model wrote them, for a prompt
	// that shows more than Summary (the text a write would write, the
	// whole command). They are the model's: show them escaped.
	Args string
}

// maxDetailLines bounds the lines of a call's ApprovalDetail.
const maxDetailLines = 40

// ApprovalDetail shows, below its summary, what a call would do that its
// summary does not: a write's text, an edit's lines as a diff, a long or
// multi-line command whole, and the arguments of any other call whose
// summary cuts them (an MCP tool's SQL past its first 300 bytes), one
// value a line. It is empty when the summary says it all. What the model
// wrote is shown escaped (see Printable), at most 40 lines.
func ApprovalDetail(req ApprovalRequest) string {
	var a struct {
		Path      string `json:"path"`
		Content   string `json:"content"`
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
		Command   string `json:"command"`
	}
	if len(req.Args) == 0 {
		return ""
	}
	var lines []string
	switch req.Tool {
	case "write_file", "edit_file", "run_command":
		if json.Unmarshal([]byte(req.Args), &a) != nil {
			return ""
		}
	}
	switch req.Tool {
	case "write_file":
		for _, l := range strings.Split(strings.TrimSuffix(a.Content, "\n"), "\n") {
			lines = append(lines, "+ "+l)
		}
	case "edit_file":
		for _, l := range strings.Split(strings.TrimSuffix(a.OldString, "\n"), "\n") {
			lines = append(lines, "- "+l)
		}
		for _, l := range strings.Split(strings.TrimSuffix(a.NewString, "\n"), "\n") {
			lines = append(lines, "+ "+l)
		}
	case "run_command":
		if !strings.Contains(a.Command, "\n") && len(a.Command) <= 1000 {
			return "" // the summary shows it whole
		}
		lines = strings.Split(a.Command, "\n")
	default:
		var buf bytes.Buffer
		if json.Compact(&buf, []byte(req.Args)) != nil {
			buf.Reset()
			buf.WriteString(req.Args)
		}
		if buf.Len() <= maxSummaryArgs {
			return "" // the summary shows them whole
		}
		buf.Reset()
		if json.Indent(&buf, []byte(req.Args), "", "  ") != nil {
			buf.Reset()
			buf.WriteString(req.Args)
		}
		lines = strings.Split(buf.String(), "\n")
	}
	if len(lines) > maxDetailLines {
		n := len(lines) - maxDetailLines
		lines = append(lines[:maxDetailLines], fmt.Sprintf("… (%d more lines)", n))
	}
	for i, l := range lines {
		if len(l) > maxDetailLine {
			// Its start and its end: what a long line hides is most often
			// at its end (a command after a run of spaces).
			head, tail := maxDetailLine/2, len(l)-maxDetailLine/2
			for head > 0 && !utf8.RuneStart(l[head]) {
				head--
			}
			for tail < len(l) && !utf8.RuneStart(l[tail]) {
				tail++
			}
			lines[i] = fmt.Sprintf("%s … (%d bytes left out) … %s", l[:head], tail-head, l[tail:])
		}
	}
	return printable(strings.Join(lines, "\n"))
}

// maxDetailLine bounds one line of an ApprovalDetail, which shows the
// start and the end of a longer one: one long value must not flood the
// terminal above the question.
const maxDetailLine = 2000

// A Summarizer is a tool that can describe a call in words for the person
// asked to approve it. It is optional: Summarize falls back to the tool's
// name and raw arguments.
type Summarizer interface {
	Summary(args json.RawMessage) string
}

// Summarize describes a call of t with args for an approval prompt.
// Control characters other than newline and tab, and the Unicode marks
// that reorder text, are shown as escapes such as \x1b, so what a model
// wrote cannot redraw the prompt on a terminal or hide part of itself.
func Summarize(t cadre.Tool, args json.RawMessage) string {
	if s, ok := t.(Summarizer); ok {
		return printable(s.Summary(args))
	}
	return printable(defaultSummary(t.Spec().Name, args))
}

// Printable escapes what could fool a terminal in text a model had a hand
// in (as Summarize does): control characters other than newline and tab,
// bidirectional controls and invalid UTF-8.
func Printable(s string) string { return printable(s) }

// printable escapes what could fool a terminal: control characters other
// than newline and tab, bidirectional controls and invalid UTF-8.
func printable(s string) string {
	unsafe := func(r rune, size int) bool {
		return r == utf8.RuneError && size == 1 ||
			r != '\n' && r != '\t' && unicode.IsControl(r) ||
			unicode.Is(unicode.Bidi_Control, r)
	}
	clean := true
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafe(r, size) {
			clean = false
			break
		}
		i += size
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafe(r, size) && r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafe(r, size):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func defaultSummary(name string, args json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, args) != nil {
		buf.Reset()
		buf.Write(args)
	}
	return name + " " + clipRunes(buf.String(), maxSummaryArgs)
}

// maxSummaryArgs is how much of a call's arguments a default summary
// shows (an MCP tool's summary too); ApprovalDetail shows them all.
const maxSummaryArgs = 300

// clipRunes cuts s to at most n bytes on a rune boundary, marking the cut.
func clipRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// An Approver decides whether a mutating call may run. Set Mode and Prompt
// before first use and do not change them afterwards; an Approver must not
// be copied after first use. It is safe for concurrent use: prompts are put
// to the user one at a time, in the order callers arrive.
type Approver struct {
	// Mode is the policy; empty means DefaultApprovalMode.
	Mode ApprovalMode
	// Prompt asks the user about a call in ApproveAsk mode and reports
	// whether they allow it. Nil means there is no one to ask (no
	// terminal), and every call is denied.
	Prompt func(ctx context.Context, req ApprovalRequest) (bool, error)

	once sync.Once
	turn chan struct{} // holds one token: the right to prompt
}

// Approve decides about req. It returns whether the call may run and, when
// it may not, a denial text meant for the model: what happened and what to
// do instead. An error means no decision could be made (the prompt failed
// or ctx ended); the call must not run then either.
func (a *Approver) Approve(ctx context.Context, req ApprovalRequest) (ok bool, denial string, err error) {
	mode := a.Mode
	if mode == "" {
		mode = DefaultApprovalMode
	}
	switch mode {
	case ApproveAll:
		return true, "", nil
	case ApproveNone:
		if req.Rule != "" {
			return false, fmt.Sprintf("%s was not run: %s, and this run approves nothing (--approve=none). "+
				"Do not try it again; carry on without it, or say in your answer what you would have done.", req.Tool, req.Rule), nil
		}
		return false, fmt.Sprintf("%s was not run: this run does not allow tools that change files or run commands (--approve=none). "+
			"Do not try it again; carry on without it, or say in your answer what you would have done. "+
			"To allow such calls, the user can run cadre with --approve=all, or with --approve=ask on a terminal and answer y when asked.", req.Tool), nil
	case ApproveAsk:
	default:
		return false, "", fmt.Errorf("approve %s: unknown approval mode %q: use ask, all or none", req.Tool, mode)
	}
	if a.Prompt == nil && req.Rule != "" {
		return false, fmt.Sprintf("%s was not run: %s, and there is no terminal to ask on (--approve=ask without a terminal). "+
			"Do not try it again in this run; carry on without it, or say in your answer what you would have done.", req.Tool, req.Rule), nil
	}
	if a.Prompt == nil {
		return false, fmt.Sprintf("%s was not run: it needs the user's approval and there is no terminal to ask on (--approve=ask without a terminal). "+
			"Do not try it again in this run; carry on without it, or say in your answer what you would have done. "+
			"To allow writes and commands, the user can run cadre with --approve=all, or run it on a terminal and answer y when asked.", req.Tool), nil
	}
	a.once.Do(func() {
		a.turn = make(chan struct{}, 1)
		a.turn <- struct{}{}
	})
	select {
	case <-a.turn:
	case <-ctx.Done():
		return false, "", fmt.Errorf("approve %s: %w", req.Tool, context.Cause(ctx))
	}
	defer func() { a.turn <- struct{}{} }()
	if err := ctx.Err(); err != nil {
		return false, "", fmt.Errorf("approve %s: %w", req.Tool, context.Cause(ctx))
	}
	yes, err := a.Prompt(ctx, req)
	if err != nil {
		return false, "", fmt.Errorf("approve %s: ask the user: %w", req.Tool, err)
	}
	if !yes {
		return false, fmt.Sprintf("%s was not run: the user declined this call when asked. Do not repeat it; take another approach, or ask for guidance.", req.Tool), nil
	}
	return true, "", nil
}
