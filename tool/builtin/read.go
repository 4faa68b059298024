package builtin

import (
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
			"Shows up to %d lines per call; use offset and limit to page through long files. Lines longer than %d bytes are cut.",
			t.opts.ReadLimit, t.opts.MaxLineLength),
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
	real, err := resolve(t.ws, NameReadFile, a.Path, "")
	if err != nil {
		return "", err
	}
	shown := t.ws.Rel(real)
	fi, err := os.Stat(real)
	if err != nil {
		return "", statError(NameReadFile, shown, err)
	}
	if fi.IsDir() {
		return "", fmt.Errorf("read_file: %s is a directory, not a file: use list_files to see what it holds", shown)
	}
	f, err := os.Open(real)
	if err != nil {
		return "", fmt.Errorf("read_file: open %s: %w", shown, err)
	}
	defer f.Close()
	head := make([]byte, sniffLen)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "", fmt.Errorf("read_file: read %s: %w", shown, err)
	}
	if looksBinary(head[:n]) {
		return "", fmt.Errorf("read_file: %s is a binary file (%d bytes); read_file shows text files only", shown, fi.Size())
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("read_file: read %s: %w", shown, err)
	}

	var b strings.Builder
	lr := newLineReader(f, t.opts.MaxLineLength+utf8.UTFMax)
	total, last, cuts := 0, 0, 0
	for {
		if total%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return "", fmt.Errorf("read_file: %w", err)
			}
		}
		line, full, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("read_file: read %s: %w", shown, err)
		}
		total++
		if total < offset || total >= offset+limit {
			continue
		}
		last = total
		text, _ := cutLine(line, t.opts.MaxLineLength)
		fmt.Fprintf(&b, "%6d\t%s", total, text)
		if full > t.opts.MaxLineLength {
			cuts++
			fmt.Fprintf(&b, " … [line cut: %d bytes in all]", full)
		}
		b.WriteByte('\n')
	}
	switch {
	case total == 0:
		return fmt.Sprintf("(%s is empty)", shown), nil
	case offset > total:
		return "", fmt.Errorf("read_file: offset %d is past the end of %s, which has %s", offset, shown, plural(total, "line"))
	}
	if offset > 1 || last < total {
		fmt.Fprintf(&b, "\n(showing lines %d-%d of %d", offset, last, total)
		if last < total {
			fmt.Fprintf(&b, "; call read_file with offset=%d to read on", last+1)
		}
		b.WriteString(")\n")
	}
	if cuts > 0 {
		fmt.Fprintf(&b, "(%s longer than %d bytes cut)\n", plural(cuts, "line"), t.opts.MaxLineLength)
	}
	return b.String(), nil
}
