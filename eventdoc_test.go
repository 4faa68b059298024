package cadre

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
)

var update = flag.Bool("update", false, "rewrite docs/events.md from the payload types")

const eventsDoc = "docs/events.md"

// TestEventsDoc checks that docs/events.md is what the payload types and
// their comments say; go test -run TestEventsDoc -update rewrites it. It
// fails when an event type, a payload or a field is added, changed or left
// without a comment and the document was not brought along.
func TestEventsDoc(t *testing.T) {
	pkg := parseCadre(t)
	got, problems := renderEventsDoc(t, pkg)
	for _, p := range problems {
		t.Error(p)
	}
	if *update {
		if err := os.WriteFile(eventsDoc, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(eventsDoc)
	if err != nil {
		t.Fatalf("%v; write it with: go test -run TestEventsDoc -update", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what the event types say; run go test -run TestEventsDoc -update and review the difference", eventsDoc)
	}
}

// TestEventTypesComplete checks that every EventType constant is listed by
// EventTypes, once, and has a payload of its own type.
func TestEventTypesComplete(t *testing.T) {
	pkg := parseCadre(t)
	var consts []EventType
	groups := slices.Clone(pkg.Consts)
	for _, ty := range pkg.Types {
		groups = append(groups, ty.Consts...)
	}
	for _, c := range groups {
		for _, spec := range c.Decl.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "EventType" {
				continue
			}
			for _, v := range vs.Values {
				lit := v.(*ast.BasicLit)
				consts = append(consts, EventType(strings.Trim(lit.Value, `"`)))
			}
		}
	}
	listed := EventTypes()
	for _, c := range consts {
		if n := countOf(listed, c); n != 1 {
			t.Errorf("the event type %s is listed %d times by EventTypes, want once", c, n)
		}
	}
	if len(listed) != len(consts) {
		t.Errorf("EventTypes lists %d types, event.go declares %d", len(listed), len(consts))
	}
	payloads := map[reflect.Type]EventType{}
	for _, et := range listed {
		p := zeroPayload(et)
		if p == nil {
			t.Errorf("the event type %s has no payload", et)
			continue
		}
		if p.EventType() != et {
			t.Errorf("the payload of %s says it belongs to %s", et, p.EventType())
		}
		if other, dup := payloads[reflect.TypeOf(p)]; dup {
			t.Errorf("%s and %s share the payload %T", et, other, p)
		}
		payloads[reflect.TypeOf(p)] = et
		for _, f := range reflect.VisibleFields(reflect.TypeOf(p)) {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "" || name == "-":
				t.Errorf("%T.%s has no JSON name", p, f.Name)
			case slices.Contains(eventCommon[:], name):
				t.Errorf("%T.%s is named %q in JSON, a name the common fields use", p, f.Name, name)
			}
		}
	}
}

func countOf(list []EventType, t EventType) int {
	n := 0
	for _, x := range list {
		if x == t {
			n++
		}
	}
	return n
}

func parseCadre(t *testing.T) *doc.Package {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	pkg, err := doc.NewFromFiles(fset, files, "github.com/cadre-ai/cadre", doc.AllDecls)
	if err != nil {
		t.Fatal(err)
	}
	return pkg
}

// renderEventsDoc writes docs/events.md from the payload types' comments
// and JSON tags. problems lists what the document cannot say because the
// code does not: a payload or a field without a comment.
func renderEventsDoc(t *testing.T, pkg *doc.Package) (out []byte, problems []string) {
	types := map[string]*doc.Type{}
	for _, ty := range pkg.Types {
		types[ty.Name] = ty
	}
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	example := Event{Seq: 42, Type: EventToolCalled, Time: time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC), Run: "20250314-150926-a1b2c3",
		Agent: "root/researcher.1", Parent: RootID, Depth: 1, Data: ToolCalled{CallID: "call_7", Tool: "read_file", Arguments: `{"path":"README.md"}`}}
	line, err := example.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}

	p("# Events\n\n")
	p("<!-- Generated from the payload types in payload.go by `go test -run TestEventsDoc -update`. Do not edit. -->\n\n")
	p("A run reports what happens in it as events. Each event is one JSON object, encoded the same\n")
	p("way everywhere: the lines of `cadre run --json`, `cadre resume --json` and\n")
	p("`cadre runs show --follow --json`, the events a run store keeps, and the `events` of\n")
	p("`cadre runs export` (indented there). In Go an event is a `cadre.Event` whose `Data` is the\n")
	p("payload struct of its type, named after it (`cadre.ToolCalled` for `tool_called`).\n\n")
	p("```json\n%s\n```\n\n", line)
	p("The fields every event has come first, in this order; the fields of its type follow. A\n")
	p("reader should ignore fields and event types it does not know: later versions add them.\n\n")
	p("## Common fields\n\n")
	p("| Field | JSON type | Present | Description |\n|---|---|---|---|\n")
	for _, c := range [][4]string{
		{"seq", "integer", "when stored", "The event's number in its run, from 1, in order. Streamed text and events of a run without a store have none."},
		{"type", "string", "always", "The event type: one of those below."},
		{"time", "string", "always", "When it happened: RFC 3339 in UTC, with up to nine digits of the second."},
		{"run", "string", "always", "The run's ID."},
		{"agent", "string", "when set", "The agent's ID (`root`, `root/researcher.1`, …); run events have none."},
		{"parent", "string", "below the root", "The agent's parent's ID."},
		{"depth", "integer", "below the root", "The agent's depth: 1 for the root's children."},
	} {
		p("| `%s` | %s | %s | %s |\n", c[0], c[1], c[2], c[3])
	}
	p("\n## Order and watching\n\n")
	p("Events come in a causal order: an agent's own events in the order they happened, an\n")
	p("`agent_spawned` before any event of the child, a child's end before its parent's, and\n")
	p("`run_completed` or `run_failed` last. A watcher of a live run (`Engine.Events`) never slows\n")
	p("it down: one that falls too far behind receives an `events_skipped` event in place of the\n")
	p("events it missed, saying how many and which stored ones (`after_seq` < `seq` <= `to_seq`),\n")
	p("which the store still has. The package documentation of `cadre` states the whole contract.\n\n")
	p("## Types\n\n| Type | What happened |\n|---|---|\n")
	for _, et := range EventTypes() {
		name := reflect.TypeOf(zeroPayload(et)).Name()
		p("| [`%s`](#%s) | %s |\n", et, et, firstSentence(what(types[name])))
	}
	for _, et := range EventTypes() {
		rt := reflect.TypeOf(zeroPayload(et))
		dt := types[rt.Name()]
		if dt == nil || strings.TrimSpace(dt.Doc) == "" {
			problems = append(problems, fmt.Sprintf("the payload %s of %s has no doc comment", rt.Name(), et))
			continue
		}
		p("\n### %s\n\n", et)
		p("%s\n\nGo: `cadre.%s`.\n\n", oneParagraph(what(dt)), rt.Name())
		comments := fieldComments(dt)
		if rt.NumField() == 0 {
			p("No fields of its own.\n")
			continue
		}
		p("| Field | JSON type | Present | Description |\n|---|---|---|---|\n")
		for i := range rt.NumField() {
			f := rt.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			present := "always"
			if strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero") {
				present = "when set"
			}
			c := comments[f.Name]
			if c == "" {
				problems = append(problems, fmt.Sprintf("the field %s.%s (%s) has no doc comment", rt.Name(), f.Name, name))
			}
			p("| `%s` | %s | %s | %s |\n", name, jsonType(f.Type), present, oneParagraph(withoutName(c, f.Name)))
		}
	}
	return b.Bytes(), problems
}

