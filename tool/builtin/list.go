package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/tool"
)

// skipDir reports whether a directory is never walked into.
func skipDir(name string) bool {
	return name == ".git" || name == ".hg" || name == ".svn"
}

// ListFiles is the list_files tool: it finds files by glob pattern.
type ListFiles struct {
	ws   tool.Workspace
	opts Options
}

var _ cadre.Tool = (*ListFiles)(nil)

// NewListFiles returns the list_files tool confined to ws.
func NewListFiles(ws tool.Workspace, opts Options) *ListFiles {
	return &ListFiles{ws: ws, opts: opts.withDefaults()}
}

type listArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

// Spec implements cadre.Tool.
func (t *ListFiles) Spec() cadre.ToolSpec {
	return cadre.ToolSpec{
		Name: NameListFiles,
		Description: fmt.Sprintf("List files in the workspace whose path matches a glob pattern, sorted, at most %d. "+
			"Patterns use * ? [abc] {a,b} within a name and ** for any number of directories (\"src/**/*.go\"); "+
			"a pattern without a slash matches file names at any depth (\"*.md\"). Without a pattern, every file is listed. "+
			".git directories are skipped. Paths are relative to the workspace root.", t.opts.MaxListFiles),
		Parameters: json.RawMessage(`{
	"type": "object",
	"properties": {
		"pattern": {"type": "string", "description": "Glob pattern, relative to path. Default: all files."},
		"path": {"type": "string", "description": "Directory to search, relative to the workspace root. Default: the root."}
	},
	"additionalProperties": false
}`),
	}
}

// Call implements cadre.Tool.
func (t *ListFiles) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	a, err := tool.Decode[listArgs](t.Spec(), raw)
	if err != nil {
		return "", err
	}
	var g *glob
	if a.Pattern != "" && a.Pattern != "**" {
		if g, err = compileGlob(a.Pattern); err != nil {
			return "", fmt.Errorf("list_files: %w", err)
		}
	}
	base, err := resolve(t.ws, NameListFiles, a.Path, ".")
	if err != nil {
		return "", err
	}
	shownBase := t.ws.Rel(base)
	fi, err := os.Stat(base)
	if err != nil {
		return "", statError(NameListFiles, shownBase, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("list_files: %s is a file, not a directory: give a directory as path, or read the file with read_file", shownBase)
	}
	var found []string
	total := 0
	err = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if d != nil && d.IsDir() && p != base {
				return fs.SkipDir // unreadable directory: list the rest
			}
			if p == base {
				return err
			}
			return nil
		}
		if d.IsDir() {
			if p != base && skipDir(d.Name()) {
				return fs.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(base, p)
		if g != nil && !g.match(filepath.ToSlash(rel)) {
			return nil
		}
		total++
		if len(found) < t.opts.MaxListFiles {
			found = append(found, t.ws.Rel(p))
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("list_files: walk %s: %w", shownBase, err)
	}
	if total == 0 {
		if g == nil {
			return fmt.Sprintf("no files under %s", shownBase), nil
		}
		return fmt.Sprintf("no files match %q under %s", a.Pattern, shownBase), nil
	}
	slices.Sort(found)
	var b strings.Builder
	for _, f := range found {
		b.WriteString(f)
		b.WriteByte('\n')
	}
	if total > len(found) {
		fmt.Fprintf(&b, "\n(showing %d of %d files; narrow the pattern or path to see the rest)\n", len(found), total)
	}
	return b.String(), nil
}
