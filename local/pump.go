package local

import (
	"context"
	"log/slog"
	"sync"

	"github.com/cadre-ai/cadre"
)

// pump writes a run's events to the store, in order, from one goroutine,
// then hands them, numbered, to the run's feed. Publishing never waits for
// the store. Without a store there is no goroutine: events go to the feed
// at once.
type pump struct {
	store cadre.Store
	feed  *feed
	log   *slog.Logger

	kept  []cadre.Event // the store's share of a batch, reused
	spare []cadre.Event // the last batch's queue, reused for the next

	mu     sync.Mutex
	queue  []cadre.Event
	closed bool
	notify chan struct{}
	done   chan struct{}
}

func newPump(s cadre.Store, f *feed, log *slog.Logger) *pump {
	p := &pump{store: s, feed: f, log: log}
	if s != nil {
		p.notify, p.done = make(chan struct{}, 1), make(chan struct{})
		go p.run()
	}
	return p
}

func (p *pump) publish(ev cadre.Event) {
	if p.store == nil {
		p.feed.publish(ev)
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.queue = append(p.queue, ev)
	p.mu.Unlock()
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

func (p *pump) run() {
	defer close(p.done)
	for {
		<-p.notify
		p.mu.Lock()
		batch, closed := p.queue, p.closed
		p.queue, p.spare = p.spare, nil
		p.mu.Unlock()
		if len(batch) > 0 {
			// Streamed text is for watchers; the store keeps the whole
			// reply in model_response.
			kept := p.kept[:0]
			for _, ev := range batch {
				if ev.Type != cadre.EventModelDelta {
					kept = append(kept, ev)
				}
			}
			p.kept = kept
			if len(kept) > 0 {
				if err := p.store.AppendEvents(context.Background(), kept); err != nil {
					p.log.Warn("store events", "err", err)
				}
				// Watchers see the numbers the store gave.
				j := 0
				for i := range batch {
					if batch[i].Type != cadre.EventModelDelta {
						batch[i].Seq = kept[j].Seq
						j++
					}
				}
			}
			p.feed.publish(batch...) // the feed keeps copies
			clear(p.kept)
			clear(batch)
			p.spare = batch[:0]
		}
		if closed {
			return
		}
	}
}

// close delivers what is queued, stops the pump and closes the feed.
func (p *pump) close() {
	if p.store != nil {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		select {
		case p.notify <- struct{}{}:
		default:
		}
		<-p.done
	}
	p.feed.close()
}
