package mcp

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cadre-ai/cadre"
)

// Bytes that begin as files of each type begin.
var (
	pngBytes  = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1}, 92)...)
	jpegBytes = append([]byte("\xff\xd8\xff\xe0"), bytes.Repeat([]byte{2}, 196)...)
	wavBytes  = append([]byte("RIFF\x24\x00\x00\x00WAVEfmt "), bytes.Repeat([]byte{3}, 284)...)
	mp3Bytes  = append([]byte{0xff, 0xfb, 0x90, 0x64}, bytes.Repeat([]byte{4}, 96)...)
	oggBytes  = append([]byte("OggS"), bytes.Repeat([]byte{5}, 96)...)
)

// mediaServer is an MCP server whose tools return images and sounds.
func mediaServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "media", Version: "1"}, nil)
	add := func(name string, content ...sdk.Content) {
		sdk.AddTool(s, &sdk.Tool{Name: name, Description: "Returns media."},
			func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
				return &sdk.CallToolResult{Content: content}, nil, nil
			})
	}
	add("chart",
		&sdk.TextContent{Text: "the chart and its reading:"},
		&sdk.ImageContent{MIMEType: "image/png", Data: pngBytes},
		// A JPEG the server calls a PNG: the bytes decide.
		&sdk.ImageContent{MIMEType: "image/png", Data: jpegBytes},
		&sdk.AudioContent{MIMEType: "audio/wav", Data: wavBytes},
		&sdk.AudioContent{MIMEType: "audio/mp3", Data: mp3Bytes},
		&sdk.AudioContent{MIMEType: "audio/ogg", Data: oggBytes},
		&sdk.TextContent{Text: "done"},
	)
	add("many", // over the limits of the test below
		&sdk.ImageContent{MIMEType: "image/png", Data: append(pngBytes, make([]byte, 1000)...)},
		&sdk.ImageContent{MIMEType: "image/png", Data: pngBytes},
		&sdk.ImageContent{MIMEType: "image/jpeg", Data: jpegBytes},
		&sdk.AudioContent{MIMEType: "audio/wav", Data: wavBytes},
	)
	sdk.AddTool(s, &sdk.Tool{Name: "broken", Description: "Fails with an image."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{
				&sdk.TextContent{Text: "the camera is off"}, &sdk.ImageContent{MIMEType: "image/png", Data: pngBytes}}}, nil, nil
		})
	return s
}

