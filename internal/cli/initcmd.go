package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cadre-ai/cadre/agentdef"
)

func (a *app) newInitCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "init [DIR]",
		Short: "Create .cadre/ with a config file, three stock agents and AGENTS.md",
		Long: `Create .cadre/ in DIR (default: the current directory) with:

  config.yaml   every setting, commented, with its default
  agents/       research-assistant, code-analyst and summarizer
  AGENTS.md     guidance for the root agent on when and how to delegate

A file that already exists is never overwritten; cadre init says which it kept.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			wd, err := a.wd()
			if err != nil {
				return err
			}
			dir := wd
			if len(args) == 1 {
				dir = absUnder(wd, a.expandHome(args[0]))
			}
			created, kept, err := agentdef.Init(dir)
			for _, p := range created {
				fmt.Fprintf(a.io.Stdout, "created  %s\n", a.relPath(p))
			}
			for _, p := range kept {
				fmt.Fprintf(a.io.Stdout, "kept     %s (it exists; cadre init never overwrites)\n", a.relPath(p))
			}
			if err != nil {
				return err
			}
			if len(created) > 0 {
				fmt.Fprintln(a.io.Stdout, `
Next: choose a model (model: in .cadre/config.yaml, CADRE_MODEL, or --model), then
  cadre agents list
  cadre run "Summarise what this project does"`)
			}
			return nil
		},
	}
}
