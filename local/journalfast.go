package local

import (
	"unicode/utf8"

	"github.com/cadre-ai/cadre/loop"
)

// sameAfterJSON reports whether an input reads back from its JSON exactly
// as it is, so that roundTrip need not decode it to know what a replay
// will step. Inputs made only of strings, booleans and durations do, when
// every string is valid UTF-8 (encoding/json writes invalid bytes as
// U+FFFD); the others (a model's reply, a start, tool results) are decoded.
func sameAfterJSON(in loop.Input) bool {
	switch v := in.(type) {
	case loop.Spawned:
		return validUTF8(v.Ref, string(v.Child), v.Err)
	case loop.ChildReport:
		return validUTF8(string(v.Child), v.Text)
	case loop.ChildEnded:
		return validUTF8(string(v.Child), string(v.Status), v.Error)
	case loop.ChildQuestion:
		return validUTF8(string(v.Child), v.Question)
	case loop.Answer:
		return validUTF8(v.Text, v.Err)
	case loop.InboxMessage:
		return validUTF8(string(v.From), v.Text)
	case loop.Cancel:
		return validUTF8(v.Reason)
	case loop.Timeout:
		return true
	}
	return false
}

func validUTF8(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}
