package tagproto_test

import (
	"fmt"

	"github.com/cadre-ai/cadre/tagproto"
)

func ExampleTagExtract() {
	reply := "Done.\n<Response>\nThe answer is 42.\n</response>"
	content, ok := tagproto.TagExtract(reply, "response")
	fmt.Printf("%q %v\n", content, ok)
	fmt.Printf("%q\n", tagproto.TagStrip(reply, "response"))
	// Output:
	// "The answer is 42." true
	// "Done.\n"
}

func ExampleParseSpawn() {
	reply := `I'll split this up.
<spawn_agents mode="sequential">
  <agent task="Gather the raw data" />
  <agent name='code-analyst' task="Find \"hot\" paths" context="Go 1.26" />
</spawn_agents>`
	b, ok := tagproto.ParseSpawn(reply)
	fmt.Println(ok, b.Mode, b.Before)
	for _, t := range b.Tasks {
		fmt.Printf("%q %q %q\n", t.Name, t.Task, t.Context)
	}
	// Output:
	// true sequential I'll split this up.
	// "" "Gather the raw data" ""
	// "code-analyst" "Find \"hot\" paths" "Go 1.26"
}

func ExampleTagExtractAll() {
	reply := "Thinking… <say>Looking at the logs.</say> more thinking <Say>\n  Found it.\n</say>"
	fmt.Printf("%q\n", tagproto.TagExtractAll(reply, "say"))
	// Output:
	// ["Looking at the logs." "Found it."]
}

func ExampleTextBeforeSpawn() {
	fmt.Printf("%q\n", tagproto.TextBeforeSpawn("I'll split this.\n<spawn_agents><agent task=\"a\"/></spawn_agents>"))
	fmt.Printf("%q\n", tagproto.TextBeforeSpawn("  No block here.  "))
	// Output:
	// "I'll split this."
	// "No block here."
}

func ExampleEscapeXML() {
	fmt.Println(tagproto.EscapeXML(`Compare "A" & <B>`))
	// Output:
	// Compare &quot;A&quot; &amp; &lt;B&gt;
}
