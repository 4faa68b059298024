package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/tool"
)

// maxMatchLine is how many bytes of a matching line search_files shows.
const maxMatchLine = 500

// errEnough stops a walk once enough matches were found.
var errEnough = errors.New("enough matches")

// SearchFiles is the search_files tool: it greps files with a regular
// expression.
type SearchFiles struct {
	ws   tool.Workspace
	opts Options
}

var _ cadre.Tool = (*SearchFiles)(nil)

// NewSearchFiles returns the search_files tool confined to ws.
func NewSearchFiles(ws tool.Workspace, opts Options) *SearchFiles {
	return &SearchFiles{ws: ws, opts: opts.withDefaults()}
}

type searchArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
	Glob    string `json:"glob"`
}

// Spec implements cadre.Tool.
func (t *SearchFiles) Spec() cadre.ToolSpec {
	return cadre.ToolSpec{
		Name: NameSearchFiles,
		Description: fmt.Sprintf("Search the lines of the workspace's text files for a regular expression (Go RE2 syntax, matched line by line; "+
			"(?i) makes it case-insensitive). Results are `file:line: text`, at most %d. Binary files and files over %d bytes are skipped and named in the result; "+
			".git directories are skipped and symbolic links are not followed.",
			t.opts.MaxSearchMatches, t.opts.MaxSearchFileSize),
		Parameters: json.RawMessage(`{
	"type": "object",
	"properties": {
		"pattern": {"type": "string", "description": "Regular expression to look for."},
		"path": {"type": "string", "description": "File or directory to search, relative to the workspace root. Default: the root."},
		"glob": {"type": "string", "description": "Only search files matching this glob, such as \"*.go\" or \"src/**/*.ts\"."}
	},
	"required": ["pattern"],
	"additionalProperties": false
}`),
	}
}

// Call implements cadre.Tool.
func (t *SearchFiles) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	a, err := tool.Decode[searchArgs](t.Spec(), raw)
	if err != nil {
		return "", err
	}
	if a.Pattern == "" {
		return "", errors.New("search_files: the pattern is empty: give a regular expression to look for")
	}
	q, err := compileSearch(a.Pattern)
	if err != nil {
		return "", err
	}
	var g *glob
	if a.Glob != "" {
		if g, err = compileGlob(a.Glob); err != nil {
			return "", fmt.Errorf("search_files: %w", err)
		}
	}
	base, err := resolve(t.ws, NameSearchFiles, a.Path, ".")
	if err != nil {
		return "", err
	}
	shownBase := base
	fi, _, err := t.ws.Stat(base)
	if err != nil {
		return "", statError(NameSearchFiles, shownBase, err)
	}
	var b strings.Builder
	var sk skips
	matches := 0
	if !fi.IsDir() {
		// One file, named by the call: refuse it rather than skip it.
		f, ffi, oerr := openFile(t.ws, NameSearchFiles, "open", base, os.O_RDONLY, t.opts.AllowHardLinks)
		if oerr != nil {
			return "", oerr
		}
		// err is the one the walk would set: errEnough below says the
		// matches were cut.
		matches, err = t.searchOpen(ctx, f, ffi, base, q, t.opts.MaxSearchMatches, &b, &sk)
		f.Close()
	} else {
		err = t.ws.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			if err != nil {
				if p == base {
					return err
				}
				sk.add(&sk.unreadable, p)
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				if p != base && skipDir(d.Name()) {
					return fs.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				return nil // links are not followed; devices and pipes are not read
			}
			if g != nil && !g.match(relTo(base, p)) {
				return nil
			}
			n, err := t.searchFile(ctx, p, q, t.opts.MaxSearchMatches-matches, &b, &sk)
			matches += n
			return err
		})
	}
	limited := errors.Is(err, errEnough)
	if err != nil && !limited {
		return "", fmt.Errorf("search_files: %w", err)
	}
	if matches == 0 {
		msg := fmt.Sprintf("no matches for %q under %s", a.Pattern, shownBase)
		if a.Glob != "" {
			msg += fmt.Sprintf(" in files matching %q", a.Glob)
		}
		if r := sk.report(t.opts.MaxSearchFileSize); r != "" {
			msg += "\n" + r
		}
		return msg, nil
	}
	report := sk.report(t.opts.MaxSearchFileSize)
	if limited || report != "" {
		b.WriteByte('\n')
	}
	if limited {
		fmt.Fprintf(&b, "(stopped at %d matches; narrow the pattern, path or glob to see the rest)\n", matches)
	}
	b.WriteString(report)
	return b.String(), nil
}

// maxSkipNames is how many skipped files of each kind search_files names.
const maxSkipNames = 5

// skips records the files search_files did not search, by reason.
type skips struct {
	binary, large, linked, unreadable skipList
	// longLines are the files with lines too long for the pattern (see
	// query.maxLine), which were searched but for those lines.
	longLines skipList
	maxLine   int
}

type skipList struct {
	n     int
	names []string
}

func (s *skips) add(l *skipList, name string) {
	l.n++
	if len(l.names) < maxSkipNames {
		l.names = append(l.names, name)
	}
}

// report says which files were not searched and why, one line per
// reason, or nothing.
func (s *skips) report(maxSize int64) string {
	var b strings.Builder
	line := func(l skipList, what, advice string) {
		if l.n == 0 {
			return
		}
		fmt.Fprintf(&b, "(not searched: %s: %s", what, strings.Join(l.names, ", "))
		if l.n > len(l.names) {
			fmt.Fprintf(&b, " and %d more", l.n-len(l.names))
		}
		b.WriteString(advice)
		b.WriteString(")\n")
	}
	line(s.binary, plural(s.binary.n, "binary file"), "")
	line(s.large, plural(s.large.n, "file")+" over "+size(maxSize), "")
	line(s.linked, plural(s.linked.n, "file")+" with more than one hard link, which may be a door to a file outside the workspace",
		"; the user can allow such files with "+allowHardLinksKey)
	line(s.unreadable, plural(s.unreadable.n, "unreadable file"), "")
	line(s.longLines, "lines over "+size(int64(s.maxLine))+" in "+plural(s.longLines.n, "file"),
		"; the larger an expression, the shorter the lines it can search: a smaller one searches longer lines")
	return b.String()
}

