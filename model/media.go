package model

import (
	"fmt"
	"net/http"

	"github.com/cadre-ai/cadre"
)

// The bounds of the media one request sends, for providers whose Config
// sets none: a conversation gathers the images of every tool result, and
// a request past the server's size or count limit would fail on every
// try. 20 MB is about 27 MB in base64, under the 32 MB of a request to
// the Anthropic API; 100 is its number of images per request.
const (
	DefaultMaxRequestMediaBytes = 20_000_000
	DefaultMaxRequestMediaItems = 100
)

// MediaLimit bounds the media of one request: the latest items are sent,
// up to MaxBytes and MaxItems in all; zero values mean the defaults.
type MediaLimit struct {
	MaxBytes, MaxItems int
}

// Held returns the media of msgs that are not sent because the request
// would be over the limit with them, and why, in words for the model (see
// cadre.LeaveOut). Only the items sendable reports true of count; the
// latest are kept, and every item before the first held is held too. The map's keys are a message's index and the item's
// index in its Media.
func (l MediaLimit) Held(msgs []cadre.Message, sendable func(cadre.Media) bool) (map[[2]int]bool, string) {
	maxBytes, maxItems := l.MaxBytes, l.MaxItems
	if maxBytes <= 0 {
		maxBytes = DefaultMaxRequestMediaBytes
	}
	if maxItems <= 0 {
		maxItems = DefaultMaxRequestMediaItems
	}
	var held map[[2]int]bool
	bytes, items, full := 0, 0, false
	for i := len(msgs) - 1; i >= 0; i-- {
		media := msgs[i].Media
		for j := len(media) - 1; j >= 0; j-- {
			if !sendable(media[j]) {
				continue
			}
			// Once one is left out, so are all before it: the model sees
			// the latest, without gaps.
			full = full || items+1 > maxItems || bytes+len(media[j].Data) > maxBytes
			if full {
				if held == nil {
					held = map[[2]int]bool{}
				}
				held[[2]int{i, j}] = true
				continue
			}
			items++
			bytes += len(media[j].Data)
		}
	}
	return held, fmt.Sprintf("a request holds at most %d images and sounds, %s in all, and later ones were sent instead", maxItems, cadre.ByteSize(maxBytes))
}

// MediaHint is the hint for a request that sent n images or sounds from
// tool results and that the server refused as invalid (HTTP 400): the
// likeliest reason is a model that takes text only, which Config.Input
// (input: in the configuration file) can say.
func MediaHint(n int, modelName string) string {
	items := "an image or sound"
	if n > 1 {
		items = fmt.Sprintf("%d images or sounds", n)
	}
	return fmt.Sprintf("the request sent %s from tool results: if model %q takes text only, give it input: [text] in .cadre/config.yaml, on the model under models: or on its provider under providers:, and cadre describes them to it instead", items, modelName)
}

// RefusedMedia returns hint, wrapped so that a request refused as invalid
// (HTTP 400) after it sent n images or sounds gets MediaHint beside the
// usual reasons; n of 0 returns hint as it is.
func RefusedMedia(hint func(error, int) string, n int, modelName string) func(error, int) string {
	if n == 0 {
		return hint
	}
	return func(err error, status int) string {
		if status == http.StatusBadRequest {
			return badRequestHint + "; or " + MediaHint(n, modelName)
		}
		return hint(err, status)
	}
}
