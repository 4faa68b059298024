package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/journal"
	"github.com/cadre-ai/cadre/loop"
)

// runExport is the JSON cadre runs export writes: everything the store
// holds about a run.
type runExport struct {
	Format  string           `json:"format"`
	Version int              `json:"version"`
	Run     *cadre.RunRecord `json:"run"`
	Agents  []agentExport    `json:"agents"`
	Events  []cadre.Event    `json:"events"`
}

// exportFormat and exportVersion identify cadre runs export's JSON.
const (
	exportFormat  = "cadre.run"
	exportVersion = 2 // 2: an entry of several inputs is exported an input at a time, with Part
)

// agentExport is an agent's record with its journal.
type agentExport struct {
	cadre.AgentRecord
	Journal []journalExport `json:"journal"`
}

// journalExport is one journal entry with its input decoded. When this
// build cannot decode it, Input holds the entry as stored and Error says
// why. A damaged entry (its content does not match the checksum stored
// with it) is exported as it reads, marked Damaged, with Error saying so.
// An entry that holds several inputs (loop.KindInputs) is exported as one
// item per input, each with the entry's Seq and Time and its place in the
// entry as Part (1, 2, …); Part is absent for an entry of one input.
type journalExport struct {
	Seq     int64           `json:"seq"`
	Part    int             `json:"part,omitempty"`
	Kind    string          `json:"kind"`
	Time    time.Time       `json:"time"`
	Input   json.RawMessage `json:"input"`
	Damaged bool            `json:"damaged,omitempty"`
	Error   string          `json:"error,omitempty"`
}

func (a *app) newRunsExportCmd(f *runsFlags) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "export RUN",
		Short: "Write a whole run as JSON: its record, agents, journals and events",
		Long: `Write everything the store holds about a run as one JSON object: the run's
record, each agent's record with its journal (every input it was fed, in
order, decoded), and the run's events. The object starts with
"format": "cadre.run" and "version": 2. Inputs an agent took together share
one journal entry: each is exported with the entry's "seq" and its place in
it as "part" (1, 2, …). A child's start is exported with its whole
configuration, also when the journal keeps it once for all the children of
its kind.

A journal entry whose content no longer matches the checksum stored with it
(the store was changed outside cadre, or the disk damaged it) is exported as
it reads, marked "damaged": true; such a run cannot be resumed.`,
		Example: `  cadre runs export last > run.json
  cadre runs export 20250314-1509 -o run.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return errors.New("cadre runs export needs one run: an id from `cadre runs list`, a unique prefix of one, or last")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, where, err := a.openRunStore(ctx, f.store)
			if err != nil {
				return err
			}
			defer s.Close()
			r, err := resolveRun(ctx, s, where, args[0])
			if err != nil {
				return err
			}
			x, err := exportRun(ctx, s, r)
			if err != nil {
				return err
			}
			if output == "" || output == "-" {
				return writeIndentedJSON(a.io.Stdout, x)
			}
			wd, err := a.wd()
			if err != nil {
				return err
			}
			path := absUnder(wd, a.expandHome(output))
			// The export holds every entry of the run's journal, as the
			// store does: readable by its owner alone, as the store is.
			file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
			if err != nil {
				return fmt.Errorf("export run %s: %w", r.ID, err)
			}
			if runtime.GOOS != "windows" {
				// A file that was there keeps its mode when opened.
				_ = file.Chmod(0o600)
			}
			if err := writeIndentedJSON(file, x); err != nil {
				file.Close()
				return fmt.Errorf("export run %s to %s: %w", r.ID, a.relPath(path), err)
			}
			if err := file.Close(); err != nil {
				return fmt.Errorf("export run %s to %s: %w", r.ID, a.relPath(path), err)
			}
			entries, damaged := 0, 0
			for _, ag := range x.Agents {
				for _, e := range ag.Journal {
					if e.Part <= 1 { // an entry of several inputs is one item per input
						entries++
					}
					if e.Damaged {
						damaged++
					}
				}
			}
			fmt.Fprintf(a.io.Stderr, "wrote run %s to %s: %s, %s, %s\n", r.ID, a.relPath(path),
				countText(len(x.Agents), "agent"), countText(entries, "journal entry"), countText(len(x.Events), "event"))
			if damaged > 0 {
				fmt.Fprintf(a.io.Stderr, "%s damaged: marked \"damaged\": true\n", countText(damaged, "journal entry"))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file instead of stdout")
	return cmd
}

func exportRun(ctx context.Context, s cadre.Store, r *cadre.RunRecord) (*runExport, error) {
	agents, err := s.ListAgents(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	evs, err := s.Events(ctx, r.ID, 0)
	if err != nil {
		return nil, err
	}
	x := &runExport{Format: exportFormat, Version: exportVersion, Run: r, Agents: make([]agentExport, 0, len(agents)), Events: evs}
	rd := &journal.Reader{Store: s, Run: r.ID}
	if err := rd.Load(ctx); err != nil {
		return nil, err
	}
	for _, ag := range agents {
		entries, err := rd.Journal(ctx, ag.ID)
		if err != nil {
			return nil, err
		}
		ax := agentExport{AgentRecord: *ag, Journal: make([]journalExport, 0, len(entries))}
		for _, e := range entries {
			ax.Journal = append(ax.Journal, exportEntry(ctx, rd, e)...)
		}
		x.Agents = append(x.Agents, ax)
	}
	return x, nil
}

// exportEntry is an entry's items: one per input it holds, a Start with
// the configuration it takes from another agent's (rd reads it), so that
// each reads on its own.
func exportEntry(ctx context.Context, rd *journal.Reader, e cadre.JournalEntry) []journalExport {
	je := journalExport{Seq: e.Seq, Kind: e.Kind, Time: e.Time}
	if de, ok := errors.AsType[*cadre.DamagedError](e.Verify()); ok {
		je.Damaged = true
		je.Error = fmt.Sprintf("damaged: the entry does not match the checksum stored with it (stored %08x, its content gives %08x)", de.Stored, de.Computed)
		je.Input = asStored(e.Data)
		return []journalExport{je}
	}
	out, err := exportInputs(ctx, rd, e)
	if err == nil {
		return out
	}
	je.Error = err.Error()
	je.Input = asStored(e.Data)
	return []journalExport{je}
}

// exportInputs is an intact entry's items, one per input.
func exportInputs(ctx context.Context, rd *journal.Reader, e cadre.JournalEntry) ([]journalExport, error) {
	ins, err := rd.Inputs(ctx, e)
	if err != nil {
		return nil, err
	}
	out := make([]journalExport, len(ins))
	for i, in := range ins {
		out[i] = journalExport{Seq: e.Seq, Kind: in.Kind(), Time: e.Time}
		if e.Kind == loop.KindInputs {
			out[i].Part = i + 1
		}
		if out[i].Input, err = json.Marshal(in); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// asStored is an entry's data as the store holds it: as JSON when it is
// JSON, else as a JSON string of its bytes.
func asStored(data []byte) json.RawMessage {
	if json.Valid(data) {
		return data
	}
	b, _ := json.Marshal(string(data))
	return b
}
