package parser

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// AllowedKinds lists the kind names of a types spec, for messages and the
// README.
const AllowedKinds = "int (or integer), float, bool, time, string, in any case"

// kindNames maps the kind names of a types spec, in lower case, to kinds.
// "integer" is Fluent Bit's own spelling of int.
var kindNames = map[string]Kind{
	"int": KindInt, "integer": KindInt,
	"float":  KindFloat,
	"bool":   KindBool,
	"time":   KindTime,
	"string": KindString,
}

// ParseTypeEntry parses one field:kind entry of the types option: the one
// grammar the configuration checks and the decoder uses. Spaces around the
// field and the kind are ignored; the kind is any case.
func ParseTypeEntry(entry string) (field string, k Kind, err error) {
	field, kind, ok := strings.Cut(entry, ":")
	field, kind = strings.TrimSpace(field), strings.TrimSpace(kind)
	if !ok {
		return "", 0, fmt.Errorf("%q is not field:kind", strings.TrimSpace(entry))
	}
	k, known := kindNames[strings.ToLower(kind)]
	if !known {
		return "", 0, fmt.Errorf("%q: kind must be one of %s", strings.TrimSpace(entry), AllowedKinds)
	}
	return field, k, nil
}

// ParseTypeSpec parses the types option, a comma-separated list of
// field:kind entries such as "cost:int, latency:float, ok:bool, at:time"
// (see ParseTypeEntry); empty entries are ignored. Every bad entry is
// reported, joined into one error.
func ParseTypeSpec(spec string) (map[string]Kind, error) {
	types := map[string]Kind{}
	var errs []error
	for _, entry := range strings.Split(spec, ",") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		field, k, err := ParseTypeEntry(entry)
		switch {
		case err != nil:
			errs = append(errs, err)
		case field == "":
			errs = append(errs, fmt.Errorf("%q: the field is empty", strings.TrimSpace(entry)))
		default:
			if _, dup := types[field]; dup {
				errs = append(errs, fmt.Errorf("field %q is given twice", field))
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
