package local

import (
	"context"
	"sync"

	"github.com/cadre-ai/cadre"
)

// journal group-commits journal entries: agents that append at the same
// time share one store transaction, and each waits until its entries are
// durable.
type journal struct {
	store cadre.Store

	mu      sync.Mutex
	pending []jreq
	notify  chan struct{}
	quit    chan struct{}
	done    chan struct{}
}

type jreq struct {
	entries []cadre.JournalEntry
	reply   chan error
}

func newJournal(s cadre.Store) *journal {
	if s == nil {
		return nil
	}
	j := &journal{store: s, notify: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go j.run()
	return j
}

func (j *journal) append(entries []cadre.JournalEntry) error {
	if j == nil {
		return nil
	}
	req := jreq{entries: entries, reply: make(chan error, 1)}
	j.mu.Lock()
	j.pending = append(j.pending, req)
	j.mu.Unlock()
	select {
	case j.notify <- struct{}{}:
	default:
	}
	return <-req.reply
}

func (j *journal) run() {
	defer close(j.done)
	for {
		select {
		case <-j.notify:
		case <-j.quit:
			j.flush()
			return
		}
		j.flush()
	}
}

func (j *journal) flush() {
	j.mu.Lock()
	reqs := j.pending
	j.pending = nil
	j.mu.Unlock()
	if len(reqs) == 0 {
		return
	}
	var all []cadre.JournalEntry
	for _, r := range reqs {
		all = append(all, r.entries...)
	}
	err := j.store.Append(context.Background(), all)
	for _, r := range reqs {
		r.reply <- err
	}
}

func (j *journal) close() {
	if j == nil {
		return
	}
	close(j.quit)
	<-j.done
}
