package groupcommit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

type write struct {
	n    int
	done chan error
}

func newWrite(n int) *write { return &write{n: n, done: make(chan error, 1)} }

// Writes are committed in the order they were queued, in groups of what
// was queued while the committer was busy; Close commits what is queued
// and then takes no more.
func TestQueue(t *testing.T) {
	q := New[write]()
	var (
		mu        sync.Mutex
		committed []int
		groups    int
	)
	hold := make(chan struct{})
	go q.Run(func() {
		for {
			group := q.Take(3)
			if len(group) == 0 {
				return
			}
			<-hold
			mu.Lock()
			groups++
			for _, w := range group {
				committed = append(committed, w.n)
			}
			mu.Unlock()
			for _, w := range group {
				w.done <- nil
			}
		}
	})
	ws := make([]*write, 7)
	for i := range ws {
		ws[i] = newWrite(i)
		if !q.Add(ws[i]) {
			t.Fatalf("write %d refused by an open queue", i)
		}
	}
	close(hold)
	for i, w := range ws {
		if withdrawn, err := q.Wait(context.Background(), w, w.done); withdrawn || err != nil {
			t.Fatalf("write %d: withdrawn %t, %v", i, withdrawn, err)
		}
	}
	q.Close()
	mu.Lock()
	defer mu.Unlock()
	for i, n := range committed {
		if n != i {
			t.Fatalf("committed in the order %v, want the order queued", committed)
		}
	}
	if len(committed) != 7 || groups < 3 {
		t.Errorf("%d writes in %d groups, want 7 in 3 or more (at most 3 a group)", len(committed), groups)
	}
	if q.Add(newWrite(9)) {
		t.Error("a closed queue took a write")
	}
	if !q.Closed() {
		t.Error("Closed is false after Close")
	}
}

// A write whose context ends while it is queued is withdrawn; one already
// taken by the committer is waited for.
func TestWaitWithdraws(t *testing.T) {
	q := New[write]()
	taken := make(chan *write)
	release := make(chan struct{})
	go q.Run(func() {
		for {
			group := q.Take(1)
			if len(group) == 0 {
				return
			}
			taken <- group[0]
			<-release
			group[0].done <- errors.New("committed with an error")
		}
	})
	first, second := newWrite(1), newWrite(2)
	q.Add(first)
	<-taken
	q.Add(second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if withdrawn, err := q.Wait(ctx, second, second.done); !withdrawn || !errors.Is(err, context.Canceled) {
		t.Errorf("a queued write whose context ended: withdrawn %t, %v; want withdrawn, context.Canceled", withdrawn, err)
	}
	if n := q.Len(); n != 0 {
		t.Errorf("%d writes queued after the withdrawal, want 0", n)
	}
	go func() { time.Sleep(10 * time.Millisecond); close(release) }()
	if withdrawn, err := q.Wait(ctx, first, first.done); withdrawn || err == nil || err.Error() != "committed with an error" {
		t.Errorf("a write taken by the committer: withdrawn %t, %v; want its outcome", withdrawn, err)
	}
	q.Close()
}
