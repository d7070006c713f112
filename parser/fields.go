package parser

import "time"

// FieldSink receives the typed fields that a line parser extracts, in the
// order they appear in the line. Keys are plain field names (no dots); the
// receiver applies key rewriting and field selection.
type FieldSink interface {
	String(key, val string)
	Int(key string, v int64)
	Float(key string, v float64)
	Bool(key string, v bool)
	Null(key string)
	Time(key string, t time.Time)
	// BeginMap starts a nested map under key: the fields emitted until the
	// matching End go into it. Inside an array, key is "".
	BeginMap(key string)
	// BeginArray starts an array under key: its elements are emitted with
	// key "" until the matching End.
	BeginArray(key string)
	// End closes the innermost open map or array.
	End()
}

// Kind is the type a string field is converted to.
type Kind uint8

const (
	KindString Kind = iota
	KindInt
	KindFloat
	KindBool
	KindTime
)

// LineParser turns one raw log line into typed fields.
type LineParser interface {
	// Parse parses line and emits its fields to out. It emits nothing and
	// returns an error when the line does not match the format.
	Parse(line string, out FieldSink) error
	// Types gives, for records that Fluent Bit's own parsers already split
	// into string fields, the kind each known field is converted to (for
	// example code and size become integers). Fields not listed stay as they are.
	Types() map[string]Kind
	// TimeKey is the top-level field the parser gives the line's own time
	// under (as a Time, when the line has one), or "" when it gives none.
	TimeKey() string
}
