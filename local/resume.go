package local

import (
	"context"
	"fmt"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
)

// restored is one agent rebuilt from its journal.
type restored struct {
	rec *cadre.AgentRecord
	st  *loop.State
	seq int64
	// reports are the reports of its children that its journal shows it
	// received, in order: the agent_reported events it emitted.
	reports []pastReport
}

// pastReport is an agent_reported event a replay found, with the time of
// the journal entry that brought the report.
type pastReport struct {
	rep cadre.AgentReported
	at  time.Time
}

// Resume carries on a run recorded in the engine's Store after the process
// that ran it stopped. Every agent's state is rebuilt by replaying its
// journal through the loop; then each one carries on where it was: a model
// or tool call that was in flight is made again (a tool that changes
// something is not repeated: the agent is told it was interrupted), children
// that were asked for and never started are started, and reports and ends
// of children that their parents had not recorded are delivered again
// (parents accept each once). Completed model and tool calls are never
// repeated. The agent_reported events of reports the journals show were
// received, but which the stopped process had not yet written to the
// store, are written then (once each).
//
// Every journal entry is checked against the checksum stored with it
// before anything is replayed: a damaged entry stops Resume with a
// *cadre.DamagedError naming the agent and the entry, and nothing of the
// run is done.
//
// Resume first takes the run's lease (see the package documentation): it
// fails with a *cadre.LeaseError wrapping cadre.ErrRunOwned, before any
// model call, while another live process owns the run.
//
// The engine must be configured as the run was (definitions, tools,
// models, limits): the caller keeps that in Config.Settings, which Start
// stores in the run's record. ctx bounds only the reading and recording of
// the run, as for Start.
func (e *Engine) Resume(ctx context.Context, id string) error {
	_, err := e.resume(ctx, id)
	return err
}

func (e *Engine) resume(ctx context.Context, id string) (*run, error) {
	s := e.cfg.Store
	if s == nil {
		return nil, ErrNoStore
	}
	if e.cfg.Models == nil {
		return nil, fmt.Errorf("local: Config.Models is nil: the engine needs a ModelSource to call models")
	}
	rec, err := s.GetRun(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("resume run %s: %w", id, err)
	}
	if rec.Status.Terminal() {
		return nil, fmt.Errorf("resume run %s: it has already ended (%s); there is nothing to resume", id, rec.Status)
	}
	r, err := e.newRun(id, rec.Task)
	if err != nil {
		return nil, fmt.Errorf("resume run %s: %w", id, err)
	}
	// Own the run before reading it: its owner until now may have written
	// more, or ended it.
	if err := r.own(ctx); err != nil {
		r.abandon(err)
		return nil, fmt.Errorf("resume run %s: %w", id, err)
	}
	if rec, err = s.GetRun(ctx, id); err == nil && rec.Status.Terminal() {
		err = fmt.Errorf("it has already ended (%s); there is nothing to resume", rec.Status)
	}
	if err != nil {
		r.abandon(err)
		return nil, fmt.Errorf("resume run %s: %w", id, err)
	}
	all, err := r.readJournals(ctx)
	if err != nil {
		r.abandon(err)
		return nil, fmt.Errorf("resume run %s: %w", id, err)
	}
	agents, wakes, err := r.restore(all)
	if err != nil {
		r.abandon(err)
		return nil, fmt.Errorf("resume run %s: %w", id, err)
	}
	root := agents[cadre.RootID]
	fresh := root == nil
	if fresh {
		// The process stopped before the root's start was recorded: nothing
		// was done yet, so the run starts from the beginning.
		var start loop.Start
		root, start, err = r.newRoot()
		if err == nil {
			r.created++
			err = r.create(root, start)
		}
		if err != nil {
			r.abandon(err)
			return nil, fmt.Errorf("resume run %s: start its root agent: %w", id, err)
		}
	}
	rec.Status = cadre.StatusRunning
	if err := r.store.UpdateRun(ctx, rec); err != nil {
		r.abandon(err)
		return nil, fmt.Errorf("resume run %s: %w", id, err)
	}
	if err := r.restoreReports(ctx, all); err != nil {
		r.abandon(err)
		return nil, fmt.Errorf("resume run %s: %w", id, err)
	}
	r.emit(cadre.NewEvent(cadre.RunResumed{Task: rec.Task, Agents: len(all)}))
	r.warn()
	r.watch()
	if fresh {
		r.launch(root, nil)
		return r, nil
	}
	if fin, ok := root.st.Finished(); ok {
		// The root had ended: only the run's own end was not recorded.
		go r.finish(fin)
		return r, nil
	}
	// Plan every launch before the first: a launched agent owns its state.
	type launch struct {
		a       *agent
		pending []loop.Action
	}
	var plan []launch
	for _, x := range all {
		a := agents[x.st.ID()]
		if a == nil || x.st.Done() {
			continue
		}
		if a.parent != nil && a.parent.st.Done() {
			// Its parent ended while cancelling it: finish the cancellation.
			a.box.put(loop.Cancel{Reason: fmt.Sprintf("its parent %s ended", a.parent.id)})
			plan = append(plan, launch{a: a})
			continue
		}
		plan = append(plan, launch{a: a, pending: x.st.Pending()})
	}
	// The wakes go out before their senders run: a woken child is one of
	// its parent's children, which the parent's goroutine owns.
	for _, w := range wakes {
		r.wake(w.from, w.d)
	}
	for _, l := range plan {
		r.launch(l.a, l.pending)
	}
	return r, nil
}

