package tagproto

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func tasks(ts ...string) []SpawnTask {
	out := make([]SpawnTask, len(ts))
	for i, t := range ts {
		out[i] = SpawnTask{Task: t}
	}
	return out
}

// TestBoternitySpawner carries the inputs and expected outcomes of all
// eleven tests of boternity's spawner (crates/boternity-core/src/agent/
// spawner.rs), named as there without the test_ prefix. Each case checks
// both ParseSpawn (a nil want is boternity's None) and TextBeforeSpawn
// (boternity's extract_text_before_spawn), so the cases written for one
// function also pin the other.
func TestBoternitySpawner(t *testing.T) {
	tests := []struct {
		name   string
		reply  string
		want   *SpawnBlock
		before string
	}{
		{
			name: "parse_parallel_mode_3_tasks",
			reply: `I'll break this down.

<spawn_agents mode="parallel">
  <agent task="Research the history of quantum computing" />
  <agent task="Summarize recent breakthroughs in quantum error correction" />
  <agent task="List top quantum computing companies" />
</spawn_agents>`,
			want: &SpawnBlock{Mode: Parallel, Before: "I'll break this down.", Tasks: tasks(
				"Research the history of quantum computing",
				"Summarize recent breakthroughs in quantum error correction",
				"List top quantum computing companies",
			)},
			before: "I'll break this down.",
		},
		{
			name: "parse_sequential_mode_2_tasks",
			reply: `<spawn_agents mode="sequential">
  <agent task="First, gather the raw data" />
  <agent task="Then, analyze the patterns" />
</spawn_agents>`,
			want: &SpawnBlock{Mode: Sequential, Tasks: tasks("First, gather the raw data", "Then, analyze the patterns")},
		},
		{
			name:   "parse_no_spawn_block_returns_none",
			reply:  "Just a regular response with no spawn block.",
			before: "Just a regular response with no spawn block.",
		},
		{
			// boternity's extract_text_before_spawn would give "" here; cadre
			// gives the whole reply, as a block without tasks is no block.
			name:   "parse_empty_agent_list_returns_none",
			reply:  "<spawn_agents mode=\"parallel\">\n</spawn_agents>",
			before: "<spawn_agents mode=\"parallel\">\n</spawn_agents>",
		},
		{
			name:  "parse_default_mode_is_parallel_when_no_mode_attr",
			reply: "<spawn_agents>\n  <agent task=\"Do something\" />\n</spawn_agents>",
			want:  &SpawnBlock{Mode: Parallel, Tasks: tasks("Do something")},
		},
		{
			name:   "extract_text_before_spawn_returns_trimmed_text",
			reply:  "I'll break this into sub-tasks for you.\n\n<spawn_agents mode=\"parallel\">\n  <agent task=\"Task 1\" />\n</spawn_agents>",
			want:   &SpawnBlock{Mode: Parallel, Before: "I'll break this into sub-tasks for you.", Tasks: tasks("Task 1")},
			before: "I'll break this into sub-tasks for you.",
		},
		{
			name:   "extract_text_before_spawn_returns_full_text_when_no_block",
			reply:  "Just a regular response with no spawn block.",
			before: "Just a regular response with no spawn block.",
		},
		{
			name: "task_text_with_special_characters_preserved",
			reply: `<spawn_agents mode="parallel">
  <agent task="Research: the history of AI (1950s-present), including key breakthroughs" />
  <agent task="Compare architectures -- transformers vs. RNNs, noting pros/cons" />
</spawn_agents>`,
			want: &SpawnBlock{Mode: Parallel, Tasks: tasks(
				"Research: the history of AI (1950s-present), including key breakthroughs",
				"Compare architectures -- transformers vs. RNNs, noting pros/cons",
			)},
		},
		{
			name: "multiple_spawn_blocks_only_first_parsed",
			reply: `First block:
<spawn_agents mode="parallel">
  <agent task="Task from first block" />
</spawn_agents>

Second block:
<spawn_agents mode="sequential">
  <agent task="Task from second block" />
</spawn_agents>`,
			want:   &SpawnBlock{Mode: Parallel, Before: "First block:", Tasks: tasks("Task from first block")},
			before: "First block:",
		},
		{
			// boternity's extract_text_before_spawn would give ""; cadre
			// gives the whole reply, as an unclosed block is no block.
			name:   "parse_incomplete_spawn_block_returns_none",
			reply:  "<spawn_agents mode=\"parallel\">\n  <agent task=\"Orphaned task\" />",
			before: "<spawn_agents mode=\"parallel\">\n  <agent task=\"Orphaned task\" />",
		},
		{
			name:  "extract_text_before_spawn_empty_prefix",
			reply: "<spawn_agents mode=\"parallel\">\n  <agent task=\"Immediate spawn\" />\n</spawn_agents>",
			want:  &SpawnBlock{Mode: Parallel, Tasks: tasks("Immediate spawn")},
		},
	}
	if len(tests) != 11 {
		t.Fatalf("boternity has 11 spawner tests, table has %d", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseSpawn(tt.reply)
			if ok != (tt.want != nil) {
				t.Fatalf("ParseSpawn ok = %v, want %v (block %+v)", ok, tt.want != nil, got)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseSpawn mismatch (-want +got):\n%s", diff)
			}
			if before := TextBeforeSpawn(tt.reply); before != tt.before {
				t.Errorf("TextBeforeSpawn = %q, want %q", before, tt.before)
			}
		})
	}
}

