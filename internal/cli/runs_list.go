package cli

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
)

func (a *app) newRunsListCmd(f *runsFlags) *cobra.Command {
	var (
		limit  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the recorded runs, newest first",
		Example: `  cadre runs list
  cadre runs list --limit 0 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			s, where, err := a.openRunStore(ctx, f.store)
			if _, ok := errors.AsType[*errNoStore](err); ok {
				if asJSON {
					_, err := io.WriteString(a.io.Stdout, "[]\n")
					return err
				}
				fmt.Fprintln(a.io.Stdout, err)
				return nil
			}
			if err != nil {
				return err
			}
			defer s.Close()
			runs, err := s.ListRuns(ctx, 0)
			if err != nil {
				return err
			}
			total := len(runs)
			if limit > 0 && total > limit {
				runs = runs[:limit]
			}
			now := time.Now()
			sums := make([]runSummary, 0, len(runs))
			for _, r := range runs {
				sum, err := summarize(ctx, s, r, now)
				if err != nil {
					return err
				}
				if sum.Cost, err = storedCost(ctx, s, r.ID); err != nil {
					return err
				}
				sums = append(sums, sum)
			}
			if asJSON {
				return writeIndentedJSON(a.io.Stdout, sums)
			}
			if total == 0 {
				fmt.Fprintln(a.io.Stdout, (&errNoStore{where: where}).Error())
				return nil
			}
			rows := make([][]string, len(sums))
			priced := false
			for _, r := range sums {
				priced = priced || r.Cost != 0
			}
			for i, r := range sums {
				dur := durationText(time.Duration(r.Duration * float64(time.Second)))
				if r.Started.IsZero() {
					dur = "-"
				}
				rows[i] = []string{r.ID, startedText(r.Started), statusMark(r.Status) + " " + string(r.Status), clipText(r.Task, 48),
					fmt.Sprint(r.Agents), tokensText(r.Usage.Total()), dur}
				if priced {
					rows[i] = append(rows[i], costText(r.Cost))
				}
			}
			head := []string{"ID", "STARTED", "STATUS", "TASK", "AGENTS", "TOKENS", "DURATION"}
			if priced {
				head = append(head, "COST")
			}
			writeTable(a.io.Stdout, "", head, rows, []bool{4: true, 5: true, 6: true, 7: true})
			printInterrupted(a.io.Stdout, sums)
			if len(runs) < total {
				fmt.Fprintf(a.io.Stdout, "\nthe %d newest of %d runs; --limit 0 lists them all\n", len(runs), total)
			}
			return nil
		},
	}
	cmd.Flags().IntVarP(&limit, "limit", "n", 20, "how many runs to list, newest first; 0 lists all")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of runs instead of a table")
	return cmd
}
