package tagproto_test

import (
	"strings"
	"testing"

	"github.com/cadre-ai/cadre/tagproto"
)

// FuzzSpawn parses arbitrary replies as <spawn_agents> blocks. It must never
// panic; a block it finds has at least one task, each with a task text, and
// a known mode.
func FuzzSpawn(f *testing.F) {
	f.Add(`<spawn_agents mode="parallel"><agent name="a" task="t"/></spawn_agents>`)
	f.Add(`before <spawn_agents mode="sequential"><agent task="one &amp; two" context="c"/><agent task="x"/></spawn_agents> after`)
	f.Add(`<spawn_agents><agent task='q'></agent></spawn_agents>`)
	f.Add(`<spawn_agents mode="parallel"><agent name="a" task="`)
	f.Fuzz(func(t *testing.T, reply string) {
		b, ok := tagproto.ParseSpawn(reply)
		if !ok {
			return
		}
		if b == nil || len(b.Tasks) == 0 {
			t.Fatalf("block found with no tasks: %+v", b)
		}
		if b.Mode != tagproto.Parallel && b.Mode != tagproto.Sequential {
			t.Errorf("mode %q", b.Mode)
		}
		for _, task := range b.Tasks {
			if strings.TrimSpace(task.Task) == "" {
				t.Errorf("task without text: %+v", task)
			}
		}
		_ = tagproto.TextBeforeSpawn(reply)
	})
}

// FuzzTag extracts, strips and lists tags in arbitrary text. Stripping a tag
// leaves no complete element of it, and what Extract finds is among what
// ExtractAll finds.
func FuzzTag(f *testing.F) {
	f.Add("a <response>b</response> c", "response")
	f.Add("<say>x</say><say>y", "say")
	f.Add("<response><response>nested</response></response>", "response")
	f.Fuzz(func(t *testing.T, text, tag string) {
		if tag == "" || strings.ContainsAny(tag, "<>/ \t\n") {
			return
		}
		content, ok := tagproto.TagExtract(text, tag)
		all := tagproto.TagExtractAll(text, tag)
		if ok && len(all) == 0 {
			t.Errorf("TagExtract found %q but TagExtractAll found nothing", content)
		}
		stripped := tagproto.TagStrip(text, tag)
		if _, ok := tagproto.TagExtract(stripped, tag); ok && len(stripped) >= len(text) {
			t.Errorf("TagStrip(%q) = %q still holds a %s element and did not shrink", text, stripped, tag)
		}
		_ = tagproto.EscapeXML(text)
	})
}
