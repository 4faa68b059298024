package agentdef

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"text/template"

	"github.com/cadre-ai/cadre"
)

//go:embed initfiles/config.yaml.tmpl initfiles/AGENTS.md
var initFiles embed.FS

// InitFile is one file Init writes: its path below the project directory
// and its content.
type InitFile struct {
	Path string
	Data []byte
}

// InitFiles returns the files Init writes, with paths relative to the
// project directory: .cadre/config.yaml (every setting, commented, with
// the defaults), the stock agents under .cadre/agents, and .cadre/AGENTS.md
// (guidance on when and how to delegate).
func InitFiles() ([]InitFile, error) {
	tmpl, err := template.ParseFS(initFiles, "initfiles/config.yaml.tmpl")
	if err != nil {
		return nil, fmt.Errorf("config template: %w", err)
	}
	var cfg bytes.Buffer
	if err := tmpl.Execute(&cfg, cadre.Limits{}.WithDefaults()); err != nil {
		return nil, fmt.Errorf("config template: %w", err)
	}
	files := []InitFile{{Path: filepath.Join(".cadre", "config.yaml"), Data: cfg.Bytes()}}
	for _, name := range stockAgents() {
		data, err := stock.ReadFile(path.Join("stock", name))
		if err != nil {
			return nil, err
		}
		files = append(files, InitFile{Path: filepath.Join(".cadre", "agents", name), Data: data})
	}
	guide, err := initFiles.ReadFile("initfiles/AGENTS.md")
	if err != nil {
		return nil, err
	}
	return append(files, InitFile{Path: filepath.Join(".cadre", "AGENTS.md"), Data: guide}), nil
}

// Init writes the files of InitFiles into dir, creating folders as needed:
// the folders under dir with mode 0700 and the files with mode 0600, since
// they are the user's settings and agents.
// It never overwrites a file: those that exist are left as they are and
// listed in kept. created and kept hold full paths, in the order of
// InitFiles. On an error, the files created so far stay and are listed.
func Init(dir string) (created, kept []string, err error) {
	files, err := InitFiles()
	if err != nil {
		return nil, nil, err
	}
	// The project folder is made like any folder; what is under .cadre is
	// its user's alone.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("init: cannot create the folder %s: %w%s", dir, err, blockedBy(filepath.Dir(dir), dir))
	}
	for _, f := range files {
		p := filepath.Join(dir, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return created, kept, fmt.Errorf("init: cannot create the folder %s: %w%s", filepath.Dir(p), err, blockedBy(dir, filepath.Dir(p)))
		}
		w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			kept = append(kept, p)
			continue
		}
		if err != nil {
			return created, kept, fmt.Errorf("init: cannot create %s: %w", p, err)
		}
		_, werr := w.Write(f.Data)
		cerr := w.Close()
		if werr != nil || cerr != nil {
			_ = os.Remove(p)
			return created, kept, fmt.Errorf("init: write %s: %w", p, errors.Join(werr, cerr))
		}
		created = append(created, p)
	}
	return created, kept, nil
}

// blockedBy names the file that stands where a folder of path should be,
// if one does, as advice to add to an error.
func blockedBy(dir, path string) string {
	for p := path; len(p) > len(dir); p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return fmt.Sprintf(" (%s is a file: move it away and run cadre init again)", p)
		}
	}
	return ""
}
