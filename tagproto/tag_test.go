package tagproto

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The first cases of each table carry the inputs and outcomes of daycare's
// tagExtract.spec.ts (null there is ok=false here); later ones pin cadre's
// own edges.

func TestTagExtract(t *testing.T) {
	tests := []struct {
		name, text, tag string
		want            string
		ok              bool
	}{
		{"basic", "<response>hello</response>", "response", "hello", true},
		{"missing_open", "hello</response>", "response", "", false},
		{"missing_close", "<response>hello", "response", "", false},
		{"empty_content", "<response></response>", "response", "", true},
		{"case_title", "<Response>hello</Response>", "response", "hello", true},
		{"case_upper", "<RESPONSE>hello</RESPONSE>", "response", "hello", true},
		{"case_mixed", "<rEsPoNsE>hello</rEsPoNsE>", "response", "hello", true},
		{"mixed_case_open", "<Response>hello</response>", "response", "hello", true},
		{"mixed_case_close", "<response>hello</RESPONSE>", "response", "hello", true},
		{"attribute", `<response foo="bar">content</response>`, "response", "content", true},
		{"attributes", `<response type="final" id="1">content</response>`, "response", "content", true},
		{"inner_tags_kept", "<response>has <inner> tags</response>", "response", "has <inner> tags", true},
		{"first_open_last_close", "<response>outer <response>inner</response> middle</response> end", "response", "outer <response>inner</response> middle", true},
		{"multiline", "<response>\nline 1\nline 2\nline 3\n</response>", "response", "line 1\nline 2\nline 3", true},
		{"trimmed", "<response>  hello world  </response>", "response", "hello world", true},
		{"internal_space_kept", "<response>hello   world</response>", "response", "hello   world", true},
		{"text_around", "prefix <response>content</response> suffix", "response", "content", true},
		{"tag_result", "<result>data</result>", "result", "data", true},
		{"tag_output", "<output>data</output>", "output", "data", true},
		{"tag_answer", "<answer>data</answer>", "answer", "data", true},
		{"close_before_open", "</response><response>hello", "response", "", false},
		{"space_before_close_gt", "<response>hello</response >", "response", "hello", true},
		{"space_after_close_slash", "<response>hello</ response>", "response", "", false},

		// cadre's own cases.
		{"seed_preamble", "Some preamble <response>The actual answer</response> trailing", "response", "The actual answer", true},
		{"seed_multiline_title", "<Response>Multi\nline\ncontent</Response>", "response", "Multi\nline\ncontent", true},
		{"seed_nested", "text <response>outer <response>inner</response> middle</response> end", "response", "outer <response>inner</response> middle", true},
		{"longer_name_not_open", "<responses>x</response>", "response", "", false},
		{"self_closing_not_open", "<response/>x</response>", "response", "", false},
		{"newline_attribute", "<response\nid=\"1\">x</response>", "response", "x", true},
		{"open_without_gt", "<response foo", "response", "", false},
		{"close_inside_open_tag", `<response a="</response>">`, "response", "", false},
		{"tab_in_close", "<response>x</response\t>", "response", "x", true},
		{"empty_tag_name", "<>x</>", "", "", false},
		{"empty_text", "", "response", "", false},
		{"whitespace_only", "<response> \n\t </response>", "response", "", true},
		{"unicode_content", "<response> héllo — 世界 </response>", "response", "héllo — 世界", true},
		{"last_close_wins_over_first", "<say>a</say> b </say>", "say", "a</say> b", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := TagExtract(tt.text, tt.tag)
			if got != tt.want || ok != tt.ok {
				t.Errorf("TagExtract(%q, %q) = %q, %v; want %q, %v", tt.text, tt.tag, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestTagExtractAll(t *testing.T) {
	tests := []struct {
		name, text, tag string
		want            []string
	}{
		{"none", "no tags here", "say", nil},
		{"single", "thinking <say>hello</say> done", "say", []string{"hello"}},
		{"multiple", "reasoning <say>first</say> more thinking <say>second</say> end", "say", []string{"first", "second"}},
		{"trimmed", "<say>  hello world  </say>", "say", []string{"hello world"}},
		{"case_insensitive", "<Say>a</Say><SAY>b</SAY>", "say", []string{"a", "b"}},
		{"only_open", "<say>hello", "say", nil},
		{"adjacent", "<say>a</say><say>b</say>", "say", []string{"a", "b"}},
		{"multiline", "<say>\nline 1\nline 2\n</say>", "say", []string{"line 1\nline 2"}},

		// cadre's own cases.
		{"nearest_close_no_nesting", "<say>a <say>b</say> c</say>", "say", []string{"a <say>b"}},
		{"attributes", `<say to="user">hi</say>`, "say", []string{"hi"}},
		{"empty_block", "<say></say>", "say", []string{""}},
		{"second_unclosed", "<say>a</say> <say>b", "say", []string{"a"}},
		{"close_first_ignored", "</say><say>a</say>", "say", []string{"a"}},
		{"space_before_gt", "<say>a</say >", "say", []string{"a"}},
		{"empty_tag_name", "<>a</>", "", nil},
		{"longer_name_ignored", "<sayings>a</say> <say>b</say>", "say", []string{"b"}},
		{"open_tag_runs_to_first_gt", "<say foo <say>x</say>", "say", []string{"x"}},
		{"space_in_close_not_close", "<say>a</ say> b</say>", "say", []string{"a</ say> b"}},
		{"resumes_after_close", "<say>a</say> x </say> <say>b</say>", "say", []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := TagExtractAll(tt.text, tt.tag)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("TagExtractAll(%q, %q) mismatch (-want +got):\n%s", tt.text, tt.tag, diff)
			}
		})
	}
}

func TestTagStrip(t *testing.T) {
	tests := []struct {
		name, text, tag, want string
	}{
		{"removes_block", "prefix <response>content</response> suffix", "response", "prefix  suffix"},
		{"no_tag_unchanged", "no tags here", "response", "no tags here"},
		{"at_start", "<response>content</response> suffix", "response", " suffix"},
		{"at_end", "prefix <response>content</response>", "response", "prefix "},
		{"whole_text", "<response>content</response>", "response", ""},
		{"first_open_last_close", "before <response>a</response> mid <response>b</response> after", "response", "before  after"},
		{"case_insensitive", "x<Response>y</Response>z", "response", "xz"},
		{"only_open", "<response>hello", "response", "<response>hello"},
		{"only_close", "hello</response>", "response", "hello</response>"},

		// cadre's own cases.
		{"close_before_open", "</response><response>hello", "response", "</response><response>hello"},
		{"space_before_gt", "a<response x='1'>b</response >c", "response", "ac"},
		// Differs from daycare's tagStrip, which would cut from the opening
		// tag to the closing tag inside it and leave `">`: cadre strips
		// exactly the block TagExtract reads, and TagExtract finds none.
		{"differs_close_inside_open_tag_unchanged", `<response a="</response>">`, "response", `<response a="</response>">`},
		{"multiline_block", "a\n<response>\nx\n</response>\nb", "response", "a\n\nb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TagStrip(tt.text, tt.tag); got != tt.want {
				t.Errorf("TagStrip(%q, %q) = %q, want %q", tt.text, tt.tag, got, tt.want)
			}
		})
	}
}

func TestEscapeXML(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"all_specials", `<tag>&"'`, "&lt;tag&gt;&amp;&quot;&apos;"},
		{"plain", "plain text", "plain text"},
		{"empty", "", ""},
		{"already_escaped_is_escaped_again", "&amp;", "&amp;amp;"},
		{"unicode_kept", "héllo & 世界", "héllo &amp; 世界"},
		{"invalid_utf8_kept", "\xff<", "\xff&lt;"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EscapeXML(tt.in); got != tt.want {
				t.Errorf("EscapeXML(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzTagExtract(f *testing.F) {
	for _, s := range []string{
		"<response>hello</response>",
		"<response>outer <response>inner</response> middle</response> end",
		"</response><response>hello",
		"<response>hello</response >",
		"<response>hello</ response>",
		`<response a="</response>">`,
		"<say>a</say><say>b</say>",
		"<RESPONSE foo>\n</Response>",
	} {
		f.Add(s, "response")
		f.Add(s, "say")
	}
	f.Add("<>x</>", "")
	f.Fuzz(func(t *testing.T, text, tag string) {
		content, ok := TagExtract(text, tag)
		stripped := TagStrip(text, tag)
		if !ok {
			if content != "" {
				t.Errorf("content %q with ok=false", content)
			}
			if stripped != text {
				t.Errorf("TagStrip changed text without a block: %q -> %q", text, stripped)
			}
		} else {
			if !strings.Contains(text, content) {
				t.Errorf("content %q is not a substring of %q", content, text)
			}
			if content != strings.TrimSpace(content) {
				t.Errorf("content %q is not trimmed", content)
			}
			if len(stripped) >= len(text) {
				t.Errorf("TagStrip(%q) = %q did not shorten the text", text, stripped)
			}
		}
		all := TagExtractAll(text, tag)
		for _, c := range all {
			if !strings.Contains(text, c) || c != strings.TrimSpace(c) {
				t.Errorf("TagExtractAll content %q is untrimmed or not a substring of %q", c, text)
			}
		}
		if ok != (len(all) > 0) {
			// Both need an opening tag followed, after its ">", by a
			// closing tag; they differ only in which closing tag they use.
			t.Errorf("TagExtract found a block: %v, TagExtractAll found %d", ok, len(all))
		}
		if e := EscapeXML(text); strings.ContainsAny(e, `<>"'`) {
			t.Errorf("EscapeXML(%q) = %q still holds a special character", text, e)
		}
	})
}
