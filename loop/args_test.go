package loop

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
)

// fullArgs reads arguments by the full path of subagentCall (readArgs,
// on a state with no calls to answer), and reports whether it accepts
// them.
func fullArgs(name, raw string) (subagentArgs, bool) {
	var args subagentArgs
	ok := new(State).readArgs(0, cadre.ToolCall{Name: name}, raw, &args)
	return args, ok
}

// sameAsFull checks that quickArgs either declines raw or reads what the
// full path reads (and the full path accepts it). It reports whether
// quickArgs read it.
func sameAsFull(t *testing.T, name, raw string) bool {
	t.Helper()
	raw = strings.TrimSpace(raw)
	if raw == "" || raw == "null" {
		raw = "{}"
	}
	var quick subagentArgs
	if !quickArgs(argShapes[name], raw, &quick) {
		return false
	}
	full, ok := fullArgs(name, raw)
	if !ok {
		t.Fatalf("%s %q: read quickly as %+v, but the full path refuses it", name, raw, quick)
	}
	if diff := cmp.Diff(full, quick); diff != "" {
		t.Fatalf("%s %q: quick reading differs from the full one (-full +quick):\n%s", name, raw, diff)
	}
	return true
}

func TestQuickArgsReads(t *testing.T) {
	tests := []struct {
		name, tool, raw string
	}{
		{"spawn", ToolSpawnAgent, `{"agent":"worker","task":"unit 1"}`},
		{"spawn all", ToolSpawnAgent, ` { "agent" : "w", "task":"t",	"context":"c","model":"m" } `},
		{"optional null", ToolSpawnAgent, `{"agent":"w","task":"t","model":null,"context":null}`},
		{"escapes", ToolSendAgentMessage, `{"text":"line 1\nline \"2\"\t\\ \/ \b\f\r \u00e9 \ud83d\ude00"}`},
		{"utf8", ToolSendAgentMessage, `{"text":"héllo — 世界 😀"}`},
		{"invalid utf8", ToolSendAgentMessage, "{\"text\":\"a\xffb\xc3\"}"},
		{"invalid utf8 after escape", ToolSendAgentMessage, "{\"text\":\"\\n\xed\xa0\x80\"}"},
		{"lone surrogate", ToolSendAgentMessage, `{"text":"a\ud800b"}`},
		{"surrogate then escape", ToolSendAgentMessage, `{"text":"\ud800\u0041"}`},
		{"two high surrogates", ToolSendAgentMessage, `{"text":"\ud800\ud800\udc00"}`},
		{"steering", ToolSendAgentMessage, `{"text":"x","agentId":"root/w.1","steering":true}`},
		{"steering false", ToolSendAgentMessage, `{"steering":false,"text":"x"}`},
		{"empty object", ToolListAgents, `{}`},
		{"empty arguments", ToolListAgents, ``},
		{"null arguments", ToolListAgents, `null`},
		{"background", ToolStartBackground, `{"prompt":"p","name":"n"}`},
		{"create without tools", ToolCreateAgent, `{"name":"a","description":"d","instructions":"i"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !sameAsFull(t, tt.tool, tt.raw) {
				t.Errorf("%s %q: declined, want read quickly", tt.tool, tt.raw)
			}
		})
	}
}

func TestQuickArgsDeclines(t *testing.T) {
	tests := []struct {
		name, tool, raw string
	}{
		{"missing required", ToolSpawnAgent, `{"agent":"w"}`},
		{"required null", ToolSpawnAgent, `{"agent":"w","task":null}`},
		{"wrong type", ToolSpawnAgent, `{"agent":"w","task":3}`},
		{"unknown key", ToolSpawnAgent, `{"agent":"w","task":"t","extra":"x"}`},
		{"key of another tool", ToolSpawnAgent, `{"agent":"w","task":"t","text":"x"}`},
		{"key in other case", ToolSpawnAgent, `{"Agent":"w","task":"t"}`},
		{"escaped key", ToolSpawnAgent, `{"\u0061gent":"w","task":"t"}`},
		{"repeated key", ToolSpawnAgent, `{"agent":"w","task":"t","task":"u"}`},
		{"trailing text", ToolSpawnAgent, `{"agent":"w","task":"t"} x`},
		{"trailing comma", ToolSpawnAgent, `{"agent":"w","task":"t",}`},
		{"control character", ToolSendAgentMessage, "{\"text\":\"a\x01b\"}"},
		{"bad escape", ToolSendAgentMessage, `{"text":"\q"}`},
		{"unicode space between", ToolSpawnAgent, "{\"agent\":\"w\",\u00a0\"task\":\"t\"}"},
		{"array", ToolSpawnAgent, `["w","t"]`},
		{"integer", ToolFork, `{"handle":"h","count":2}`},
		{"string array", ToolCreateAgent, `{"name":"a","description":"d","instructions":"i","tools":["x"]}`},
		{"not a subagent tool", "read_file", `{"path":"x"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if sameAsFull(t, tt.tool, tt.raw) {
				t.Errorf("%s %q: read quickly, want declined", tt.tool, tt.raw)
			}
		})
	}
}

