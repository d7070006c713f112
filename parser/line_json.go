package parser

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// jsonLineParser reads a line holding one JSON object. Its members are
// emitted in the order they are written, nested objects and arrays included.
// Integers that fit in an int64 become Int, other numbers Float; a number
// too large even for a float64 is kept as its text. The top-level member
// named by the time key becomes a Time when its string, or with the default
// format its number (seconds since 1970), reads as one.
type jsonLineParser struct{ time *lineTime }

var (
	errJSONNotObject = errors.New("json: line is not a JSON object")
	errJSONTrailing  = errors.New("json: unexpected data after the object")
	errJSONTruncated = errors.New("json: truncated object")
	errJSONTooDeep   = fmt.Errorf("json: nested deeper than %d levels", MaxDepth)
)

// jsonOpKind is the FieldSink call a recorded jsonOp replays.
type jsonOpKind uint8

const (
	jsonString jsonOpKind = iota
	jsonInt
	jsonFloat
	jsonBool
	jsonNull
	jsonTime // i seconds and nsec nanoseconds since 1970
	jsonBeginMap
	jsonBeginArray
	jsonEnd
)

// jsonOp is one recorded FieldSink call. The line is decoded in full into
// ops before any is replayed, so a bad line emits nothing.
type jsonOp struct {
	kind jsonOpKind
	b    bool
	nsec int32
	key  string
	str  string
	i    int64
	f    float64
}

// Parse implements LineParser.
func (p jsonLineParser) Parse(line string, out FieldSink) error {
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errJSONNotObject
	}
	var ops []jsonOp
	if err := decodeJSONObject(dec, &ops, 1, p.time); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errJSONTrailing
	}
	for i := range ops {
		ops[i].replay(out)
	}
	return nil
}

// Types implements LineParser: JSON values are typed already.
func (jsonLineParser) Types() map[string]Kind { return nil }

// TimeKey implements LineParser.
func (p jsonLineParser) TimeKey() string { return p.time.key }

// decodeJSONObject records the members of an object whose "{" has been read,
// up to and including its "}". depth is the nesting level of the object;
// at depth 1 the member named by lt's key is read as a time.
func decodeJSONObject(dec *json.Decoder, ops *[]jsonOp, depth int, lt *lineTime) error {
	for {
		tok, err := nextJSONToken(dec)
		if err != nil {
			return err
		}
		if tok == json.Delim('}') {
			return nil
		}
		key, _ := tok.(string) // the decoder only gives a string here
		if tok, err = nextJSONToken(dec); err != nil {
			return err
		}
		if depth == 1 && lt != nil && key == lt.key {
			if t, ok := jsonTimeValue(tok, lt); ok {
				*ops = append(*ops, jsonOp{kind: jsonTime, key: key, i: t.Unix(), nsec: int32(t.Nanosecond())})
				continue
			}
		}
		if err := decodeJSONValue(dec, ops, key, tok, depth); err != nil {
			return err
		}
	}
}

// decodeJSONValue records the value that starts with tok under key.
func decodeJSONValue(dec *json.Decoder, ops *[]jsonOp, key string, tok json.Token, depth int) error {
	switch v := tok.(type) {
	case json.Delim:
		if depth >= MaxDepth {
			return errJSONTooDeep
		}
		if v == '{' {
			*ops = append(*ops, jsonOp{kind: jsonBeginMap, key: key})
			if err := decodeJSONObject(dec, ops, depth+1, nil); err != nil {
				return err
			}
		} else {
			*ops = append(*ops, jsonOp{kind: jsonBeginArray, key: key})
			if err := decodeJSONArray(dec, ops, depth+1); err != nil {
				return err
			}
		}
		*ops = append(*ops, jsonOp{kind: jsonEnd})
	case string:
		*ops = append(*ops, jsonOp{kind: jsonString, key: key, str: v})
	case json.Number:
		*ops = append(*ops, jsonNumberOp(key, v))
	case bool:
		*ops = append(*ops, jsonOp{kind: jsonBool, key: key, b: v})
	case nil:
		*ops = append(*ops, jsonOp{kind: jsonNull, key: key})
	}
	return nil
}

// decodeJSONArray records the elements of an array whose "[" has been read,
// up to and including its "]".
func decodeJSONArray(dec *json.Decoder, ops *[]jsonOp, depth int) error {
	for {
		tok, err := nextJSONToken(dec)
		if err != nil {
			return err
		}
		if tok == json.Delim(']') {
			return nil
		}
		if err := decodeJSONValue(dec, ops, "", tok, depth); err != nil {
			return err
		}
	}
}

// nextJSONToken reads a token inside the object, where the end of the line
// means it was cut short.
func nextJSONToken(dec *json.Decoder) (json.Token, error) {
	tok, err := dec.Token()
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return nil, errJSONTruncated
	case err != nil:
		return nil, fmt.Errorf("json: %w", err)
	}
	return tok, nil
}

// jsonTimeValue reads the time key's value tok as a time: a string in lt's
// format, or with the default format a number of seconds since 1970.
func jsonTimeValue(tok json.Token, lt *lineTime) (time.Time, bool) {
	switch v := tok.(type) {
	case string:
		return lt.parse(v)
	case json.Number:
		if lt.format.IsDefault() && lt.epoch {
			return parseEpochText(string(v))
		}
	}
	return time.Time{}, false
}

func jsonNumberOp(key string, n json.Number) jsonOp {
	if i, err := n.Int64(); err == nil {
		return jsonOp{kind: jsonInt, key: key, i: i}
	}
	if f, err := n.Float64(); err == nil {
		return jsonOp{kind: jsonFloat, key: key, f: f}
	}
	return jsonOp{kind: jsonString, key: key, str: n.String()}
}

func (op *jsonOp) replay(out FieldSink) {
	switch op.kind {
	case jsonString:
		out.String(op.key, op.str)
	case jsonInt:
		out.Int(op.key, op.i)
	case jsonFloat:
		out.Float(op.key, op.f)
	case jsonBool:
		out.Bool(op.key, op.b)
	case jsonNull:
		out.Null(op.key)
	case jsonTime:
		out.Time(op.key, time.Unix(op.i, int64(op.nsec)).UTC())
	case jsonBeginMap:
		out.BeginMap(op.key)
	case jsonBeginArray:
		out.BeginArray(op.key)
	case jsonEnd:
		out.End()
	}
}
