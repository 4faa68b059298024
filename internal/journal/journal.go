// Package journal reads a run's journal entries back into the inputs the
// loop steps: an entry may hold several inputs (loop.DecodeEntry), and a
// child's Start may take its configuration from a sibling's
// (loop.Start.ConfigFrom), which takes reading another agent's journal in
// the store, as the deterministic loop may not.
package journal

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
)

// A Reader reads the entries of a run's journal into inputs, giving each
// Start the configuration it takes from another agent's Start
// (loop.Start.ConfigFrom), whose journal it reads once (or once for each
// caller that asks for it at the same time, before it is kept). Safe for
// concurrent use.
type Reader struct {
	Store cadre.Store
	Run   string

	mu      sync.Mutex
	got     map[cadre.AgentID]loop.Config
	entries map[cadre.AgentID][]cadre.JournalEntry // the run's journals, once Load has read them
}

// A RunJournaler is a Store that reads the journals of all a run's agents
// in one read (the SQL stores do), each in Seq order as Journal gives it.
// A store that wraps another returns errors.ErrUnsupported when the one it
// wraps cannot.
type RunJournaler interface {
	RunJournals(ctx context.Context, run string) (map[cadre.AgentID][]cadre.JournalEntry, error)
}

// Load reads the journals of all the run's agents at once, when the store
// can, for Journal to give them without reading the store again: what a
// reader of every agent's journal (a resume, an export) does first. They
// are then all in memory at once, as the reader of all of them needs them.
// When the store cannot, Journal reads each from the store.
func (c *Reader) Load(ctx context.Context) error {
	rj, ok := c.Store.(RunJournaler)
	if !ok {
		return nil
	}
	all, err := rj.RunJournals(ctx, c.Run)
	if errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.entries = all
	c.mu.Unlock()
	return nil
}

// Journal returns the journal of agent id: as Load read it, or from the
// store.
func (c *Reader) Journal(ctx context.Context, id cadre.AgentID) ([]cadre.JournalEntry, error) {
	return c.journal(ctx, id, false)
}

// Take is Journal for a reader that reads each agent's journal once (a
// resume): the entries Load read are let go once the caller is done with
// them, but for the first, whose Start may hold the configuration another
// agent's names. Journal gives only that entry afterwards.
func (c *Reader) Take(ctx context.Context, id cadre.AgentID) ([]cadre.JournalEntry, error) {
	return c.journal(ctx, id, true)
}

func (c *Reader) journal(ctx context.Context, id cadre.AgentID, take bool) ([]cadre.JournalEntry, error) {
	c.mu.Lock()
	if c.entries != nil {
		entries := c.entries[id]
		if take && len(entries) > 1 {
			c.entries[id] = []cadre.JournalEntry{entries[0]} // not entries[:1], which would keep the others
		}
		c.mu.Unlock()
		return entries, nil
	}
	c.mu.Unlock()
	if c.Store == nil {
		return nil, fmt.Errorf("there is no store to read the journal of %s from", id)
	}
	return c.Store.Journal(ctx, c.Run, id)
}

// Inputs reads entry e back into its inputs, each Start with its whole
// configuration.
func (c *Reader) Inputs(ctx context.Context, e cadre.JournalEntry) ([]loop.Input, error) {
	ins, err := loop.DecodeEntry(e.Kind, e.Data)
	if err == nil {
		err = c.Resolve(ctx, ins)
	}
	return ins, err
}

// InputsOf reads entries, in order, back into their inputs (see Inputs):
// what replaying an agent's journal steps. It does not verify them.
func (c *Reader) InputsOf(ctx context.Context, entries []cadre.JournalEntry) ([]loop.Input, error) {
	ins := make([]loop.Input, 0, len(entries))
	for _, e := range entries {
		in, err := c.Inputs(ctx, e)
		if err != nil {
			return nil, fmt.Errorf("journal entry %d of %s: %w", e.Seq, e.Agent, err)
		}
		ins = append(ins, in...)
	}
	return ins, nil
}

// Resolve replaces each Start of ins that names another agent's
// configuration with the Start with that configuration (loop.Start.WithConfigOf).
func (c *Reader) Resolve(ctx context.Context, ins []loop.Input) error {
	for i, in := range ins {
		s, ok := in.(loop.Start)
		if !ok || s.ConfigFrom == "" {
			continue
		}
		cfg, err := c.config(ctx, s.ConfigFrom)
		if err != nil {
			return fmt.Errorf("the start of %s takes its configuration from that of %s, which cannot be read: %w", s.Config.ID, s.ConfigFrom, err)
		}
		ins[i] = s.WithConfigOf(cfg)
	}
	return nil
}

// config returns the configuration of the Start that begins the journal
// of agent id, which must hold it whole.
func (c *Reader) config(ctx context.Context, id cadre.AgentID) (loop.Config, error) {
	c.mu.Lock()
	cfg, ok := c.got[id]
	c.mu.Unlock()
	if ok {
		return cfg, nil
	}
	entries, err := c.Journal(ctx, id)
	if err != nil {
		return loop.Config{}, err
	}
	if len(entries) == 0 || entries[0].Kind != (loop.Start{}).Kind() {
		return loop.Config{}, fmt.Errorf("the journal of %s does not begin with a start (the store was changed outside cadre: restore it from a copy)", id)
	}
	if err := entries[0].Verify(); err != nil {
		return loop.Config{}, err
	}
	in, err := loop.Decode(entries[0].Kind, entries[0].Data)
	if err != nil {
		return loop.Config{}, err
	}
	s := in.(loop.Start)
	if s.ConfigFrom != "" {
		return loop.Config{}, fmt.Errorf("it takes its own from %s, which cadre never writes (the store was changed outside cadre: restore it from a copy)", s.ConfigFrom)
	}
	c.mu.Lock()
	if c.got == nil {
		c.got = map[cadre.AgentID]loop.Config{}
	}
	c.got[id] = s.Config
	c.mu.Unlock()
	return s.Config, nil
}
