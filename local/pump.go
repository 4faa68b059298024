package local

import (
	"context"
	"log/slog"
	"sync"

	"github.com/cadre-ai/cadre"
)

// pump delivers events in order to the store and the handlers from one
// goroutine. Publishing never blocks on a slow handler.
type pump struct {
	store    cadre.Store
	handlers []func(cadre.Event)
	log      *slog.Logger

	kept []cadre.Event // the store's share of a batch, reused

	mu     sync.Mutex
	queue  []cadre.Event
	closed bool
	notify chan struct{}
	done   chan struct{}
}

func newPump(s cadre.Store, handlers []func(cadre.Event), log *slog.Logger) *pump {
	p := &pump{store: s, handlers: handlers, log: log, notify: make(chan struct{}, 1), done: make(chan struct{})}
	go p.run()
	return p
}

func (p *pump) publish(ev cadre.Event) {
	if p.store == nil && len(p.handlers) == 0 {
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
		p.queue = nil
		p.mu.Unlock()
		if len(batch) > 0 {
			if p.store != nil {
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
					// Handlers see the numbers the store gave.
					j := 0
					for i := range batch {
						if batch[i].Type != cadre.EventModelDelta {
							batch[i].Seq = kept[j].Seq
							j++
						}
					}
				}
			}
			for _, ev := range batch {
				for _, h := range p.handlers {
					h(ev)
				}
			}
		}
		if closed {
			return
		}
	}
}

// close delivers what is queued and stops the pump.
func (p *pump) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	select {
	case p.notify <- struct{}{}:
	default:
	}
	<-p.done
}
