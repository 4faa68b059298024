package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/cputime"
	"github.com/cadre-ai/cadre/sqlite"
	"github.com/cadre-ai/cadre/storetest"
)

// BenchmarkStore is the journal benchmark every store runs (see
// storetest.Bench), with the settings Open uses.
func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) cadre.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "cadre.db"))
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}

// BenchmarkGroupCommit has 8 goroutines append one entry per call at once,
// each for its own agent, with group commit (what Open does) and with a
// transaction per call.
func BenchmarkGroupCommit(b *testing.B) {
	for _, grouped := range []bool{true, false} {
		b.Run(fmt.Sprintf("grouped=%t", grouped), func(b *testing.B) {
			s, err := sqlite.OpenWith(context.Background(), filepath.Join(b.TempDir(), "cadre.db"), grouped, "FULL")
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			storetest.BenchAppend(b, s, 8, 1)
			b.ReportMetric(float64(s.Groups())/float64(b.N), "commits/op")
		})
	}
}

// BenchmarkSynchronous compares synchronous=FULL, which Open uses, with
// NORMAL, which may lose the last transactions when the machine (not the
// process) crashes, for single entries and batches of 16.
func BenchmarkSynchronous(b *testing.B) {
	for _, mode := range []string{"FULL", "NORMAL"} {
		for _, n := range []int{1, 16} {
			b.Run(fmt.Sprintf("sync=%s/batch=%d", mode, n), func(b *testing.B) {
				s, err := sqlite.OpenWith(context.Background(), filepath.Join(b.TempDir(), "cadre.db"), true, mode)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				storetest.BenchAppend(b, s, 1, n)
			})
		}
	}
}

// BenchmarkChildren isolates what the SQLite store costs the engine per
// delegated child: it writes the rows the engine writes for a root that
// fans out to N workers which each answer once (see
// local.BenchmarkDelegation), with the engine's concurrency, and nothing
// else. Per child that is the child's record twice (started, then done),
// its start entry (about 2.5 KiB: its configuration with the system
// prompt) and its model's reply, the root's spawned, child_report and
// child_ended entries, and six events, handed over in batches as the
// engine's event pump does. Every child is its own goroutine and every
// write waits until it is durable, so writes are group-committed as in a
// run. It prints
//
//	cpu-µs/child   CPU of the whole process (user + system) / N
//	ms/run         wall time of one run of N children
//	commits/child  transactions committed / N
func BenchmarkChildren(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("children=%d", n), func(b *testing.B) {
			benchChildren(b, n)
		})
	}
}

func benchChildren(b *testing.B, n int) {
	ctx := context.Background()
	b.ReportAllocs()
	var cpu, wall time.Duration
	var commits int64
	for b.Loop() {
		b.StopTimer()
		s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "cadre.db"))
		if err != nil {
			b.Fatal(err)
		}
		w := newChildrenWork(n)
		cpu0, t0 := cputime.Process(), time.Now()
		b.StartTimer()
		if err := w.run(ctx, s); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += cputime.Process() - cpu0
		wall += time.Since(t0)
		commits += s.Groups()
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	runs := float64(b.N)
	if cputime.Process() >= 0 {
		b.ReportMetric(float64(cpu.Microseconds())/runs/float64(n), "cpu-µs/child")
	}
	b.ReportMetric(float64(wall.Microseconds())/1000/runs, "ms/run")
	b.ReportMetric(float64(commits)/runs/float64(n), "commits/child")
}

// childrenWork is one run of BenchmarkChildren, its rows made beforehand.
type childrenWork struct {
	id      string // the run's
	owner   cadre.LeaseOwner
	root    *cadre.AgentRecord
	started []*cadre.AgentRecord // each child's record as it starts
	done    []*cadre.AgentRecord // and as it ends
	start   []cadre.JournalEntry // each child's start entry
	reply   []cadre.JournalEntry // and its model's reply
	spawned []cadre.JournalEntry // the root's entries, one per child
	reports [][2]cadre.JournalEntry
	events  [][6]cadre.Event // per child: spawned, started, model, message, completed, reported
}

