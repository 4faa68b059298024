package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/postgres"
	"github.com/cadre-ai/cadre/sqlite"
)

// runsFlags are the flags every cadre runs subcommand shares.
type runsFlags struct {
	store string
}

func (a *app) newRunsCmd() *cobra.Command {
	var f runsFlags
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List, show, follow and export recorded runs",
		Long: `Every cadre run is recorded in the run store: its agents, each agent's journal
(everything that was fed to it, in order) and its events. These commands read
it. The store is found as cadre run finds it: --store, else CADRE_STORE, else
store: in .cadre/config.yaml, else .cadre/cadre.db in the project.

RUN is a run id, a unique prefix of one, or last for the newest run.`,
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&f.store, "store", "", "run store: a SQLite file or postgres://… (default .cadre/cadre.db)")
	cmd.AddCommand(a.newRunsListCmd(&f), a.newRunsShowCmd(&f), a.newRunsExportCmd(&f))
	return cmd
}

// errNoStore reports a store that does not exist yet.
type errNoStore struct{ where string }

func (e *errNoStore) Error() string {
	return fmt.Sprintf("no runs recorded yet in %s: `cadre run TASK` records one there, or give --store with the store to read", e.where)
}

// openRunStore opens the run store that cadre run writes to, resolved the
// same way: the --store value flag when set, else the configuration
// (CADRE_STORE, store: in a config file), else .cadre/cadre.db in the
// project. It returns the store and where it is, as a person would name
// it. A SQLite file that does not exist is an *errNoStore, and is not
// created.
func (a *app) openRunStore(ctx context.Context, flag string) (cadre.Store, string, error) {
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, "", err
	}
	if flag != "" {
		cfg.Store = flag
	}
	return a.existingStore(ctx, cfg)
}

// existingStore opens the run store cfg names, as openRunStore does, with
// the configuration already read.
func (a *app) existingStore(ctx context.Context, cfg *config) (cadre.Store, string, error) {
	loc := a.storePath(cfg)
	where := a.storeWhere(loc)
	switch {
	case loc == "none":
		return nil, loc, errors.New("the run store is turned off (store: none), so no runs are recorded: give --store with the path of a SQLite file or a postgres:// URL")
	case !isPostgres(loc):
		fi, err := os.Stat(loc)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, where, &errNoStore{where: where}
		case err != nil:
			return nil, where, fmt.Errorf("open the run store %s: %w", where, err)
		case fi.IsDir():
			return nil, where, fmt.Errorf("the run store %s is a folder: give --store the path of a SQLite file, such as .cadre/cadre.db", where)
		}
	}
	log, err := a.logger()
	if err != nil {
		return nil, where, err
	}
	s, err := openStore(ctx, loc, where, log)
	if err != nil {
		return nil, where, err
	}
	// These commands show runs; none resumes one through this store.
	return &redactStore{Store: s, r: a.redactor(cfg), journal: true}, where, nil
}

func isPostgres(loc string) bool {
	return strings.HasPrefix(loc, "postgres://") || strings.HasPrefix(loc, "postgresql://")
}

// storeWhere names a store's location for a person: a SQLite path relative
// to the working directory, a PostgreSQL URL without its password.
func (a *app) storeWhere(loc string) string {
	if !isPostgres(loc) {
		return a.relPath(loc)
	}
	if u, err := url.Parse(loc); err == nil {
		return u.Redacted()
	}
	return "the PostgreSQL database"
}

// openStore opens the store at loc, a SQLite file or a postgres:// URL;
// where names it in errors. A SQLite file other users can read is made
// private first (makeStorePrivate); log gets the debug lines.
func openStore(ctx context.Context, loc, where string, log *slog.Logger) (cadre.Store, error) {
	var (
		s   cadre.Store
		err error
	)
	if isPostgres(loc) {
		s, err = postgres.Open(ctx, loc)
	} else {
		makeStorePrivate(loc, log)
		s, err = sqlite.Open(ctx, loc)
	}
	if err != nil {
		return nil, fmt.Errorf("open the run store %s: %w", where, err)
	}
	return s, nil
}

