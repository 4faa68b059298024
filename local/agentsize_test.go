package local

import (
	"testing"
	"unsafe"
)

// An agent is allocated whole with each child, and it fits Go's size
// class of 2,048 bytes: one byte more and every child costs 2,304 (the
// next class), an eighth more memory for the collector to go through. A
// field added must find room (the flags share one word) or move out.
func TestAgentSize(t *testing.T) {
	if n := unsafe.Sizeof(agent{}); n > 2048 {
		t.Errorf("an agent takes %d bytes, more than 2,048: each one now costs 2,304; pack the new field with the flags at the end of the struct, or keep it elsewhere", n)
	}
}
