package cadre

import (
	"errors"
	"fmt"
	"hash/crc32"
)

// ErrDamaged is wrapped by the errors of a journal entry whose content no
// longer matches its checksum.
var ErrDamaged = errors.New("cadre: the journal is damaged")

// castagnoli is the CRC-32C table. CRC-32C catches what damages a stored
// entry by accident (a flipped bit, a torn or truncated write, bytes of
// another record) — every burst of up to 32 bits, and anything else but
// once in 2³² — and processors compute it in hardware, so it costs a
// journal write almost nothing. A cryptographic hash would not protect
// against more: whoever can change an entry in the store can recompute
// its checksum as well.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the checksum of the entry's content: the CRC-32C of
// its Run, Agent, Seq, Kind and Data, each string preceded by its length
// as 8 bytes, so that no two contents run together the same way. Time, Sum and Lease
// are not part of it. A CRC that comes out 0 is given as 1, since a Sum of
// 0 stands for an entry without one.
func (e *JournalEntry) Checksum() uint32 {
	sum := crcString(0, e.Run)
	sum = crcString(sum, string(e.Agent))
	sum = crcUint(sum, uint64(e.Seq))
	sum = crcString(sum, e.Kind)
	sum = crc32.Update(sum, castagnoli, e.Data)
	if sum == 0 {
		sum = 1
	}
	return sum
}

// crcString adds s, preceded by its length, to crc. It goes byte by byte
// over the short strings of an entry's header, which costs less than
// copying them into a buffer for crc32.Update would.
func crcString(crc uint32, s string) uint32 {
	crc = crcUint(crc, uint64(len(s)))
	crc = ^crc
	for i := 0; i < len(s); i++ {
		crc = castagnoli[byte(crc)^s[i]] ^ (crc >> 8)
	}
	return ^crc
}

// crcUint adds the 8 bytes of v, big end first, to crc.
func crcUint(crc uint32, v uint64) uint32 {
	crc = ^crc
	for i := 56; i >= 0; i -= 8 {
		crc = castagnoli[byte(crc)^byte(v>>i)] ^ (crc >> 8)
	}
	return ^crc
}

// Verify returns a *DamagedError when the entry's Sum is not the checksum
// of its content, and nil when it is or when the entry has no Sum (it was
// written before its store kept checksums, and is taken as it is).
func (e *JournalEntry) Verify() error {
	if e.Sum == 0 {
		return nil
	}
	if got := e.Checksum(); got != e.Sum {
		return &DamagedError{Run: e.Run, Agent: e.Agent, Seq: e.Seq, Kind: e.Kind, Stored: e.Sum, Computed: got}
	}
	return nil
}

// A DamagedError reports a journal entry whose content does not match the
// checksum stored with it: the store was changed by something other than
// cadre, or the disk damaged it. The entry is not replayed, since the state
// rebuilt from it could be anything.
type DamagedError struct {
	Run   string
	Agent AgentID
	Seq   int64  // the entry's
	Kind  string // the entry's, as stored
	// Stored is the checksum kept with the entry; Computed is the one its
	// content gives now.
	Stored, Computed uint32
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("the journal of run %s is damaged: entry %d (%s) of agent %s does not match the checksum stored with it "+
		"(stored %08x, its content gives %08x), so cadre will not replay it. Something other than cadre changed the store, or the disk damaged it. "+
		"Restore the store from a backup if you have one; otherwise the run cannot be carried on: export what is readable "+
		"(cadre runs export %s marks the damaged entries) and start the task again",
		e.Run, e.Seq, e.Kind, e.Agent, e.Stored, e.Computed, e.Run)
}

func (e *DamagedError) Unwrap() error { return ErrDamaged }
