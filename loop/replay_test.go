package loop

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
)

// TestReplayRebuildsState drives random scripted conversations, journals
// every input as JSON, replays the journal into a fresh State and checks
// that it reaches the same conversation and answers the next input with the
// same actions. Some tool results carry an image.
func TestReplayRebuildsState(t *testing.T) {
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			cfg := rootConfig()
			if rng.IntN(2) == 0 {
				cfg = childConfig(cadre.ReportTool)
				cfg.Delegate = true
				cfg.Catalog = []CatalogEntry{{Name: "researcher"}}
				cfg.EndOnReport = rng.IntN(2) == 0
			}
			live := New()
			var journal []struct {
				kind string
				data []byte
			}
			feed := func(in Input) []Action {
				b, err := json.Marshal(in)
				if err != nil {
					t.Fatal(err)
				}
				journal = append(journal, struct {
					kind string
					data []byte
				}{in.Kind(), b})
				acts := live.Step(in)
				n := 0
				for _, c := range live.children {
					if !c.ended {
						n++
					}
				}
				if live.live() != n {
					t.Fatalf("after %s: live() = %d, but %d children have not ended", in.Kind(), live.live(), n)
				}
				return acts
			}
			acts := feed(Start{Config: cfg, Task: "t", Messages: []cadre.Message{{Role: cadre.RoleUser, Content: "t"}}})
			var children []cadre.AgentID
			for step := 0; step < 30 && !live.Done(); step++ {
				var next Input
				for _, a := range acts {
					switch a := a.(type) {
					case CallModel:
						next = randomReply(rng, step)
					case CallTools:
						var res []ToolResult
						for _, c := range a.Calls {
							r := ToolResult{CallID: c.ID, Content: "ok " + c.ID}
							if rng.IntN(2) == 0 {
								// An image, whose bytes the journal holds in base64.
								r.Media = []cadre.Media{{Kind: cadre.MediaImage, MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G', byte(step), 0xff}}}
							}
							res = append(res, r)
						}
						next = ToolResults{Results: res}
					case Spawn:
						for i, c := range a.Children {
							children = append(children, c.ID)
							sp := Spawned{Ref: c.Ref, Child: c.ID}
							if (i+step)%3 == 0 {
								sp.Err = "refused"
							}
							feed(sp)
						}
					}
				}
				if next == nil && len(children) > 0 {
					c := children[rng.IntN(len(children))]
					if rng.IntN(2) == 0 {
						next = ChildReport{Child: c, Text: "report of " + string(c)}
					} else {
						next = ChildEnded{Child: c, Status: cadre.StatusDone}
					}
				}
				if next == nil {
					next = InboxMessage{From: "root/x.1", Text: "ping"}
				}
				acts = feed(next)
			}
			var inputs []Input
			for _, e := range journal {
				in, err := Decode(e.kind, e.data)
				if err != nil {
					t.Fatal(err)
				}
				inputs = append(inputs, in)
			}
			replayed := Replay(inputs)
			if diff := cmp.Diff(live.Messages(), replayed.Messages()); diff != "" {
				t.Fatalf("replayed conversation differs (-live +replayed):\n%s", diff)
			}
			if live.Done() != replayed.Done() || live.Turns() != replayed.Turns() || live.Reported() != replayed.Reported() {
				t.Fatalf("replayed state differs: done %v/%v turns %d/%d", live.Done(), replayed.Done(), live.Turns(), replayed.Turns())
			}
			probe := InboxMessage{From: "root/y.1", Text: "probe"}
			if diff := cmp.Diff(fmt.Sprintf("%#v", live.Step(probe)), fmt.Sprintf("%#v", replayed.Step(probe))); diff != "" {
				t.Fatalf("replayed state answers differently:\n%s", diff)
			}
		})
	}
}

func randomReply(rng *rand.Rand, step int) ModelResult {
	id := func(n int) string { return fmt.Sprintf("c%d_%d", step, n) }
	var calls []cadre.ToolCall
	switch rng.IntN(6) {
	case 0:
		calls = append(calls, cadre.ToolCall{ID: id(0), Name: "read_file", Arguments: `{"path":"x"}`})
	case 1:
		calls = append(calls, cadre.ToolCall{ID: id(0), Name: ToolStartBackground, Arguments: `{"prompt":"bg","agent":"researcher"}`})
	case 2:
		calls = append(calls, cadre.ToolCall{ID: id(0), Name: ToolSendAgentMessage, Arguments: `{"text":"note"}`})
	case 3:
		calls = append(calls, cadre.ToolCall{ID: id(0), Name: "bogus", Arguments: `{`})
	}
	return ModelResult{Response: &cadre.Response{Message: cadre.Message{Content: fmt.Sprintf("reply %d", step), ToolCalls: calls}, Usage: cadre.Usage{InputTokens: 10, OutputTokens: 5}}}
}
