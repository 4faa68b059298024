package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cadre-ai/cadre"
)

func (a *app) newContinueCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "continue [RUN] MESSAGE",
		Short: "Follow up a run that ended: give its root agent a new message",
		Long: `Send MESSAGE to the root agent of a run that has ended (done, failed or
cancelled) and carry the run on. The root goes on with its whole conversation
and knows the subagents it started: it may give one that finished more work.

RUN is a run id, a unique prefix of one, or "last"; without RUN, the newest run
is followed up. The run keeps the model, limits, workspace and agents it was
started with; flags given here (the flags of cadre run) override them.

The follow-up is recorded like everything else in the run: a run stopped
during a follow-up is carried on by cadre resume, and cadre runs show shows it.`,
		Example: `  cadre continue "Now write the summary to NOTES.md"
  cadre continue 20261123-0714 "Check the second file too"
  cadre continue --json last "Why did the test fail?" > events.jsonl`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || len(args) > 2 {
				return errors.New(`cadre continue needs a message, and optionally the run first, for example: cadre continue "Now fix it"`)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.flagConfig(&f)
			if err != nil {
				return err
			}
			arg, msg := "", args[0]
			if len(args) == 2 {
				arg, msg = args[0], args[1]
			}
			rec, err := a.runToContinue(cmd.Context(), cfg, arg)
			if err != nil {
				return err
			}
			return a.continueRun(cmd.Context(), cfg, &f, rec, msg)
		},
	}
	f.register(cmd)
	return cmd
}

// runToContinue finds the run arg names, or the newest one.
func (a *app) runToContinue(ctx context.Context, cfg *config, arg string) (*cadre.RunRecord, error) {
	s, where, err := a.existingStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if arg == "" {
		arg = "last"
	}
	return resolveRun(ctx, s, where, arg)
}

// continueRun follows up an ended run with msg, with the settings it was
// started with and the flags given over them.
func (a *app) continueRun(ctx context.Context, cfg *config, f *runFlags, rec *cadre.RunRecord, msg string) error {
	if !rec.Status.Terminal() {
		return fmt.Errorf("run %s has not ended (%s): wait for it, or carry it on with cadre resume %s if its process stopped", rec.ID, rec.Status, rec.ID)
	}
	if err := a.recordedSettings(cfg, f, rec); err != nil {
		return err
	}
	return a.execute(ctx, cfg, f, func(ctx context.Context, eng cadre.Engine) (string, error) {
		c, ok := eng.(cadre.Continuer)
		if !ok {
			return "", errors.New("this engine cannot follow up runs")
		}
		return rec.ID, c.Continue(ctx, rec.ID, msg)
	})
}

// recordedSettings puts the settings a run was started with over cfg, and
// the flags given on the command line over them.
func (a *app) recordedSettings(cfg *config, f *runFlags, rec *cadre.RunRecord) error {
	var rs runSettings
	if len(rec.Config) > 0 {
		if err := json.Unmarshal(rec.Config, &rs); err != nil {
			return fmt.Errorf("run %s: its recorded settings cannot be read (%v); it was written by another version of cadre", rec.ID, err)
		}
	}
	if err := a.checkRecorded(cfg, rec, rs); err != nil {
		return err
	}
	if len(rec.Config) > 0 {
		rs.apply(cfg)
		f.apply(cfg)
	}
	if cfg.Model == "" {
		return fmt.Errorf("run %s has no recorded model: pass --model", rec.ID)
	}
	return nil
}