func newChildrenWork(n int) *childrenWork {
	const run = "20260101-000000-bench0"
	now := time.Now().UTC()
	w := &childrenWork{id: run, owner: cadre.LeaseOwner{Host: "bench", PID: 1, Token: "token-of-the-bench"}}
	w.root = &cadre.AgentRecord{Run: run, ID: cadre.RootID, Definition: "root", Model: "scripted", Task: "Do the benchmark's work.", Status: cadre.StatusRunning, Started: now}
	system := strings.Repeat("You do one unit of work and report it, in the workspace, with the tools you are given. ", 26)
	entry := func(agent cadre.AgentID, seq int64, kind, data string) cadre.JournalEntry {
		return cadre.JournalEntry{Run: run, Agent: agent, Seq: seq, Kind: kind, Data: json.RawMessage(data), Time: now, Lease: w.owner.Token}
	}
	for i := range n {
		id := cadre.RootID.Child("worker", i+1)
		task := fmt.Sprintf("unit %d", i+1)
		rec := cadre.AgentRecord{Run: run, ID: id, Parent: cadre.RootID, Depth: 1, Definition: "worker", Model: "scripted", Task: task, Status: cadre.StatusRunning, Started: now}
		w.started = append(w.started, &rec)
		done := rec
		done.Status, done.Turns, done.Usage, done.Ended, done.Result = cadre.StatusDone, 1, cadre.Usage{InputTokens: 10, OutputTokens: 10}, now, "Unit done: nothing to add."
		w.done = append(w.done, &done)
		w.start = append(w.start, entry(id, 1, "start", fmt.Sprintf(`{"config":{"id":%q,"parent":"root","depth":1,"max_depth":3,"definition":"worker","model":"scripted","system":%q},"task":%q,"messages":[{"role":"user","content":%q}]}`, id, system, task, task)))
		w.reply = append(w.reply, entry(id, 2, "model_result", `{"response":{"message":{"role":"assistant","tool_calls":[{"id":"r1","name":"send_agent_message","arguments":"{\"text\":\"Unit done: nothing to add.\"}"}]},"usage":{"input_tokens":10,"output_tokens":10}}}`))
		w.spawned = append(w.spawned, entry(cadre.RootID, int64(3+i), "spawned", fmt.Sprintf(`{"ref":"c%d","child":%q}`, i+1, id)))
		w.reports = append(w.reports, [2]cadre.JournalEntry{
			entry(cadre.RootID, 0, "child_report", fmt.Sprintf(`{"child":%q,"text":"Unit done: nothing to add."}`, id)),
			entry(cadre.RootID, 0, "child_ended", fmt.Sprintf(`{"child":%q,"status":"done"}`, id)),
		})
		ev := func(t cadre.EventType, data cadre.Payload) cadre.Event {
			return cadre.Event{Type: t, Time: now, Run: run, Agent: id, Parent: cadre.RootID, Depth: 1, Data: data}
		}
		w.events = append(w.events, [6]cadre.Event{
			ev(cadre.EventAgentSpawned, cadre.AgentSpawned{Child: id, Definition: "worker", Mode: "sync", Task: task, Model: "scripted", Index: i + 1, Total: n, CallID: fmt.Sprintf("c%d", i+1)}),
			ev(cadre.EventAgentStarted, cadre.AgentStarted{Definition: "worker", Model: "scripted"}),
			ev(cadre.EventModelResponse, cadre.ModelResponse{Turn: 1, Usage: cadre.Usage{InputTokens: 10, OutputTokens: 10}, ToolCalls: 1}),
			ev(cadre.EventMessageSent, cadre.MessageSent{To: cadre.RootID, Text: "Unit done: nothing to add."}),
			ev(cadre.EventAgentCompleted, cadre.AgentCompleted{Result: "Unit done: nothing to add."}),
			{Type: cadre.EventAgentReported, Time: now, Run: run, Agent: cadre.RootID, Data: cadre.AgentReported{Child: id, Text: "Unit done: nothing to add."}},
		})
	}
	return w
}

// run writes the rows: the root spawns every child in one entry batch,
// each child writes its record and entries from its own goroutine, the
// root journals the reports as they come, and one pump appends the events
// queued while it was writing the last batch.
func (w *childrenWork) run(ctx context.Context, s *sqlite.Store) error {
	n := len(w.started)
	if err := s.CreateRun(ctx, &cadre.RunRecord{ID: w.id, Task: w.root.Task, Status: cadre.StatusRunning, Model: "scripted", Started: w.root.Started}); err != nil {
		return err
	}
	if _, err := s.AcquireLease(ctx, cadre.LeaseRequest{Run: w.id, Owner: w.owner, TTL: time.Minute}); err != nil {
		return err
	}
	if err := s.PutAgent(ctx, w.root); err != nil {
		return err
	}
	p := newEventPump(s)
	if err := s.Append(ctx, w.spawned); err != nil {
		return err
	}
	reports := make(chan int, n)
	errc := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			err := s.AppendAgent(ctx, w.started[i], w.start[i:i+1])
			if err == nil {
				p.queue(w.events[i][0], w.events[i][1])
				err = s.Append(ctx, w.reply[i:i+1])
			}
			if err == nil {
				p.queue(w.events[i][2], w.events[i][3], w.events[i][4])
				err = s.PutAgent(ctx, w.done[i])
			}
			if err != nil {
				errc <- err
				return
			}
			reports <- i
		})
	}
	seq := int64(3 + n)
	var batch []cadre.JournalEntry
	for got := 0; got < n; {
		select {
		case err := <-errc:
			return err
		case i := <-reports:
			batch = batch[:0]
			for more := true; more; {
				r := w.reports[i]
				r[0].Seq, r[1].Seq = seq, seq+1
				seq += 2
				batch = append(batch, r[0], r[1])
				p.queue(w.events[i][5])
				got++
				select {
				case i = <-reports:
				default:
					more = false
				}
			}
			if err := s.Append(ctx, batch); err != nil {
				return err
			}
		}
	}
	wg.Wait()
	if err := p.close(); err != nil {
		return err
	}
	return s.ReleaseLease(ctx, w.id, w.owner.Token)
}

// eventPump appends queued events in batches from one goroutine.
type eventPump struct {
	s      *sqlite.Store
	mu     sync.Mutex
	queued []cadre.Event
	closed bool
	wake   chan struct{}
	done   chan error
}

func newEventPump(s *sqlite.Store) *eventPump {
	p := &eventPump{s: s, wake: make(chan struct{}, 1), done: make(chan error, 1)}
	go p.loop()
	return p
}

func (p *eventPump) queue(evs ...cadre.Event) {
	p.mu.Lock()
	p.queued = append(p.queued, evs...)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *eventPump) loop() {
	var err error
	for {
		<-p.wake
		p.mu.Lock()
		batch, closed := p.queued, p.closed
		p.queued = nil
		p.mu.Unlock()
		if len(batch) > 0 && err == nil {
			err = p.s.AppendEvents(context.Background(), batch)
		}
		if closed {
			p.done <- err
			return
		}
	}
}

// close appends what is queued and stops the pump.
func (p *eventPump) close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return <-p.done
}
