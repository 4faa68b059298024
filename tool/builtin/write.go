package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/tool"
)

// WriteFile is the write_file tool: it creates or replaces a file. It is a
// mutating tool.
type WriteFile struct {
	ws tool.Workspace
}

var (
	_ cadre.Mutator   = (*WriteFile)(nil)
	_ tool.Summarizer = (*WriteFile)(nil)
)

// NewWriteFile returns the write_file tool confined to ws.
func NewWriteFile(ws tool.Workspace, _ Options) *WriteFile {
	return &WriteFile{ws: ws}
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
			"To change part of an existing file, prefer edit_file.",
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
	return fmt.Sprintf("write %s (%d bytes, %s)", a.Path, len(a.Content), plural(countLines(a.Content), "line"))
}

// Call implements cadre.Tool.
func (t *WriteFile) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	a, err := tool.Decode[writeArgs](t.Spec(), raw)
	if err != nil {
		return "", err
	}
	real, err := resolve(t.ws, NameWriteFile, a.Path, "")
	if err != nil {
		return "", err
	}
	shown := t.ws.Rel(real)
	verb := "replaced"
	switch fi, err := os.Stat(real); {
	case err == nil && fi.IsDir():
		return "", fmt.Errorf("write_file: %s is a directory: give the path of a file", shown)
	case errors.Is(err, fs.ErrNotExist):
		verb = "created"
		if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
			return "", fmt.Errorf("write_file: create the directories of %s: %w", shown, err)
		}
	case err != nil:
		return "", fmt.Errorf("write_file: %s: %w", shown, err)
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("write_file: %w", err)
	}
	// WriteFile keeps the mode of a file that exists.
	if err := os.WriteFile(real, []byte(a.Content), 0o644); err != nil {
		return "", fmt.Errorf("write_file: write %s: %w", shown, err)
	}
	return fmt.Sprintf("%s %s (%d bytes, %s)", verb, shown, len(a.Content), plural(countLines(a.Content), "line")), nil
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
// string in a file. It is a mutating tool.
type EditFile struct {
	ws tool.Workspace
}

var (
	_ cadre.Mutator   = (*EditFile)(nil)
	_ tool.Summarizer = (*EditFile)(nil)
)

// NewEditFile returns the edit_file tool confined to ws.
func NewEditFile(ws tool.Workspace, _ Options) *EditFile {
	return &EditFile{ws: ws}
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
			"Read the file first. To create a file, use write_file.",
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
	real, err := resolve(t.ws, NameEditFile, a.Path, "")
	if err != nil {
		return "", err
	}
	shown := t.ws.Rel(real)
	b, _, err := readText(NameEditFile, shown, real)
	if err != nil {
		return "", err
	}
	content := string(b)
	switch n := strings.Count(content, a.OldString); n {
	case 0:
		hint := "read the file again and copy the text exactly, including whitespace and indentation"
		if strings.Contains(content, "\r\n") && !strings.Contains(a.OldString, "\r\n") && strings.Contains(a.OldString, "\n") {
			hint = "the file has Windows line endings (\\r\\n); copy them in old_string too"
		}
		return "", fmt.Errorf("edit_file: old_string was not found in %s: %s", shown, hint)
	case 1:
	default:
		return "", fmt.Errorf("edit_file: old_string occurs %d times in %s, and must occur exactly once: include more of the surrounding lines to single out the place to change", n, shown)
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("edit_file: %w", err)
	}
	at := strings.Index(content, a.OldString)
	line := strings.Count(content[:at], "\n") + 1
	content = content[:at] + a.NewString + content[at+len(a.OldString):]
	if err := os.WriteFile(real, []byte(content), 0o644); err != nil {
		return "", fmt.Errorf("edit_file: write %s: %w", shown, err)
	}
	return fmt.Sprintf("edited %s: replaced %s at line %d with %s", shown,
		plural(countLines(a.OldString), "line"), line, plural(countLines(a.NewString), "line")), nil
}
