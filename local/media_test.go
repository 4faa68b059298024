package local

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/model/scripted"
	"github.com/cadre-ai/cadre/tool"
)

// camera is a MediaTool whose results hold a photo and a sound, or fail
// when the argument says so. Call, which the engine must not use, is
// counted.
type camera struct {
	name     string
	mutates  bool
	mu       sync.Mutex
	plain    int
	withData int
}

var (
	photo = cadre.Media{Kind: cadre.MediaImage, MIMEType: "image/png", Data: append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 3000)...)}
	sound = cadre.Media{Kind: cadre.MediaAudio, MIMEType: "audio/wav", Data: append([]byte("RIFF\x00\x00\x00\x00WAVE"), make([]byte, 500)...)}
)

var _ cadre.MediaTool = (*camera)(nil)

func (c *camera) Spec() cadre.ToolSpec {
	return cadre.ToolSpec{Name: c.name, Parameters: json.RawMessage(`{"type":"object","properties":{"fail":{"type":"boolean"}}}`)}
}

func (c *camera) Mutates() bool { return c.mutates }

func (c *camera) Call(ctx context.Context, args json.RawMessage) (string, error) {
	c.mu.Lock()
	c.plain++
	c.mu.Unlock()
	out, err := c.snap(args)
	return out.Text, err
}

func (c *camera) CallMedia(ctx context.Context, args json.RawMessage) (cadre.ToolOutput, error) {
	c.mu.Lock()
	c.withData++
	c.mu.Unlock()
	return c.snap(args)
}

func (c *camera) snap(args json.RawMessage) (cadre.ToolOutput, error) {
	var a struct{ Fail bool }
	_ = json.Unmarshal(args, &a)
	if a.Fail {
		return cadre.ToolOutput{}, errors.New("the lens is covered")
	}
	return cadre.ToolOutput{Text: "the desk:\n" + photo.Placeholder() + "\n" + sound.Placeholder(), Media: []cadre.Media{photo, sound}}, nil
}

func (c *camera) calls() (plain, withData int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.plain, c.withData
}

// The images and sounds of a MediaTool's result reach the next model call
// on the tool message, through the runner, its approval policy and the
// journal; events show the text; a failed or refused call carries none;
// and the journal replays to what the agent stepped.
func TestToolMediaReachesModel(t *testing.T) {
	for name, runner := range map[string]ToolRunner{
		"executor": &tool.Executor{Approver: &tool.Approver{Mode: tool.ApproveNone}},
		"direct":   nil,
	} {
		t.Run(name, func(t *testing.T) {
			checkNoLeaks(t)
			look := &camera{name: "look"}
			shoot := &camera{name: "shoot", mutates: true}
			var results map[string]cadre.Message
			m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
				if req.Turn == 1 {
					return calls(
						tc("a", "look", map[string]any{}),
						tc("b", "look", map[string]any{"fail": true}),
						tc("c", "shoot", map[string]any{}),
					), nil
				}
				results = toolResults(*req)
				return text("done"), nil
			})
			mem := memstore.New()
			var live steps
			cfg := Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Tools: []cadre.Tool{look, shoot}, Runner: runner, Store: mem, stepped: live.record}
			res, err, ev := runTask(t, cfg, "what is on the desk?")
			if err != nil {
				t.Fatal(err)
			}
			checkReplay(t, mem, res.RunID, &live)

			want := cadre.Message{Role: cadre.RoleTool, ToolCallID: "a", ToolName: "look",
				Content: "the desk:\n[image: image/png, 3 KB]\n[audio: audio/wav, 512 bytes]", Media: []cadre.Media{photo, sound}}
			if diff := cmp.Diff(want, results["a"]); diff != "" {
				t.Errorf("the result of look (-want +got):\n%s", diff)
			}
			if r := results["b"]; !r.IsError || !strings.Contains(r.Content, "the lens is covered") || r.Media != nil {
				t.Errorf("a failed call: %+v", r)
			}
			c := results["c"]
			if name == "executor" {
				// The approval policy refuses a tool that changes
				// something: it never runs.
				if !c.IsError || c.Media != nil {
					t.Errorf("a refused call: %+v", c)
				}
				if plain, withData := shoot.calls(); plain+withData != 0 {
					t.Errorf("the refused tool ran %d times", plain+withData)
				}
			} else if c.IsError || len(c.Media) != 2 {
				t.Errorf("shoot: %+v", c)
			}
			if plain, withData := look.calls(); plain != 0 || withData != 2 {
				t.Errorf("look was called %d times through Call and %d through CallMedia; want 0 and 2", plain, withData)
			}
			for _, e := range ev.of(cadre.EventToolResult) {
				b, _ := json.Marshal(e)
				if len(b) > 1000 || strings.Contains(string(b), "iVBOR") {
					t.Errorf("a tool_result event holds the media: %.300s", b)
				}
			}
		})
	}
}

// A run that stops after a MediaTool's result was journaled resumes with
// the media read back from the journal: the next model call gets them as
// the live run would have, and the tool is not called again.
func TestToolMediaResumed(t *testing.T) {
	checkNoLeaks(t)
	script := func(got *[]cadre.Message) cadre.Model {
		return scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
			if req.Turn == 1 {
				return calls(tc("a", "look", map[string]any{})), nil
			}
			*got = toolMessages(req)
			return text("done"), nil
		})
	}
	config := func(m cadre.Model, s cadre.Store, cam *camera) Config {
		return Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Tools: []cadre.Tool{cam}, Store: s}
	}
	var live []cadre.Message
	full := memstore.New()
	done, err, _ := runTask(t, config(script(&live), full, &camera{name: "look"}), "look")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := full.Journal(context.Background(), done.RunID, cadre.RootID)
	if err != nil {
		t.Fatal(err)
	}

	// The process dies when it would journal the reply to the result.
	mem := memstore.New()
	crash := &crashStore{Store: mem, limit: len(entries) - 1}
	var before []cadre.Message
	cam := &camera{name: "look"}
	r, err := begin(New(testConfig(config(script(&before), crash, cam))), "look")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(); err == nil || !crash.dead() {
		t.Fatalf("the run did not stop with its store: %v", err)
	}
	var resumed []cadre.Message
	r2, err := resumeRun(New(testConfig(config(script(&resumed), mem, cam))), r.ID())
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r2.Wait(); err != nil || res.Answer != "done" {
		t.Fatalf("resumed run: %v, %+v", err, res)
	}
	if len(live) != 1 || len(live[0].Media) != 2 {
		t.Fatalf("the live run sent %+v", live)
	}
	if diff := cmp.Diff(live, resumed); diff != "" {
		t.Errorf("the resumed run's tool messages differ from the live run's (-live +resumed):\n%s", diff)
	}
	if _, withData := cam.calls(); withData != 1 {
		t.Errorf("the tool ran %d times across the crash, want once", withData)
	}
}

// toolMessages are the tool messages of a request.
func toolMessages(req *cadre.Request) []cadre.Message {
	var out []cadre.Message
	for _, m := range req.Messages {
		if m.Role == cadre.RoleTool {
			out = append(out, m)
		}
	}
	return out
}
