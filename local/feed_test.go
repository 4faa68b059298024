package local

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/model/scripted"
)

// stored and delta make the events of the feed tests: a stored event has
// its Seq, streamed text none.
func stored(seq int64) cadre.Event {
	return cadre.Event{Seq: seq, Type: cadre.EventSay, Run: "r", Data: cadre.Say{Text: "event"}}
}

func delta() cadre.Event {
	return cadre.Event{Type: cadre.EventModelDelta, Run: "r", Data: cadre.ModelDelta{Text: "…"}}
}

// describe shortens an event for comparing sequences: s3 for the stored
// event 3, d for a delta, skip(count after to) for a skipped marker.
func describe(ev cadre.Event) string {
	switch d := ev.Data.(type) {
	case cadre.Skipped:
		return "skip(" + itoa(int64(d.Count)) + " " + itoa(d.AfterSeq) + " " + itoa(d.ToSeq) + ")"
	case cadre.ModelDelta:
		return "d"
	}
	return "s" + itoa(ev.Seq)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// pull reads the next n events of a watcher.
func pull(t *testing.T, next func() (cadre.Event, error, bool), n int) []string {
	t.Helper()
	var out []string
	for range n {
		ev, err, ok := next()
		if err != nil || !ok {
			t.Fatalf("the watcher stopped after %v: err %v, ok %v", out, err, ok)
		}
		out = append(out, describe(ev))
	}
	return out
}

func TestFeedWatchers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		size  int
		steps []func(f *feed, next func() (cadre.Event, error, bool)) []string
		want  []string
	}{
		{
			name: "keeps up",
			size: 4,
			steps: []func(*feed, func() (cadre.Event, error, bool)) []string{
				func(f *feed, next func() (cadre.Event, error, bool)) []string {
					f.publish(stored(1), delta(), stored(2))
					return pull(t, next, 3)
				},
				func(f *feed, next func() (cadre.Event, error, bool)) []string {
					f.publish(stored(3), stored(4), delta(), stored(5))
					return pull(t, next, 4)
				},
			},
			want: []string{"s1", "d", "s2", "s3", "s4", "d", "s5"},
		},
		{
			// The watcher read s1; then eight more events came into a ring
			// of four: it missed d, s2, s3 and s4, and the store has s2 to
			// s4.
			name: "falls behind",
			size: 4,
			steps: []func(*feed, func() (cadre.Event, error, bool)) []string{
				func(f *feed, next func() (cadre.Event, error, bool)) []string {
					f.publish(stored(1))
					return pull(t, next, 1)
				},
				func(f *feed, next func() (cadre.Event, error, bool)) []string {
					f.publish(delta(), stored(2), stored(3), stored(4), delta(), stored(5), stored(6), stored(7))
					return pull(t, next, 5)
				},
			},
			want: []string{"s1", "skip(4 1 4)", "d", "s5", "s6", "s7"},
		},
		{
			// Only streamed text was lost: nothing to read from the store.
			name: "misses only deltas",
			size: 2,
			steps: []func(*feed, func() (cadre.Event, error, bool)) []string{
				func(f *feed, next func() (cadre.Event, error, bool)) []string {
					f.publish(stored(1))
					return pull(t, next, 1)
				},
				func(f *feed, next func() (cadre.Event, error, bool)) []string {
					f.publish(delta(), delta(), delta())
					return pull(t, next, 3)
				},
			},
			want: []string{"s1", "skip(1 1 0)", "d", "d"},
		},
		{
			// A watcher that starts after the ring wrapped is told about
			// the run's first events; a resumed run's first Seq is not 1.
			name: "starts late",
			size: 3,
			steps: []func(*feed, func() (cadre.Event, error, bool)) []string{
				func(f *feed, next func() (cadre.Event, error, bool)) []string {
					f.publish(stored(41), stored(42), delta(), stored(43), stored(44))
					return nil
				},
				func(f *feed, next func() (cadre.Event, error, bool)) []string {
					return pull(t, next, 4)
				},
			},
			want: []string{"skip(2 40 42)", "d", "s43", "s44"},
		},
		{
			// Behind twice. What a watcher has taken from the ring is its
			// own (s4 here, taken with s3), so it misses only s5.
			name: "falls behind twice",
			size: 2,
			steps: []func(*feed, func() (cadre.Event, error, bool)) []string{
				func(f *feed, next func() (cadre.Event, error, bool)) []string {
					f.publish(stored(1), stored(2), stored(3), stored(4))
					return pull(t, next, 2)
				},
				func(f *feed, next func() (cadre.Event, error, bool)) []string {
					f.publish(stored(5), stored(6), stored(7))
					return pull(t, next, 4)
				},
			},
			want: []string{"skip(2 0 2)", "s3", "s4", "skip(1 4 5)", "s6", "s7"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFeed("r", tc.size)
			next, stop := iter.Pull2(f.watch(context.Background()))
			defer stop()
			var got []string
			for _, step := range tc.steps {
				got = append(got, step(f, next)...)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("what the watcher read (-want +got):\n%s", d)
			}
		})
	}
}

