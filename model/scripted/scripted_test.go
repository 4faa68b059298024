package scripted_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model/scripted"
)

func load(t *testing.T, name string) *scripted.Model {
	t.Helper()
	m, err := scripted.Load(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func req(agent cadre.AgentID, turn int, msgs ...cadre.Message) *cadre.Request {
	if len(msgs) == 0 {
		msgs = []cadre.Message{{Role: cadre.RoleUser, Content: "Task: go."}}
	}
	return &cadre.Request{Agent: agent, Turn: turn, Messages: msgs}
}

func user(s string) cadre.Message { return cadre.Message{Role: cadre.RoleUser, Content: s} }

type played struct {
	chunks []string
	resp   *cadre.Response
	err    error
}

func play(t *testing.T, m cadre.Model, r *cadre.Request) played {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // failsafe only
	defer cancel()
	var p played
	for c, err := range m.Stream(ctx, r) {
		if err != nil {
			p.err = err
			break
		}
		if c.Text != "" {
			p.chunks = append(p.chunks, c.Text)
		}
		if c.Response != nil {
			p.resp = c.Response
		}
	}
	return p
}

func TestExamplesLoad(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.*")
	if len(files) < 3 {
		t.Fatalf("found %d example scripts, want the testdata examples", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if _, err := scripted.Load(f); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestDemo(t *testing.T) {
	m := load(t, "demo.yaml")
	p := play(t, m, req("root", 1))
	if p.err != nil {
		t.Fatal(p.err)
	}
	want := &cadre.Response{
		Message: cadre.Message{Role: cadre.RoleAssistant, Content: "I will ask the researcher and the writer.", ToolCalls: []cadre.ToolCall{
			{ID: "call_1_1", Name: "spawn_agent", Arguments: `{"agent":"researcher","task":"Find the release date in CHANGELOG.md."}`},
			{ID: "call_1_2", Name: "spawn_agent", Arguments: `{"agent":"writer","context":"The audience is the project's users.","task":"Draft a one-line announcement."}`},
		}},
		Usage:      cadre.Usage{InputTokens: 420, OutputTokens: 60},
		StopReason: "tool_calls",
	}
	if diff := cmp.Diff(want, p.resp); diff != "" {
		t.Errorf("root turn 1 (-want +got):\n%s", diff)
	}
	if got := strings.Join(p.chunks, ""); got != want.Message.Content || len(p.chunks) < 2 {
		t.Errorf("chunks %q, want the text in several chunks", p.chunks)
	}
	p = play(t, m, req("root/researcher.1", 2))
	if p.err != nil || p.resp.Message.ToolCalls[0].Name != "send_agent_message" {
		t.Errorf("researcher turn 2 = %+v, %v", p.resp, p.err)
	}
}

func TestLookupPrecedence(t *testing.T) {
	s := &scripted.Script{Name: "precedence", Agents: map[string][]scripted.Reply{
		"root/researcher.2": {{Text: "exact id"}},
		"researcher":        {{Text: "definition name"}},
		"root/*":            {{Text: "glob root/*"}},
		"root/res*":         {{Text: "glob root/res*"}},
		"writ*":             {{Text: "glob on name"}},
		"*":                 {{Text: "star"}},
	}}
	m, err := scripted.New(s)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		agent cadre.AgentID
		want  string
	}{
		{"root/researcher.2", "exact id"},
		{"root/researcher.1", "definition name"},
		{"root/a/researcher.7", "definition name"},
		{"root/resolver.1", "glob root/res*"},
		{"root/other.1", "glob root/*"},
		{"root/x.1/writer.3", "glob on name"},
		{"root/x.1/other.1", "star"},
		{"elsewhere", "star"},
	}
	for _, tt := range tests {
		t.Run(string(tt.agent), func(t *testing.T) {
			p := play(t, m, req(tt.agent, 1))
			if p.err != nil || p.resp.Message.Content != tt.want {
				t.Errorf("got %+v, %v; want %q", p.resp, p.err, tt.want)
			}
		})
	}
}

func TestTurnsWhenAndRepeat(t *testing.T) {
	m := load(t, "nudge.yaml")
	nudge := "You haven't sent your results to your parent agent yet. Use the send_agent_message tool to deliver your results."
	tests := []struct {
		name string
		r    *cadre.Request
		want string // text, or the first tool call's name
	}{
		{"turn 1 ignores when", req("root/forgetful.1", 1, user("Task: Count the files.")), "I counted 12 files."},
		{"nudge picks when", req("root/forgetful.1", 2, user("Task: Count the files."), cadre.Message{Role: cadre.RoleAssistant, Content: "I counted 12 files."}, user(nudge)), "send_agent_message"},
		{"when looks only at new input", req("root/forgetful.1", 2, user(nudge), cadre.Message{Role: cadre.RoleAssistant, Content: "x"}, user("go on")), "Reported."},
		{"tool results are new input", req("root/forgetful.1", 3, cadre.Message{Role: cadre.RoleAssistant}, cadre.Message{Role: cadre.RoleTool, Content: "error: you haven't sent your results"}), "send_agent_message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := play(t, m, tt.r)
			if p.err != nil {
				t.Fatal(p.err)
			}
			got := p.resp.Message.Content
			if len(p.resp.Message.ToolCalls) > 0 {
				got = p.resp.Message.ToolCalls[0].Name
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}

	f := load(t, "failures.yaml")
	for turn := 2; turn <= 5; turn++ {
		p := play(t, f, req("root/bad-args.1", turn))
		if p.err != nil || p.resp.Message.Content != "Sorry." {
			t.Errorf("turn %d: got %+v, %v; want the repeated reply", turn, p.resp, p.err)
		}
	}
	p := play(t, f, req("root/bad-args.1", 1))
	if p.err != nil || p.resp.Message.ToolCalls[0].Arguments != `{"path": "notes.md"` {
		t.Errorf("raw arguments: got %+v, %v", p.resp, p.err)
	}
}

func TestMissingReply(t *testing.T) {
	m := load(t, "demo.yaml")
	p := play(t, m, req("root/researcher.1", 4))
	var nr *scripted.NoReplyError
	if !errors.As(p.err, &nr) {
		t.Fatalf("error = %v, want a *NoReplyError", p.err)
	}
	for _, s := range []string{`"root/researcher.1"`, "turn 4", filepath.Join("testdata", "demo.yaml"), `key "researcher"`, "turns 1-3"} {
		if !strings.Contains(p.err.Error(), s) {
			t.Errorf("error %q lacks %q", p.err, s)
		}
	}
	p = play(t, m, req("root/stranger.1", 1))
	if !errors.As(p.err, &nr) || !strings.Contains(p.err.Error(), "no key matches") || !strings.Contains(p.err.Error(), `"*"`) {
		t.Errorf("error = %v, want one saying no key matches", p.err)
	}
}

func TestFailures(t *testing.T) {
	m := load(t, "failures.yaml")
	tests := []struct {
		agent  cadre.AgentID
		status int
		has    string
	}{
		{"root/flaky.1", 429, "rate limit reached"},
		{"root/broken.3", 500, "Internal Server Error"},
		{"root/anyone.1", 0, "no scripted reply for this agent"},
	}
	for _, tt := range tests {
		t.Run(string(tt.agent), func(t *testing.T) {
			p := play(t, m, req(tt.agent, 1))
			var me *cadre.ModelError
			if !errors.As(p.err, &me) || me.Status != tt.status || !strings.Contains(me.Error(), tt.has) {
				t.Errorf("error = %v, want a ModelError with status %d containing %q", p.err, tt.status, tt.has)
			}
			if p.resp != nil {
				t.Errorf("got a response %+v along with the error", p.resp)
			}
		})
	}
}

func TestDelayAndHangHonourContext(t *testing.T) {
	m := load(t, "failures.yaml")
	for _, agent := range []cadre.AgentID{"root/slow.1", "root/stuck.1"} {
		t.Run(string(agent), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			var got []string
			var err error
			done := make(chan struct{})
			go func() {
				defer close(done)
				for c, e := range m.Stream(ctx, req(agent, 1)) {
					if e != nil {
						err = e
						return
					}
					got = append(got, c.Text)
				}
			}()
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second): // failsafe only
				t.Fatal("the stream ignored the cancelled context")
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("error = %v, want context.Canceled", err)
			}
			if strings.Join(got, "") == "Too late." {
				t.Error("the delayed reply was delivered despite the cancel")
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      string
	}{
		{"unknown field", "root:\n  - txt: hi\n", `x.yaml:2:5: unknown field "txt"`},
		{"not a map", "- text: hi\n", "x.yaml:1:1:"},
		{"empty", "", "no replies"},
		{"empty list", "root: []\n", `x.yaml:1:1: key "root" has no replies`},
		{"tool without name", "root:\n  - text: a\n  - tool_calls:\n      - arguments: {}\n", "x.yaml:3:5: tool call 1 has no name"},
		{"bad status", "root:\n  - status: 42\n", "x.yaml:2:5: status 42"},
		{"bad delay", "root:\n  - delay: soon\n", "x.yaml:2:12: delay \"soon\" is not a duration"},
		{"bad glob", "\"root/[\":\n  - text: a\n", "not a valid glob pattern"},
		{"repeat not last", "root:\n  - text: a\n    repeat: true\n  - text: b\n", "x.yaml:2:5: repeat is only allowed"},
		{"hang and error", "root:\n  - hang: true\n    error: x\n", "cannot also fail"},
		{"duplicate key", "root:\n  - text: a\nroot:\n  - text: b\n", "x.yaml:3:1:"},
		{"syntax", "root:\n  - text: [\n", "x.yaml:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := scripted.Parse([]byte(tt.src), "x.yaml")
			var pe *scripted.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error = %v, want a *ParseError", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q lacks %q", err, tt.want)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := scripted.Load("testdata/nope.yaml")
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("error = %v, want one naming the file", err)
	}
}

func TestArguments(t *testing.T) {
	src := `a:
  - tool_calls:
      - {name: t1, arguments: {b: 2, a: [1, "x", {k: null}], nested: {deep: true}}}
      - {name: t2, arguments: "not json"}
      - {name: t3}
      - {name: t4, id: my-id, arguments: {n: 1.5}}
`
	s, err := scripted.Parse([]byte(src), "args.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := scripted.New(s)
	p := play(t, m, req("a", 1))
	if p.err != nil {
		t.Fatal(p.err)
	}
	want := []cadre.ToolCall{
		{ID: "call_1_1", Name: "t1", Arguments: `{"a":[1,"x",{"k":null}],"b":2,"nested":{"deep":true}}`},
		{ID: "call_1_2", Name: "t2", Arguments: `not json`},
		{ID: "call_1_3", Name: "t3", Arguments: `{}`},
		{ID: "my-id", Name: "t4", Arguments: `{"n":1.5}`},
	}
	if diff := cmp.Diff(want, p.resp.Message.ToolCalls); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
}

func TestUsageEstimate(t *testing.T) {
	m, _ := scripted.New(&scripted.Script{Agents: map[string][]scripted.Reply{"*": {{Text: strings.Repeat("x", 40)}}}})
	r := req("root", 1, user(strings.Repeat("y", 396)))
	r.System = "abcd"
	p := play(t, m, r)
	if p.err != nil {
		t.Fatal(p.err)
	}
	if diff := cmp.Diff(cadre.Usage{InputTokens: 100, OutputTokens: 10}, p.resp.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

func TestChunksSplitAtRunes(t *testing.T) {
	text := strings.Repeat("héllo wörld ✓ ", 5)
	m, _ := scripted.New(&scripted.Script{Agents: map[string][]scripted.Reply{"*": {{Text: text}}}})
	p := play(t, m, req("root", 1))
	if strings.Join(p.chunks, "") != text || len(p.chunks) < 2 || len(p.chunks) > 4 {
		t.Errorf("chunks %q do not rebuild the text in a few pieces", p.chunks)
	}
	for _, c := range p.chunks {
		if !strings.HasPrefix(text[strings.Index(text, c):], c) || !isValidUTF8(c) {
			t.Errorf("chunk %q splits a rune", c)
		}
	}
}

func isValidUTF8(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestCallsAndRequests(t *testing.T) {
	m := load(t, "demo.yaml")
	m.SetRecordLimit(3)
	play(t, m, req("root", 1, user("first")))
	play(t, m, req("root", 1, user("again")))
	play(t, m, req("root/writer.1", 1))
	play(t, m, req("root", 2))
	want := map[scripted.CallKey]int{{Agent: "root", Turn: 1}: 2, {Agent: "root/writer.1", Turn: 1}: 1, {Agent: "root", Turn: 2}: 1}
	if diff := cmp.Diff(want, m.Calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if m.TotalCalls() != 4 {
		t.Errorf("TotalCalls = %d, want 4", m.TotalCalls())
	}
	got := m.Requests()
	if len(got) != 3 || got[1].Messages[0].Content != "again" || got[2].Agent != "root/writer.1" {
		t.Errorf("requests = %+v, want the first 3", got)
	}
	if r := m.RequestsOf("root"); len(r) != 2 {
		t.Errorf("RequestsOf(root) = %d requests, want 2", len(r))
	}
}

func TestRecordedRequestsAreCopies(t *testing.T) {
	m, _ := scripted.New(&scripted.Script{Agents: map[string][]scripted.Reply{"*": {{Text: "ok", Repeat: true}}}})
	msgs := []cadre.Message{user("original")}
	play(t, m, req("root", 1, msgs...))
	msgs[0].Content = "changed"
	if got := m.Requests()[0].Messages[0].Content; got != "original" {
		t.Errorf("recorded message = %q, want the copy taken at call time", got)
	}
}

func TestTurnCountedWhenMissing(t *testing.T) {
	m := load(t, "demo.yaml")
	var got []string
	for range 3 {
		p := play(t, m, req("root/researcher.1", 0))
		if p.err != nil {
			t.Fatal(p.err)
		}
		got = append(got, p.resp.Message.Content)
	}
	if diff := cmp.Diff([]string{"Reading the changelog.", "", "Reported."}, got); diff != "" {
		t.Errorf("replies by counted turn (-want +got):\n%s", diff)
	}
}

func TestFunc(t *testing.T) {
	m := scripted.Func(func(ctx context.Context, r *cadre.Request) (*cadre.Response, error) {
		if r.Agent == "root/bad.1" {
			return nil, errors.New("refused")
		}
		return &cadre.Response{Message: cadre.Message{Content: fmt.Sprintf("%s turn %d says a fairly long hello", r.Agent, r.Turn)}}, nil
	})
	p := play(t, m, req("root", 2))
	if p.err != nil {
		t.Fatal(p.err)
	}
	if p.resp.Message.Role != cadre.RoleAssistant || p.resp.Message.Content != "root turn 2 says a fairly long hello" || strings.Join(p.chunks, "") != p.resp.Message.Content || p.resp.Usage.OutputTokens == 0 {
		t.Errorf("got %+v chunks %q", p.resp, p.chunks)
	}
	if p := play(t, m, req("root/bad.1", 1)); p.err == nil || p.err.Error() != "refused" {
		t.Errorf("error = %v, want the function's", p.err)
	}
	if m.Calls()[scripted.CallKey{Agent: "root", Turn: 2}] != 1 {
		t.Errorf("calls = %v", m.Calls())
	}
}

func TestConsumerStops(t *testing.T) {
	m, _ := scripted.New(&scripted.Script{Agents: map[string][]scripted.Reply{"*": {{Text: strings.Repeat("abc ", 30)}}}})
	n := 0
	for range m.Stream(context.Background(), req("root", 1)) {
		n++
		break
	}
	if n != 1 {
		t.Errorf("got %d chunks, want 1", n)
	}
}

func TestDefinitionName(t *testing.T) {
	for in, want := range map[cadre.AgentID]string{
		"root": "root", "root/researcher.2": "researcher", "root/a.1/b-c.12": "b-c", "root/v1.5.x": "v1.5.x", "root/name.": "name.",
	} {
		if got := scripted.DefinitionName(in); got != want {
			t.Errorf("DefinitionName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestConcurrent(t *testing.T) {
	m := load(t, "bench.json")
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			id := cadre.RootID.Child("worker", i+1)
			for turn := 1; turn <= 3; turn++ {
				if _, err := cadre.Collect(m.Stream(context.Background(), req(id, turn)), nil); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if m.TotalCalls() != 64*3 {
		t.Errorf("TotalCalls = %d, want %d", m.TotalCalls(), 64*3)
	}
}

// BenchmarkTenThousandAgents plays two turns for each of 10,000 agents, as
// the engine benchmarks do, and reports the cost per model call.
func BenchmarkTenThousandAgents(b *testing.B) {
	s, err := scripted.Parse([]byte(`{"worker": [{"tool_calls": [{"name": "send_agent_message", "arguments": {"text": "unit done"}}]}, {"text": "ok", "repeat": true}]}`), "bench")
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]cadre.AgentID, 10_000)
	for i := range ids {
		ids[i] = cadre.RootID.Child("worker", i+1)
	}
	msgs := []cadre.Message{user("Context:\nbenchmark\n\nTask:\nDo one unit of work.")}
	b.ReportAllocs()
	calls := 0
	for b.Loop() {
		m, _ := scripted.New(s)
		for _, id := range ids {
			for turn := 1; turn <= 2; turn++ {
				if _, err := cadre.Collect(m.Stream(context.Background(), &cadre.Request{Agent: id, Turn: turn, Messages: msgs}), nil); err != nil {
					b.Fatal(err)
				}
				calls++
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(calls), "ns/call")
}
