package server

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestOpenAPIRoutes checks that openapi.json describes exactly the API
// routes the server has.
func TestOpenAPIRoutes(t *testing.T) {
	doc := loadDoc(t)
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	var have, documented []string
	wild := regexp.MustCompile(`\{(\w+)\.\.\.\}`)
	for _, r := range routes {
		method, path, ok := strings.Cut(r.pattern, " ")
		if !ok || !strings.HasPrefix(path, "/api/") {
			continue
		}
		have = append(have, method+" "+wild.ReplaceAllString(path, "{$1}"))
	}
	for path, item := range doc.Paths {
		for method := range item {
			if method == "parameters" {
				continue
			}
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(have)
	slices.Sort(documented)
	if !slices.Equal(have, documented) {
		t.Errorf("the routes are\n  %s\nbut openapi.json documents\n  %s", strings.Join(have, "\n  "), strings.Join(documented, "\n  "))
	}
}

// TestOpenAPIResponses sends each operation requests and checks that the
// status it answers is documented and the body fits the documented schema.
func TestOpenAPIResponses(t *testing.T) {
	doc := loadDoc(t)
	f := newFixture(t, fixtureOptions{})
	id := f.start(RunRequest{Task: "Write the report."})
	f.waitFor(id, "seven agents", func(v *runView) bool { return len(v.Tree.Agents) == 7 })
	for _, c := range []struct {
		op, method, path string
		body             any
		want             int
	}{
		{"startRun", "POST", "/api/runs", RunRequest{Task: "Another."}, 201},
		{"startRun", "POST", "/api/runs", map[string]string{"task": ""}, 400},
		{"listRuns", "GET", "/api/runs", nil, 200},
		{"getRun", "GET", "/api/runs/" + id, nil, 200},
		{"getRun", "GET", "/api/runs/none", nil, 404},
		{"getAgent", "GET", "/api/runs/" + id + "/agents/root/mid.1", nil, 200},
		{"getAgent", "GET", "/api/runs/" + id + "/agents/root/none", nil, 404},
		{"answer", "POST", "/api/runs/" + id + "/answer", map[string]string{"agent": "root/mid.1", "answer": "x"}, 409},
		{"answer", "POST", "/api/runs/" + id + "/answer", map[string]string{"agent": "root"}, 0},
		{"answer", "POST", "/api/runs/" + id + "/answer", map[string]string{"id": "approval-0", "answer": "yes"}, 409},
		{"cancel", "POST", "/api/runs/" + id + "/cancel", map[string]string{"agent": "root/mid.2"}, 200},
		{"cancel", "POST", "/api/runs/" + id + "/cancel", rawBody("{"), 400},
		{"cancel", "POST", "/api/runs/none/cancel", nil, 404},
		{"events", "GET", "/api/runs/none/events", nil, 404},
		{"openapi", "GET", "/api/openapi.json", nil, 200},
	} {
		t.Run(fmt.Sprintf("%s %d", c.op, c.want), func(t *testing.T) {
			path, method, opDoc := doc.find(c.op)
			if opDoc == nil {
				t.Fatalf("openapi.json has no operation %s", c.op)
			}
			if method != c.method || !doc.matches(path, c.path) {
				t.Fatalf("%s is %s %s in openapi.json; the test sends %s %s", c.op, method, path, c.method, c.path)
			}
			var body any
			st := f.do(c.method, c.path, c.body, &body)
			if c.want != 0 && st != c.want {
				t.Errorf("%d, want %d", st, c.want)
			}
			resp, ok := opDoc.Responses[strconv.Itoa(st)]
			if !ok {
				t.Fatalf("%s answered %d, which openapi.json does not document", c.op, st)
			}
			schema := doc.responseSchema(resp)
			if schema == nil {
				t.Fatalf("%s %d has no JSON schema", c.op, st)
			}
			if err := doc.validate(body, schema, "body"); err != nil {
				t.Errorf("%s %d: %v", c.op, st, err)
			}
		})
	}
}

type openapiDocument struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas   map[string]map[string]any `json:"schemas"`
		Responses map[string]map[string]any `json:"responses"`
	} `json:"components"`
}

type operation struct {
	OperationID string                    `json:"operationId"`
	Responses   map[string]map[string]any `json:"responses"`
}

func loadDoc(t *testing.T) *openapiDocument {
	t.Helper()
	var d openapiDocument
	if err := json.Unmarshal(openapiDoc, &d); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	return &d
}

func (d *openapiDocument) find(opID string) (string, string, *operation) {
	for path, item := range d.Paths {
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			var op operation
			if json.Unmarshal(raw, &op) == nil && op.OperationID == opID {
				return path, strings.ToUpper(method), &op
			}
		}
	}
	return "", "", nil
}

// matches reports whether a request path fits a documented path; the last
// parameter takes the rest (agent ids have slashes).
func (d *openapiDocument) matches(pattern, path string) bool {
	segs := strings.Split(pattern, "/")
	for i, seg := range segs {
		switch {
		case seg == "{agent}":
			segs[i] = ".+"
		case strings.HasPrefix(seg, "{"):
			segs[i] = "[^/]+"
		default:
			segs[i] = regexp.QuoteMeta(seg)
		}
	}
	return regexp.MustCompile("^" + strings.Join(segs, "/") + "$").MatchString(path)
}

func (d *openapiDocument) resolve(s map[string]any) map[string]any {
	for {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		name := ref[strings.LastIndex(ref, "/")+1:]
		if strings.Contains(ref, "/responses/") {
			s = d.Components.Responses[name]
		} else {
			s = d.Components.Schemas[name]
		}
		if s == nil {
			return nil
		}
	}
}

func (d *openapiDocument) responseSchema(resp map[string]any) map[string]any {
	resp = d.resolve(resp)
	content, _ := resp["content"].(map[string]any)
	js, _ := content["application/json"].(map[string]any)
	s, _ := js["schema"].(map[string]any)
	return s
}

// validate checks v against the parts of JSON Schema the document uses:
// type, required, properties, items, enum.
func (d *openapiDocument) validate(v any, s map[string]any, at string) error {
	s = d.resolve(s)
	if s == nil {
		return fmt.Errorf("%s: the schema's $ref leads nowhere", at)
	}
	if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, v) {
		return fmt.Errorf("%s is %v, not one of %v", at, v, enum)
	}
	switch s["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s is %T, want an object", at, v)
		}
		req, _ := s["required"].([]any)
		for _, r := range req {
			if _, ok := m[r.(string)]; !ok {
				return fmt.Errorf("%s lacks the required %s", at, r)
			}
		}
		props, _ := s["properties"].(map[string]any)
		for k, pv := range m {
			ps, ok := props[k].(map[string]any)
			if !ok {
				if len(props) > 0 && s["additionalProperties"] == false {
					return fmt.Errorf("%s has %s, which the schema does not allow", at, k)
				}
				continue
			}
			if err := d.validate(pv, ps, at+"."+k); err != nil {
				return err
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s is %T, want an array", at, v)
		}
		items, _ := s["items"].(map[string]any)
		for i, e := range a {
			if err := d.validate(e, items, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case "string":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s is %T, want a string", at, v)
		}
	case "integer":
		if n, ok := v.(float64); !ok || n != float64(int64(n)) {
			return fmt.Errorf("%s is %v, want an integer", at, v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s is %T, want a boolean", at, v)
		}
	}
	return nil
}
