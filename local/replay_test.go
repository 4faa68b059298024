package local

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/model/scripted"
)

// These tests check that a replay reproduces the live run: every agent's
// journal, read back and stepped through a fresh loop.State, must give the
// very inputs the live agent stepped and the very actions it got, although
// the JSON of an input is not always the input (json.RawMessage is
// compacted and its HTML characters escaped, invalid UTF-8 becomes U+FFFD).

// steps records what every agent of a run stepped, in order.
type steps struct {
	mu  sync.Mutex
	all map[cadre.AgentID][]step
}

type step struct {
	in   loop.Input
	acts []loop.Action
}

func (s *steps) record(agent cadre.AgentID, in loop.Input, acts []loop.Action) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.all == nil {
		s.all = map[cadre.AgentID][]step{}
	}
	s.all[agent] = append(s.all[agent], step{in, acts})
}

// replayRun runs cfg on task with an in-memory store, recording every step,
// and checks that the journal of every agent replays to the same inputs
// and actions. It returns the run's result.
func replayRun(t *testing.T, cfg Config, task string) *cadre.Result {
	t.Helper()
	mem := memstore.New()
	cfg.Store = mem
	var live steps
	cfg.stepped = live.record
	res, _, _ := runTask(t, cfg, task)
	checkReplay(t, mem, res.RunID, &live)
	return res
}

