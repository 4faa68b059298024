package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/tool"
)

// ReadFile is the read_file tool: it shows a text file's lines numbered
// like cat -n.
type ReadFile struct {
	ws   tool.Workspace
	opts Options
}

var _ cadre.Tool = (*ReadFile)(nil)

// NewReadFile returns the read_file tool confined to ws.
func NewReadFile(ws tool.Workspace, opts Options) *ReadFile {
	return &ReadFile{ws: ws, opts: opts.withDefaults()}
}

type readArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

// Spec implements cadre.Tool.
func (t *ReadFile) Spec() cadre.ToolSpec {
	return cadre.ToolSpec{
		Name: NameReadFile,
		Description: fmt.Sprintf("Read a text file from the workspace. Lines are numbered from 1 like `cat -n`: the number, a tab, the line. "+
			"Shows up to %d lines and %d bytes per call; use offset and limit to page through long files. Lines longer than %d bytes are cut. "+
			"Binary files, directories and special files are refused.",
			t.opts.ReadLimit, t.opts.MaxReadBytes, t.opts.MaxLineLength),
		Parameters: json.RawMessage(`{
	"type": "object",
	"properties": {
		"path": {"type": "string", "description": "File path, relative to the workspace root."},
		"offset": {"type": "integer", "description": "1-based number of the first line to show. Default 1."},
		"limit": {"type": "integer", "description": "Number of lines to show. Default and maximum ` + fmt.Sprint(t.opts.ReadLimit) + `."}
	},
	"required": ["path"],
	"additionalProperties": false
}`),
	}
}

// Call implements cadre.Tool.
func (t *ReadFile) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	a, err := tool.Decode[readArgs](t.Spec(), raw)
	if err != nil {
		return "", err
	}
	if a.Offset < 0 || a.Limit < 0 {
		return "", errors.New("read_file: offset and limit must not be negative: offset is the 1-based first line, limit the number of lines")
	}
	offset, limit := max(a.Offset, 1), a.Limit
	if limit == 0 || limit > t.opts.ReadLimit {
		limit = t.opts.ReadLimit
	}
	shown, err := resolve(t.ws, NameReadFile, a.Path, "")
	if err != nil {
		return "", err
	}
	f, fi, err := openFile(t.ws, NameReadFile, "open", shown, os.O_RDONLY, t.opts.AllowHardLinks)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, sniffLen)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "", fileError(NameReadFile, "read", shown, err)
	}
	if looksBinary(head[:n]) {
		return "", fmt.Errorf("read_file: %s is a binary file (%s), not text, so it is not shown; "+
			"to look inside it, run a command such as `file %s` or `xxd %s | head` with run_command, if you have it",
			shown, size(fi.Size()), shown, shown)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", fileError(NameReadFile, "read", shown, err)
	}

	var b strings.Builder
	lr := newLineReader(f, t.opts.MaxLineLength+utf8.UTFMax)
	total, last, cuts := 0, 0, 0
	full := false // the output reached MaxReadBytes
	for {
		if total%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return "", fmt.Errorf("read_file: %w", err)
			}
		}
		if last > 0 && (total >= offset+limit-1 || full) {
			// The page is done: count the rest without splitting it.
			rest, err := countRest(ctx, lr.r)
			if isCancel(err) {
				return "", fmt.Errorf("read_file: %w", err)
			}
			if err != nil {
				return "", fileError(NameReadFile, "read", shown, err)
			}
			total += rest
			break
		}
		line, whole, err := lr.next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if isCancel(err) {
			return "", fmt.Errorf("read_file: %w", err)
		}
		if err != nil {
			return "", fileError(NameReadFile, "read", shown, err)
		}
		total++
		if total < offset {
			continue
		}
		text, _ := cutLine(line, t.opts.MaxLineLength)
		entry := fmt.Sprintf("%6d\t%s", total, text)
		if whole > t.opts.MaxLineLength {
			entry += fmt.Sprintf(" … [line cut: %d bytes in all]", whole)
		}
		if last > 0 && b.Len()+len(entry)+1 > t.opts.MaxReadBytes {
			full = true
			continue // this line is counted, not shown
		}
		if whole > t.opts.MaxLineLength {
			cuts++
		}
		b.WriteString(entry)
		b.WriteByte('\n')
		last = total
	}
	switch {
	case total == 0:
		return fmt.Sprintf("(%s is empty)", shown), nil
	case offset > total:
		return "", fmt.Errorf("read_file: offset %d is past the end of %s, which has %s", offset, shown, plural(total, "line"))
	}
	if offset > 1 || last < total {
		fmt.Fprintf(&b, "\n(showing lines %d-%d of %d", offset, last, total)
		if full {
			fmt.Fprintf(&b, "; the page ends early because the result is capped at %d bytes", t.opts.MaxReadBytes)
		}
		if last < total {
			fmt.Fprintf(&b, "; call read_file with offset=%d to read on", last+1)
			if total-last > 5*limit {
				b.WriteString(", or find the lines you need with search_files")
			}
		}
		b.WriteString(")\n")
	}
	if cuts > 0 {
		fmt.Fprintf(&b, "(%s longer than %d bytes cut)\n", plural(cuts, "line"), t.opts.MaxLineLength)
	}
	return b.String(), nil
}

// countRest counts the lines left in r: its newlines, and a last line
// without one.
func countRest(ctx context.Context, r io.Reader) (int, error) {
	buf := make([]byte, 256<<10)
	n, last := 0, byte('\n')
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		k, err := r.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			last = buf[k-1]
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if last != '\n' {
		n++
	}
	return n, nil
}

// isCancel reports whether err says that a context ended.
func isCancel(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// size words a number of bytes for people: "512 bytes", "3.2 MB".
func size(n int64) string {
	switch {
	case n < 1000:
		return plural(int(n), "byte")
	case n < 1000*1000:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	case n < 1000*1000*1000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1f GB", float64(n)/1e9)
}
