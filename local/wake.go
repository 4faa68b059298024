package local

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/journal"
	"github.com/cadre-ai/cadre/loop"
)

var _ cadre.Continuer = (*Engine)(nil)

// Continue carries on a run that has ended (done, failed or cancelled)
// with a new message from the user to its root agent (see
// cadre.Continuer). Every agent is rebuilt from its journal, as Resume
// does; the root then gets the message as a loop.Wake input, journaled
// like any other, so that Resume can carry on a run that stops during the
// follow-up. The root keeps its whole conversation and its children: it
// may wake one with send_agent_message. The run is running again until
// the root finishes once more; Wait then returns the new answer.
//
// It takes the run's lease first, as Resume does, and needs the engine's
// Store. Like Resume, it refuses a run whose journal is damaged, with a
// *cadre.DamagedError. ctx bounds only the reading and recording of the run.
func (e *Engine) Continue(ctx context.Context, id, message string) error {
	s := e.cfg.Store
	if s == nil {
		return fmt.Errorf("continue run %s: %w", id, ErrNoStore)
	}
	if e.cfg.Models == nil {
		return errors.New("local: Config.Models is nil: the engine needs a ModelSource to call models")
	}
	if strings.TrimSpace(message) == "" {
		return fmt.Errorf("continue run %s: the message is empty: say what the agent should do next", id)
	}
	rec, err := s.GetRun(ctx, id)
	if err != nil {
		return fmt.Errorf("continue run %s: %w", id, err)
	}
	if !rec.Status.Terminal() {
		return fmt.Errorf("continue run %s: it has not ended (%s); wait for it, or resume it if its process stopped: %w", id, rec.Status, cadre.ErrNotRunning)
	}
	r, err := e.newRun(id, rec.Task)
	if err != nil {
		return fmt.Errorf("continue run %s: %w", id, err)
	}
	if err := r.own(ctx); err != nil {
		r.abandon(err)
		return fmt.Errorf("continue run %s: %w", id, err)
	}
	fail := func(err error) error {
		r.abandon(err)
		return fmt.Errorf("continue run %s: %w", id, err)
	}
	if rec, err = s.GetRun(ctx, id); err == nil && !rec.Status.Terminal() {
		err = fmt.Errorf("it is going on again (%s)", rec.Status)
	}
	if err != nil {
		return fail(err)
	}
	all, err := r.readJournals(ctx)
	if err != nil {
		return fail(err)
	}
	// The run ended, so every parent had finished: none has a wake to
	// send again.
	agents, _, err := r.restore(all)
	if err != nil {
		return fail(err)
	}
	root := agents[cadre.RootID]
	if root == nil || !root.st.Done() {
		return fail(errors.New("its root agent's journal does not show it finished; resume the run instead"))
	}
	previous := rec.Status
	rec.Status, rec.Answer, rec.Error, rec.Ended = cadre.StatusRunning, "", "", time.Time{}
	if err := r.store.UpdateRun(ctx, rec); err != nil {
		return fail(err)
	}
	if err := r.restoreReports(ctx, all); err != nil {
		return fail(err)
	}
	r.emit(cadre.NewEvent(cadre.RunContinued{Message: message, Previous: previous}))
	r.warn()
	r.watch()
	r.rouse(root, loop.Wake{Text: message})
	return nil
}

// readJournals reads every agent of the run from the store and rebuilds
// its state from its journal, parents before children. Every entry is
// verified first: a damaged one is a *cadre.DamagedError, and nothing is
// replayed.
func (r *run) readJournals(ctx context.Context) ([]*restored, error) {
	s := r.e.cfg.Store
	recs, err := s.ListAgents(ctx, r.id)
	if err != nil {
		return nil, fmt.Errorf("list agents: %w", err)
	}
	// The journals are read and replayed on every core; what they tell
	// the run (agents created at run time) is taken in the order of recs,
	// and so is the first error.
	type read struct {
		x       *restored
		created []*cadre.Definition
		err     error
	}
	reads := make([]read, len(recs))
	rd := &journal.Reader{Store: s, Run: r.id}
	if err := rd.Load(ctx); err != nil {
		return nil, fmt.Errorf("read the journals: %w", err)
	}
	var (
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for range min(runtime.GOMAXPROCS(0), len(recs)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(recs)); i = next.Add(1) - 1 {
				x, created, err := replayJournal(ctx, rd, recs[i])
				reads[i] = read{x, created, err}
			}
		})
	}
	wg.Wait()
	var all []*restored
	for _, got := range reads {
		if got.err != nil {
			return nil, got.err
		}
		for _, d := range got.created {
			r.defs[d.Name] = d
		}
		if got.x != nil {
			all = append(all, got.x)
		}
	}
	slices.SortStableFunc(all, func(a, b *restored) int {
		if d := a.st.Config().Depth - b.st.Config().Depth; d != 0 {
			return d
		}
		return a.rec.Started.Compare(b.rec.Started)
	})
	return all, nil
}

