package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
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
			".git directories are skipped, and symbolic links are not followed into directories or out of the workspace. Paths are relative to the workspace root.", t.opts.MaxListFiles),
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
	shownBase := base
	fi, _, err := t.ws.Stat(base)
	if err != nil {
		return "", statError(NameListFiles, shownBase, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("list_files: %s is a file, not a directory: give a directory as path, or read the file with read_file", shownBase)
	}
	var found []string
	total, linksOut := 0, 0
	err = t.ws.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
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
		if g != nil && !g.match(relTo(base, p)) {
			return nil
		}
		switch typ := d.Type(); {
		case typ&fs.ModeSymlink != 0:
			// A link is listed when it leads to a file in the workspace;
			// a link to a directory is not followed, and one leading out
			// or nowhere is left out and counted.
			fi, _, err := t.ws.Stat(p)
			if err != nil {
				linksOut++
				return nil
			}
			if !fi.Mode().IsRegular() {
				return nil
			}
		case !typ.IsRegular():
			return nil // named pipes, sockets, devices
		}
		total++
		if len(found) < t.opts.MaxListFiles {
			found = append(found, p)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("list_files: walk %s: %w", shownBase, err)
	}
	var linkNote string
	if linksOut > 0 {
		linkNote = fmt.Sprintf("(%s leading outside the workspace or to nothing not listed)\n", plural(linksOut, "symbolic link"))
	}
	if total == 0 {
		msg := fmt.Sprintf("no files under %s", shownBase)
		if g != nil {
			msg = fmt.Sprintf("no files match %q under %s", a.Pattern, shownBase)
		}
		if linkNote != "" {
			msg += "\n" + linkNote
		}
		return msg, nil
	}
	slices.Sort(found)
	var b strings.Builder
	for _, f := range found {
		b.WriteString(f)
		b.WriteByte('\n')
	}
	if total > len(found) || linkNote != "" {
		b.WriteByte('\n')
	}
	if total > len(found) {
		fmt.Fprintf(&b, "(showing %d of %d files; narrow the pattern or path to see the rest)\n", len(found), total)
	}
	b.WriteString(linkNote)
	return b.String(), nil
}

// relTo returns p, a slash-separated path under base, relative to base.
func relTo(base, p string) string {
	if base == "." {
		return p
	}
	if p == base {
		return path.Base(p)
	}
	return p[len(base)+1:]
}