// argPieces are what randomArgs builds arguments from.
var (
	argKeys = []string{"agent", "task", "context", "model", "prompt", "name", "text", "agentId", "steering",
		"question", "answer", "handle", "input", "count", "description", "instructions", "tools",
		"Agent", "TASK", "agentid", "x", "", "ag\\u0065nt", "é"}
	argValues = []string{`"w"`, `""`, `"unit 1"`, `"a\nb"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, `"\udc00x"`,
		"\"\xff\xfe\"", `"\\\"\/"`, `"tab	"`, "\"ok\x7f\"", `"é 😀"`, `true`, `false`, `null`, `0`, `-1.5e3`, `3`,
		`[]`, `["a"]`, `{}`, `{"a":"b"}`, `tru`, `"\u12"`, `"unterminated`, `nul`}
	argSpaces = []string{"", "", "", " ", "\n\t", "\r", "\u00a0", "\v"}
)

// space returns white space for randomArgs, now and then not JSON's.
func space(r *rand.Rand) string {
	if r.IntN(20) == 0 {
		return argSpaces[r.IntN(len(argSpaces))]
	}
	return argSpaces[r.IntN(len(argSpaces)-2)]
}

// randomArgs builds a JSON-like object of keys and values from argPieces,
// most keys being parameters of the tool and most values strings.
func randomArgs(r *rand.Rand, tool string) string {
	var params []string
	for _, p := range argShapes[tool].params {
		params = append(params, p.name)
	}
	slices.Sort(params)
	var b strings.Builder
	b.WriteString(space(r))
	b.WriteByte('{')
	n := r.IntN(5)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(space(r))
		key := argKeys[r.IntN(len(argKeys))]
		if len(params) > 0 && r.IntN(5) > 0 {
			key = params[r.IntN(len(params))]
		}
		b.WriteString(`"` + key + `"`)
		b.WriteString(space(r))
		b.WriteByte(':')
		b.WriteString(space(r))
		if r.IntN(2) == 0 {
			b.WriteString(argValues[r.IntN(len(argValues))])
		} else {
			b.WriteString(argValues[r.IntN(12)]) // a string
		}
	}
	b.WriteString(space(r))
	b.WriteByte('}')
	b.WriteString(space(r))
	return b.String()
}

// mutate changes a few bytes of s: deletes, inserts or replaces them.
func mutate(r *rand.Rand, s string) string {
	b := []byte(s)
	const alphabet = "{}[]\":,\\ntrufalse0123456789 \t\xff\xc3é"
	for range 1 + r.IntN(3) {
		i := 0
		if len(b) > 0 {
			i = r.IntN(len(b))
		}
		c := alphabet[r.IntN(len(alphabet))]
		switch r.IntN(3) {
		case 0:
			if len(b) > 0 {
				b = slices.Delete(b, i, i+1)
			}
		case 1:
			b = slices.Insert(b, i, c)
		default:
			if len(b) > 0 {
				b[i] = c
			}
		}
	}
	return string(b)
}

// TestQuickArgsAsFull checks, on random and mutated arguments for every
// subagent tool, that the quick reading declines or reads what the full
// path reads; and that it reads a good share, so the check is not vacuous.
func TestQuickArgsAsFull(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	names := make([]string, 0, len(subagentSpecs))
	for name := range subagentSpecs {
		names = append(names, name)
	}
	slices.Sort(names)
	const n = 20000
	read, fullAccepts := 0, 0
	for i := range n {
		name := names[r.IntN(len(names))]
		raw := randomArgs(r, name)
		if i%2 == 1 {
			raw = mutate(r, raw)
		}
		if sameAsFull(t, name, raw) {
			read++
		}
		if trimmed := strings.TrimSpace(raw); trimmed != "" {
			if _, ok := fullArgs(name, trimmed); ok {
				fullAccepts++
			}
		}
	}
	t.Logf("%d of %d arguments read quickly; the full path accepts %d", read, n, fullAccepts)
	if read < n/100 {
		t.Errorf("only %d of %d arguments were read quickly: the generator no longer makes arguments that match", read, n)
	}
}

// FuzzQuickArgs checks that the quick reading of subagent arguments
// declines or agrees with the full path, for any tool and arguments.
func FuzzQuickArgs(f *testing.F) {
	f.Add(uint8(0), `{"agent":"worker","task":"unit 1"}`)
	f.Add(uint8(1), `{"text":"a\nb \u00e9 \ud83d\ude00","steering":true}`)
	f.Add(uint8(2), "{\"text\":\"\xff\\ud800\"}")
	f.Add(uint8(3), ` { "prompt" : "p" , "name" : null } `)
	names := make([]string, 0, len(subagentSpecs))
	for name := range subagentSpecs {
		names = append(names, name)
	}
	slices.Sort(names)
	f.Fuzz(func(t *testing.T, tool uint8, raw string) {
		sameAsFull(t, names[int(tool)%len(names)], raw)
	})
}
