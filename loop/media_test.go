package loop

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
)

// The media of a tool result go on its tool message, in the request of the
// next model call, and come back from the journal as they went in; a
// second result for the same call changes neither its text nor its media.
func TestToolResultMedia(t *testing.T) {
	png := cadre.Media{Kind: cadre.MediaImage, MIMEType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n\x00\xff")}
	wav := cadre.Media{Kind: cadre.MediaAudio, MIMEType: "audio/wav", Data: []byte("RIFF\x00\x00\x00\x00WAVE")}
	h := start(t, rootConfig(), "look at the chart")
	if _, ok := only[CallTools](h.reply("", call("c1", "read_file", `{"path":"chart.png"}`), call("c2", "read_file", `{"path":"a.txt"}`))); !ok {
		t.Fatalf("want one CallTools, got %#v", h.acts)
	}
	in := ToolResults{Results: []ToolResult{{CallID: "c1", Content: "a chart\n" + png.Placeholder() + "\n" + wav.Placeholder(), Media: []cadre.Media{png, wav}}}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"media":[{"kind":"image","mime_type":"image/png","data":"iVBORw0KGgoA/w=="}`) {
		t.Errorf("journaled as %s: want the image's bytes in base64", b)
	}
	back, err := Decode(in.Kind(), b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Input(in), back); diff != "" {
		t.Fatalf("journal round trip (-want +got):\n%s", diff)
	}
	if acts := h.step(back); len(acts) != 0 {
		t.Fatalf("one of two results: want no action yet, got %#v", acts)
	}
	h.step(ToolResults{Results: []ToolResult{{CallID: "c1", Content: "again", Media: []cadre.Media{wav}}}})
	cm, ok := only[CallModel](h.step(ToolResults{Results: []ToolResult{{CallID: "c2", Content: "text only"}}}))
	if !ok {
		t.Fatalf("want a CallModel after both results, got %#v", h.acts)
	}
	msgs := cm.Request.Messages
	want := []cadre.Message{
		{Role: cadre.RoleTool, ToolCallID: "c1", ToolName: "read_file", Content: in.Results[0].Content, Media: []cadre.Media{png, wav}},
		{Role: cadre.RoleTool, ToolCallID: "c2", ToolName: "read_file", Content: "text only"},
	}
	if diff := cmp.Diff(want, msgs[len(msgs)-2:]); diff != "" {
		t.Errorf("tool messages of the next request (-want +got):\n%s", diff)
	}
}
