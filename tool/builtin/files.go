package builtin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/cadre-ai/cadre/tool"
)

// sniffLen is how much of a file is looked at to tell text from binary.
const sniffLen = 8000

// looksBinary reports whether the start of a file holds a NUL byte, the
// sign of a binary file that git and grep use too.
func looksBinary(head []byte) bool {
	return bytes.IndexByte(head, 0) >= 0
}

// resolve resolves p in ws for tool name, defaulting an empty p to def.
// It returns the path relative to the root, free of symbolic links, which
// is what the tool opens and what it shows.
func resolve(ws tool.Workspace, name, p, def string) (string, error) {
	if p == "" {
		if def == "" {
			return "", fmt.Errorf("%s: the path is empty: give a path relative to the workspace root", name)
		}
		p = def
	}
	rel, err := ws.Local(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return rel, nil
}

// statError words a failed Stat of p for a model.
func statError(name, p string, err error) error {
	switch {
	case errors.Is(err, tool.ErrOutsideWorkspace):
		return fmt.Errorf("%s: %w", name, err)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %s does not exist in the workspace: check the path with list_files", name, p)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: cannot reach %s: permission denied; leave it or ask the user", name, p)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the absolute path means nothing to the model
	}
	return fmt.Errorf("%s: %s: %w", name, p, err)
}

// openFile opens the file at rel, a path resolve returned, with flag, for
// tool name; verb says what the tool means to do, for messages. What is
// not a regular file is refused before it is opened, and again on the
// open file, which is opened without blocking so that a named pipe put in
// its place meanwhile cannot hold the call. A file with more than one
// hard link is refused unless allowLinks: the count is the open file's,
// so the file checked is the file used.
func openFile(ws tool.Workspace, name, verb, rel string, flag int, allowLinks bool) (*os.File, fs.FileInfo, error) {
	fi, _, err := ws.Stat(rel)
	if err != nil {
		return nil, nil, statError(name, rel, err)
	}
	if err := regularFile(name, rel, fi); err != nil {
		return nil, nil, err
	}
	f, _, err := ws.OpenFile(rel, flag|openNonblock, 0)
	if err != nil {
		return nil, nil, fileError(name, verb, rel, err)
	}
	fi, _, err = checkOpen(f, name, verb, rel, allowLinks)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// checkOpen checks an open file for tool name: a regular file, with one
// hard link unless allowLinks. It returns the file's FileInfo and its
// number of links.
func checkOpen(f *os.File, name, verb, shown string, allowLinks bool) (fs.FileInfo, uint64, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, fileError(name, verb, shown, err)
	}
	if err := regularFile(name, shown, fi); err != nil {
		return nil, 0, err
	}
	n, err := linkCount(f, fi)
	if err != nil {
		return nil, 0, fileError(name, verb, shown, err)
	}
	if n > 1 && !allowLinks {
		return nil, 0, &HardLinkError{Tool: name, Path: shown, Links: n}
	}
	return fi, n, nil
}

// A HardLinkError reports a file a tool refused because it has more than
// one hard link (see Options.AllowHardLinks).
type HardLinkError struct {
	Tool  string // the tool that refused it
	Path  string // the file, relative to the workspace root
	Links uint64 // how many names the file has
}

func (e *HardLinkError) Error() string {
	did := "read"
	switch e.Tool {
	case NameWriteFile, NameEditFile:
		did = "changed"
	case NameSearchFiles:
		did = "searched"
	}
	return fmt.Sprintf("%s: %s has %d hard links: the same file has other names, which may lie outside the workspace, "+
		"so it may be a door to a file outside and is not %s; "+
		"if such files are meant to be used, the user can allow them with %s",
		e.Tool, e.Path, e.Links, did, allowHardLinksKey)
}

// allowHardLinksKey says where cadre's configuration allows files with
// several hard links (Options.AllowHardLinks).
const allowHardLinksKey = "allowHardLinks: true under files: in .cadre/config.yaml"

// regularFile refuses what is not a regular file: a directory, with a
// pointer to list_files, or a named pipe, socket or device, which could
// block a reader for ever or never end.
func regularFile(name, shown string, fi fs.FileInfo) error {
	switch m := fi.Mode(); {
	case m.IsDir():
		return fmt.Errorf("%s: %s is a directory, not a file: use list_files to see what it holds", name, shown)
	case m.IsRegular():
		return nil
	default:
		return fmt.Errorf("%s: %s is a %s, not a regular file: %s works on regular files only", name, shown, fileKind(m), name)
	}
}

// fileKind names the type of a file that is not regular.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	}
	return "special file"
}

// fileError words a failed open, read or write of shown for a model.
func fileError(name, verb, shown string, err error) error {
	switch {
	case errors.Is(err, tool.ErrOutsideWorkspace):
		return fmt.Errorf("%s: %w", name, err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: cannot %s %s: permission denied; the file's permissions do not allow it, so leave it or ask the user", name, verb, shown)
	case errors.Is(err, fs.ErrNotExist):
		return statError(name, shown, err)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the absolute path means nothing to the model
	}
	return fmt.Errorf("%s: %s %s: %w", name, verb, shown, err)
}

// lineReader reads lines of any length, keeping at most max bytes of each.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its line ending, the full length of
// the line in bytes, and io.EOF after the last line. A last line without a
// newline is still a line. It stops with ctx's error when ctx ends, looking
// at it between the chunks (of the reader's buffer) of a long line.
func (l *lineReader) next(ctx context.Context) (line string, full int, err error) {
	l.buf = l.buf[:0]
	for {
		if full > 0 {
			if err := ctx.Err(); err != nil {
				return "", 0, err
			}
		}
		chunk, err := l.r.ReadSlice('\n')
		full += len(chunk)
		if room := l.max - len(l.buf); room > 0 {
			l.buf = append(l.buf, chunk[:min(room, len(chunk))]...)
		}
		switch {
		case err == nil:
			return trimEOL(l.buf), full - eolLen(chunk), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if full == 0 {
				return "", 0, io.EOF
			}
			return trimEOL(l.buf), full, nil
		default:
			return "", 0, err
		}
	}
}

func eolLen(chunk []byte) int {
	switch {
	case bytes.HasSuffix(chunk, []byte("\r\n")):
		return 2
	case bytes.HasSuffix(chunk, []byte("\n")):
		return 1
	}
	return 0
}

func trimEOL(b []byte) string {
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	return string(b)
}

// cutLine shortens s to at most n bytes on a rune boundary and makes it
// valid UTF-8. It reports whether it cut.
func cutLine(s string, n int) (string, bool) {
	cut := false
	if len(s) > n {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s, cut = s[:n], true
	}
	return strings.ToValidUTF8(s, "\uFFFD"), cut
}

// plural returns "1 line", "2 lines".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