// An MCP tool's images and sounds come out of CallMedia as they were sent,
// in order, typed by their bytes, and the text describes each where it
// came; what a model cannot take is described with why it stays behind.
func TestCallMedia(t *testing.T) {
	c := connect(t, Config{Servers: map[string]ServerConfig{"media": inMemory(t, mediaServer())}})
	chart := tool(t, c, "mcp__media__chart")
	out, err := chart.CallMedia(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	wantText := strings.Join([]string{
		"the chart and its reading:",
		"[image: image/png, 100 bytes]",
		"[image: image/jpeg, 200 bytes]",
		"[audio: audio/wav, 300 bytes]",
		"[audio: audio/mpeg, 100 bytes]",
		"[audio: audio/ogg, 100 bytes; not passed on: its bytes are not WAV or MP3 audio]",
		"done",
	}, "\n")
	if diff := cmp.Diff(wantText, out.Text); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
	wantMedia := []cadre.Media{
		{Kind: cadre.MediaImage, MIMEType: "image/png", Data: pngBytes},
		{Kind: cadre.MediaImage, MIMEType: "image/jpeg", Data: jpegBytes},
		{Kind: cadre.MediaAudio, MIMEType: "audio/wav", Data: wavBytes},
		{Kind: cadre.MediaAudio, MIMEType: "audio/mpeg", Data: mp3Bytes},
	}
	if diff := cmp.Diff(wantMedia, out.Media); diff != "" {
		t.Errorf("media (-want +got):\n%s", diff)
	}
	text, err := chart.Call(context.Background(), nil)
	if err != nil || text != wantText {
		t.Errorf("Call: %q, %v; want the text of CallMedia", text, err)
	}

	// A result the server marks as an error carries no media.
	out, err = tool(t, c, "mcp__media__broken").CallMedia(context.Background(), nil)
	var te *ToolError
	if !errors.As(err, &te) || out.Media != nil || !strings.Contains(te.Message, "the camera is off\n[image: image/png, 100 bytes]") {
		t.Errorf("error result: %+v, %v", out, err)
	}
}

// A server cannot fill the journal: an item over MaxMediaBytes, and the
// items that would take a result over MaxResultMediaBytes, are left out,
// and the text says why.
func TestCallMediaLimits(t *testing.T) {
	c := connect(t, Config{Servers: map[string]ServerConfig{"media": inMemory(t, mediaServer())}, MaxMediaBytes: 1000, MaxResultMediaBytes: 350})
	out, err := tool(t, c, "mcp__media__many").CallMedia(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	wantText := strings.Join([]string{
		"[image: image/png, 1 KB; not passed on: it is over the limit of 1 KB for one image or sound]",
		"[image: image/png, 100 bytes]",
		"[image: image/jpeg, 200 bytes]",
		"[audio: audio/wav, 300 bytes; not passed on: the images and sounds of this result are over the limit of 350 bytes in all]",
	}, "\n")
	if diff := cmp.Diff(wantText, out.Text); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
	if len(out.Media) != 2 || out.Media[0].MIMEType != "image/png" || out.Media[1].MIMEType != "image/jpeg" {
		t.Errorf("media %+v: want the PNG and the JPEG within the limits", out.Media)
	}
}

func TestSniff(t *testing.T) {
	for _, tt := range []struct {
		name string
		kind cadre.MediaKind
		data []byte
		want string
	}{
		{"png", cadre.MediaImage, pngBytes, "image/png"},
		{"jpeg", cadre.MediaImage, jpegBytes, "image/jpeg"},
		{"gif", cadre.MediaImage, []byte("GIF89a\x01\x00"), "image/gif"},
		{"webp", cadre.MediaImage, []byte("RIFF\x00\x00\x00\x00WEBPVP8 "), "image/webp"},
		{"wav_as_image", cadre.MediaImage, wavBytes, ""},
		{"svg", cadre.MediaImage, []byte("<svg xmlns='http://www.w3.org/2000/svg'/>"), ""},
		{"empty", cadre.MediaImage, nil, ""},
		{"wav", cadre.MediaAudio, wavBytes, "audio/wav"},
		{"mp3_id3", cadre.MediaAudio, []byte("ID3\x04\x00"), "audio/mpeg"},
		{"mp3_frame", cadre.MediaAudio, mp3Bytes, "audio/mpeg"},
		{"aac_adts", cadre.MediaAudio, []byte{0xff, 0xf1, 0x50, 0x80}, ""},
		{"ogg", cadre.MediaAudio, oggBytes, ""},
		{"png_as_audio", cadre.MediaAudio, pngBytes, ""},
		{"short_riff", cadre.MediaAudio, []byte("RIFF"), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := sniff(tt.kind, tt.data); got != tt.want {
				t.Errorf("sniff = %q, want %q", got, tt.want)
			}
		})
	}
}

// A result passes on at most maxResultMedia items, however small; the
// text says why the rest stayed behind.
func TestMediaBudgetItems(t *testing.T) {
	b := &mediaBudget{perItem: DefaultMaxMediaBytes, total: DefaultMaxResultMediaBytes}
	var last string
	for range maxResultMedia + 1 {
		last = b.add(cadre.MediaImage, "image/png", pngBytes)
	}
	if len(b.media) != maxResultMedia {
		t.Errorf("%d items passed on, want %d", len(b.media), maxResultMedia)
	}
	if want := "[image: image/png, 100 bytes; not passed on: a result passes on at most 100 images and sounds]"; last != want {
		t.Errorf("the last item reads %q, want %q", last, want)
	}
}