// A closed feed is read to its end, by watchers already there and by new
// ones, and then the sequence ends.
func TestFeedClose(t *testing.T) {
	f := newFeed("r", 8)
	next, stop := iter.Pull2(f.watch(context.Background()))
	defer stop()
	f.publish(stored(1), stored(2))
	f.close()
	f.publish(stored(3)) // after the end: dropped
	if got := pull(t, next, 2); !slices.Equal(got, []string{"s1", "s2"}) {
		t.Errorf("read %v, want s1 s2", got)
	}
	if ev, err, ok := next(); ok {
		t.Errorf("the sequence went on after the feed closed: %v %v", describe(ev), err)
	}
	var late []string
	for ev, err := range f.watch(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		late = append(late, describe(ev))
	}
	if !slices.Equal(late, []string{"s1", "s2"}) {
		t.Errorf("a watcher after the end read %v, want s1 s2", late)
	}
}

// A watcher waiting for events stops with its context's cause.
func TestFeedWatcherContext(t *testing.T) {
	f := newFeed("r", 8)
	f.publish(stored(1))
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	cause := errors.New("the client went away")
	var got []string
	var err error
	for ev, e := range f.watch(ctx) {
		if e != nil {
			err = e
			break
		}
		got = append(got, describe(ev))
		cancel(cause) // the next read waits, and sees the cancellation
	}
	if !slices.Equal(got, []string{"s1"}) || !errors.Is(err, cause) {
		t.Errorf("read %v then %v, want s1 then %v", got, err, cause)
	}
}

// A watcher that stops reading does not hold up the run: with a ring of
// eight events and a watcher stuck on the first, the run completes. Once
// let go, the watcher is told what it missed, and what it read plus the
// stored events the markers point to are every stored event, once.
func TestSlowWatcherDoesNotBlockTheRun(t *testing.T) {
	checkNoLeaks(t)
	took, release := make(chan struct{}), make(chan struct{})
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Agent == cadre.RootID {
			if req.Turn == 1 {
				// The watcher is there before the run makes more events
				// than the buffer holds, so its first is run_started.
				<-took
				var cs []cadre.ToolCall
				for _, id := range []string{"a", "b", "c", "d", "e"} {
					cs = append(cs, tc(id, loop.ToolSpawnAgent, map[string]string{"agent": "worker", "task": "part " + id}))
				}
				return calls(cs...), nil
			}
			return text("all parts done"), nil
		}
		if req.Turn == 1 {
			return calls(tc("s", loop.ToolSendAgentMessage, map[string]string{"text": "done with " + string(req.Agent)})), nil
		}
		return text("reported"), nil
	})
	mem := memstore.New()
	e := New(Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: defs("worker"), Store: mem, EventBuffer: 8})
	ctx := context.Background()
	id, err := e.Start(ctx, "do five parts", cadre.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []cadre.Event
	watched := make(chan error, 1)
	go func() {
		for ev, err := range e.Events(ctx, id) {
			if err != nil {
				watched <- err
				return
			}
			got = append(got, ev)
			if len(got) == 1 {
				close(took)
				<-release // stuck until the run is over
			}
		}
		watched <- nil
	}()
	<-took
	res, err := e.Wait(ctx, id)
	if err != nil || res.Answer != "all parts done" {
		t.Fatalf("the run with a stuck watcher: %v, %+v", err, res)
	}
	close(release)
	if err := <-watched; err != nil {
		t.Fatalf("the watcher's stream ended with %v", err)
	}

	all, err := mem.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if first, last := got[0], got[len(got)-1]; first.Type != cadre.EventRunStarted || last.Type != cadre.EventRunCompleted {
		t.Errorf("the watcher read %s first and %s last, want run_started and run_completed", first.Type, last.Type)
	}
	seen := map[int64]int{}
	skipped := 0
	for _, ev := range got {
		if s, ok := ev.Data.(cadre.Skipped); ok {
			skipped++
			if s.Count <= 0 || s.ToSeq < s.AfterSeq {
				t.Errorf("a marker that says nothing: %+v", s)
			}
			missed, err := mem.Events(ctx, id, s.AfterSeq)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range missed {
				if m.Seq <= s.ToSeq {
					seen[m.Seq]++
				}
			}
			continue
		}
		if ev.Seq != 0 {
			seen[ev.Seq]++
		}
	}
	if skipped == 0 {
		t.Fatalf("the stuck watcher was never told it missed events (it read %d of %d stored events)", len(got), len(all))
	}
	for _, ev := range all {
		if n := seen[ev.Seq]; n != 1 {
			t.Errorf("stored event %d (%s) reached the watcher %d times, read or pointed to", ev.Seq, ev.Type, n)
		}
	}
	if len(seen) != len(all) {
		t.Errorf("the watcher saw %d stored events, the store has %d", len(seen), len(all))
	}
}
