package local

import (
	"sync"

	"github.com/cadre-ai/cadre/loop"
)

// mailbox is an unbounded FIFO of inputs with a wake-up channel, made
// with notify of capacity 1.
type mailbox struct {
	mu     sync.Mutex
	items  []loop.Input
	notify chan struct{}
}

func (m *mailbox) put(in loop.Input) {
	m.mu.Lock()
	m.items = append(m.items, in)
	m.mu.Unlock()
	m.wake()
}

// putAll queues ins in order, as one put after another would.
func (m *mailbox) putAll(ins []loop.Input) {
	if len(ins) == 0 {
		return
	}
	m.mu.Lock()
	m.items = append(m.items, ins...)
	m.mu.Unlock()
	m.wake()
}

// wake wakes the mailbox's reader, who will find what is queued.
func (m *mailbox) wake() {
	select {
	case m.notify <- struct{}{}:
	default:
	}
}

// take removes and returns every queued input.
func (m *mailbox) take() []loop.Input {
	m.mu.Lock()
	defer m.mu.Unlock()
	items := m.items
	m.items = nil
	return items
}