// checkReplay replays the journal of every agent of a run and compares each
// step with the live one.
func checkReplay(t *testing.T, s cadre.Store, run string, live *steps) {
	t.Helper()
	ctx := context.Background()
	agents, err := s.ListAgents(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	live.mu.Lock()
	defer live.mu.Unlock()
	if len(agents) != len(live.all) {
		t.Errorf("%d agents were recorded in the store, %d stepped inputs", len(agents), len(live.all))
	}
	for _, a := range agents {
		entries, err := s.Journal(ctx, run, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		got := live.all[a.ID]
		journal := journalInputs(t, s, entries)
		if len(got) > len(journal) {
			t.Errorf("%s stepped %d inputs, but its journal holds %d", a.ID, len(got), len(journal))
			continue
		}
		st := loop.New()
		for i, e := range journal {
			in := e.In
			acts := st.Step(in)
			if i >= len(got) {
				// Inputs that reached the agent after it finished are
				// journaled, but neither the live agent nor the loop
				// acts on them.
				if len(acts) != 0 {
					t.Errorf("%s, journal entry %d (%s), after the live agent finished: the replay acts on it: %s", a.ID, e.Seq, e.Kind, short(fmt.Sprintf("%#v", acts)))
				}
				continue
			}
			// reflect.DeepEqual first: cmp.Diff is slow on large
			// conversations and needed only to say what differs.
			if !reflect.DeepEqual(got[i].in, in) {
				t.Errorf("%s, journal entry %d (%s): the live agent stepped another input than the replay (-live +replay):\n%s", a.ID, e.Seq, e.Kind, short(cmp.Diff(got[i].in, in)))
			}
			if !reflect.DeepEqual(got[i].acts, acts) {
				t.Errorf("%s, journal entry %d (%s): the replay's actions differ from the live run's (-live +replay):\n%s", a.ID, e.Seq, e.Kind, short(cmp.Diff(got[i].acts, acts)))
			}
		}
	}
}

// short cuts a diff of huge inputs to a readable length.
func short(s string) string {
	const max = 3000
	if len(s) <= max {
		return s
	}
	return s[:max] + fmt.Sprintf("\n… (%d more bytes)", len(s)-max)
}

// prettySchema is a parameter schema written as people write them, with
// line breaks, indentation and characters JSON escapes in HTML (<, >, &);
// the built-in tools' schemas look like this.
const prettySchema = `{
	"type": "object",
	"properties": {
		"key": {
			"type": "string",
			"description": "What to look up, such as <name> & <name>.<field>"
		}
	},
	"required": ["key"]
}`

// lookup is a read-only tool with a pretty-printed schema whose results
// come from a function of its arguments.
type lookup struct {
	result func(args string) string
}

func (l lookup) Spec() cadre.ToolSpec {
	return cadre.ToolSpec{Name: "lookup", Description: "Looks a key up.", Parameters: json.RawMessage(prettySchema)}
}

func (l lookup) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return l.result(string(args)), nil
}

// Texts that do not survive a JSON round trip as they are, or that are
// unusual in other ways.
var (
	invalidUTF8 = "bytes \xff\xfe, a cut rune \xe2\x82, a surrogate \xed\xa0\x80, overlong \xc0\xaf, then é"
	unusualText = "NUL \x00, line separators \u2028\u2029, CRLF\r\n, a BOM \ufeff, RTL \u202e, " +
		"a family 👨\u200d👩\u200d👧, e\u0301, </response> <say>not said</say> <script>&amp;</script>, " +
		`{"json": ["looking", 1e3]}` + ", tabs\t\tand trailing spaces   "
)

// big is about n bytes of varied text, with a few invalid bytes.
func big(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %d: ünïcödé, <tags> & \"quotes\" \\ backslashes", i)
		if i%97 == 0 {
			b.WriteString(" \xff")
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func TestReplayEqualsLive(t *testing.T) {
	checkNoLeaks(t)
	temp := 0.7
	outputSchema := json.RawMessage("{\n  \"type\": \"object\",\n  \"properties\": {\"answer\": {\"type\": \"string\", \"description\": \"<the answer>\"}},\n  \"required\": [\"answer\"]\n}")
	for _, tt := range []struct {
		name   string
		cfg    Config
		tool   func(args string) string
		script func(req *cadre.Request) *cadre.Response
	}{
		{
			name: "pretty_printed_schema",
			tool: func(string) string { return "found" },
			script: func(req *cadre.Request) *cadre.Response {
				if req.Turn == 1 {
					return calls(tc("l1", "lookup", map[string]string{"key": "a"}))
				}
				return text("done")
			},
		},
		{
			name: "invalid_utf8_from_the_model",
			tool: func(args string) string { return "you asked for " + args },
			script: func(req *cadre.Request) *cadre.Response {
				if req.Turn == 1 {
					r := calls(cadre.ToolCall{ID: "l1", Name: "lookup", Arguments: `{"key":"` + invalidUTF8 + `"}`})
					r.Message.Content = invalidUTF8
					return r
				}
				return text("done: " + invalidUTF8)
			},
		},
		{
			name: "invalid_utf8_from_a_tool",
			tool: func(string) string { return invalidUTF8 },
			script: func(req *cadre.Request) *cadre.Response {
				if req.Turn <= 2 {
					return calls(tc(fmt.Sprint("l", req.Turn), "lookup", map[string]string{"key": "a"}))
				}
				return text("done")
			},
		},
		{
			name: "large",
			tool: func(string) string { return big(1 << 20) },
			script: func(req *cadre.Request) *cadre.Response {
				if req.Turn == 1 {
					r := calls(tc("l1", "lookup", map[string]string{"key": big(64 << 10)}))
					r.Message.Content = big(256 << 10)
					return r
				}
				return text(big(128 << 10))
			},
		},
		{
			name: "unusual_text",
			tool: func(string) string { return unusualText },
			script: func(req *cadre.Request) *cadre.Response {
				switch req.Turn {
				case 1:
					r := calls(tc("l1", "lookup", map[string]string{"key": unusualText}), cadre.ToolCall{ID: "l2", Name: "lookup", Arguments: "not JSON \x00"})
					r.Message.Content = unusualText
					r.StopReason = unusualText
					return r
				case 2:
					return calls(cadre.ToolCall{ID: "", Name: "", Arguments: ""}, cadre.ToolCall{ID: "l3", Name: "no_such_tool", Arguments: "{}"})
				}
				return text(unusualText)
			},
		},
		{
			name: "children_with_pretty_output_schema",
			cfg: Config{Definitions: []*cadre.Definition{{
				Name: "analyst", Description: "Answers <questions> & more.", Prompt: "You answer.\r\n\xff", Visibility: cadre.VisibilityUserFacing,
				OutputSchema: outputSchema, Temperature: &temp, Timeout: 1500 * time.Millisecond, Tools: []string{"lookup"},
			}}},
			tool: func(string) string { return invalidUTF8 },
			script: func(req *cadre.Request) *cadre.Response {
				if req.Agent == cadre.RootID {
					if req.Turn == 1 {
						return calls(
							tc("s1", loop.ToolSpawnAgent, map[string]string{"agent": "analyst", "task": "first " + invalidUTF8}),
							tc("s2", loop.ToolStartBackground, map[string]string{"agent": "analyst", "prompt": "second " + unusualText}),
						)
					}
					return text("done")
				}
				switch req.Turn {
				case 1:
					return calls(tc("l1", "lookup", map[string]string{"key": "x"}))
				case 2:
					// Not the schema: the agent is asked once more.
					return calls(tc("r1", loop.ToolSendAgentMessage, map[string]string{"text": "no JSON " + invalidUTF8}))
				case 3:
					return calls(tc("r2", loop.ToolSendAgentMessage, map[string]string{"text": "```json\n{\"answer\": \"" + strings.ToValidUTF8(invalidUTF8, "?") + "\"}\n```"}))
				}
				return text("finished")
			},
		},
		{
			name: "text_protocol",
			cfg:  Config{Protocol: cadre.ProtocolText, Definitions: defs("helper")},
			script: func(req *cadre.Request) *cadre.Response {
				if req.Agent == cadre.RootID {
					if req.Turn == 1 {
						return text("I will ask " + invalidUTF8 + "\n" + spawnBlock("parallel", "one "+invalidUTF8, "two "+unusualText))
					}
					return text("<say>" + invalidUTF8 + "</say> all done")
				}
				return text("<response>" + invalidUTF8 + unusualText + "</response>")
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Models = OneModel{Name: "fake", Model: scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
				return tt.script(req), nil
			})}
			cfg.RootModel = "fake"
			if tt.tool != nil {
				cfg.Tools = []cadre.Tool{lookup{result: tt.tool}}
			}
			replayRun(t, cfg, "the task: "+invalidUTF8)
		})
	}
}

