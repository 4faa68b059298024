package eventlines

import (
	"strings"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
)

func TestAppendDecode(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var row []byte
	for i, text := range []string{"one", "two\nwith a newline", "three"} {
		ev := cadre.Event{Type: cadre.EventSay, Run: "r1", Time: now, Data: cadre.Say{Text: text}}
		obj, err := ev.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			row = append(row, '\n')
		}
		row = Append(row, obj, int64(10+i))
	}
	if n := strings.Count(string(row), "\n"); n != 2 {
		t.Fatalf("the row has %d newlines, want 2, one between lines: %s", n, row)
	}
	for after, want := range map[int64][]int64{0: {10, 11, 12}, 10: {11, 12}, 12: nil} {
		got, err := Decode(nil, row, 10, after)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []int64
		for _, ev := range got {
			seqs = append(seqs, ev.Seq)
		}
		if len(seqs) != len(want) || (len(want) > 0 && seqs[0] != want[0]) {
			t.Errorf("after %d: Seqs %v, want %v", after, seqs, want)
		}
	}
	got, _ := Decode(nil, row, 10, 0)
	if say, ok := got[1].Data.(cadre.Say); !ok || say.Text != "two\nwith a newline" {
		t.Errorf("the second event read back as %+v", got[1])
	}
}

// A line whose start holds no seq (a row of one event written before
// lines had one) takes its place in the row.
func TestDecodeNumbersByPlace(t *testing.T) {
	row := []byte(`{"type":"say","run":"r1","time":"2026-03-01T12:00:00Z"}` + "\n" + `{"type":"say","run":"r1","time":"2026-03-01T12:00:00Z"}`)
	got, err := Decode(nil, row, 5, 0)
	if err != nil || len(got) != 2 || got[0].Seq != 5 || got[1].Seq != 6 {
		t.Fatalf("events %+v (err %v), want Seqs 5 and 6", got, err)
	}
}

func TestDecodeNamesBadLine(t *testing.T) {
	_, err := Decode(nil, []byte(`{"seq":7,"type":`), 7, 0)
	if err == nil || !strings.Contains(err.Error(), "stored as 7") {
		t.Fatalf("a line that is not JSON: %v, want an error naming event 7", err)
	}
}

// FuzzDecode: whatever a row holds, Decode returns events or an error,
// never panics, and never returns an event at or before after.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"seq":3,"type":"say","run":"r1","time":"2026-03-01T12:00:00Z","text":"hi"}`), int64(3), int64(0))
	f.Add([]byte("{\"seq\":1}\n{\"seq\":2,\"type\":\"x\"}\n{}"), int64(1), int64(1))
	f.Add([]byte(`{"seq":-9223372036854775808}`), int64(1), int64(-1))
	f.Fuzz(func(t *testing.T, row []byte, first, after int64) {
		got, err := Decode(nil, row, first, after)
		if err != nil {
			return
		}
		for _, ev := range got {
			if ev.Seq <= after {
				t.Fatalf("event %d returned after %d", ev.Seq, after)
			}
		}
	})
}

// Rows makes a row per run, in the order the runs came, each reading back
// as its events; Reset empties it for the next batch.
func TestRows(t *testing.T) {
	var r Rows
	for round := range 2 {
		r.Reset()
		for i, run := range []string{"b", "a", "b", "b", "a"} {
			r.Add(run, int64(10*round+i+1), []byte(`{"type":"say","run":"`+run+`"}`))
		}
		if len(r.Run) != 2 || r.Run[0] != "b" || r.Run[1] != "a" {
			t.Fatalf("round %d: rows for runs %v, want b then a", round, r.Run)
		}
		for i, want := range [][]int64{{1, 3, 4}, {2, 5}} {
			got, err := Decode(nil, r.Text[i], r.First[i], 0)
			if err != nil {
				t.Fatal(err)
			}
			var seqs []int64
			for _, ev := range got {
				seqs = append(seqs, ev.Seq-int64(10*round))
				if ev.Run != r.Run[i] {
					t.Errorf("row %d holds an event of run %q", i, ev.Run)
				}
			}
			if len(seqs) != len(want) || seqs[0] != want[0] || seqs[len(seqs)-1] != want[len(want)-1] || r.Last[i]-int64(10*round) != want[len(want)-1] {
				t.Errorf("round %d, row %d: Seqs %v (last %d), want %v", round, i, seqs, r.Last[i], want)
			}
		}
	}
}