// what is a payload's comment without its "X is the payload of EventY: "
// opening, which the document's headings say.
func what(dt *doc.Type) string {
	if dt == nil {
		return ""
	}
	s := strings.TrimSpace(dt.Doc)
	if _, rest, ok := strings.Cut(s, ": "); ok && strings.Contains(s[:len(s)-len(rest)], " is the payload of ") {
		s = rest
	}
	r := []rune(s)
	if len(r) > 0 {
		r[0] = unicode.ToUpper(r[0])
	}
	return string(r)
}

// withoutName drops the Go name a field's comment starts with ("Task is
// the task…" becomes "The task…"), which means nothing to a reader of the
// JSON.
func withoutName(comment, name string) string {
	for _, prefix := range []string{name + " is ", name + " are ", name + " "} {
		if rest, ok := strings.CutPrefix(comment, prefix); ok {
			r := []rune(rest)
			r[0] = unicode.ToUpper(r[0])
			return string(r)
		}
	}
	return comment
}

func firstSentence(s string) string {
	s = oneParagraph(s)
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// oneParagraph folds a comment to one line of Markdown: a table cell or a
// paragraph.
func oneParagraph(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace(s)
}

// fieldComments reads the comments of a struct type's fields.
func fieldComments(dt *doc.Type) map[string]string {
	out := map[string]string{}
	for _, spec := range dt.Decl.Specs {
		ts, ok := spec.(*ast.TypeSpec)
		if !ok {
			continue
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			continue
		}
		for _, f := range st.Fields.List {
			for _, n := range f.Names {
				out[n.Name] = f.Doc.Text()
			}
		}
	}
	return out
}

// jsonType names the JSON type a Go type encodes as.
func jsonType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice:
		return "array of " + plural(jsonType(t.Elem()))
	case reflect.Struct:
		var names []string
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			names = append(names, "`"+name+"`")
		}
		return "object (" + strings.Join(names, ", ") + ")"
	}
	return t.Kind().String()
}

func plural(s string) string {
	if head, rest, ok := strings.Cut(s, " ("); ok {
		return head + "s (" + rest
	}
	return s + "s"
}
