package local

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/sqlite"
)

// finishedTree runs the tree of treeConfig to its answer in a SQLite file
// and returns the store, the file opened beside it for changing rows behind
// cadre's back, and the run; both are closed when t ends.
func finishedTree(t *testing.T) (*sqlite.Store, *sql.DB, testRun) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cadre.db")
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cc := &callCounter{calls: map[string]int{}}
	r, err := begin(New(treeConfig(cc.model(), s, &mutator{runs: map[string]int{}})), "build the tree")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r.Wait(); err != nil || res.Answer != "final answer" {
		t.Fatalf("run: %v %+v", err, res)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return s, db, r
}

// A journal entry changed in the database file behind cadre's back stops
// Resume and Continue before anything is replayed or any model is called,
// with an error naming the run, the agent and the entry.
func TestResumeRefusesDamagedJournal(t *testing.T) {
	checkNoLeaks(t)
	s, db, r := finishedTree(t)
	// Flip one byte of beta's third entry, and mark the run as stopped
	// half way, as a crash leaves it.
	const agent, seq = "root/beta.1", 3
	var kind string
	var data []byte
	if err := db.QueryRow(`SELECT kind, data FROM journal WHERE run = ? AND agent = ? AND seq = ?`, r.ID(), agent, seq).Scan(&kind, &data); err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x20
	if _, err := db.Exec(`UPDATE journal SET data = ? WHERE run = ? AND agent = ? AND seq = ?`, data, r.ID(), agent, seq); err != nil {
		t.Fatal(err)
	}

	again := &callCounter{calls: map[string]int{}}
	e := New(treeConfig(again.model(), s, &mutator{runs: map[string]int{}}))
	check := func(what string, err error) {
		t.Helper()
		de, ok := errors.AsType[*cadre.DamagedError](err)
		if !ok {
			t.Fatalf("%s of a damaged journal: %v, want a *cadre.DamagedError", what, err)
		}
		if de.Run != r.ID() || de.Agent != agent || de.Seq != seq || de.Kind != kind {
			t.Errorf("%s: %+v, want run %s, agent %s, entry %d (%s)", what, de, r.ID(), agent, seq, kind)
		}
		msg := err.Error()
		for _, want := range []string{"run " + r.ID(), "damaged", "agent " + agent, "entry 3 (" + kind + ")", "cadre runs export " + r.ID()} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: the message lacks %q: %s", what, want, msg)
			}
		}
		t.Logf("%s: %s", what, msg)
	}
	check("Continue", e.Continue(context.Background(), r.ID(), "one more thing"))
	if _, err := db.Exec(`UPDATE runs SET status = 'running' WHERE id = ?`, r.ID()); err != nil {
		t.Fatal(err)
	}
	check("Resume", e.Resume(context.Background(), r.ID()))
	if len(again.calls) != 0 {
		t.Errorf("models were called after the damage was found: %v", again.calls)
	}
	// The run was left as it was, free for another attempt.
	if rec, err := s.GetRun(context.Background(), r.ID()); err != nil || rec.Status != cadre.StatusRunning {
		t.Errorf("run record after the refusal: %+v %v", rec, err)
	}
	if _, err := s.Lease(context.Background(), r.ID()); !errors.Is(err, cadre.ErrNotFound) {
		t.Errorf("the refused resume left a lease: %v", err)
	}
}

// The agent_reported events a stopped process did not store are written by
// the next run of the journal (here two follow-ups), once: the second
// writes none again.
func TestReportEventsRestoredOnce(t *testing.T) {
	checkNoLeaks(t)
	s, db, r := finishedTree(t)
	cc := &callCounter{calls: map[string]int{}}
	cfg := treeConfig(cc.model(), s, &mutator{runs: map[string]int{}})
	if n := dropEvents(t, db, r.ID(), cadre.EventAgentReported); n != 4 {
		t.Fatalf("deleted %d agent_reported events, want the 4 of the run", n)
	}
	for i := range 2 {
		e := New(cfg)
		if err := e.Continue(context.Background(), r.ID(), "once more"); err != nil {
			t.Fatalf("follow-up %d: %v", i+1, err)
		}
		if _, err := e.Wait(context.Background(), r.ID()); err != nil {
			t.Fatalf("follow-up %d: %v", i+1, err)
		}
		checkReportEvents(t, s, r.ID())
	}
}

// dropEvents deletes a run's events of one type from a SQLite store, which
// keeps them in batches of lines (see sqlite's migration 004), and returns
// how many it deleted.
func dropEvents(t *testing.T, db *sql.DB, run string, typ cadre.EventType) int {
	t.Helper()
	rows, err := db.Query(`SELECT first_seq, payload FROM event_batches WHERE run = ?`, run)
	if err != nil {
		t.Fatal(err)
	}
	kept := map[int64]string{}
	n := 0
	for rows.Next() {
		var (
			first   int64
			payload string
		)
		if err := rows.Scan(&first, &payload); err != nil {
			t.Fatal(err)
		}
		var lines []string
		for line := range strings.SplitSeq(payload, "\n") {
			var ev cadre.Event
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Type == typ {
				n++
				continue
			}
			lines = append(lines, line)
		}
		kept[first] = strings.Join(lines, "\n")
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	for first, payload := range kept {
		q, args := `UPDATE event_batches SET payload = ? WHERE run = ? AND first_seq = ?`, []any{payload, run, first}
		if payload == "" {
			q, args = `DELETE FROM event_batches WHERE run = ? AND first_seq = ?`, args[1:]
		}
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	return n
}
