package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cadre-ai/cadre"
)

func (a *app) newResumeCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "resume [RUN]",
		Short: "Carry on a run that stopped before it ended (a crash, a kill, a reboot)",
		Long: `Carry on a run from the run store. RUN is a run id, a unique prefix of one, or
"last"; without RUN, the newest run that did not end is carried on.

Every agent picks up where its journal leaves it: completed model and tool
calls are not made again, a model call that was in flight is made again, a
write or command that was in flight is not repeated (the agent is told it was
interrupted), and each report reaches its parent once. The run keeps the
model, limits, workspace and agents it was started with.

A run has one owner at a time: while another cadre process carries the run
on, resume fails at once, naming that process. A run whose process died
shows as interrupted in cadre runs list and is free to resume.`,
		Example: `  cadre resume
  cadre resume 20261123-0714
  cadre resume --json last > events.jsonl`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.flagConfig(&f)
			if err != nil {
				return err
			}
			arg := ""
			if len(args) == 1 {
				arg = args[0]
			}
			ctx := cmd.Context()
			s, where, err := a.existingStore(ctx, cfg)
			if err != nil {
				return err
			}
			var rec *cadre.RunRecord
			if arg == "" {
				rec, err = newestUnfinished(ctx, s, "")
				if err == nil && rec == nil {
					err = fmt.Errorf("every run in %s has ended; there is nothing to resume (see cadre runs list)", where)
				}
			} else {
				rec, err = resolveRun(ctx, s, where, arg)
			}
			s.Close()
			if err != nil {
				return err
			}
			return a.resumeRun(ctx, cfg, &f, rec)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.json, "json", false, "write newline-delimited JSON events on stdout instead of the answer")
	fl.BoolVar(&f.noTree, "no-tree", false, "print plain progress lines instead of the live agent tree")
	fl.StringVar(&f.approve, "approve", "", "approval of writes and commands: ask, all or none (default ask)")
	fl.StringVar(&f.store, "store", "", "run store: a SQLite file or postgres://… (default .cadre/cadre.db)")
	return cmd
}

// resumeRun carries on a recorded run with the settings it was started
// with.
func (a *app) resumeRun(ctx context.Context, cfg *config, f *runFlags, rec *cadre.RunRecord) error {
	if rec.Status.Terminal() {
		return fmt.Errorf("run %s has already ended (%s); there is nothing to resume", rec.ID, rec.Status)
	}
	if isTemporalRun(rec) {
		return errTemporalResume(rec.ID)
	}
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
	}
	if cfg.Model == "" {
		return fmt.Errorf("run %s has no recorded model: pass --model", rec.ID)
	}
	if err := a.checkNotOwned(ctx, cfg, rec.ID); err != nil {
		return err
	}
	a.killLeftovers(cfg)
	return a.execute(ctx, cfg, f, func(ctx context.Context, eng cadre.Engine) (string, error) {
		return rec.ID, resumeOwned(ctx, eng, rec.ID)
	})
}

// unfinishedRun returns the newest run of task that did not end, or nil
// when there is none (or no store yet).
func (a *app) unfinishedRun(ctx context.Context, cfg *config, task string) (*cadre.RunRecord, error) {
	if a.storePath(cfg) == "none" {
		return nil, errors.New("--resume needs the run store, but it is turned off (store: none)")
	}
	s, _, err := a.existingStore(ctx, cfg)
	var none *errNoStore
	if errors.As(err, &none) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer s.Close()
	// The store keeps the task as its records do: with secrets hidden.
	return newestUnfinished(ctx, s, a.redactor(cfg).String(task))
}

// newestUnfinished returns the newest run still marked running, of task
// when it is not empty, or nil.
func newestUnfinished(ctx context.Context, s cadre.Store, task string) (*cadre.RunRecord, error) {
	runs, err := s.ListRuns(ctx, 0)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		if !r.Status.Terminal() && (task == "" || r.Task == task) {
			return r, nil
		}
	}
	return nil, nil
}
