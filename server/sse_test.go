package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/cadre-ai/cadre"
)

func isEnd(e sseEvent) bool { return e.event == "end" }

// checkComplete checks that the stored events were each received once, in
// order, with the data of each matching its id and type.
func checkComplete(t *testing.T, who string, got []sseEvent, want []int64) {
	t.Helper()
	if ids := seqs(t, got); !slices.Equal(ids, want) {
		t.Errorf("%s received the events %v, want %v", who, ids, want)
	}
	for _, e := range got {
		if e.id == "" {
			continue
		}
		var ev cadre.Event
		if err := json.Unmarshal([]byte(e.data), &ev); err != nil {
			t.Fatalf("%s: event %s: %v", who, e.id, err)
		}
		if strconv.FormatInt(ev.Seq, 10) != e.id || string(ev.Type) != e.event {
			t.Errorf("%s: event id %s %s carries seq %d type %s", who, e.id, e.event, ev.Seq, ev.Type)
		}
	}
}

// TestEventsReconnect reads part of a run's stream, drops the connection,
// and reconnects with Last-Event-ID: every event arrives once.
func TestEventsReconnect(t *testing.T) {
	gate := make(chan struct{})
	f := newFixture(t, fixtureOptions{model: fanModel(6, gate)})
	defer f.open()
	id := f.start(RunRequest{Task: "Do six units."})

	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	c1, stop1 := context.WithCancel(ctx)
	res := f.stream(c1, id, "")
	started := 0
	first, err := readSSE(res.Body, func(e sseEvent) bool {
		if e.event == "agent_started" {
			started++
		}
		return started == 7 // the root and six workers
	})
	stop1()
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if first[0].event != "pending" {
		t.Errorf("the stream starts with %q, want the pending approvals", first[0].event)
	}
	ids := seqs(t, first)
	if len(ids) == 0 || ids[0] != 1 {
		t.Fatalf("the first connection received %v, want the events from seq 1", ids)
	}
	close(gate)
	res = f.stream(ctx, id, strconv.FormatInt(ids[len(ids)-1], 10))
	second, err := readSSE(res.Body, isEnd)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !isEnd(second[len(second)-1]) {
		t.Errorf("the stream ended without its end event")
	}
	checkComplete(t, "the client", append(first, second...), f.storedSeqs(id))

	// After the run: the whole stream from the store, and from an id on.
	res = f.stream(ctx, id, "")
	all, _ := readSSE(res.Body, isEnd)
	res.Body.Close()
	checkComplete(t, "a client of the ended run", all, f.storedSeqs(id))
	res = f.stream(ctx, id, "5")
	rest, _ := readSSE(res.Body, isEnd)
	res.Body.Close()
	checkComplete(t, "a client of the ended run after 5", rest, f.storedSeqs(id)[5:])
}

// TestEventsManyClients has 100 clients watch one run from its start;
// each receives every event.
func TestEventsManyClients(t *testing.T) {
	const clients = 100
	gate := make(chan struct{})
	f := newFixture(t, fixtureOptions{model: fanModel(20, gate)})
	defer f.open()
	id := f.start(RunRequest{Task: "Do twenty units."})
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()

	var (
		wg        sync.WaitGroup
		connected sync.WaitGroup
		mu        sync.Mutex
		got       = make([][]sseEvent, clients)
	)
	connected.Add(clients)
	for i := range clients {
		wg.Go(func() {
			res := f.stream(ctx, id, "")
			defer res.Body.Close()
			once := false
			evs, err := readSSE(res.Body, func(e sseEvent) bool {
				if !once {
					once = true
					connected.Done()
				}
				return isEnd(e)
			})
			if err != nil {
				t.Errorf("client %d: %v", i, err)
			}
			mu.Lock()
			got[i] = evs
			mu.Unlock()
		})
	}
	connected.Wait()
	close(gate)
	wg.Wait()
	want := f.storedSeqs(id)
	if len(want) < 60 {
		t.Fatalf("the run stored %d events; the test wants a busy run", len(want))
	}
	for i, evs := range got {
		checkComplete(t, fmt.Sprintf("client %d", i), evs, want)
	}
}

