package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cadre-ai/cadre"
)

// followRun prints a run's events as they are stored until the run is
// over, then the run.
func (a *app) followRun(ctx context.Context, s cadre.Store, r *cadre.RunRecord, sf *showFlags) error {
	w := a.io.Stdout
	if !sf.json {
		fmt.Fprintf(w, "Following run %s: %s\n", r.ID, clipText(r.Task, 80))
		if !r.Status.Terminal() {
			fmt.Fprintln(a.io.Stderr, "(Ctrl+C stops following; the run goes on)")
		}
	}
	tick := time.NewTicker(sf.interval)
	defer tick.Stop()
	var (
		after    int64
		statuses = map[cadre.AgentID]cadre.Status{}
	)
	for {
		// The run's record is read before its events: an engine stores a
		// run's last events before it marks the run ended, so once the
		// record says so, the events read next are all there are.
		cur, err := s.GetRun(ctx, r.ID)
		if err != nil {
			return err
		}
		evs, err := s.Events(ctx, r.ID, after)
		if err != nil {
			return err
		}
		for _, e := range evs {
			after = e.Seq
			if e.Type == cadre.EventModelDelta {
				continue
			}
			if sf.json {
				b, err := json.Marshal(e)
				if err != nil {
					return err
				}
				fmt.Fprintf(w, "%s\n", b)
				continue
			}
			fmt.Fprintln(w, sanitize(logLine(e)))
		}
		if !cur.Status.Terminal() {
			own, err := runOwnership(ctx, s, cur)
			if err != nil {
				return err
			}
			if own.interrupted {
				return a.followInterrupted(ctx, s, own, sf)
			}
		}
		agents, err := s.ListAgents(ctx, r.ID)
		if err != nil {
			return err
		}
		for _, ag := range agents {
			prev, ok := statuses[ag.ID]
			statuses[ag.ID] = ag.Status
			if !ok || prev == ag.Status || sf.json {
				continue
			}
			// Events tell when agents start and end; waiting is only in
			// the records.
			if ag.Status == cadre.StatusWaiting || prev == cadre.StatusWaiting && ag.Status == cadre.StatusRunning {
				fmt.Fprintf(w, "%s  %-28s  %s %s\n", eventClock(time.Now()), ag.ID, statusMark(ag.Status), ag.Status)
			}
		}
		if cur.Status.Terminal() {
			if !sf.json {
				fmt.Fprintln(w)
				now := time.Now()
				v, err := loadRunView(ctx, s, cur, now)
				if err != nil {
					return err
				}
				printRunView(w, v, now)
			}
			if cur.Status == cadre.StatusDone {
				return nil
			}
			reason := oneLineText(cur.Error)
			if reason == "" {
				reason = "no reason recorded"
			}
			return &exitError{code: exitCode(cur.Status), err: fmt.Errorf("run %s %s: %s", cur.ID, cur.Status, clipText(reason, 300))}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-a.io.Interrupts:
			fmt.Fprintf(a.io.Stderr, "\nstopped following run %s; it goes on (cadre runs show %s)\n", r.ID, r.ID)
			return nil
		case <-tick.C:
		}
	}
}
