package cli

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// demoFiles are the project the demo runs in: two agent definitions, a
// changelog for the researcher to read and the script the model plays.
//
//go:embed demo
var demoFiles embed.FS

func (a *app) newDemoCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run cadre offline on a scripted model and watch it delegate",
		Long: `Run a small delegation offline: a root agent asks a researcher and a writer
at the same time; the researcher reads a file and reports, the writer forgets
to report and is reminded once; the root combines both reports.

The model is scripted (no network, no key). The demo's files are written to a
temporary folder, shown at the start, and removed at the end.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			dir, err := os.MkdirTemp("", "cadre-demo-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			if err := writeDemo(dir); err != nil {
				return fmt.Errorf("write the demo's files: %w", err)
			}
			fmt.Fprintf(a.io.Stderr, "cadre demo: a scripted model in %s (agents in .cadre/agents, script in script.yaml)\n\n", dir)
			demo := &app{io: a.io}
			demo.io.Dir = dir
			cfg := &config{}
			cfg.Model = "scripted:" + filepath.Join(dir, "script.yaml")
			cfg.Store = "none"
			cfg.Approve = "none"
			f.apply(cfg)
			return demo.runTask(cmd.Context(), cfg, &f, "When is the next release, and draft its announcement.")
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.json, "json", false, "write newline-delimited JSON events on stdout instead of the answer")
	fl.BoolVar(&f.noTree, "no-tree", false, "print plain progress lines instead of the live agent tree")
	return cmd
}

// writeDemo copies the embedded demo project into dir.
func writeDemo(dir string) error {
	return fs.WalkDir(demoFiles, "demo", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("demo", p)
		if rel == "agents" || filepath.Dir(rel) == "agents" {
			rel = filepath.Join(".cadre", rel)
		}
		dst := filepath.Join(dir, rel)
		dirMode, fileMode := os.FileMode(0o755), os.FileMode(0o644)
		if rel == ".cadre" || strings.HasPrefix(rel, ".cadre"+string(filepath.Separator)) {
			dirMode, fileMode = privateDir, privateFile
		}
		if d.IsDir() {
			return os.MkdirAll(dst, dirMode)
		}
		b, err := demoFiles.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, fileMode)
	})
}
