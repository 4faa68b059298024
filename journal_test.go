package cadre_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/cadre-ai/cadre"
)

func TestJournalEntryChecksum(t *testing.T) {
	base := cadre.JournalEntry{Run: "r1", Agent: "root/a.1", Seq: 3, Kind: "model_result", Data: json.RawMessage(`{"text":"hello"}`)}
	sum := base.Checksum()
	if sum == 0 {
		t.Fatal("the checksum is 0, which stands for none")
	}
	// Each part of the content changes it, and so do shifts between parts.
	changed := map[string]cadre.JournalEntry{}
	add := func(name string, f func(e *cadre.JournalEntry)) {
		e := base
		e.Data = append(json.RawMessage(nil), base.Data...)
		f(&e)
		changed[name] = e
	}
	add("run", func(e *cadre.JournalEntry) { e.Run = "r2" })
	add("agent", func(e *cadre.JournalEntry) { e.Agent = "root/a.2" })
	add("seq", func(e *cadre.JournalEntry) { e.Seq = 4 })
	add("kind", func(e *cadre.JournalEntry) { e.Kind = "tool_results" })
	add("data", func(e *cadre.JournalEntry) { e.Data[9] ^= 1 })
	add("run into agent", func(e *cadre.JournalEntry) { e.Run, e.Agent = "r1r", "oot/a.1" })
	add("no data", func(e *cadre.JournalEntry) { e.Data = nil })
	for name, e := range changed {
		if e.Checksum() == sum {
			t.Errorf("%s changed, the checksum did not", name)
		}
	}
	// Time, Sum and Lease are not content.
	e := base
	e.Lease, e.Sum = "token", 7
	if e.Checksum() != sum {
		t.Error("Lease or Sum changed the checksum")
	}
	long := base
	long.Run = strings.Repeat("r", 500)
	if long.Checksum() == sum {
		t.Error("a long run id did not change the checksum")
	}
}

func TestJournalEntryVerify(t *testing.T) {
	e := cadre.JournalEntry{Run: "r1", Agent: "root", Seq: 2, Kind: "child_report", Data: json.RawMessage(`{"child":"root/a.1","text":"done"}`)}
	if err := e.Verify(); err != nil {
		t.Fatalf("an entry without a checksum: %v", err)
	}
	e.Sum = e.Checksum()
	if err := e.Verify(); err != nil {
		t.Fatalf("an intact entry: %v", err)
	}
	e.Data = json.RawMessage(`{"child":"root/a.1","text":"done!"}`)
	err := e.Verify()
	de, ok := errors.AsType[*cadre.DamagedError](err)
	if !ok || !errors.Is(err, cadre.ErrDamaged) {
		t.Fatalf("a damaged entry: %v", err)
	}
	if de.Run != "r1" || de.Agent != "root" || de.Seq != 2 || de.Kind != "child_report" || de.Stored != e.Sum || de.Computed != e.Checksum() {
		t.Errorf("%+v", de)
	}
	for _, want := range []string{"run r1", "damaged", "entry 2 (child_report)", "agent root", "cadre runs export r1", "start the task again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the message lacks %q: %s", want, err)
		}
	}
}

func TestJournalEntryChecksumAllocs(t *testing.T) {
	e := cadre.JournalEntry{Run: "20261127-0551-abcd", Agent: "root/researcher.12/reader.3", Seq: 42, Kind: "model_result",
		Data: json.RawMessage(strings.Repeat(`{"text":"x"}`, 100))}
	if n := testing.AllocsPerRun(100, func() { _ = e.Checksum() }); n != 0 {
		t.Errorf("Checksum allocates %v times", n)
	}
}

// The checksum is CRC-32C over a header made of the lengths and the
// strings, then the data: computed here with hash/crc32 over the bytes
// themselves, it must come out the same.
func TestJournalEntryChecksumIsCRC32C(t *testing.T) {
	e := cadre.JournalEntry{Run: "run", Agent: "root/x.1", Seq: 258, Kind: "start", Data: json.RawMessage(`{"a":1}`)}
	var b []byte
	for _, s := range []string{e.Run, string(e.Agent)} {
		b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(e.Seq))
	b = binary.BigEndian.AppendUint64(b, uint64(len(e.Kind)))
	b = append(b, e.Kind...)
	b = append(b, e.Data...)
	if want := crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)); e.Checksum() != want {
		t.Errorf("checksum %08x, want %08x", e.Checksum(), want)
	}
}
