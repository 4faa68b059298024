package mcp

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/cadre-ai/cadre"
)

// maxResultMedia bounds the number of images and sounds passed on from
// one result. Without it, thousands of tiny images would each be journaled
// and, once a request holds more than it may send, each described in the
// text every request sends, past what MaxResultBytes allows the text.
const maxResultMedia = 100

// mediaBudget decides which images and sounds of one result are passed on:
// those whose bytes are of a type cadre knows, within the limits of one
// item and of the whole result.
type mediaBudget struct {
	perItem, total int
	used           int
	media          []cadre.Media
}

// add takes one image or sound of a result and returns the text that
// stands for it: its placeholder, with why it was not passed on when it
// was not.
func (b *mediaBudget) add(kind cadre.MediaKind, mime string, data []byte) string {
	m := cadre.Media{Kind: kind, MIMEType: mime, Data: data}
	var why string
	switch {
	case len(data) > b.perItem:
		why = fmt.Sprintf("it is over the limit of %s for one image or sound", cadre.ByteSize(b.perItem))
	case b.used+len(data) > b.total:
		why = fmt.Sprintf("the images and sounds of this result are over the limit of %s in all", cadre.ByteSize(b.total))
	case len(b.media) >= maxResultMedia:
		why = fmt.Sprintf("a result passes on at most %d images and sounds", maxResultMedia)
	default:
		typ := sniff(kind, data)
		if typ == "" {
			why = "its bytes are not " + known[kind]
			break
		}
		// The bytes say what they are; a server may name the type wrongly.
		m.MIMEType = typ
		b.used += len(data)
		b.media = append(b.media, m)
		return m.Placeholder()
	}
	return strings.TrimSuffix(m.Placeholder(), "]") + "; not passed on: " + why + "]"
}

// known says, for each kind, the types sniff recognizes.
var known = map[cadre.MediaKind]string{
	cadre.MediaImage: "a PNG, JPEG, GIF or WebP image",
	cadre.MediaAudio: "WAV or MP3 audio",
}

// sniff returns the MIME type of data when it is one of the types of kind
// that models take (PNG, JPEG, GIF and WebP images; WAV and MP3 audio),
// and "" otherwise.
func sniff(kind cadre.MediaKind, data []byte) string {
	riff := func(form string) bool {
		return len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == form
	}
	switch kind {
	case cadre.MediaImage:
		switch {
		case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
			return "image/png"
		case bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
			return "image/jpeg"
		case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
			return "image/gif"
		case riff("WEBP"):
			return "image/webp"
		}
	case cadre.MediaAudio:
		switch {
		case riff("WAVE"):
			return "audio/wav"
		case bytes.HasPrefix(data, []byte("ID3")):
			return "audio/mpeg"
		case len(data) >= 2 && data[0] == 0xff && data[1]&0xe0 == 0xe0 && (data[1]>>1)&3 == 1:
			// An MPEG audio frame of layer III, without an ID3 tag.
			return "audio/mpeg"
		}
	}
	return ""
}
