package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

func (a *app) newTrustCmd() *cobra.Command {
	var revoke bool
	cmd := &cobra.Command{
		Use:   "trust",
		Short: "Show what the project's files set that needs trust, and trust the project",
		Long: `A project's .cadre/config.yaml and .mcp.json can set what runs programs (MCP
servers), sends data or secrets elsewhere (a provider's baseURL or apiKeyEnv,
telemetry, web search, a store outside the project) or loosens confinement
(approve: all, sandbox: off, writable folders, webFetch.allow). cadre applies
those settings only from a project you trust; until then it leaves them out.

cadre trust shows those settings, as the files write them, and records that you
trust them, in ~/.cadre/trusted-projects.json. When they change, cadre asks
again. --revoke forgets the project.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := a.readProject()
			if err != nil {
				return err
			}
			if p.dir == "" {
				return errors.New("the working folder is not known")
			}
			out := cmd.OutOrStdout()
			if revoke {
				if err := a.setTrust(p.dir, ""); err != nil {
					return err
				}
				fmt.Fprintf(out, "cadre: %s is no longer trusted; its settings that need trust will be left out\n", p.dir)
				return nil
			}
			uc, err := a.userConfig()
			if err != nil {
				return err
			}
			wd, _ := a.wd()
			t := &trustCheck{a: a, user: uc, proj: p.dir, wd: wd}
			settings, _ := t.sensitive(p)
			if len(settings) == 0 {
				fmt.Fprintf(out, "The project %s sets nothing that needs trust.\n", p.dir)
			} else {
				fmt.Fprintf(out, "The project %s sets what can run programs, send data or secrets elsewhere, or loosen confinement:\n%s",
					p.dir, describeSettings(settings))
			}
			if err := a.setTrust(p.dir, settingsHash(settings)); err != nil {
				return err
			}
			fmt.Fprintf(out, "cadre: trusted %s with these settings (recorded in %s); when they change, cadre asks again. Undo with: cadre trust --revoke\n",
				p.dir, a.trustFile())
			return nil
		},
	}
	cmd.Flags().BoolVar(&revoke, "revoke", false, "forget that the project is trusted")
	return cmd
}
