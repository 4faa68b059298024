package agentrec

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
)

// A record reads back as it was written, every field set or none, and
// every shorter prefix of it, or a longer one, is refused as damaged.
func TestRoundTrip(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	full := &cadre.AgentRecord{Run: "r1", ID: "root/worker.7", Parent: "root", Depth: 1, Definition: "worker", Model: "m",
		Task: "a task\nwith \"quotes\" and é", Status: cadre.StatusDone, Turns: 300, Usage: cadre.Usage{InputTokens: 1 << 40, OutputTokens: 7},
		Started: now, Ended: now.Add(time.Hour), Result: "the result", Error: "an error"}
	old := &cadre.AgentRecord{Run: "r1", ID: "root", Started: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), Turns: -1}
	empty := &cadre.AgentRecord{Run: "r1", ID: "root"}
	for _, a := range []*cadre.AgentRecord{full, old, empty} {
		b := Append(nil, a)
		if len(b) > Size(a) {
			t.Errorf("%s: %d bytes, more than Size's %d", a.ID, len(b), Size(a))
		}
		got, err := Decode(a.Run, string(a.ID), b)
		if err != nil {
			t.Fatalf("decode %s: %v", a.ID, err)
		}
		if d := cmp.Diff(a, got); d != "" {
			t.Errorf("%s read back (-written +read):\n%s", a.ID, d)
		}
		for n := range len(b) {
			if _, err := Decode(a.Run, string(a.ID), b[:n]); err == nil {
				t.Errorf("%s: the first %d of its %d bytes read back without an error", a.ID, n, len(b))
			}
		}
		if _, err := Decode(a.Run, string(a.ID), append(b, 0)); err == nil {
			t.Errorf("%s: a byte after the record read back without an error", a.ID)
		}
	}
	if _, err := Decode("r1", "root", []byte{format + 1}); err == nil {
		t.Error("a record of an unknown format read back without an error")
	}
}

// FuzzDecode: whatever a journal row's record holds, reading it returns a
// record or an error, and never panics.
func FuzzDecode(f *testing.F) {
	f.Add(Append(nil, &cadre.AgentRecord{Run: "r1", ID: "root", Task: "t", Started: time.Unix(1, 0)}))
	f.Add([]byte{format, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := Decode("r1", "root", b)
		if err == nil && (a == nil || a.ID != "root") {
			t.Fatalf("decoded %+v without an error", a)
		}
	})
}