// TestTextBeforeSpawn pins cadre's rules for the pre-spawn text beyond the
// boternity cases above.
func TestTextBeforeSpawn(t *testing.T) {
	tests := []struct{ name, reply, want string }{
		// Differs from boternity, which cuts at any "<spawn_agents": a block
		// that ParseSpawn rejects is no block, so the whole reply is the text.
		{"differs_rejected_block_is_whole_text", "  Hello.\n<spawn_agents></spawn_agents>  ", "Hello.\n<spawn_agents></spawn_agents>"},
		{"differs_unclosed_block_is_whole_text", "Hello. <spawn_agents><agent task=\"x\"/>", "Hello. <spawn_agents><agent task=\"x\"/>"},
		{"text_after_block_dropped", " Before \n<spawn_agents><agent task=\"x\"/></spawn_agents> after", "Before"},
		{"multiline_prefix_kept", "Plan:\n1. a\n2. b\n\n<spawn_agents><agent task=\"x\"/></spawn_agents>", "Plan:\n1. a\n2. b"},
		{"empty_reply", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TextBeforeSpawn(tt.reply); got != tt.want {
				t.Errorf("TextBeforeSpawn(%q) = %q, want %q", tt.reply, got, tt.want)
			}
		})
	}
}

// TestParseSpawnCadre pins the rules cadre adds to, or changes from,
// boternity's parser. Each name says which.
func TestParseSpawnCadre(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		want  *SpawnBlock
	}{
		// Differs from boternity: names are case-insensitive (boternity
		// finds no block here).
		{
			name:  "differs_case_insensitive_names",
			reply: `<SPAWN_AGENTS MODE="SEQUENTIAL"><Agent TASK="a" /><AGENT Task="b"/></Spawn_Agents>`,
			want:  &SpawnBlock{Mode: Sequential, Tasks: tasks("a", "b")},
		},
		{
			name:  "mode_value_trimmed_and_folded",
			reply: `<spawn_agents mode=" Sequential "><agent task="a"/></spawn_agents>`,
			want:  &SpawnBlock{Mode: Sequential, Tasks: tasks("a")},
		},
		{
			name:  "unknown_mode_is_parallel",
			reply: `<spawn_agents mode="serial"><agent task="a"/></spawn_agents>`,
			want:  &SpawnBlock{Mode: Parallel, Tasks: tasks("a")},
		},
		// Differs from boternity: it panics slicing when the closing tag
		// comes first; cadre reports no block.
		{
			name:  "differs_close_before_open_no_panic",
			reply: "</spawn_agents>\n<spawn_agents mode=\"parallel\">\n  <agent task=\"x\" />",
		},
		{
			name:  "close_before_open_even_if_closed_later",
			reply: `</spawn_agents> <spawn_agents><agent task="x"/></spawn_agents>`,
		},
		// Backslashes: cadre drops the backslash before a quote or a
		// backslash (boternity keeps it in the task text).
		{
			name:  "differs_backslash_quote_unescaped",
			reply: `<spawn_agents><agent task="Say \"hi\" to them" /></spawn_agents>`,
			want:  &SpawnBlock{Mode: Parallel, Tasks: tasks(`Say "hi" to them`)},
		},
		{
			name:  "backslash_backslash_unescaped",
			reply: `<spawn_agents><agent task="end with \\" /></spawn_agents>`,
			want:  &SpawnBlock{Mode: Parallel, Tasks: tasks(`end with \`)},
		},
		{
			name:  "other_backslashes_kept",
			reply: `<spawn_agents><agent task="Read C:\Users\me\notes.txt, split on \n" /></spawn_agents>`,
			want:  &SpawnBlock{Mode: Parallel, Tasks: tasks(`Read C:\Users\me\notes.txt, split on \n`)},
		},
		{
			name:  "escaped_final_quote_is_unterminated",
			reply: `<spawn_agents><agent task="a" /><agent task="b\" /></spawn_agents>`,
			want:  &SpawnBlock{Mode: Parallel, Tasks: tasks("a")},
		},
		{
			name:  "single_quotes",
			reply: `<spawn_agents mode='sequential'><agent task='Find the "best" option' /><agent task='It\'s next' /></spawn_agents>`,
			want:  &SpawnBlock{Mode: Sequential, Tasks: tasks(`Find the "best" option`, "It's next")},
		},
		{
			name: "name_and_context",
			reply: `Delegating.
<spawn_agents>
  <agent name="code-analyst" task="Map the session lifecycle" context="Repo is on branch main." />
  <agent task="Summarize the README" />
</spawn_agents>`,
			want: &SpawnBlock{Mode: Parallel, Before: "Delegating.", Tasks: []SpawnTask{
				{Name: "code-analyst", Task: "Map the session lifecycle", Context: "Repo is on branch main."},
				{Task: "Summarize the README"},
			}},
		},
		{
			name:  "entities_decoded",
			reply: `<spawn_agents><agent task="Compare A &amp; B &lt;details&gt; &quot;now&quot; &apos;ok&apos; &copy;" /></spawn_agents>`,
			want:  &SpawnBlock{Mode: Parallel, Tasks: tasks(`Compare A & B <details> "now" 'ok' &copy;`)},
		},
		{
			name:  "gt_inside_quoted_value",
			reply: `<spawn_agents><agent task="Check that a > b" context="x>y"/></spawn_agents>`,
			want:  &SpawnBlock{Mode: Parallel, Tasks: []SpawnTask{{Task: "Check that a > b", Context: "x>y"}}},
		},
		{
			name:  "empty_and_blank_tasks_skipped",
			reply: `<spawn_agents><agent task="" /><agent task="   " /><agent name="x" /><agent task=" kept " /></spawn_agents>`,
			want:  &SpawnBlock{Mode: Parallel, Tasks: tasks("kept")},
		},
		{
			name:  "only_blank_tasks_is_no_block",
			reply: `<spawn_agents><agent task="" /></spawn_agents>`,
		},
		{
			name:  "unterminated_quote_keeps_earlier_tasks",
			reply: "<spawn_agents><agent task=\"a\"/><agent task=\"b/></spawn_agents>",
			want:  &SpawnBlock{Mode: Parallel, Tasks: tasks("a")},
		},
		{
			name:  "unterminated_element_keeps_earlier_tasks",
			reply: "<spawn_agents><agent task=\"a\"/><agent task=\"b\"</spawn_agents>",
			want:  &SpawnBlock{Mode: Parallel, Tasks: tasks("a")},
		},
		{
			name:  "self_closing_block_is_no_block",
			reply: `<spawn_agents mode="parallel" /> <agent task="x"/> </spawn_agents>`,
		},
		{
			name:  "unterminated_open_tag_is_no_block",
			reply: `<spawn_agents mode="parallel</spawn_agents>"><agent task="x"/>`,
		},
		{
			name:  "longer_element_name_is_not_a_block",
			reply: `<spawn_agents_v2><agent task="x"/></spawn_agents>`,
		},
		{
			name:  "agent_with_closing_element",
			reply: `<spawn_agents><agent task="a"></agent><agent task="b">ignored text</agent></spawn_agents>`,
			want:  &SpawnBlock{Mode: Parallel, Tasks: tasks("a", "b")},
		},
		// Differs from boternity: only task attributes of <agent>
		// elements count.
		{
			name:  "differs_task_outside_agent_ignored",
			reply: `<spawn_agents><step task="x"/><agents task="y"/></spawn_agents>`,
		},
		// Differs from boternity, which reads every `task="` in the block,
		// so it would also take "x" from subtask and "z" from the text.
		{
			name:  "differs_only_the_task_attribute",
			reply: `<spawn_agents><agent subtask="x" task="y" /> then task="z" </spawn_agents>`,
			want:  &SpawnBlock{Mode: Parallel, Tasks: tasks("y")},
		},
		// Differs from boternity, which looks for mode="sequential"
		// anywhere in the block, task text included.
		{
			name:  "differs_mode_only_from_opening_tag",
			reply: `<spawn_agents><agent task='Explain mode="sequential" in the docs' /></spawn_agents>`,
			want:  &SpawnBlock{Mode: Parallel, Tasks: tasks(`Explain mode="sequential" in the docs`)},
		},
		// Differs from boternity, which keeps values as written (a blank
		// task counts there): cadre trims values and skips blank tasks.
		{
			name:  "differs_values_trimmed",
			reply: "<spawn_agents><agent task=\"  Research X \n\" name=' code-analyst ' context=' ctx '/></spawn_agents>",
			want:  &SpawnBlock{Mode: Parallel, Tasks: []SpawnTask{{Task: "Research X", Name: "code-analyst", Context: "ctx"}}},
		},
		{
			name:  "unquoted_values",
			reply: `<spawn_agents mode=sequential><agent task=alpha/><agent name=beta task=gamma></spawn_agents>`,
			want:  &SpawnBlock{Mode: Sequential, Tasks: []SpawnTask{{Task: "alpha"}, {Name: "beta", Task: "gamma"}}},
		},
		{
			name:  "first_repeated_attribute_wins",
			reply: `<spawn_agents><agent task="first" task="second"/></spawn_agents>`,
			want:  &SpawnBlock{Mode: Parallel, Tasks: tasks("first")},
		},
		{
			name:  "whitespace_around_equals_and_newlines",
			reply: "<spawn_agents\n  mode = \"sequential\"\n>\n<agent\n  task =\n 'a'\n/>\n</spawn_agents >",
			want:  &SpawnBlock{Mode: Sequential, Tasks: tasks("a")},
		},
		{
			name:  "close_tag_in_value_ends_block",
			reply: `<spawn_agents><agent task="a"/><agent task="explain </spawn_agents> tags"/></spawn_agents>`,
			want:  &SpawnBlock{Mode: Parallel, Tasks: tasks("a")},
		},
		{
			name:  "multiline_task_value",
			reply: "<spawn_agents><agent task=\"line one\nline two\"/></spawn_agents>",
			want:  &SpawnBlock{Mode: Parallel, Tasks: tasks("line one\nline two")},
		},
		{
			name:  "empty_reply",
			reply: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseSpawn(tt.reply)
			if ok != (tt.want != nil) {
				t.Fatalf("ParseSpawn(%q) ok = %v, want %v (block %+v)", tt.reply, ok, tt.want != nil, got)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseSpawn(%q) mismatch (-want +got):\n%s", tt.reply, diff)
			}
		})
	}
}

