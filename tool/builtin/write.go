package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/tool"
)

// WriteFile is the write_file tool: it creates or replaces a file. It is a
// mutating tool. A file that ends its lines with \r\n keeps doing so when
// the new content uses \n, and a replaced file keeps its mode.
type WriteFile struct {
	ws         tool.Workspace
	locks      *pathLocks
	allowLinks bool
}

var (
	_ cadre.Mutator   = (*WriteFile)(nil)
	_ tool.Summarizer = (*WriteFile)(nil)
)

// NewWriteFile returns the write_file tool confined to ws. Its calls that
// change the same file run one after the other; New makes write_file and
// edit_file share that order.
func NewWriteFile(ws tool.Workspace, opts Options) *WriteFile {
	return &WriteFile{ws: ws, locks: new(pathLocks), allowLinks: opts.AllowHardLinks}
}

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// Spec implements cadre.Tool.
func (t *WriteFile) Spec() cadre.ToolSpec {
	return cadre.ToolSpec{
		Name: NameWriteFile,
		Description: "Write a file in the workspace, replacing it if it exists and creating missing parent directories. " +
			"To change part of an existing file, prefer edit_file. " + protectedNote,
		Parameters: json.RawMessage(`{
	"type": "object",
	"properties": {
		"path": {"type": "string", "description": "File path, relative to the workspace root."},
		"content": {"type": "string", "description": "The whole new content of the file."}
	},
	"required": ["path", "content"],
	"additionalProperties": false
}`),
	}
}

// Mutates implements cadre.Mutator.
func (t *WriteFile) Mutates() bool { return true }

// Summary implements tool.Summarizer.
func (t *WriteFile) Summary(raw json.RawMessage) string {
	var a writeArgs
	if json.Unmarshal(raw, &a) != nil {
		return NameWriteFile + " " + string(raw)
	}
	return fmt.Sprintf("write %s (%s, %s)", a.Path, plural(len(a.Content), "byte"), plural(countLines(a.Content), "line"))
}

// Call implements cadre.Tool.
func (t *WriteFile) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	a, err := tool.Decode[writeArgs](t.Spec(), raw)
	if err != nil {
		return "", err
	}
	shown, err := resolve(t.ws, NameWriteFile, a.Path, "")
	if err != nil {
		return "", err
	}
	if shown == "." {
		return "", errors.New("write_file: the path names the workspace root, a directory: give the path of a file")
	}
	unlock := t.locks.lock(shown)
	defer unlock()
	tg, err := openTarget(t.ws, NameWriteFile, shown, true, t.allowLinks)
	if err != nil {
		return "", err
	}
	defer tg.close()
	content, verb, note := a.Content, "replaced", ""
	if tg.f == nil {
		verb = "created"
	} else {
		crlf, err := fileUsesCRLF(tg.f)
		if err != nil {
			return "", fileError(NameWriteFile, "read", shown, err)
		}
		if crlf && strings.Contains(content, "\n") && !strings.Contains(content, "\r\n") {
			content = toCRLF(content)
			note = `; its \r\n line endings were kept`
		}
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("write_file: %w", err)
	}
	if err := tg.replace([]byte(content)); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s (%s, %s%s)", verb, shown, plural(len(content), "byte"), plural(countLines(content), "line"), note), nil
}

// fileUsesCRLF reports whether the start of f ends its lines with \r\n
// only.
func fileUsesCRLF(f *os.File) (bool, error) {
	head := make([]byte, 64<<10)
	n, err := io.ReadFull(io.NewSectionReader(f, 0, int64(len(head))), head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return false, err
	}
	return usesCRLF(head[:n]), nil
}

// usesCRLF reports whether text has lines and ends every one of them with
// \r\n.
func usesCRLF(b []byte) bool {
	n := bytes.Count(b, []byte("\n"))
	return n > 0 && bytes.Count(b, []byte("\r\n")) == n
}

// toCRLF makes every line of s end with \r\n.
func toCRLF(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}

// countLines counts lines as an editor shows them: a final line without a
// newline counts, an empty string has none.
func countLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// EditFile is the edit_file tool: it replaces one exact occurrence of a
// string in a file. It is a mutating tool. In a file that ends its lines
// with \r\n, the \n of old_string and new_string stand for \r\n, since
// read_file shows lines without their endings. The file keeps its mode.
type EditFile struct {
	ws         tool.Workspace
	locks      *pathLocks
	allowLinks bool
	maxSize    int64 // the largest file it reads, Options.MaxSearchFileSize
}

var (
	_ cadre.Mutator   = (*EditFile)(nil)
	_ tool.Summarizer = (*EditFile)(nil)
)

