package schema

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const testSchema = `{
	"type": "object",
	"properties": {
		"path":   {"type": "string"},
		"task":   {"type": "string"},
		"limit":  {"type": "integer"},
		"ratio":  {"type": "number"},
		"force":  {"type": "boolean"},
		"mode":   {"type": "string", "enum": ["fast", "slow"]},
		"files":  {"type": "array", "items": {"type": "string"}},
		"either": {"type": ["string", "integer"]},
		"opts":   {
			"type": "object",
			"properties": {"depth": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}, "required": ["k"]}}},
			"required": ["depth"],
			"additionalProperties": false
		}
	},
	"required": ["task"],
	"additionalProperties": false
}`

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		args   string
		want   []string // problems; nil means valid
	}{
		{name: "valid_minimal", args: `{"task": "x"}`},
		{name: "valid_full", args: `{"task":"x","path":"a","limit":3,"ratio":0.5,"force":true,"mode":"fast","files":["a","b"],"either":2,"opts":{"depth":1,"tags":[{"k":"v"}]}}`},
		{name: "integer_written_as_float", args: `{"task":"x","limit":3.0}`},
		{name: "number_accepts_integer", args: `{"task":"x","ratio":2}`},
		{name: "null_optional_is_absent", args: `{"task":"x","path":null,"opts":null}`},
		{name: "type_list_second", args: `{"task":"x","either":"s"}`},
		{name: "empty_args_are_object", schema: `{"type":"object"}`, args: ``},
		{name: "empty_schema_accepts_object", schema: ``, args: `{"anything": [1, 2]}`},
		{name: "missing_required", args: `{}`, want: []string{`missing required argument "task"`}},
		{name: "required_null", args: `{"task": null}`, want: []string{`argument "task": expected string, got null`}},
		{name: "wrong_type_string", args: `{"task":"x","path":3}`, want: []string{`argument "path": expected string, got number`}},
		{name: "wrong_type_integer", args: `{"task":"x","limit":1.5}`, want: []string{`argument "limit": expected integer, got number`}},
		{name: "wrong_type_integer_string", args: `{"task":"x","limit":"10"}`, want: []string{`argument "limit": expected integer, got string`}},
		{name: "wrong_type_boolean", args: `{"task":"x","force":"yes"}`, want: []string{`argument "force": expected boolean, got string`}},
		{name: "wrong_type_array", args: `{"task":"x","files":"a"}`, want: []string{`argument "files": expected array, got string`}},
		{name: "wrong_type_object", args: `{"task":"x","opts":[]}`, want: []string{`argument "opts": expected object, got array`}},
		{name: "type_list_mismatch", args: `{"task":"x","either":true}`, want: []string{`argument "either": expected string or integer, got boolean`}},
		{name: "enum", args: `{"task":"x","mode":"medium"}`, want: []string{`argument "mode": must be one of "fast", "slow", got "medium"`}},
		{name: "items", args: `{"task":"x","files":["a",2,"c",false]}`, want: []string{`argument "files[1]": expected string, got number`, `argument "files[3]": expected string, got boolean`}},
		{name: "additional_top", args: `{"task":"x","colour":"red"}`, want: []string{`unexpected argument "colour": the tool accepts only either, files, force, limit, mode, opts, path, ratio, task`}},
		{name: "nested_required", args: `{"task":"x","opts":{}}`, want: []string{`missing required argument "opts.depth"`}},
		{name: "nested_type", args: `{"task":"x","opts":{"depth":"deep"}}`, want: []string{`argument "opts.depth": expected integer, got string`}},
		{name: "nested_additional", args: `{"task":"x","opts":{"depth":1,"x":1}}`, want: []string{`unexpected argument "opts.x": "opts" accepts only depth, tags`}},
		{name: "array_of_objects", args: `{"task":"x","opts":{"depth":1,"tags":[{"k":"a"},{}]}}`, want: []string{`missing required argument "opts.tags[1].k"`}},
		{name: "several_problems", args: `{"path":1,"mode":"x"}`, want: []string{`missing required argument "task"`, `argument "mode": must be one of "fast", "slow", got "x"`, `argument "path": expected string, got number`}},
		{name: "not_object_array", args: `[1]`, want: []string{`the arguments must be a JSON object, got array`}},
		{name: "not_object_string", args: `"task"`, want: []string{`the arguments must be a JSON object, got string`}},
		{name: "not_object_null", args: `null`, want: []string{`the arguments must be a JSON object, got null`}},
		{name: "invalid_json", args: `{"task": "x"`, want: []string{`the arguments are not valid JSON: unexpected EOF`}},
		{name: "trailing_text", args: `{"task": "x"} {}`, want: []string{`the arguments are not valid JSON: unexpected text after the JSON value`}},
		{name: "several_additional", args: `{"task":"x","colour":"red","size":2}`, want: []string{`unexpected arguments "colour", "size": the tool accepts only either, files, force, limit, mode, opts, path, ratio, task`}},
		{name: "no_arguments_tool", schema: `{"type":"object","properties":{},"additionalProperties":false}`, args: `{"a":1}`, want: []string{`unexpected argument "a": the tool takes no arguments`}},
		{name: "additional_schema", schema: `{"type":"object","additionalProperties":{"type":"integer"}}`, args: `{"a":1,"b":"2"}`, want: []string{`argument "b": expected integer, got string`}},
		{name: "const", schema: `{"type":"object","properties":{"v":{"const":2}}}`, args: `{"v":2.0}`},
		{name: "const_mismatch", schema: `{"type":"object","properties":{"v":{"const":"a"}}}`, args: `{"v":"b"}`, want: []string{`argument "v": must be "a", got "b"`}},
		{name: "unknown_type_name_ignored", schema: `{"type":"object","properties":{"v":{"type":"date"}}}`, args: `{"v":"b"}`},
		{name: "malformed_property_schema_ignored", schema: `{"type":"object","properties":{"v":"string"}}`, args: `{"v":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			schema := tt.schema
			if schema == "" && tt.name != "empty_schema_accepts_object" {
				schema = testSchema
			}
			err := Validate(json.RawMessage(schema), json.RawMessage(tt.args))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v, want nil", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate: %v (%T), want *ValidationError", err, err)
			}
			if diff := cmp.Diff(tt.want, ve.Problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateInvalidSchema(t *testing.T) {
	for _, schema := range []string{`{`, `[1]`, `"object"`} {
		t.Run(schema, func(t *testing.T) {
			err := Validate(json.RawMessage(schema), json.RawMessage(`{}`))
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate: %v, want ErrInvalid", err)
			}
		})
	}
}

func TestValidationErrorMessage(t *testing.T) {
	err := Validate(json.RawMessage(testSchema), json.RawMessage(`{"path": 1}`))
	want := `missing required argument "task"; argument "path": expected string, got number`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func FuzzValidate(f *testing.F) {
	f.Add(testSchema, `{"task":"x","opts":{"depth":1}}`)
	f.Add(`{"type":"object","properties":{"a":{"type":"array","items":{"enum":[1,"a",null]}}}}`, `{"a":[1,2,{}]}`)
	f.Add(`{"properties":{"a":{"const":{"x":[1]}}}}`, `{"a":{"x":[1.0]}}`)
	f.Fuzz(func(t *testing.T, schema, args string) {
		_ = Validate(json.RawMessage(schema), json.RawMessage(args)) // must not panic
	})
}
