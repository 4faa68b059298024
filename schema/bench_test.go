package schema

import (
	"encoding/json"
	"testing"
)

func BenchmarkValidate(b *testing.B) {
	args := json.RawMessage(`{"task":"x","path":"a","limit":3,"ratio":0.5,"force":true,"mode":"fast","files":["a","b"],"either":2,"opts":{"depth":1,"tags":[{"k":"v"}]}}`)
	schema := json.RawMessage(testSchema)
	b.SetBytes(int64(len(args)))
	for b.Loop() {
		if err := Validate(schema, args); err != nil {
			b.Fatal(err)
		}
	}
}