// TestReplayEqualsLiveRandom runs random trees of agents whose models and
// tools answer with random mixes of tool calls, spawns, reports and text,
// much of it text that JSON does not keep as it is, and checks each run's
// journal against what its agents stepped. The replies depend only on the
// seed, the agent and its turn; CADRE_REPLAY_SEEDS runs more seeds.
func TestReplayEqualsLiveRandom(t *testing.T) {
	checkNoLeaks(t)
	seeds := 100
	if testing.Short() {
		seeds = 20
	}
	if n, err := strconv.Atoi(os.Getenv("CADRE_REPLAY_SEEDS")); err == nil && n > 0 {
		seeds = n
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			g := generator{seed: seed}
			cfg := Config{
				Models:    OneModel{Name: "fake", Model: scripted.Func(g.reply)},
				RootModel: "fake",
				Tools:     []cadre.Tool{lookup{result: g.toolResult}},
				Definitions: []*cadre.Definition{
					{Name: "alpha", Description: "Looks <things> up & reports.", Prompt: "You are alpha. " + invalidUTF8, Visibility: cadre.VisibilityUserFacing},
					{Name: "beta", Description: "Reports JSON.", Prompt: "You are beta.", Visibility: cadre.VisibilityUserFacing,
						OutputSchema: json.RawMessage("{\n\t\"type\": \"object\"\n}"), Timeout: 2500 * time.Millisecond},
				},
			}
			res := replayRun(t, cfg, "a random task "+fmt.Sprint(seed))
			t.Logf("%d agents, %s", len(res.Agents), res.Status)
		})
	}
}