// replayJournal reads an agent's journal, checks every entry and steps it
// through a new loop state: the agent as the journal leaves it (nil for an
// empty journal), with the definitions it created at run time; rd reads
// the run's journal.
func replayJournal(ctx context.Context, rd *journal.Reader, ar *cadre.AgentRecord) (*restored, []*cadre.Definition, error) {
	entries, err := rd.Take(ctx, ar.ID) // each agent's once: let go once replayed
	if err != nil {
		return nil, nil, fmt.Errorf("read the journal of %s: %w", ar.ID, err)
	}
	if len(entries) == 0 {
		return nil, nil, nil
	}
	x := &restored{rec: ar, st: loop.New(), seq: entries[len(entries)-1].Seq}
	var created []*cadre.Definition
	for _, en := range entries {
		if err := en.Verify(); err != nil {
			return nil, nil, err
		}
		ins, err := rd.Inputs(ctx, en)
		if err != nil {
			return nil, nil, fmt.Errorf("agent %s, journal entry %d: %w", ar.ID, en.Seq, err)
		}
		for _, in := range ins {
			if ac, ok := in.(loop.AgentCreated); ok && ac.Err == "" && ac.Definition != nil {
				created = append(created, ac.Definition)
			}
			for _, act := range x.st.Step(in) {
				if em, ok := act.(loop.Emit); ok {
					if rep, ok := em.Event.(cadre.AgentReported); ok {
						x.reports = append(x.reports, pastReport{rep: rep, at: en.Time})
					}
				}
			}
		}
	}
	return x, created, nil
}

// restoreReports writes the agent_reported events that the journals of
// all show were received but that the store lacks: the process that ran
// the run may have stopped after journaling a report and before its
// event reached the store (events are written after the journal, by the
// pump). Each parent's reports of each child are counted, in the
// journal's order, against the events stored of them, and only the ones
// beyond the stored count are written, with the time of the entry that
// brought them, so a run resumed again gets none twice.
func (r *run) restoreReports(ctx context.Context, all []*restored) error {
	n := 0
	for _, x := range all {
		n += len(x.reports)
	}
	if n == 0 {
		return nil
	}
	evs, err := r.e.cfg.Store.Events(ctx, r.id, 0)
	if err != nil {
		return fmt.Errorf("read its events: %w", err)
	}
	type key struct{ parent, child cadre.AgentID }
	stored := map[key]int{}
	for _, ev := range evs {
		if rep, ok := ev.Data.(cadre.AgentReported); ok && ev.Type == cadre.EventAgentReported {
			stored[key{ev.Agent, rep.Child}]++
		}
	}
	for _, x := range all {
		cfg := x.st.Config()
		seen := map[cadre.AgentID]int{}
		for _, p := range x.reports {
			seen[p.rep.Child]++
			if seen[p.rep.Child] <= stored[key{cfg.ID, p.rep.Child}] {
				continue
			}
			r.emit(cadre.Event{Type: cadre.EventAgentReported, Agent: cfg.ID, Parent: cfg.Parent, Depth: cfg.Depth, Data: p.rep, Time: p.at})
		}
	}
	return nil
}

// wake gives a child that has finished the message its parent sent it
// (a Deliver with Wake set): it carries on in a new goroutine with its
// state, and its next report goes to from. A child that cannot be woken
// is reported to from as failed, so that it does not wait for it.
func (r *run) wake(from *agent, d loop.Deliver) {
	r.mu.Lock()
	old := r.asleep(d.To)
	r.mu.Unlock()
	if old == nil || old.parent == nil || old.parent.id != from.id || !old.st.Done() {
		from.box.put(loop.ChildReport{Child: d.To, Failed: true, Round: d.Round,
			Text: fmt.Sprintf("Error: %s could not be woken: this run does not hold it any more.", d.To)})
		from.box.put(loop.ChildEnded{Child: d.To, Status: cadre.StatusFailed, Error: "it could not be woken"})
		return
	}
	a := r.newAgent(old.cfg, from, old.def, old.model, old.tools, old.rules)
	a.st, a.seq, a.started = old.st, old.seq, true
	from.addKid(a.id)
	r.rouse(a, loop.Wake{From: from.id, Text: d.Text})
}

// rouse makes a a live agent of the run again, with w first in its
// mailbox, then the reports and ends of its children that it did not
// step before it finished, and starts its goroutine.
func (r *run) rouse(a *agent, w loop.Wake) {
	r.mu.Lock()
	r.agents[a.id] = a // a, not the agent it was before it finished
	a.over = false
	if in := r.infos[a.id]; in != nil {
		in.Status, in.Ended, in.Error, in.Stopped = cadre.StatusRunning, time.Time{}, "", false
	}
	r.mu.Unlock()
	r.putAgent(a)
	a.woken = true
	a.box.put(w)
	for _, id := range a.st.LiveChildren() {
		a.addKid(id)
		r.mu.Lock()
		k := r.asleep(id)
		r.mu.Unlock()
		if k == nil {
			a.box.put(loop.ChildEnded{Child: id, Status: cadre.StatusFailed, Error: "it was lost when its parent stopped"})
			continue
		}
		k.parent = a
		if rep, ok := k.st.Report(); ok {
			a.box.put(loop.ChildReport{Child: id, Text: rep.Text, Failed: rep.Failed, Cancelled: rep.Cancelled, Incomplete: rep.Incomplete, Round: rep.Round})
		}
		fin, _ := k.st.Finished()
		ce := loop.ChildEnded{Child: id, Status: finishStatus(fin)}
		if ce.Status != cadre.StatusDone {
			ce.Error = fin.Result
		}
		a.box.put(ce)
	}
	r.launch(a, nil)
}

// withheld names the tools of all that an agent's definition left out of
// kept.
func withheld(all, kept []cadre.Tool) []string {
	var out []string
	for _, t := range all {
		name := t.Spec().Name
		if !slices.ContainsFunc(kept, func(k cadre.Tool) bool { return k.Spec().Name == name }) {
			out = append(out, name)
		}
	}
	return out
}
