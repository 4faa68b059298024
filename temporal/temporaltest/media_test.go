package temporaltest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model/scripted"
)

// camera is a MediaTool whose result holds a photo.
type camera struct{}

var photo = cadre.Media{Kind: cadre.MediaImage, MIMEType: "image/png", Data: []byte("\x89PNG\r\n\x1a\na photo")}

func (camera) Spec() cadre.ToolSpec {
	return cadre.ToolSpec{Name: "snap", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (camera) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return "", fmt.Errorf("the engine called Call, not CallMedia")
}

func (camera) CallMedia(ctx context.Context, args json.RawMessage) (cadre.ToolOutput, error) {
	return cadre.ToolOutput{Text: "the desk: " + photo.Placeholder(), Media: []cadre.Media{photo}}, nil
}

// The Temporal engine runs a MediaTool through CallMedia and describes
// its photo to the model instead of passing the bytes on.
func TestScenarioToolMedia(t *testing.T) {
	var mu sync.Mutex
	var result cadre.Message
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Turn == 1 {
			return calls(tc("s", "snap", nil)), nil
		}
		mu.Lock()
		result = req.Messages[len(req.Messages)-1]
		mu.Unlock()
		return text("a desk"), nil
	})
	e, _ := newEngine(t, setup{Model: m, Tools: []cadre.Tool{camera{}}})
	res, _ := runToEnd(t, e, "what is on the desk?")
	if res.Answer != "a desk" {
		t.Errorf("answer %q", res.Answer)
	}
	mu.Lock()
	defer mu.Unlock()
	want := "the desk: [image: image/png, 15 bytes: not shown to you, since the Temporal engine does not carry images or sounds to the model]"
	if result.Role != cadre.RoleTool || result.Content != want || result.Media != nil || result.IsError {
		t.Errorf("the model read %+v\nwant the content %q and no media", result, want)
	}
}
