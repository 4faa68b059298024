package local

import (
	"context"
	"iter"
	"sync"
	"time"

	"github.com/cadre-ai/cadre"
)

// feed is a run's events for its watchers: the latest of them in a ring,
// each numbered by its position in the run's stream. Publishing appends to
// the ring, overwriting the oldest event when it is full, and never waits
// for a watcher. A watcher reads the ring at its own pace from a position
// of its own; when the events it would read next have been overwritten, it
// is sent an EventSkipped saying how many it missed and which stored ones
// they were, and carries on from the oldest event still kept.
type feed struct {
	run  string
	size int // the most events kept

	mu      sync.Mutex
	ring    []cadre.Event // grows to size, then wraps
	start   int64         // position of the oldest event kept
	end     int64         // position after the newest
	lost    int64         // the highest Seq among the events overwritten
	first   int64         // the Seq of the first stored event published, 0 until there is one
	closed  bool          // the run's last event is published
	waiters chan struct{} // closed at the next publish; nil when no one waits
}

func newFeed(run string, size int) *feed {
	return &feed{run: run, size: size}
}

// publish appends events in order and wakes the watchers.
func (f *feed) publish(evs ...cadre.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	for _, ev := range evs {
		if ev.Seq != 0 && f.first == 0 {
			f.first = ev.Seq
		}
		if len(f.ring) < f.size {
			f.ring = append(f.ring, ev)
		} else {
			i := f.end % int64(f.size)
			if old := f.ring[i].Seq; old != 0 {
				f.lost = old
			}
			f.ring[i] = ev
			f.start++
		}
		f.end++
	}
	f.wakeLocked()
}

// close marks the end of the run's events: watchers read what is left and
// stop.
func (f *feed) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	f.wakeLocked()
}

func (f *feed) wakeLocked() {
	if f.waiters != nil {
		close(f.waiters)
		f.waiters = nil
	}
}

// feedBatch is the most events a watcher copies out of the ring at once.
const feedBatch = 256

// watch yields the run's events from the first one, then live ones, until
// the feed is closed and read to its end, or ctx ends.
func (f *feed) watch(ctx context.Context) iter.Seq2[cadre.Event, error] {
	return func(yield func(cadre.Event, error) bool) {
		var (
			pos     int64 // the position of the next event to yield
			lastSeq int64 // the Seq of the last stored event yielded
			batch   []cadre.Event
		)
		for {
			f.mu.Lock()
			var skipped *cadre.Skipped
			if pos < f.start {
				after := lastSeq
				if after == 0 && f.first > 0 {
					after = f.first - 1
				}
				s := cadre.Skipped{Count: int(f.start - pos), AfterSeq: after}
				if f.lost > after {
					s.ToSeq = f.lost
					lastSeq = f.lost
				}
				skipped, pos = &s, f.start
			}
			batch = batch[:0]
			for ; pos < f.end && len(batch) < feedBatch; pos++ {
				batch = append(batch, f.ring[pos%int64(f.size)])
			}
			var wake chan struct{}
			done := f.closed && pos == f.end
			if len(batch) == 0 && skipped == nil && !done {
				if f.waiters == nil {
					f.waiters = make(chan struct{})
				}
				wake = f.waiters
			}
			f.mu.Unlock()

			if skipped != nil {
				ev := cadre.NewEvent(*skipped)
				ev.Run, ev.Time = f.run, time.Now()
				if !yield(ev, nil) {
					return
				}
			}
			for _, ev := range batch {
				if ev.Seq != 0 {
					lastSeq = ev.Seq
				}
				if !yield(ev, nil) {
					return
				}
			}
			if done {
				return
			}
			if wake != nil {
				select {
				case <-wake:
				case <-ctx.Done():
					yield(cadre.Event{}, context.Cause(ctx))
					return
				}
			} else if err := ctx.Err(); err != nil {
				yield(cadre.Event{}, context.Cause(ctx))
				return
			}
		}
	}
}
