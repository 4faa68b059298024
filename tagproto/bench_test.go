package tagproto

import (
	"strings"
	"testing"
)

// benchProse is about 10 KB of reply text around the blocks.
func benchProse() string {
	return strings.Repeat("Some reasoning about the task at hand, with <b>markup</b> & notes.\n", 150)
}

func BenchmarkParseSpawn(b *testing.B) {
	benchSpawn := benchProse() + `<spawn_agents mode="parallel">` + strings.Repeat(`<agent name="x" task="Research one thing &amp; report" context="ctx" />`, 8) + `</spawn_agents>`
	b.SetBytes(int64(len(benchSpawn)))
	for b.Loop() {
		if _, ok := ParseSpawn(benchSpawn); !ok {
			b.Fatal("no block")
		}
	}
}

func BenchmarkTagExtract(b *testing.B) {
	benchTag := benchProse() + "<response>" + benchProse() + "</response>" + benchProse()
	b.SetBytes(int64(len(benchTag)))
	for b.Loop() {
		if _, ok := TagExtract(benchTag, "response"); !ok {
			b.Fatal("no block")
		}
	}
}

func BenchmarkTagExtractAll(b *testing.B) {
	text := strings.Repeat("thinking <say>hello there</say> ", 300)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if got := TagExtractAll(text, "say"); len(got) != 300 {
			b.Fatalf("got %d blocks", len(got))
		}
	}
}
