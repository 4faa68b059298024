package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/local"
)

// ownership is who carries on a run that did not end: a live owner's lease,
// or no one (the run was interrupted).
type ownership struct {
	// rec is the run's record; read again when the run turned out to have
	// ended meanwhile.
	rec *cadre.RunRecord
	// lease is the run's lease, live or not; nil when there is none.
	lease       *cadre.Lease
	interrupted bool
}

// runOwnership finds out whether a live process owns r. A run that did not
// end is interrupted when its lease is gone, has expired, or belongs to a
// process of this machine that has exited.
func runOwnership(ctx context.Context, s cadre.Store, r *cadre.RunRecord) (ownership, error) {
	o := ownership{rec: r}
	if r.Status.Terminal() {
		return o, nil
	}
	l, err := s.Lease(ctx, r.ID)
	switch {
	case errors.Is(err, cadre.ErrNotFound):
	case err != nil:
		return o, err
	default:
		o.lease = l
	}
	if o.lease != nil && !local.Abandoned(o.lease) {
		return o, nil
	}
	// An owner records the run's end before it releases the lease: the
	// run may have ended since r was read.
	cur, err := s.GetRun(ctx, r.ID)
	if err != nil {
		return o, err
	}
	o.rec, o.interrupted = cur, !cur.Status.Terminal()
	return o, nil
}

// interruptedText says what happened to an interrupted run and what to do.
func (o ownership) interruptedText() string {
	who := "the process that ran it"
	if o.lease != nil {
		who += " (" + o.lease.Owner.Describe() + ")"
	}
	return fmt.Sprintf("run %s was interrupted: %s stopped before the run ended; carry it on with: cadre resume %s", o.rec.ID, who, o.rec.ID)
}

// ownerText names a live owner for cadre runs show.
func ownerText(l *cadre.Lease) string {
	return fmt.Sprintf("%s, since %s", l.Owner.Describe(), l.Acquired.Local().Format("2006-01-02 15:04:05"))
}

// ownedError is the error of cadre resume for a run another process owns.
func ownedError(run string, l *cadre.Lease) error {
	return fmt.Errorf("run %s is being run by another process: %s; wait for it to end, or follow it with: cadre runs show --follow %s",
		run, ownerText(l), run)
}

// checkNotOwned fails, naming the owner, when a live process owns run: a
// resume would be refused, and is told so before anything is started.
func (a *app) checkNotOwned(ctx context.Context, cfg *config, run string) error {
	s, _, err := a.existingStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	l, err := s.Lease(ctx, run)
	if err == nil && !local.Abandoned(l) {
		return ownedError(run, l)
	}
	if err != nil && !errors.Is(err, cadre.ErrNotFound) {
		return err
	}
	return nil
}

// resumeOwned is Engine.Resume with the error of a run another process
// owns said as cadre resume says it.
func resumeOwned(ctx context.Context, eng cadre.Engine, run string) error {
	err := eng.Resume(ctx, run)
	if le, ok := errors.AsType[*cadre.LeaseError](err); ok && errors.Is(err, cadre.ErrRunOwned) && le.Held != nil {
		return ownedError(run, le.Held)
	}
	return err
}

// interruptedView marks an interrupted run as such and sets how long it
// went on: until the last sign of life its agents' records and its lease
// show.
func interruptedView(sum *runSummary, agents []*cadre.AgentRecord) {
	sum.Status = cadre.StatusInterrupted
	last := sum.Started
	if l := sum.own.lease; l != nil && l.Renewed.After(last) {
		last = l.Renewed
	}
	for _, ag := range agents {
		for _, t := range []time.Time{ag.Started, ag.Ended} {
			if t.After(last) {
				last = t
			}
		}
	}
	sum.Duration = 0
	if !sum.Started.IsZero() {
		sum.Duration = last.Sub(sum.Started).Seconds()
	}
}

// markInterrupted shows the unfinished agents of an interrupted run as
// interrupted.
func markInterrupted(agents []*cadre.AgentRecord) {
	for _, ag := range agents {
		if !ag.Status.Terminal() {
			ag.Status = cadre.StatusInterrupted
		}
	}
}

// printInterrupted follows cadre runs list's table with what to do about
// each interrupted run.
func printInterrupted(w io.Writer, sums []runSummary) {
	first := true
	for _, s := range sums {
		if !s.own.interrupted {
			continue
		}
		if first {
			fmt.Fprintln(w)
			first = false
		}
		fmt.Fprintln(w, s.own.interruptedText())
	}
}

// followInterrupted ends cadre runs show --follow of a run that was
// interrupted: the run as show prints it, and the reason, exit status 1.
func (a *app) followInterrupted(ctx context.Context, s cadre.Store, own ownership, sf *showFlags) error {
	if !sf.json {
		fmt.Fprintln(a.io.Stdout)
		now := time.Now()
		v, err := loadRunView(ctx, s, own.rec, now)
		if err != nil {
			return err
		}
		printRunView(a.io.Stdout, v, now)
	}
	return &exitError{code: 1, err: errors.New(own.interruptedText())}
}
