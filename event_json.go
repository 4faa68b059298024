package cadre

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	"github.com/cadre-ai/cadre/internal/jsonw"
)

// payloadFields are the JSON writers of the payload types, made once from
// their struct tags when the package starts: Event.MarshalJSON writes a
// payload with them instead of reflecting through encoding/json on every
// event. A payload with a field they do not handle (a slice, a map, a
// pointer, a type with its own MarshalJSON) has none and goes through
// encoding/json. TestPayloadFieldsWriteWhatJSONWrites holds them to
// json.Marshal for every payload type.
var payloadFields = func() map[reflect.Type][]fieldWriter {
	m := map[reflect.Type][]fieldWriter{}
	for _, et := range EventTypes() {
		t := reflect.TypeOf(zeroPayload(et))
		if fs, ok := fieldWriters(t); ok {
			m[t] = fs
		}
	}
	return m
}()

// A fieldWriter writes one field of a struct: `"name":value`, or nothing
// when omitempty leaves it out.
type fieldWriter struct {
	index int
	key   string // "name":
	kind  reflect.Kind
	omit  bool
	sub   []fieldWriter // of a struct field
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// writesItself reports whether encoding/json writes a value of t by a
// method of t's: MarshalJSON, or MarshalText for a string or a struct.
func writesItself(t reflect.Type) bool {
	for _, u := range []reflect.Type{t, reflect.PointerTo(t)} {
		if u.Implements(marshalerType) || u.Implements(textMarshalerType) {
			return true
		}
	}
	return false
}

func fieldWriters(t reflect.Type) ([]fieldWriter, bool) {
	if t.Kind() != reflect.Struct || writesItself(t) {
		return nil, false
	}
	var fs []fieldWriter
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Anonymous {
			return nil, false
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" || name == "-" || !plainKey(name) { // "-," names a field "-": not written here
			return nil, false
		}
		w := fieldWriter{index: i, key: strconv.Quote(name) + ":", kind: f.Type.Kind()}
		for o := range strings.SplitSeq(opts, ",") {
			switch o {
			case "omitempty":
				w.omit = true
			case "":
			default:
				return nil, false // string, omitzero: not written here
			}
		}
		if writesItself(f.Type) || f.Type == reflect.TypeFor[json.Number]() {
			return nil, false // json.Number is written as a bare number
		}
		switch w.kind {
		case reflect.String, reflect.Bool, reflect.Int, reflect.Int64, reflect.Float64:
		case reflect.Struct:
			sub, ok := fieldWriters(f.Type)
			if !ok || w.omit { // omitempty never leaves out a struct
				return nil, false
			}
			w.sub = sub
		default:
			return nil, false
		}
		fs = append(fs, w)
	}
	return fs, true
}

// plainKey reports whether a JSON name is written as it is, quoted.
func plainKey(s string) bool {
	for _, c := range s {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// appendFields writes v's fields, each after a comma, and reports false
// when a float cannot be written (NaN or an infinity).
func appendFields(b []byte, v reflect.Value, fs []fieldWriter) ([]byte, bool) {
	for i := range fs {
		w := &fs[i]
		f := v.Field(w.index)
		switch w.kind {
		case reflect.String:
			s := f.String()
			if w.omit && s == "" {
				continue
			}
			b = jsonw.AppendString(append(append(b, ','), w.key...), s)
		case reflect.Bool:
			x := f.Bool()
			if w.omit && !x {
				continue
			}
			b = strconv.AppendBool(append(append(b, ','), w.key...), x)
		case reflect.Int, reflect.Int64:
			n := f.Int()
			if w.omit && n == 0 {
				continue
			}
			b = strconv.AppendInt(append(append(b, ','), w.key...), n, 10)
		case reflect.Float64:
			x := f.Float()
			if w.omit && x == 0 {
				continue
			}
			var ok bool
			if b, ok = jsonw.AppendFloat(append(append(b, ','), w.key...), x); !ok {
				return b, false
			}
		case reflect.Struct:
			b = append(append(append(b, ','), w.key...), '{')
			n := len(b)
			var ok bool
			if b, ok = appendFields(b, f, w.sub); !ok {
				return b, false
			}
			if len(b) > n {
				b = append(b[:n], b[n+1:]...) // the first field has no comma
			}
			b = append(b, '}')
		}
	}
	return b, true
}