// NewEditFile returns the edit_file tool confined to ws. Its calls that
// change the same file run one after the other, so that no edit is lost;
// New makes write_file and edit_file share that order. It refuses a file
// larger than opts.MaxSearchFileSize, which it would hold in memory
// whole, several times over.
func NewEditFile(ws tool.Workspace, opts Options) *EditFile {
	return &EditFile{ws: ws, locks: new(pathLocks), allowLinks: opts.AllowHardLinks, maxSize: opts.withDefaults().MaxSearchFileSize}
}

type editArgs struct {
	Path      string `json:"path"`
	OldString string `json:"old_string"`
	NewString string `json:"new_string"`
}

// Spec implements cadre.Tool.
func (t *EditFile) Spec() cadre.ToolSpec {
	return cadre.ToolSpec{
		Name: NameEditFile,
		Description: "Edit a text file in the workspace by replacing old_string with new_string. old_string must match the file's text exactly, " +
			"whitespace and indentation included, and occur exactly once: include enough surrounding lines to make it unique. " +
			"Read the file first. Write line breaks as \\n, also in files with Windows line endings, which are kept. To create a file, use write_file. " + protectedNote,
		Parameters: json.RawMessage(`{
	"type": "object",
	"properties": {
		"path": {"type": "string", "description": "File path, relative to the workspace root."},
		"old_string": {"type": "string", "description": "The exact text to replace; it must occur exactly once."},
		"new_string": {"type": "string", "description": "The text to put in its place."}
	},
	"required": ["path", "old_string", "new_string"],
	"additionalProperties": false
}`),
	}
}

// Mutates implements cadre.Mutator.
func (t *EditFile) Mutates() bool { return true }

// Summary implements tool.Summarizer.
func (t *EditFile) Summary(raw json.RawMessage) string {
	var a editArgs
	if json.Unmarshal(raw, &a) != nil {
		return NameEditFile + " " + string(raw)
	}
	return fmt.Sprintf("edit %s (replace %s with %s)", a.Path, plural(countLines(a.OldString), "line"), plural(countLines(a.NewString), "line"))
}

// Call implements cadre.Tool.
func (t *EditFile) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	a, err := tool.Decode[editArgs](t.Spec(), raw)
	if err != nil {
		return "", err
	}
	if a.OldString == "" {
		return "", errors.New("edit_file: old_string is empty: give the exact text to replace (to create or overwrite a whole file, use write_file)")
	}
	if a.OldString == a.NewString {
		return "", errors.New("edit_file: old_string and new_string are the same, so there is nothing to change")
	}
	shown, err := resolve(t.ws, NameEditFile, a.Path, "")
	if err != nil {
		return "", err
	}
	unlock := t.locks.lock(shown)
	defer unlock()
	tg, err := openTarget(t.ws, NameEditFile, shown, false, t.allowLinks)
	if err != nil {
		return "", err
	}
	defer tg.close()
	b, err := tg.readText(t.maxSize)
	if err != nil {
		return "", err
	}
	content, old, repl := string(b), a.OldString, a.NewString
	if usesCRLF(b) {
		old, repl = toCRLF(old), toCRLF(repl)
	}
	n := strings.Count(content, old)
	if n == 0 && strings.Contains(content, "\r\n") && strings.Contains(old, "\n") {
		// Mixed line endings: try the \r\n spelling of old_string too.
		if alt := toCRLF(old); alt != old && strings.Count(content, alt) > 0 {
			old, repl = alt, toCRLF(repl)
			n = strings.Count(content, old)
		}
	}
	switch n {
	case 0:
		hint := notFoundHint(ctx, content, old)
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("edit_file: %w", err)
		}
		return "", fmt.Errorf("edit_file: old_string was not found in %s: %s", shown, hint)
	case 1:
	default:
		return "", fmt.Errorf("edit_file: old_string occurs %d times in %s (at %s) and must occur exactly once: "+
			"include more of the surrounding lines in old_string to single out the place to change", n, shown, lineList(content, old, n))
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("edit_file: %w", err)
	}
	at := strings.Index(content, old)
	line := strings.Count(content[:at], "\n") + 1
	content = content[:at] + repl + content[at+len(old):]
	if err := tg.replace([]byte(content)); err != nil {
		return "", err
	}
	return fmt.Sprintf("edited %s: replaced %s at line %d with %s", shown,
		plural(countLines(a.OldString), "line"), line, plural(countLines(a.NewString), "line")), nil
}

// maxListedLines is how many places edit_file names when old_string
// occurs several times.
const maxListedLines = 10

