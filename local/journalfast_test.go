package local

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
)

// roundTrip skips decoding only the inputs that decode to themselves: for
// every input, with valid and invalid UTF-8 and HTML characters, what it
// returns is what loop.Decode reads from the JSON.
func TestRoundTripMatchesDecode(t *testing.T) {
	texts := []string{"", "plain", "<b>&amp;</b> \u2028 é", "bad \xff\xfe byte", "\x00 nul"}
	var inputs []loop.Input
	for _, s := range texts {
		inputs = append(inputs,
			loop.Spawned{Ref: s, Child: cadre.AgentID(s), Err: s},
			loop.ChildReport{Child: "root/w.1", Text: s, Failed: true, Cancelled: true, Incomplete: true},
			loop.ChildEnded{Child: cadre.AgentID(s), Status: cadre.Status(s), Error: s},
			loop.ChildQuestion{Child: "root/w.1", Question: s},
			loop.Answer{Text: s, Err: s},
			loop.InboxMessage{From: cadre.AgentID(s), Text: s, Steering: true, FollowUp: true},
			loop.Cancel{Reason: s},
			loop.Timeout{Limit: 1500 * time.Millisecond},
			loop.Timeout{},
			loop.ToolResults{Results: []loop.ToolResult{{CallID: "c", Content: s}}},
			loop.ModelResult{Response: &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: s}}},
		)
	}
	for _, in := range inputs {
		data, got, err := roundTripOwned(in, nil)
		if err != nil {
			t.Fatalf("%#v: %v", in, err)
		}
		enc, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != string(enc) {
			t.Errorf("%#v: journaled %s, want %s", in, data, enc)
		}
		want, err := loop.Decode(in.Kind(), enc)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("roundTripOwned(%#v) = %#v, but a replay reads %#v", in, got, want)
		}
	}
}

// The types sameAfterJSON looks into, with their fields as it knows them.
// A field added to one of them must be added to its checks (if it can
// change on the way through JSON) and to this list.
var sameAfterJSONFields = map[reflect.Type]string{
	reflect.TypeFor[loop.Start]():         "Config Task Messages ConfigFrom",
	reflect.TypeFor[loop.Config]():        "ID Parent Depth MaxDepth Definition Model System Tools Withheld Delegate Delegation Rules Catalog Report Protocol MaxTurns Timeout Say MaxTokens Temperature Mode AskCaller MaxQuestions OutputSchema EndOnReport",
	reflect.TypeFor[loop.RuleSet]():       "Definition Rules",
	reflect.TypeFor[cadre.ToolRule]():     "Tool Pattern Syntax Action Source Where Group",
	reflect.TypeFor[loop.CatalogEntry]():  "Name Internal OnboardingRequired NoOnboarding AskCaller MaxQuestions Background",
	reflect.TypeFor[cadre.ToolSpec]():     "Name Description Parameters",
	reflect.TypeFor[cadre.Message]():      "Role Content ToolCalls ToolCallID ToolName IsError Media",
	reflect.TypeFor[cadre.ToolCall]():     "ID Name Arguments",
	reflect.TypeFor[loop.ModelResult]():   "Response Err Interrupted BudgetExhausted",
	reflect.TypeFor[cadre.Response]():     "Message Usage StopReason Model",
	reflect.TypeFor[cadre.Usage]():        "InputTokens OutputTokens CachedInputTokens",
	reflect.TypeFor[loop.ToolResults]():   "Results",
	reflect.TypeFor[loop.ToolResult]():    "CallID Content IsError Media",
	reflect.TypeFor[loop.Spawned]():       "Ref Child Err",
	reflect.TypeFor[loop.ChildReport]():   "Child Text Failed Cancelled Incomplete Round",
	reflect.TypeFor[loop.ChildEnded]():    "Child Status Error",
	reflect.TypeFor[loop.ChildQuestion](): "Child Question",
	reflect.TypeFor[loop.Answer]():        "Text Err",
	reflect.TypeFor[loop.InboxMessage]():  "From Text Steering FollowUp",
	reflect.TypeFor[loop.Wake]():          "From Text",
	reflect.TypeFor[loop.Cancel]():        "Reason",
	reflect.TypeFor[loop.Timeout]():       "Limit",
}

