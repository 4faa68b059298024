package local

import (
	"sync"

	"github.com/cadre-ai/cadre/loop"
)

// mailbox is an unbounded FIFO of inputs for one reader, its agent's
// goroutine, and any number of writers; init readies it where it stays.
//
// The reader takes every queued input at once (take) and gives the slice
// back when it is done with it (giveBack); the mailbox then queues into it
// again, so an agent that takes a few inputs at a time allocates nothing
// for them.
type mailbox struct {
	mu     sync.Mutex
	cond   sync.Cond    // signalled when there is something to take or poked is set
	items  []loop.Input // queued
	poked  bool         // wake was called since the reader last waited
	asleep bool         // the reader waits on cond
	// spare is the slice take last returned, once given back: owned by
	// the reader.
	spare []loop.Input
	// inline holds the first input of each of the two slices the mailbox
	// alternates between, so that most agents' mailboxes need no storage
	// of their own.
	inline [2]loop.Input
}

// init readies a mailbox at its final address.
func (m *mailbox) init() {
	m.cond.L = &m.mu
	m.items, m.spare = m.inline[0:0:1], m.inline[1:1:2]
}

func (m *mailbox) put(in loop.Input) {
	m.mu.Lock()
	m.appendLocked(in)
	m.signalLocked()
	m.mu.Unlock()
}

// putAll queues ins in order, as one put after another would.
func (m *mailbox) putAll(ins []loop.Input) {
	if len(ins) == 0 {
		return
	}
	m.mu.Lock()
	m.appendLocked(ins...)
	m.signalLocked()
	m.mu.Unlock()
}

// appendLocked queues ins. When the queue moves to larger storage, the
// storage it leaves is cleared: it may be one of inline's slots, which
// would otherwise hold on to an input.
func (m *mailbox) appendLocked(ins ...loop.Input) {
	if len(m.items)+len(ins) <= cap(m.items) {
		m.items = append(m.items, ins...)
		return
	}
	old := m.items
	m.items = append(m.items, ins...)
	clear(old)
}

// wake wakes the reader, who will take what is queued, maybe nothing.
func (m *mailbox) wake() {
	m.mu.Lock()
	m.poked = true
	m.signalLocked()
	m.mu.Unlock()
}

func (m *mailbox) signalLocked() {
	if m.asleep {
		m.asleep = false
		m.cond.Signal()
	}
}

// wait blocks until something is queued or wake is called.
func (m *mailbox) wait() {
	m.mu.Lock()
	for len(m.items) == 0 && !m.poked {
		m.asleep = true
		m.cond.Wait()
	}
	m.poked = false
	m.mu.Unlock()
}

// take removes and returns every queued input. The reader gives the slice
// back with giveBack once it no longer reads it.
func (m *mailbox) take() []loop.Input {
	m.mu.Lock()
	items := m.items
	m.items, m.spare = m.spare, nil
	m.mu.Unlock()
	return items
}

// giveBack returns a slice take returned, for the mailbox to queue into
// again.
func (m *mailbox) giveBack(items []loop.Input) {
	clear(items) // what it held may go
	m.spare = items[:0]
}