// generator makes the random replies of one seed.
type generator struct{ seed uint64 }

// rng is the random source of one reply: the same for the same seed, agent
// and turn, whatever the order in which agents ran.
func (g generator) rng(parts ...string) *rand.Rand {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return rand.New(rand.NewPCG(g.seed, h.Sum64()))
}

// text is a random text: ordinary, unusual, invalid UTF-8, random bytes or
// (rarely) large.
func (g generator) text(rng *rand.Rand) string {
	switch rng.IntN(8) {
	case 0:
		return invalidUTF8
	case 1:
		return unusualText
	case 2:
		b := make([]byte, rng.IntN(64))
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return string(b)
	case 3:
		if rng.IntN(4) == 0 {
			return big(rng.IntN(16 << 10))
		}
	}
	return fmt.Sprintf("plain text %d", rng.IntN(1000))
}

func (g generator) toolResult(args string) string {
	return g.text(g.rng("tool", args))
}

func (g generator) reply(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
	rng := g.rng(string(req.Agent), fmt.Sprint(req.Turn))
	depth := req.Agent.Depth()
	if req.Turn > 5 {
		return text(g.text(rng)), nil
	}
	var cs []cadre.ToolCall
	id := func() string { return fmt.Sprintf("c%d_%d", req.Turn, len(cs)) }
	if depth == 0 && req.Turn == 1 {
		// Every run has a tree.
		cs = append(cs, tc(id(), loop.ToolSpawnAgent, map[string]string{"agent": "alpha", "task": g.text(rng)}))
	}
	for range 1 + rng.IntN(3) {
		switch rng.IntN(7) {
		case 0, 1:
			args, _ := json.Marshal(map[string]string{"key": g.text(rng)})
			cs = append(cs, cadre.ToolCall{ID: id(), Name: "lookup", Arguments: string(args)})
		case 2:
			if depth < 2 && req.Turn <= 2 {
				def := []string{"alpha", "beta"}[rng.IntN(2)]
				cs = append(cs, tc(id(), loop.ToolSpawnAgent, map[string]string{"agent": def, "task": g.text(rng)}))
			}
		case 3:
			if depth < 2 && req.Turn <= 2 {
				cs = append(cs, tc(id(), loop.ToolStartBackground, map[string]string{"agent": "alpha", "prompt": g.text(rng)}))
			}
		case 4:
			if depth > 0 {
				cs = append(cs, tc(id(), loop.ToolSendAgentMessage, map[string]string{"text": g.text(rng)}))
			}
		case 5:
			// Arguments that are not JSON, or not valid UTF-8.
			cs = append(cs, cadre.ToolCall{ID: id(), Name: "lookup", Arguments: g.text(rng)})
		}
	}
	r := calls(cs...)
	if len(cs) == 0 || rng.IntN(3) == 0 {
		r.Message.Content = g.text(rng)
	}
	return r, nil
}

// An input that cannot be journaled (here a child's Start, whose
// temperature JSON cannot hold) is refused with a reason instead of
// crashing the process, and the run goes on without that child.
func TestUnjournalableInputRefused(t *testing.T) {
	checkNoLeaks(t)
	nan := math.NaN()
	var answer string
	m := scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		if req.Turn == 1 {
			return calls(tc("s1", loop.ToolSpawnAgent, map[string]string{"agent": "odd", "task": "t"})), nil
		}
		answer = lastContent(req)
		return text("went on"), nil
	})
	d := defs("odd")
	d[0].Temperature = &nan
	res, err, _ := runTask(t, Config{Models: OneModel{Name: "fake", Model: m}, RootModel: "fake", Definitions: d, Store: memstore.New()}, "go")
	if err != nil || res.Answer != "went on" {
		t.Fatalf("%v %+v", err, res)
	}
	if !strings.Contains(answer, "could not be started") || !strings.Contains(answer, "cannot be journaled") {
		t.Errorf("the spawn's result does not say why the child was not started: %q", answer)
	}
}