// lineList names the lines where the n occurrences of old start in
// content: "lines 2 and 4", "lines 1, 5, 9 and 3 more places".
func lineList(content, old string, n int) string {
	var lines []string
	line, pos := 1, 0
	for len(lines) < min(n, maxListedLines) {
		i := strings.Index(content[pos:], old)
		if i < 0 {
			break
		}
		line += strings.Count(content[pos:pos+i], "\n")
		lines = append(lines, fmt.Sprint(line))
		line += strings.Count(old, "\n")
		pos += i + len(old)
	}
	if n > len(lines) {
		return "lines " + strings.Join(lines, ", ") + fmt.Sprintf(" and %d more places", n-len(lines))
	}
	if len(lines) == 1 {
		return "line " + lines[0]
	}
	return "lines " + strings.Join(lines[:len(lines)-1], ", ") + " and " + lines[len(lines)-1]
}

// lineNumberPrefix matches the number and tab read_file puts before each
// line.
var lineNumberPrefix = regexp.MustCompile(`(?m)^ *[0-9]+\t`)

// notFoundHint says what may be wrong with an old_string that is not in
// content, and what to do. It gives up looking for a match that ignores
// blank space when ctx ends or the search grows too long.
func notFoundHint(ctx context.Context, content, old string) string {
	if lines := strings.Split(strings.TrimSuffix(old, "\n"), "\n"); len(lineNumberPrefix.FindAllStringIndex(old, -1)) == len(lines) {
		stripped := lineNumberPrefix.ReplaceAllString(old, "")
		if strings.Contains(content, stripped) {
			return `old_string starts its lines with the line numbers read_file shows (such as "    12\t"); leave them out and give only the file's text`
		}
	}
	if at := matchIgnoringSpace(ctx, content, old); at > 0 {
		return fmt.Sprintf("the text at line %d matches only if spaces, tabs and indentation are ignored: copy them exactly as read_file shows them", at)
	}
	first := strings.TrimSpace(strings.SplitN(strings.TrimLeft(old, "\r\n"), "\n", 2)[0])
	if first != "" && strings.Contains(old, "\n") {
		if i := strings.Index(content, first); i >= 0 {
			return fmt.Sprintf("its first line occurs at line %d but what follows differs: read the file from there again and copy the text exactly",
				strings.Count(content[:i], "\n")+1)
		}
	}
	return "read the file again and copy the text exactly, including whitespace and indentation"
}

// maxHintWork bounds the line comparisons matchIgnoringSpace makes: past
// it, as for an old_string of thousands of lines in a file of hundreds of
// thousands, edit_file gives the plainer hints.
const maxHintWork = 10_000_000

// matchIgnoringSpace returns the line where the lines of old occur in
// content when the space at both ends of every line is ignored, or 0. It
// returns 0 too when ctx ends or it has compared maxHintWork lines.
func matchIgnoringSpace(ctx context.Context, content, old string) int {
	want := strings.Split(strings.Trim(old, "\r\n"), "\n")
	for i := range want {
		want[i] = squeeze(want[i])
	}
	if len(want) == 1 && want[0] == "" {
		return 0
	}
	have := strings.Split(content, "\n")
	if len(want) > len(have) {
		return 0
	}
	for i := range have {
		have[i] = squeeze(have[i])
	}
	work := 0
	for i := 0; i+len(want) <= len(have); i++ {
		ok := true
		for j, w := range want {
			if work++; work%(1<<16) == 0 {
				if work > maxHintWork || ctx.Err() != nil {
					return 0
				}
			}
			if have[i+j] != w {
				ok = false
				break
			}
		}
		if ok {
			return i + 1
		}
	}
	return 0
}

// squeeze trims the blank space at both ends of line and makes each run
// of it inside a single space.
func squeeze(line string) string {
	return strings.Join(strings.Fields(line), " ")
}

// pathLocks serialises the changes to one file: edit_file reads, changes
// and writes back, and two such calls at once must not lose either
// change. Entries live only while a change is running or waiting.
type pathLocks struct {
	mu sync.Mutex
	m  map[string]*pathLock
}

type pathLock struct {
	mu   sync.Mutex
	refs int // holders and waiters, guarded by pathLocks.mu
}

// lock waits for the right to change the file at p and returns the
// function that gives it up.
func (l *pathLocks) lock(p string) (unlock func()) {
	l.mu.Lock()
	if l.m == nil {
		l.m = make(map[string]*pathLock)
	}
	pl := l.m[p]
	if pl == nil {
		pl = new(pathLock)
		l.m[p] = pl
	}
	pl.refs++
	l.mu.Unlock()
	pl.mu.Lock()
	return func() {
		pl.mu.Unlock()
		l.mu.Lock()
		if pl.refs--; pl.refs == 0 {
			delete(l.m, p)
		}
		l.mu.Unlock()
	}
}