func TestSameAfterJSONFields(t *testing.T) {
	for typ, want := range sameAfterJSONFields {
		var names []string
		for f := range typ.Fields() {
			names = append(names, f.Name)
		}
		if got := strings.Join(names, " "); got != want {
			t.Errorf("%v has the fields\n\t%s\nbut sameAfterJSON was written for\n\t%s\nCheck the new fields in journalfast.go and update the list.", typ, got, want)
		}
	}
}

// TestRoundTripProperty gives roundTrip random inputs of every kind, with
// every field set or not, strings with invalid UTF-8 and escaped
// characters, empty and nil slices, raw JSON compact or not: what it
// returns is always what the decoder reads back from the JSON it returns,
// and that JSON is what encoding/json writes.
func TestRoundTripProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	kinds := []loop.Input{loop.Start{}, loop.ModelResult{}, loop.ToolResults{}, loop.Spawned{},
		loop.ChildReport{}, loop.ChildEnded{}, loop.ChildQuestion{}, loop.Answer{},
		loop.InboxMessage{}, loop.Wake{}, loop.Cancel{}, loop.Timeout{}}
	var cache stringCache // long strings are written from it after their first time
	fast := map[string]int{}
	slow := map[string]int{}
	for i := range 20_000 {
		kind := kinds[i%len(kinds)]
		v := reflect.New(reflect.TypeOf(kind)).Elem()
		fill(rng, v, 0)
		in := v.Interface().(loop.Input)
		enc, err := json.Marshal(in)
		if err != nil {
			// Raw JSON that is not JSON: roundTrip must refuse it too.
			if _, _, rerr := roundTripOwned(in, nil); rerr == nil {
				t.Fatalf("%#v cannot be encoded (%v), but roundTrip took it", in, err)
			}
			continue
		}
		want, err := loop.Decode(in.Kind(), enc)
		if err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		data, got, err := roundTripOwned(in, &cache)
		if err != nil {
			t.Fatalf("%#v: %v", in, err)
		}
		if !bytes.Equal(data, enc) {
			t.Fatalf("%#v: journaled %s, want %s", in, data, enc)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("roundTrip steps\n\t%#v\nbut a replay reads\n\t%#v\nfrom %s", got, want, enc)
		}
		if _, ok := asReadBack(in); ok {
			fast[in.Kind()]++
		} else {
			slow[in.Kind()]++
		}
	}
	if cache.size.Load() == 0 {
		t.Error("no long string was kept in the cache")
	}
	for _, k := range kinds {
		if k.Kind() != "timeout" && (fast[k.Kind()] == 0 || slow[k.Kind()] == 0) {
			t.Errorf("%s: %d inputs read back as they are and %d did not; the generator must make both", k.Kind(), fast[k.Kind()], slow[k.Kind()])
		}
	}
}

