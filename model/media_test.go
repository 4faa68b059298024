package model_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model"
)

// The latest media that fit are kept, and none before one that did not;
// those the provider cannot send do not count.
func TestMediaLimitHeld(t *testing.T) {
	item := func(kind cadre.MediaKind, n int) cadre.Media {
		return cadre.Media{Kind: kind, MIMEType: "x/y", Data: make([]byte, n)}
	}
	msgs := []cadre.Message{
		{Role: cadre.RoleUser, Content: "look"},
		{Role: cadre.RoleTool, Media: []cadre.Media{item(cadre.MediaImage, 40), item(cadre.MediaImage, 5)}},
		{Role: cadre.RoleTool, Media: []cadre.Media{item(cadre.MediaAudio, 1000)}},
		{Role: cadre.RoleTool, Media: []cadre.Media{item(cadre.MediaImage, 50), item(cadre.MediaImage, 20)}},
	}
	images := func(m cadre.Media) bool { return m.Kind == cadre.MediaImage }
	for _, tt := range []struct {
		name  string
		limit model.MediaLimit
		want  map[[2]int]bool
	}{
		{"all_fit", model.MediaLimit{}, nil},
		{"bytes", model.MediaLimit{MaxBytes: 100}, map[[2]int]bool{{1, 0}: true}},
		// The 5-byte image would fit, but the image after it did not.
		{"no_gaps", model.MediaLimit{MaxBytes: 60}, map[[2]int]bool{{1, 0}: true, {1, 1}: true, {3, 0}: true}},
		{"items", model.MediaLimit{MaxItems: 2}, map[[2]int]bool{{1, 0}: true, {1, 1}: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			held, why := tt.limit.Held(msgs, images)
			if diff := cmp.Diff(tt.want, held); diff != "" {
				t.Errorf("held (-want +got):\n%s", diff)
			}
			if why == "" {
				t.Error("no reason")
			}
		})
	}
}
