package cli

import (
	"context"

	"github.com/cadre-ai/cadre"
)

// showEvents hands every event of the run to each of show, in order, from
// a goroutine of its own, until the run's last event. It returns a channel
// closed once that event has been shown.
//
// When the display falls behind the run and the engine skips events, the
// ones the store kept are read from it and shown in their place, so that
// --json and the progress lines miss nothing; only when the store cannot
// give them (there is none, or it failed) is the events_skipped event
// itself shown.
func showEvents(eng cadre.Engine, store cadre.Store, id string, show ...func(cadre.Event)) <-chan struct{} {
	done := make(chan struct{})
	each := func(ev cadre.Event) {
		for _, f := range show {
			f(ev)
		}
	}
	go func() {
		defer close(done)
		ctx := context.Background()
		for ev, err := range eng.Events(ctx, id) {
			if err != nil {
				return
			}
			if sk, ok := ev.Data.(cadre.Skipped); ok {
				if missed, ok := storedMissed(ctx, store, id, sk); ok {
					for _, m := range missed {
						each(m)
					}
					continue
				}
			}
			each(ev)
		}
	}()
	return done
}

// abortWhenDone ties the run to ctx, which the command that started it
// runs under: when ctx ends, the run is aborted. It returns a function
// that stops watching ctx.
func abortWhenDone(ctx context.Context, eng cadre.Engine, id string) func() {
	stop := context.AfterFunc(ctx, func() {
		_ = eng.Cancel(context.Background(), id, cadre.CancelOptions{Reason: "interrupted", Abort: true})
	})
	return func() { stop() }
}

// storedMissed reads from the store the stored events a watcher skipped.
// ok is false when the store cannot give them.
func storedMissed(ctx context.Context, store cadre.Store, id string, sk cadre.Skipped) (evs []cadre.Event, ok bool) {
	if sk.ToSeq == 0 {
		return nil, true // only streamed text was skipped
	}
	if store == nil {
		return nil, false
	}
	all, err := store.Events(ctx, id, sk.AfterSeq)
	if err != nil {
		return nil, false
	}
	for _, ev := range all {
		if ev.Seq > sk.ToSeq {
			break
		}
		evs = append(evs, ev)
	}
	return evs, true
}
