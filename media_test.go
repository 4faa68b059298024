package cadre_test

import (
	"testing"

	"github.com/cadre-ai/cadre"
)

func TestMediaText(t *testing.T) {
	png := cadre.Media{Kind: cadre.MediaImage, MIMEType: "image/png", Data: make([]byte, 12_300)}
	odd := cadre.Media{Data: make([]byte, 2_500_000)}
	for _, tt := range []struct {
		name, got, want string
	}{
		{"placeholder", png.Placeholder(), "[image: image/png, 12 KB]"},
		{"placeholder_untyped", odd.Placeholder(), "[media: unknown type, 2.5 MB]"},
		{"left_out", png.LeftOut("this model does not take images"), "[image: image/png, 12 KB: not shown to you, since this model does not take images]"},
		{"leave_out_in_place", cadre.LeaveOut("a chart:\n[image: image/png, 12 KB]\ndone", png, "why"),
			"a chart:\n[image: image/png, 12 KB: not shown to you, since why]\ndone"},
		{"leave_out_twice", cadre.LeaveOut(cadre.LeaveOut("[image: image/png, 12 KB] [image: image/png, 12 KB]", png, "a"), png, "b"),
			"[image: image/png, 12 KB: not shown to you, since a] [image: image/png, 12 KB: not shown to you, since b]"},
		{"leave_out_undescribed", cadre.LeaveOut("a chart", png, "why"), "a chart\n[image: image/png, 12 KB: not shown to you, since why]"},
		{"leave_out_empty", cadre.LeaveOut("", png, "why"), "[image: image/png, 12 KB: not shown to you, since why]"},
		{"bytes", cadre.ByteSize(999), "999 bytes"},
		{"kilobytes", cadre.ByteSize(1000), "1 KB"},
		{"megabytes", cadre.ByteSize(5_000_000), "5.0 MB"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got  %q\nwant %q", tt.got, tt.want)
			}
		})
	}
}
