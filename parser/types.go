package parser

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// allowedKinds lists the type names of a types spec, for error messages.
const allowedKinds = "int, float, bool, time, string"

// kindNames maps the type names of a types spec to kinds. "integer" is
// Fluent Bit's own spelling of int.
var kindNames = map[string]Kind{
	"int": KindInt, "integer": KindInt,
	"float":  KindFloat,
	"bool":   KindBool,
	"time":   KindTime,
	"string": KindString,
}

// ParseTypeSpec parses the types option, a comma-separated list of
// field:type entries such as "cost:int, latency:float, ok:bool, at:time".
// Type names are case-insensitive; spaces around names and empty entries are
// ignored. Every bad entry is reported, joined into one error.
func ParseTypeSpec(spec string) (map[string]Kind, error) {
	types := map[string]Kind{}
	var errs []error
	for _, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		field, kind, ok := strings.Cut(entry, ":")
		field, kind = strings.TrimSpace(field), strings.TrimSpace(kind)
		k, known := kindNames[strings.ToLower(kind)]
		switch {
		case !ok || field == "":
			errs = append(errs, fmt.Errorf("invalid types entry %q: want field:type, type one of %s", entry, allowedKinds))
		case !known:
			errs = append(errs, fmt.Errorf("invalid type %q for field %q: allowed %s", kind, field, allowedKinds))
		default:
			if _, dup := types[field]; dup {
				errs = append(errs, fmt.Errorf("field %q is given a type twice", field))
			}
			types[field] = k
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return types, nil
}

// EmitTyped emits the string value s of field key converted to kind k, and
// reports whether the conversion succeeded. For int, float, bool and time,
// "-" and "" (a missing value in access logs) become Null; a value that does
// not convert, or a kind EmitTyped does not know, is emitted unchanged as a
// String and gives false.
//
//	int    decimal int64
//	float  strconv.ParseFloat
//	bool   true/false, on/off, yes/no, 1/0, case-insensitive
//	time   what parseLineTime reads (ISO 8601 with or without zone, CLF, the
//	       Apache error log's time, seconds since 1970)
func EmitTyped(out FieldSink, key, s string, k Kind) bool {
	if k == KindString || k > KindTime {
		out.String(key, s)
		return k == KindString
	}
	if s == "-" || s == "" {
		out.Null(key)
		return true
	}
	switch k {
	case KindInt:
		if v, err := strconv.ParseInt(s, 10, 64); err == nil {
			out.Int(key, v)
			return true
		}
	case KindFloat:
		if v, err := strconv.ParseFloat(s, 64); err == nil {
			out.Float(key, v)
			return true
		}
	case KindBool:
		if v, ok := parseBoolWord(s); ok {
			out.Bool(key, v)
			return true
		}
	case KindTime:
		if t, ok := parseLineTime(s); ok {
			out.Time(key, t)
			return true
		}
	}
	out.String(key, s)
	return false
}

// boolWords are the words parseBoolWord accepts, with their values.
var boolWords = [...]struct {
	word string
	val  bool
}{
	{"true", true}, {"false", false},
	{"on", true}, {"off", false},
	{"yes", true}, {"no", false},
	{"1", true}, {"0", false},
}

func parseBoolWord(s string) (val, ok bool) {
	for _, w := range boolWords {
		if strings.EqualFold(s, w.word) {
			return w.val, true
		}
	}
	return false, false
}
