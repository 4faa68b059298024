package loop

import (
	"fmt"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/prompt"
	"github.com/cadre-ai/cadre/tagproto"
)

// block is a <spawn_agents> block being executed.
type block struct {
	mode    tagproto.SpawnMode
	tasks   []tagproto.SpawnTask
	results []prompt.Result
	done    []bool
	retried []bool
	next    int // sequential: index of the next task to start
	last    string
}

// startBlock executes a <spawn_agents> block found in the reply that just
// ended, if any. It reports false when there is none.
func (s *State) startBlock() ([]Action, bool) {
	if !s.lastIsReply() {
		return nil, false
	}
	b, ok := tagproto.ParseSpawn(s.lastText)
	if !ok {
		return nil, false
	}
	var acts []Action
	// The text before the block is the pre-spawn message shown to the
	// user. An agent that speaks through <say> blocks shows nothing else:
	// the <say> blocks of this reply, those before the block included, were
	// already shown.
	if b.Before != "" && !s.cfg.Say {
		acts = append(acts, Emit{Event: cadre.Say{Text: b.Before, PreSpawn: true}})
	}
	// The turn limit holds on the text protocol too (see blockReport): a
	// block in the final answer asked for is not run, as tool calls in it
	// are not; its text before the block is the answer, and without any
	// the agent fails as one that calls tools then does.
	if s.final {
		if b.Before == "" {
			return s.fail(fmt.Sprintf("the agent reached its turn limit (%d model calls) and, asked for its final answer, wrote a <spawn_agents> block "+
				"instead of answering; give it more turns (--max-turns) or a smaller task", s.cfg.maxTurns())), true
		}
		s.lastText = b.Before
		return nil, false
	}
	if s.cfg.Depth >= s.cfg.MaxDepth || !s.cfg.Delegate || !RunsTasks(s.cfg.Delegation) {
		if s.refused {
			return nil, false // asked once already: take the reply as it is
		}
		s.refused = true
		why := "you may not start sub-agents: your definition's tool list does not allow it"
		if len(s.cfg.Delegation) > 0 && !RunsTasks(s.cfg.Delegation) {
			why = "you may not start sub-agents: your definition's tool list grants no tool that runs a task (spawn_agent, start_background_agent, call_agent or agent_call)"
		}
		if s.cfg.Depth >= s.cfg.MaxDepth {
			why = fmt.Sprintf("the depth limit is reached (this agent is at depth %d of at most %d)", s.cfg.Depth, s.cfg.MaxDepth)
			acts = append(acts, Emit{Event: cadre.DepthLimit{AttemptedDepth: s.cfg.Depth + 1, MaxDepth: s.cfg.MaxDepth, Tasks: len(b.Tasks)}})
		}
		s.messages = append(s.messages, cadre.Message{Role: cadre.RoleUser, Content: "Your <spawn_agents> block was not run: " + why +
			". Do the work yourself and reply with the result, without a <spawn_agents> block."})
		return append(acts, s.modelCall()), true
	}
	if msg := s.blockInternal(b.Tasks); msg != "" {
		if s.refused {
			return nil, false
		}
		s.refused = true
		s.messages = append(s.messages, cadre.Message{Role: cadre.RoleUser, Content: "Your <spawn_agents> block was not run: " + msg +
			". Write the block again without it, or do the work yourself and reply with the result."})
		return append(acts, s.modelCall()), true
	}
	s.blk = &block{
		mode:    b.Mode,
		tasks:   b.Tasks,
		results: make([]prompt.Result, len(b.Tasks)),
		done:    make([]bool, len(b.Tasks)),
		retried: make([]bool, len(b.Tasks)),
	}
	for i, t := range b.Tasks {
		s.blk.results[i] = prompt.Result{Task: t.Task}
	}
	s.phase = phaseChildren
	var spawn Spawn
	if b.Mode == tagproto.Sequential {
		spawn.Children = append(spawn.Children, s.blockSpec(0, ""))
		s.blk.next = 1
	} else {
		for i := range b.Tasks {
			spawn.Children = append(spawn.Children, s.blockSpec(i, ""))
		}
		s.blk.next = len(b.Tasks)
	}
	return append(acts, spawn), true
}