// lostWake is a wake a parent sent that its child never journaled: the
// process stopped in between.
type lostWake struct {
	from *agent
	d    loop.Deliver
}

// restore rebuilds the agents of a run, registers them, and posts to each
// live parent the reports and ends of its children that it may have missed.
// It returns the wakes that live parents sent to finished children that
// never took them up, for the caller to send again once every agent is
// restored; such a child's old report and end are not posted.
func (r *run) restore(all []*restored) (map[cadre.AgentID]*agent, []lostWake, error) {
	e := r.e
	byName := make(map[string]cadre.Tool, len(e.cfg.Tools))
	for _, t := range e.cfg.Tools {
		byName[t.Spec().Name] = t
	}
	agents := map[cadre.AgentID]*agent{}
	var wakes []lostWake
	for _, x := range all {
		st := x.st
		cfg := st.Config()
		var parent *agent
		if cfg.Parent != "" {
			parent = agents[cfg.Parent]
			if parent == nil {
				continue // an orphan of a parent that never started
			}
		}
		name := cfg.Model
		if name == "" {
			name = e.cfg.RootModel
		}
		m, err := e.cfg.Models.Open(name)
		if err != nil {
			return nil, nil, fmt.Errorf("open model %q of %s: %w", name, cfg.ID, err)
		}
		var tools []cadre.Tool
		for _, spec := range cfg.Tools {
			t, ok := byName[spec.Name]
			if !ok {
				return nil, nil, fmt.Errorf("agent %s uses the tool %s, which this cadre does not have", cfg.ID, spec.Name)
			}
			tools = append(tools, t)
		}
		rules, err := compileRules(cfg.Rules)
		if err != nil {
			return nil, nil, fmt.Errorf("agent %s: %w", cfg.ID, err)
		}
		a := r.newAgent(cfg, parent, r.defs[cfg.Definition], m, tools, rules)
		a.st, a.seq, a.started = st, x.seq, st.Turns() > 0
		for _, id := range st.LiveChildren() {
			a.addKid(id)
		}
		agents[cfg.ID] = a

		status := cadre.StatusWaiting
		if fin, ok := st.Finished(); ok {
			status = finishStatus(fin)
		}
		r.register(a, st.Task(), status)
		r.created++
		r.mu.Lock()
		in := r.infos[a.id]
		in.Started, in.Turns, in.Usage = x.rec.Started, st.Turns(), st.Usage()
		in.Cost = r.e.cost(in.Model, in.Usage)
		if fin, ok := st.Finished(); ok {
			in.Ended = x.rec.Ended
			if in.Ended.IsZero() {
				in.Ended = time.Now()
			}
			if status == cadre.StatusDone {
				in.Result = fin.Result
			} else {
				in.Error = fin.Result
			}
			in.Stopped = fin.BudgetExhausted
			a.over = true
		}
		if rep, ok := st.Report(); ok && status == cadre.StatusDone {
			in.Result = rep.Text
		}
		r.usage = r.usage.Add(st.Usage())
		if cfg.Parent != "" && cfg.Mode != loop.ModeOnboarding {
			r.tasks[loop.TaskKey(st.Task())]++
		}
		r.mu.Unlock()

		if parent == nil || parent.st.Done() {
			continue
		}
		if d, ok := parent.st.WakeOf(a.id); ok && st.Done() && st.Round() < d.Round {
			wakes = append(wakes, lostWake{from: parent, d: d})
			continue
		}
		if rep, ok := st.Report(); ok {
			parent.box.put(loop.ChildReport{Child: a.id, Text: rep.Text, Failed: rep.Failed, Cancelled: rep.Cancelled, Incomplete: rep.Incomplete, Round: rep.Round})
		}
		if fin, ok := st.Finished(); ok {
			ce := loop.ChildEnded{Child: a.id, Status: finishStatus(fin)}
			if ce.Status != cadre.StatusDone {
				ce.Error = fin.Result
			}
			parent.box.put(ce)
		}
	}
	// Findings are derived from the reports, as the live run made them.
	for _, x := range all {
		if a := agents[x.st.ID()]; a != nil {
			if rep, ok := x.st.Report(); ok {
				if f, ok := finding(a, rep); ok {
					r.findings = append(r.findings, f)
				}
			}
		}
	}
	return agents, wakes, nil
}

func finishStatus(f loop.Finish) cadre.Status {
	switch {
	case f.Cancelled:
		return cadre.StatusCancelled
	case f.Failed:
		return cadre.StatusFailed
	}
	return cadre.StatusDone
}