// Values fill draws from: strings that survive JSON and strings that do
// not, raw JSON written as encoding/json writes it and otherwise.
var (
	fillStrings = []string{"", "plain", "tool", "é ü 日本", strings.Repeat("a long prompt <b>\n", 20), "<b>&amp;</b>", "\u2028", "\x00 nul",
		"bad \xff byte", "\xc3", strings.Repeat("a long prompt, then a bad byte: \xff", 10)}
	fillRaw = []json.RawMessage{nil, {}, json.RawMessage(`{"type":"object"}`), json.RawMessage(`[]`),
		json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","description":"é \"q\""}}}`), json.RawMessage(`{"type": "object"}`),
		json.RawMessage(`{"a":"<b>"}`), json.RawMessage("null"), json.RawMessage(`{"a":"\u00e9 \\" }`), json.RawMessage("[1,2]"),
		json.RawMessage("{\"a\":\"x y\"}"), json.RawMessage("{\n\"a\":1}"), json.RawMessage(`"\ud800"`)}
)

// fill sets v to a random value: each field, slice element and pointer
// chosen at random, most of them valid and some of them not.
func fill(rng *rand.Rand, v reflect.Value, depth int) {
	switch {
	case v.Type() == reflect.TypeFor[json.RawMessage]():
		v.Set(reflect.ValueOf(fillRaw[rng.IntN(len(fillRaw))]))
		return
	case v.Type() == reflect.TypeFor[time.Duration]():
		v.SetInt(rng.Int64N(1e12))
		return
	}
	switch v.Kind() {
	case reflect.String:
		// Mostly strings that survive, so that whole inputs often do.
		if rng.IntN(4) > 0 {
			v.SetString(fillStrings[rng.IntN(6)])
		} else {
			v.SetString(fillStrings[rng.IntN(len(fillStrings))])
		}
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Int, reflect.Int64:
		v.SetInt(rng.Int64N(100))
	case reflect.Float64:
		v.SetFloat(rng.Float64())
	case reflect.Uint8:
		v.SetUint(uint64(rng.IntN(256)))
	case reflect.Pointer:
		if rng.IntN(3) > 0 {
			p := reflect.New(v.Type().Elem())
			fill(rng, p.Elem(), depth+1)
			v.Set(p)
		}
	case reflect.Slice:
		switch n := rng.IntN(6); {
		case n == 0 || depth > 4:
		case n == 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			if v.Type().Elem().Kind() == reflect.Struct && v.Type().Elem().Name() == "Media" && rng.IntN(3) > 0 {
				return // media are rare
			}
			s := reflect.MakeSlice(v.Type(), n-1, n-1)
			for i := range n - 1 {
				fill(rng, s.Index(i), depth+1)
			}
			v.Set(s)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && rng.IntN(5) > 0 {
				fill(rng, v.Field(i), depth+1)
			}
		}
	default:
		panic(fmt.Sprintf("fill: no case for %v", v.Type()))
	}
}

// benchStart is a worker's start as the delegation benchmark journals it.
func benchStart() loop.Start {
	return loop.Start{Config: loop.Config{ID: "root/worker.17", Parent: "root", Depth: 1, MaxDepth: 3, Definition: "worker",
		Model: "scripted", System: strings.Repeat("You do one unit of work and report it. ", 60), Tools: []cadre.ToolSpec{},
		Delegate: true, Catalog: []loop.CatalogEntry{{Name: "mid", MaxQuestions: 5}, {Name: "worker", MaxQuestions: 5}},
		Report: "tool", Protocol: "tools", MaxTurns: 25, Timeout: 300 * time.Second, MaxQuestions: 5, EndOnReport: true},
		Task: "unit 17", Messages: []cadre.Message{{Role: cadre.RoleUser, Content: "unit 17"}}}
}

// BenchmarkRoundTrip is the cost of journaling a worker's start and its
// model's reply, against encoding/json's round trip.
func BenchmarkRoundTrip(b *testing.B) {
	reply := loop.ModelResult{Response: &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant,
		ToolCalls: []cadre.ToolCall{{ID: "r1", Name: loop.ToolSendAgentMessage, Arguments: `{"text":"Unit done: nothing to add."}`}}},
		Usage: cadre.Usage{InputTokens: 10, OutputTokens: 10}}}
	for _, in := range []loop.Input{benchStart(), reply} {
		b.Run(in.Kind(), func(b *testing.B) {
			b.ReportAllocs()
			var cache stringCache
			for b.Loop() {
				if _, _, err := roundTripOwned(in, &cache); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(in.Kind()+"/encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				data, err := json.Marshal(in)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := loop.Decode(in.Kind(), data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// roundTripOwned is roundTrip into a buffer of its own.
func roundTripOwned(in loop.Input, c *stringCache) (json.RawMessage, loop.Input, error) {
	data, _, back, err := roundTrip(nil, in, c)
	return data, back, err
}

// TestEncodeEntriesOfSeveralInputs: inputs journaled together go in entries
// of kind loop.KindInputs, at most maxEntryInputs of them and about
// maxEntryBytes each, numbered on from the agent's last entry; each entry
// reads back (loop.DecodeEntry) as the inputs the agent steps, which are
// what a replay reads; a lone input keeps an entry of its own kind.
func TestEncodeEntriesOfSeveralInputs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	kinds := []loop.Input{loop.Start{}, loop.ModelResult{}, loop.ToolResults{}, loop.Spawned{},
		loop.ChildReport{}, loop.ChildEnded{}, loop.InboxMessage{}, loop.Cancel{}}
	r := &run{id: "r"}
	a := &agent{run: r, id: "root/worker.1", seq: 4}
	big := strings.Repeat("x", maxEntryBytes/3)
	for _, n := range []int{1, 2, 3, maxEntryInputs, maxEntryInputs + 1, 2*maxEntryInputs + 5, 12} {
		var ins []loop.Input
		for i := range n {
			var in loop.Input = loop.Spawned{Ref: fmt.Sprint("c", i), Child: "root/worker.2"}
			switch {
			case n == 12:
				in = loop.ChildReport{Child: "root/worker.2", Text: big} // a third of the bytes each
			case n <= 3: // random inputs, of any size
				v := reflect.New(reflect.TypeOf(kinds[rng.IntN(len(kinds))])).Elem()
				fill(rng, v, 0)
				if _, err := json.Marshal(v.Interface()); err == nil {
					in = v.Interface().(loop.Input)
				}
			}
			ins = append(ins, in)
		}
		first := a.seq
		entries, buf, err := a.encode(ins)
		if err != nil {
			t.Fatalf("%d inputs: %v", n, err)
		}
		var back []loop.Input
		for i, e := range entries {
			if e.Seq != first+int64(i)+1 || e.Run != "r" || e.Agent != a.id {
				t.Errorf("%d inputs, entry %d: run %q agent %s seq %d, want r, %s, %d", n, i, e.Run, e.Agent, e.Seq, a.id, first+int64(i)+1)
			}
			got, err := loop.DecodeEntry(e.Kind, e.Data)
			if err != nil {
				t.Fatalf("%d inputs, entry %d (%s): %v\n%s", n, i, e.Kind, err, e.Data)
			}
			if e.Kind == loop.KindInputs && (len(got) > maxEntryInputs || len(e.Data) > maxEntryBytes+len(big)+100) {
				t.Errorf("%d inputs, entry %d: %d inputs in %d bytes", n, i, len(got), len(e.Data))
			}
			back = append(back, got...)
		}
		if n == 1 && (len(entries) != 1 || entries[0].Kind != ins[0].Kind()) {
			t.Errorf("a lone input was journaled as %d entries, the first of kind %s", len(entries), entries[0].Kind)
		}
		want := (n + maxEntryInputs - 1) / maxEntryInputs
		if n == 12 {
			want = 4 // three reports fill an entry past maxEntryBytes
		}
		if n > 1 && n <= 3 {
			want = len(entries) // random inputs may fill one
		}
		if len(entries) != want {
			t.Errorf("%d inputs: %d entries, want %d", n, len(entries), want)
		}
		if !reflect.DeepEqual(back, ins) {
			t.Errorf("%d inputs: the entries read back as other inputs than those the agent steps", n)
		}
		if a.seq = entries[len(entries)-1].Seq; a.seq != first+int64(len(entries)) {
			t.Errorf("%d inputs: last seq %d", n, a.seq)
		}
		giveJournalBuf(buf)
	}
}