// resolveRun finds the run arg names: an id, a unique prefix of one, or
// "last" for the newest run.
func resolveRun(ctx context.Context, s cadre.Store, where, arg string) (*cadre.RunRecord, error) {
	if arg == "last" {
		runs, err := s.ListRuns(ctx, 1)
		if err != nil {
			return nil, err
		}
		if len(runs) == 0 {
			return nil, &errNoStore{where: where}
		}
		return runs[0], nil
	}
	r, err := s.GetRun(ctx, arg)
	if err == nil {
		return r, nil
	}
	if !errors.Is(err, cadre.ErrNotFound) {
		return nil, err
	}
	all, err := s.ListRuns(ctx, 0)
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, &errNoStore{where: where}
	}
	var matches []*cadre.RunRecord
	for _, r := range all {
		if arg != "" && strings.HasPrefix(r.ID, arg) {
			matches = append(matches, r)
		}
	}
	now := time.Now()
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		closest := slices.Clone(all)
		slices.SortStableFunc(closest, func(x, y *cadre.RunRecord) int {
			if c := cmp.Compare(commonPrefix(arg, y.ID), commonPrefix(arg, x.ID)); c != 0 {
				return c
			}
			return cmp.Compare(nameDistance(arg, x.ID), nameDistance(arg, y.ID))
		})
		return nil, fmt.Errorf("unknown run %q in %s; the closest are:\n%s\nrun `cadre runs list` to see every run", arg, where, runLines(closest[:min(3, len(closest))], now))
	default:
		return nil, fmt.Errorf("%q is the start of %d runs:\n%s\ngive more of the id", arg, len(matches), runLines(matches[:min(5, len(matches))], now))
	}
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// runLines lists runs for an error message, one indented line each.
func runLines(runs []*cadre.RunRecord, now time.Time) string {
	rows := make([][]string, len(runs))
	for i, r := range runs {
		rows[i] = []string{r.ID, startedText(r.Started), statusMark(r.Status) + " " + string(r.Status), clipText(r.Task, 50)}
	}
	var b strings.Builder
	writeTable(&b, "  ", nil, rows, nil)
	return strings.TrimRight(b.String(), "\n")
}

// runSummary is a run as cadre runs list shows it: the record, with the
// agents and tokens counted from the agents' records while it runs.
type runSummary struct {
	*cadre.RunRecord
	Duration float64 `json:"duration_seconds"`
	// Owner is the process carrying on a run that did not end.
	Owner *cadre.Lease `json:"owner,omitempty"`
	// Cost is what the run's model calls cost at the prices it had.
	Cost float64 `json:"cost,omitempty"`
	own  ownership
}

func summarize(ctx context.Context, s cadre.Store, r *cadre.RunRecord, now time.Time) (runSummary, error) {
	own, err := runOwnership(ctx, s, r)
	if err != nil {
		return runSummary{}, err
	}
	r = own.rec
	if !r.Status.Terminal() || r.Agents == 0 {
		agents, err := s.ListAgents(ctx, r.ID)
		if err != nil {
			return runSummary{}, err
		}
		c := *r
		c.Agents = len(agents)
		if !r.Status.Terminal() || c.Usage == (cadre.Usage{}) {
			c.Usage = cadre.Usage{}
			for _, a := range agents {
				c.Usage = c.Usage.Add(a.Usage)
			}
		}
		r = &c
		if own.interrupted {
			sum := runSummary{RunRecord: r, own: own}
			interruptedView(&sum, agents)
			return sum, nil
		}
	}
	sum := runSummary{RunRecord: r, Duration: runDuration(r, now).Seconds(), own: own}
	if !r.Status.Terminal() {
		sum.Owner = own.lease
	}
	return sum, nil
}

// runDuration is how long a run took, or has run so far.
func runDuration(r *cadre.RunRecord, now time.Time) time.Duration {
	switch {
	case r.Started.IsZero():
		return 0
	case !r.Ended.IsZero():
		return r.Ended.Sub(r.Started)
	case !r.Status.Terminal():
		return now.Sub(r.Started)
	}
	return 0
}