// searchFile appends up to room matching lines of the file at p, met in
// a walk, to b. A file that cannot be opened or read, is no longer a
// regular file, has more than one hard link (unless allowed) or is too
// large is skipped and recorded in sk. It returns errEnough when it filled
// the room and there may be more.
func (t *SearchFiles) searchFile(ctx context.Context, p string, q *query, room int, b *strings.Builder, sk *skips) (int, error) {
	f, err := t.ws.OpenResolved(p, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		sk.add(&sk.unreadable, p)
		return 0, nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		sk.add(&sk.unreadable, p)
		return 0, nil
	}
	if !fi.Mode().IsRegular() {
		return 0, nil // no longer what the walk saw
	}
	links, err := linkCount(f, fi)
	switch {
	case err != nil:
		sk.add(&sk.unreadable, p)
		return 0, nil
	case links > 1 && !t.opts.AllowHardLinks:
		sk.add(&sk.linked, p)
		return 0, nil
	}
	return t.searchOpen(ctx, f, fi, p, q, room, b, sk)
}

// errTooLarge reports a file that grew past the size search_files reads.
var errTooLarge = errors.New("file too large")

// readUpTo reads f, of about size bytes, to its end, in one read when its
// size is right, as os.ReadFile does; past limit bytes it stops with
// errTooLarge.
func readUpTo(f io.Reader, size, limit int64) ([]byte, error) {
	data := make([]byte, 0, min(max(size+1, 512), limit+1))
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if int64(len(data)) > limit {
			return nil, errTooLarge
		}
		if errors.Is(err, io.EOF) {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // grow
		}
	}
}

// searchOpen appends up to room matching lines of f, a regular file that
// fi describes, to b, showing it as shown. It stops with ctx's error when
// ctx ends, looking at it every q.step bytes of lines.
func (t *SearchFiles) searchOpen(ctx context.Context, f *os.File, fi fs.FileInfo, shown string, q *query, room int, b *strings.Builder, sk *skips) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if fi.Size() > t.opts.MaxSearchFileSize {
		sk.add(&sk.large, shown)
		return 0, nil
	}
	data, err := readUpTo(f, fi.Size(), t.opts.MaxSearchFileSize)
	switch {
	case errors.Is(err, errTooLarge):
		sk.add(&sk.large, shown)
		return 0, nil
	case err != nil:
		sk.add(&sk.unreadable, shown)
		return 0, nil
	}
	if looksBinary(data[:min(len(data), sniffLen)]) {
		sk.add(&sk.binary, shown)
		return 0, nil
	}
	found, scanned, longSeen := 0, 0, false
	for num := 1; len(data) > 0; num++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if scanned += len(line) + 1; scanned >= q.step {
			if err := ctx.Err(); err != nil {
				return found, err
			}
			scanned = 0
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > q.maxLine {
			if !longSeen {
				sk.add(&sk.longLines, shown)
				sk.maxLine, longSeen = q.maxLine, true
			}
			continue
		}
		if !q.re.Match(line) {
			continue
		}
		if found == room {
			return found, errEnough
		}
		text, cut := cutLine(string(line[:min(len(line), maxMatchLine+utf8.UTFMax)]), maxMatchLine)
		if cut {
			text += " …"
		}
		fmt.Fprintf(b, "%s:%d: %s\n", shown, num, text)
		found++
	}
	return found, nil
}

// maxSearchProgram bounds the size of a search_files pattern, in the
// instructions of its compiled program. Matching a line costs up to its
// length times this size. Patterns people write compile to fewer than 100
// instructions; one .{1,1000}, the largest repetition RE2 allows, is 2001.
const maxSearchProgram = 3000

// checkWork is about how many steps of matching searchOpen does between
// two looks at its context: the bytes of lines times the program's size.
const checkWork = 16 << 20

// maxMatchWork bounds the steps of matching one line, which cannot be
// stopped once begun: the bytes of the line times the program's size.
// It is about a second at worst (a program of 2000 instructions takes some
// 13 s for a line of 1 MiB); longer lines are left out and named.
const maxMatchWork = 128 << 20

// A query is the compiled pattern of a search_files call.
type query struct {
	re      *regexp.Regexp
	step    int // the bytes of lines matched between two looks at the context
	maxLine int // the longest line matched
}

// compileSearch compiles the pattern of search_files, refusing one whose
// program is larger than maxSearchProgram.
func compileSearch(pattern string) (*query, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("search_files: invalid regular expression %q: %w (Go RE2 syntax: escape literal characters such as ( [ . * with a backslash)", pattern, err)
	}
	n := programSize(pattern)
	if n > maxSearchProgram {
		return nil, fmt.Errorf("search_files: the regular expression %q is too large: it compiles to %d instructions, and the limit is %d, "+
			"far above what searches need; its repetitions ({n}, {n,m}) multiply its size: use smaller counts, or search for a shorter pattern", clipText(pattern, 200), n, maxSearchProgram)
	}
	n = max(1, n)
	return &query{re: re, step: max(1, checkWork/n), maxLine: maxMatchWork / n}, nil
}

// programSize returns the number of instructions pattern compiles to, as
// regexp compiles it; the pattern has compiled already.
func programSize(pattern string) int {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0
	}
	return len(prog.Inst)
}
