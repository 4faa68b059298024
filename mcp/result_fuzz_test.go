package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Whatever a server answers a tool call with, what cadre makes of it for
// a model is text plus media whose types were read from their bytes and
// which keep within the limits, without a panic; every medium passed on
// stands in the text as its placeholder.
func FuzzResult(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hello"}]}`,
		`{"content":[{"type":"image","mimeType":"image/png","data":"iVBORw0KGgoAAAANSUhEUg=="},{"type":"audio","mimeType":"audio/wav","data":"UklGRgAAAABXQVZF"}]}`,
		`{"content":[{"type":"resource_link","uri":"file:///x","name":"x"},{"type":"resource","resource":{"uri":"u","text":"t"}}],"isError":true}`,
		`{"content":[],"structuredContent":{"a":[1,2,{"b":null}]}}`,
		`{"content":[{"type":"image","mimeType":"image/gif","data":"R0lGODlh"},{"type":"image","data":"/9j/4AAQ"}]}`,
	} {
		f.Add(s, 16)
	}
	f.Fuzz(func(t *testing.T, raw string, limit int) {
		var res sdk.CallToolResult
		if json.Unmarshal([]byte(raw), &res) != nil {
			return
		}
		limit = 1 + abs(limit)%64
		budget := &mediaBudget{perItem: limit, total: 2 * limit}
		text := resultText(&res, budget)
		used := 0
		for _, m := range budget.media {
			if len(m.Data) > limit {
				t.Errorf("a medium of %d bytes was passed on over the limit of %d", len(m.Data), limit)
			}
			if m.MIMEType != sniff(m.Kind, m.Data) || m.MIMEType == "" {
				t.Errorf("a medium passed on as %q whose bytes say %q", m.MIMEType, sniff(m.Kind, m.Data))
			}
			if !strings.Contains(text, m.Placeholder()) {
				t.Errorf("the text %q does not stand for %s", text, m.Placeholder())
			}
			used += len(m.Data)
		}
		if used > 2*limit {
			t.Errorf("%d bytes of media passed on, over the limit of %d", used, 2*limit)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