// TestParseSpawnRoundTrip checks that values written with EscapeXML read
// back unchanged.
func TestParseSpawnRoundTrip(t *testing.T) {
	for _, v := range []string{`plain`, `A & B`, `<x> "y" 'z'`, `a\b`, `&amp;`, `100% > 50%`} {
		t.Run(v, func(t *testing.T) {
			reply := `<spawn_agents><agent task="` + EscapeXML(v) + `" context='` + EscapeXML(v) + `'/></spawn_agents>`
			b, ok := ParseSpawn(reply)
			if !ok {
				t.Fatalf("ParseSpawn(%q) found no block", reply)
			}
			want := []SpawnTask{{Task: v, Context: v}}
			if diff := cmp.Diff(want, b.Tasks); diff != "" {
				t.Errorf("round trip mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseSpawn(f *testing.F) {
	for _, s := range []string{
		"I'll break this down.\n<spawn_agents mode=\"parallel\">\n  <agent task=\"a\" />\n</spawn_agents>",
		"<spawn_agents mode='sequential'><agent name=\"x\" task='b' context=\"c\"/></spawn_agents>",
		"</spawn_agents><spawn_agents><agent task=\"x\"/>",
		"<spawn_agents><agent task=\"a\\\"b\"/></spawn_agents>",
		"<spawn_agents><agent task=\"&amp;&lt;\"/></spawn_agents>",
		"<spawn_agents mode=\"x</spawn_agents>\">",
		"<SPAWN_AGENTS><AGENT TASK=x/></SPAWN_AGENTS>",
		"<spawn_agents><agent task=\"unterminated/></spawn_agents>",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		b, ok := ParseSpawn(reply)
		before := TextBeforeSpawn(reply)
		if !ok {
			if b != nil {
				t.Fatalf("non-nil block %+v with ok=false", b)
			}
			if before != strings.TrimSpace(reply) {
				t.Errorf("TextBeforeSpawn = %q without a block, want the trimmed reply", before)
			}
			return
		}
		if b.Mode != Parallel && b.Mode != Sequential {
			t.Errorf("mode %q", b.Mode)
		}
		if len(b.Tasks) == 0 {
			t.Errorf("block without tasks")
		}
		for _, task := range b.Tasks {
			if task.Task == "" || task.Task != strings.TrimSpace(task.Task) {
				t.Errorf("task %q is empty or untrimmed", task.Task)
			}
		}
		if b.Mode == Sequential && !strings.Contains(strings.ToLower(reply), string(Sequential)) {
			t.Errorf("mode sequential from a reply that never says so")
		}
		if b.Before != before {
			t.Errorf("Before %q != TextBeforeSpawn %q", b.Before, before)
		}
		if !strings.HasPrefix(strings.TrimSpace(reply), b.Before) {
			t.Errorf("Before %q does not start the trimmed reply", b.Before)
		}
		if findElement(b.Before, spawnElement, 0) >= 0 {
			t.Errorf("Before %q holds an opening tag, so the block did not start at the first one", b.Before)
		}
		// Only the first block counts: whatever follows the reply, even
		// another block, changes nothing.
		for _, tail := range []string{"", "\n<spawn_agents mode=\"sequential\"><agent task=\"later\"/></spawn_agents>", "</spawn_agents>"} {
			again, ok := ParseSpawn(reply + tail)
			if !ok {
				t.Fatalf("ParseSpawn(reply + %q) lost the block", tail)
			}
			if diff := cmp.Diff(b, again); diff != "" {
				t.Errorf("ParseSpawn(reply + %q) changed the block (-first +again):\n%s", tail, diff)
			}
		}
	})
}