// blockInternal says which task of a block names an internal agent, which
// no model may start (as checkDefinition refuses for the tools), or "".
func (s *State) blockInternal(tasks []tagproto.SpawnTask) string {
	for _, t := range tasks {
		e, ok := s.cfg.entry(t.Name)
		switch {
		case !ok || t.Name == "":
		case e.Internal:
			return fmt.Sprintf("%q is an internal agent and cannot be spawned by a model (available agents: %s)", t.Name, s.available())
		case e.OnboardingRequired:
			// As spawn_agent refuses it: a block waits for its agents as
			// spawn_agent does, and has no way to onboard them.
			return fmt.Sprintf("%q requires onboarding before it is given a task, which a <spawn_agents> block cannot do (agents a block can start: %s)",
				t.Name, nameList(s.cfg.spawnable(false)))
		}
	}
	return ""
}

// blockSpec creates the child for task i of the running block.
func (s *State) blockSpec(i int, previous string) ChildSpec {
	t := s.blk.tasks[i]
	spec := ChildSpec{
		Ref: fmt.Sprintf("spawn.%d", s.spawns+1), Definition: t.Name, Task: t.Task, Context: t.Context,
		Index: i + 1, Total: len(s.blk.tasks), Mode: string(s.blk.mode),
	}
	if previous != "" {
		spec.Messages = []cadre.Message{{Role: cadre.RoleUser, Content: prompt.PreviousResult(previous)}}
	}
	c := s.addChild(spec, "")
	c.blockTask = i
	return c.spec
}

// blockReport records a block child's outcome, starts the next sequential
// step (retrying a failed one once), and synthesizes when all are done.
func (s *State) blockReport(c *child, text string, status cadre.Status) []Action {
	b := s.blk
	i := c.blockTask
	if i < 0 || i >= len(b.tasks) || b.done[i] {
		return nil
	}
	if b.mode == tagproto.Sequential && status == cadre.StatusFailed && !b.retried[i] {
		b.retried[i] = true
		return []Action{Spawn{Children: []ChildSpec{s.blockSpec(i, b.last)}}}
	}
	b.done[i] = true
	b.results[i].Status = statusWord(status)
	b.results[i].Output = text
	if status == cadre.StatusDone {
		b.last = text
	}
	if b.mode == tagproto.Sequential && b.next < len(b.tasks) {
		n := b.next
		b.next++
		return []Action{Spawn{Children: []ChildSpec{s.blockSpec(n, b.last)}}}
	}
	for _, d := range b.done {
		if !d {
			return nil
		}
	}
	results := b.results
	s.blk = nil
	s.messages = append(s.messages, cadre.Message{Role: cadre.RoleUser, Content: prompt.Synthesis(s.task, results)})
	s.flushQueue()
	acts := []Action{Emit{Event: cadre.SynthesisStarted{Tasks: len(results)}}}
	// The turn limit holds on the text protocol as after tool calls: once
	// the agent has used its turns, the call after its block's results
	// asks for its final answer, in which a block is not run (a model
	// answering every turn with a block ran until the agent limit or the
	// budget stopped it).
	if s.turns-s.turnBase >= s.cfg.maxTurns() && !s.final {
		s.final = true
		s.messages = append(s.messages, cadre.Message{Role: cadre.RoleUser,
			Content: prompt.FinalAnswerRequest + " Write no <spawn_agents> block: it would not be run."})
		acts = append(acts, Emit{Event: cadre.TurnLimit{MaxTurns: s.cfg.maxTurns()}})
	}
	return append(acts, s.modelCall())
}

func statusWord(st cadre.Status) string {
	switch st {
	case cadre.StatusDone:
		return "completed"
	case cadre.StatusCancelled:
		return "cancelled"
	}
	return "failed"
}