// TestEventsFromStore has a client join a run after the engine's buffer
// has dropped its first events: they are read from the store.
func TestEventsFromStore(t *testing.T) {
	gate := make(chan struct{})
	f := newFixture(t, fixtureOptions{model: fanModel(30, gate), eventBuffer: 8})
	defer f.open()
	id := f.start(RunRequest{Task: "Do thirty units."})
	// Wait until the store has far more events than the buffer holds.
	f.waitFor(id, "sixty stored events", func(*runView) bool { return len(f.storedSeqs(id)) > 60 })
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	res := f.stream(ctx, id, "")
	defer res.Body.Close()
	body := bufio.NewReader(res.Body)
	seen := 0
	var evs []sseEvent
	more, err := readSSE(body, func(e sseEvent) bool {
		if e.id != "" {
			seen++
		}
		return seen == 10
	})
	if err != nil {
		t.Fatal(err)
	}
	evs = append(evs, more...)
	close(gate)
	more, err = readSSE(body, isEnd)
	if err != nil {
		t.Fatal(err)
	}
	evs = append(evs, more...)
	checkComplete(t, "the late client", evs, f.storedSeqs(id))
	for _, e := range evs {
		if e.event == string(cadre.EventSkipped) {
			t.Errorf("the client was sent %s: %s; the missed events should have come from the store", e.event, e.data)
		}
	}
}

// TestEventsPending checks that approvals waiting are sent as pending
// events as they come and go.
func TestEventsPending(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	id := f.start(RunRequest{Task: "Write the report."})
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	res := f.stream(ctx, id, "")
	defer res.Body.Close()
	body := bufio.NewReader(res.Body)
	var pend []Pending
	_, err := readSSE(body, func(e sseEvent) bool {
		switch e.event {
		case "agent_question":
			var ev cadre.Event
			json.Unmarshal([]byte(e.data), &ev)
			if ev.Agent == cadre.RootID {
				f.do("POST", "/api/runs/"+id+"/answer", map[string]string{"agent": "root", "answer": "blue"}, nil)
			}
		case "pending":
			var p pendingEvent
			if err := json.Unmarshal([]byte(e.data), &p); err != nil {
				t.Fatal(err)
			}
			if len(p.Pending) == 1 {
				pend = p.Pending
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pend) != 1 || pend[0].Tool != "touch" || pend[0].Agent != cadre.RootID {
		t.Fatalf("pending %+v, want the root's touch", pend)
	}
	if st := f.do("POST", "/api/runs/"+id+"/answer", map[string]string{"id": pend[0].ID, "answer": "no"}, nil); st != 200 {
		t.Fatalf("deny %s: %d", pend[0].ID, st)
	}
	_, err = readSSE(body, func(e sseEvent) bool {
		var p pendingEvent
		return e.event == "pending" && json.Unmarshal([]byte(e.data), &p) == nil && len(p.Pending) == 0
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := f.touch.count(); n != 0 {
		t.Errorf("touch ran %d times after it was denied", n)
	}
}

// TestRedact checks that the texts the server sends pass through its
// redaction: events and the engine's tree.
func TestRedact(t *testing.T) {
	hide := func(s string) string { return strings.ReplaceAll(s, "hunter2", "[REDACTED]") }
	f := newFixture(t, fixtureOptions{
		redactText: hide,
		redact: func(ev cadre.Event) cadre.Event {
			if d, ok := ev.Data.(cadre.RunStarted); ok {
				d.Task = hide(d.Task)
				ev.Data = d
			}
			return ev
		},
	})
	id := f.start(RunRequest{Task: "Log in with hunter2."})
	v := f.waitFor(id, "the root", func(v *runView) bool { return len(v.Tree.Agents) > 0 })
	if task := v.Tree.Agents[0].Task; task != "Log in with [REDACTED]." {
		t.Errorf("the root's task is shown as %q", task)
	}
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	res := f.stream(ctx, id, "")
	defer res.Body.Close()
	evs, err := readSSE(res.Body, func(e sseEvent) bool { return e.event == "run_started" })
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; strings.Contains(last.data, "hunter2") || !strings.Contains(last.data, "[REDACTED]") {
		t.Errorf("run_started is sent as %s", last.data)
	}
}
