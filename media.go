package cadre

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// MediaKind is what a Media item holds.
type MediaKind string

// The kinds of media a tool result may carry.
const (
	MediaImage MediaKind = "image"
	MediaAudio MediaKind = "audio"
)

// Media is an image or a sound that a tool returned. In JSON, and so in
// journals, Data is base64.
type Media struct {
	Kind MediaKind `json:"kind"`
	// MIMEType is the type of Data, such as "image/png" or "audio/wav".
	MIMEType string `json:"mime_type"`
	Data     []byte `json:"data"`
}

// Placeholder describes the item in words, as a model that cannot take it
// reads it in place of the item: "[image: image/png, 12 KB]".
func (m Media) Placeholder() string {
	return fmt.Sprintf("[%s: %s, %s]", m.kindName(), m.typeName(), ByteSize(len(m.Data)))
}

// LeftOut is the line a provider adds to a message in place of an item it
// does not send, why saying what the model cannot take: "[image:
// image/png, 12 KB: not shown to you, since this model does not take
// images]".
func (m Media) LeftOut(why string) string {
	return fmt.Sprintf("[%s: %s, %s: not shown to you, since %s]", m.kindName(), m.typeName(), ByteSize(len(m.Data)), why)
}

// LeaveOut returns text, the content of a message holding m, as a model
// reads it without m: m's description (its Placeholder) is replaced by
// m.LeftOut(why), or that line is added when text does not hold it.
func LeaveOut(text string, m Media, why string) string {
	if ph := m.Placeholder(); strings.Contains(text, ph) {
		return strings.Replace(text, ph, m.LeftOut(why), 1)
	}
	if text != "" {
		text += "\n"
	}
	return text + m.LeftOut(why)
}

func (m Media) kindName() string {
	if m.Kind == "" {
		return "media"
	}
	return string(m.Kind)
}

func (m Media) typeName() string {
	if m.MIMEType == "" {
		return "unknown type"
	}
	return m.MIMEType
}

// ByteSize writes a number of bytes as people read it: 900 bytes, 12 KB,
// 3.4 MB.
func ByteSize(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d bytes", n)
	case n < 1000*1000:
		return fmt.Sprintf("%d KB", (n+500)/1000)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// ToolOutput is the result of a MediaTool's call: text, and the images or
// sounds the text refers to.
type ToolOutput struct {
	// Text is the result as a model that takes text only reads it: each
	// item of Media is described in it, where it came in the result
	// (Media.Placeholder), so that leaving an item out loses only the
	// item.
	Text  string
	Media []Media
}

// A MediaTool is a Tool whose results may hold images or sounds. The
// engine calls CallMedia instead of Call, and passes the media on to the
// model with the text; Call gives the text alone. The tool bounds the size
// of what it returns: every item ends up in the run's journal.
type MediaTool interface {
	Tool
	CallMedia(ctx context.Context, args json.RawMessage) (ToolOutput, error)
}
