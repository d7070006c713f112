package parser

import (
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
)

// writer appends BSON for one record document. It also implements FieldSink,
// so line parsers write their fields straight into the document.
type writer struct {
	d       *Decoder
	dst     []byte
	scratch [24]byte
	frames  []frame
	// logTime is the line's own time when a parser found one.
	logTime    time.Time
	hasLogTime bool
	// inLine is set while a line parser emits its fields, typing while
	// one of them is converted by types.
	inLine, typing bool
	// lineFrom and lineTo are where the fields of the parsed line lie in
	// dst (lineTo 0: no line parsed).
	lineFrom, lineTo int
}

// frame is an open map or array of FieldSink calls.
type frame struct {
	start int32
	array bool
	n     int
}

// validString returns raw as a string with invalid UTF-8 sequences replaced
// by U+FFFD.
func validString(raw []byte) string {
	if utf8.Valid(raw) {
		return string(raw)
	}
	return strings.ToValidUTF8(string(raw), "\uFFFD")
}

// bytesString views b as a string without copying; the string must not
// outlive b.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// appendString appends a BSON string value (length, bytes, NUL).
func appendString(dst, raw []byte) []byte {
	if !utf8.Valid(raw) {
		raw = []byte(strings.ToValidUTF8(string(raw), "\uFFFD"))
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(raw)+1))
	dst = append(dst, raw...)
	return append(dst, 0)
}

// appendName appends a field name made safe (see model.AppendName) and its NUL.
// At the top level a name that is (or was rewritten to) a reserved name
// gets a "_" prefix.
func (w *writer) appendName(dst, key []byte, top bool) []byte {
	start := len(dst)
	dst = model.AppendName(dst, key, w.d.opt.ReplaceDot, w.d.opt.ReplaceDollar)
	if _, reserved := w.d.reserved.get(dst[start:]); top && reserved {
		dst = slices.Insert(dst, start, '_')
	}
	return append(dst, 0)
}

// element appends a type placeholder and a name, returning the placeholder's
// position for value to fill in.
func (w *writer) element(key []byte, top bool) int {
	at := len(w.dst)
	w.dst = append(w.dst, 0)
	w.dst = w.appendName(w.dst, key, top)
	return at
}

// readKey reads a map key; a container used as a key is skipped whole and
// named "key".
func (w *writer) readKey(r *reader) ([]byte, error) {
	if b, ok := r.shortString(); ok {
		return b, nil
	}
	start := r.pos
	k, err := r.next()
	if err != nil {
		return nil, err
	}
	if k.kind == kArray || k.kind == kMap {
		r.pos = start
		if err := r.skip(); err != nil {
			return nil, err
		}
	}
	return keyBytes(k, w.scratch[:0]), nil
}

// value reads one msgpack value and appends it as BSON, setting the element
// type at typeAt. inc and exc are the field filters below this value.
func (w *writer) value(r *reader, typeAt int, inc, exc *pathNode, depth int) error {
	if b, ok := r.shortString(); ok {
		w.dst = appendString(w.dst, b)
		w.dst[typeAt] = byte(bsoncore.TypeString)
		return nil
	}
	start := r.pos
	v, err := r.next()
	if err != nil {
		return err
	}
	t := bsoncore.TypeNull
	switch v.kind {
	case kNil:
	case kBool:
		t = bsoncore.TypeBoolean
		w.dst = append(w.dst, boolByte(v.b))
	case kInt:
		if v.i >= math.MinInt32 && v.i <= math.MaxInt32 {
			t = bsoncore.TypeInt32
			w.dst = binary.LittleEndian.AppendUint32(w.dst, uint32(int32(v.i)))
		} else {
			t = bsoncore.TypeInt64
			w.dst = binary.LittleEndian.AppendUint64(w.dst, uint64(v.i))
		}
	case kUint:
		// Above int64: a Decimal128 integer holds it without loss.
		t = bsoncore.TypeDecimal128
		w.dst = binary.LittleEndian.AppendUint64(w.dst, v.u)
		w.dst = binary.LittleEndian.AppendUint64(w.dst, decimalExponentZero)
	case kFloat:
		t = bsoncore.TypeDouble
		w.dst = binary.LittleEndian.AppendUint64(w.dst, math.Float64bits(v.f))
	case kStr, kBin:
		t = bsoncore.TypeString
		w.dst = appendString(w.dst, v.raw)
	case kExt:
		if ts, reason := eventTime(v); reason == "" {
			t = bsoncore.TypeDateTime
			w.dst = binary.LittleEndian.AppendUint64(w.dst, uint64(ts.UnixMilli()))
		} else {
			t = bsoncore.TypeEmbeddedDocument
			var at int32
			at, w.dst = bsoncore.ReserveLength(w.dst)
			w.dst = bsoncore.AppendInt32Element(w.dst, "type", int32(v.ext))
			w.dst = bsoncore.AppendBinaryElement(w.dst, "data", 0, v.raw)
			w.dst = closeDoc(w.dst, at)
		}
	case kMap, kArray:
		if depth > MaxDepth {
			r.pos = start
			if err := r.skip(); err != nil {
				return err
			}
			return errTooDeep
		}
		t = bsoncore.TypeEmbeddedDocument
		if v.kind == kArray {
			t = bsoncore.TypeArray
		}
		if err := w.container(r, v, inc, exc, depth); err != nil {
			return err
		}
	}
	w.dst[typeAt] = byte(t)
	return nil
}

// container appends the elements of a map or array whose header was read.
func (w *writer) container(r *reader, v value, inc, exc *pathNode, depth int) error {
	at, dst := bsoncore.ReserveLength(w.dst)
	w.dst = dst
	for i := 0; i < v.n; i++ {
		var typeAt int
		var incNext, excNext *pathNode
		if v.kind == kMap {
			key, err := w.readKey(r)
			if err != nil {
				return err
			}
			var keep bool
			if keep, incNext, excNext = selectKey(key, inc, exc); !keep {
				if err := r.skip(); err != nil {
					return err
				}
				continue
			}
			typeAt = w.element(key, false)
		} else {
			typeAt = w.element(strconv.AppendInt(w.scratch[:0], int64(i), 10), false)
		}
		if err := w.value(r, typeAt, incNext, excNext, depth+1); err != nil {
			if err == errTooDeep {
				return w.skipRest(r, v, i, err)
			}
			return err
		}
	}
	w.dst = closeDoc(w.dst, at)
	return nil
}

// skipRest skips the elements of a container after element i failed with
// err, so the reader stays in step, and returns err.
func (w *writer) skipRest(r *reader, v value, i int, err error) error {
	left := v.n - i - 1
	if v.kind == kMap {
		left *= 2
	}
	for ; left > 0; left-- {
		if e := r.skip(); e != nil {
			return e
		}
	}
	return err
}

// decimalExponentZero is the high word of a Decimal128 with exponent 0 and
// a coefficient below 2^64.
const decimalExponentZero = uint64(6176) << 49

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func closeDoc(dst []byte, at int32) []byte {
	dst = append(dst, 0)
	return bsoncore.UpdateLength(dst, at, int32(len(dst))-at)
}

// parseLine handles the field holding a raw line. It returns false when the
// value is not a string, so the caller stores it as an ordinary field.
func (w *writer) parseLine(r *reader, key []byte, rec *Record) (bool, error) {
	start := r.pos
	v, err := r.next()
	if err != nil {
		return false, err
	}
	if v.kind != kStr && v.kind != kBin {
		r.pos = start
		return false, nil
	}
	// The line lives only while this record is written: the parser's
	// fields are copied into the document as they are emitted.
	line := bytesString(v.raw)
	mark := len(w.dst)
	w.inLine = true
	perr := w.d.opt.Line.Parse(line, w)
	w.inLine = false
	if perr == nil && w.d.opt.TimeFromLog && !w.hasLogTime {
		// time_from_log asks for the line's time and the line has none: it
		// is kept as a line that does not parse, with Fluent Bit's time.
		w.dst = w.dst[:mark]
		w.frames = w.frames[:0]
		w.String(string(key), line)
		w.String("_parse_error", w.d.noTimeReason)
		rec.ParseFailed = true
		return true, nil
	}
	if perr != nil {
		rec.ParseFailed = true
		w.String(string(key), line)
		w.String("_parse_error", perr.Error())
		return true, nil
	}
	w.lineFrom, w.lineTo = mark, len(w.dst)
	return true, nil
}

// yieldToLine gives a parsed line's fields their names where the record
// has fields of the same names (a CRI record's time beside a JSON line's
// time): the line's field keeps the name, and the record's is stored as
// _<name>, so that a document never holds one name twice. start is where
// the document's elements begin in dst; the document is not closed yet.
func (w *writer) yieldToLine(start int) {
	if w.lineTo == 0 {
		return
	}
	for at := start; at < len(w.dst); {
		name, next := elementAt(w.dst, at)
		if next <= at {
			return // not a whole element: leave the document as it is
		}
		if at < w.lineFrom || at >= w.lineTo {
			for l := w.lineFrom; l < w.lineTo; {
				lname, lnext := elementAt(w.dst, l)
				if lnext <= l {
					break
				}
				if string(lname) == string(name) {
					w.dst = slices.Insert(w.dst, at+1, '_')
					if at < w.lineFrom {
						w.lineFrom++
						w.lineTo++
					}
					next++
					break
				}
				l = lnext
			}
		}
		at = next
	}
}

// elementAt is the name of the BSON element at dst[at:] and where the next
// one starts (at or before at when it cannot be read).
func elementAt(dst []byte, at int) ([]byte, int) {
	e, _, ok := bsoncore.ReadElement(dst[at:])
	if !ok {
		return nil, at
	}
	return e.KeyBytes(), at + len(e)
}

// lineKind is the kind types gives the top-level field key of a line, when
// the line parser is emitting it and types names it.
func (w *writer) lineKind(key string) (Kind, bool) {
	if !w.inLine || w.typing || len(w.frames) > 0 || !w.d.hasLineTypes {
		return 0, false
	}
	k, ok := w.d.lineTypes.get(unsafe.Slice(unsafe.StringData(key), len(key)))
	return k, ok && k != KindString
}

// The FieldSink methods. At depth 0 they apply the field filters and the
// reserved names; below, keys inside arrays are the element indexes.

func (w *writer) sinkKey(key string, t bsoncore.Type) bool {
	k := unsafe.Slice(unsafe.StringData(key), len(key))
	if len(w.frames) == 0 {
		if keep, _, _ := selectKey(k, w.d.include, w.d.exclude); !keep {
			return false
		}
		w.dst = append(w.dst, byte(t))
		w.dst = w.appendName(w.dst, k, true)
		return true
	}
	f := &w.frames[len(w.frames)-1]
	w.dst = append(w.dst, byte(t))
	if f.array {
		w.dst = strconv.AppendInt(w.dst, int64(f.n), 10)
		w.dst = append(w.dst, 0)
	} else {
		w.dst = w.appendName(w.dst, k, false)
	}
	f.n++
	return true
}

// skipped counts the open containers whose key the filters dropped, so their
// contents are dropped too.
func (w *writer) dropping() bool {
	return len(w.frames) > 0 && w.frames[len(w.frames)-1].start < 0
}

func (w *writer) String(key, val string) {
	if k, ok := w.lineKind(key); ok {
		w.typing = true
		EmitTyped(w, key, val, k)
		w.typing = false
		return
	}
	if !w.dropping() && w.sinkKey(key, bsoncore.TypeString) {
		w.dst = appendString(w.dst, unsafe.Slice(unsafe.StringData(val), len(val)))
	}
}

func (w *writer) Int(key string, v int64) {
	if w.dropping() {
		return
	}
	if k, ok := w.lineKind(key); ok && k == KindTime {
		if t, ok := intSecondsTime(v); ok {
			w.Time(key, t)
			return
		}
	}
	if v >= math.MinInt32 && v <= math.MaxInt32 {
		if w.sinkKey(key, bsoncore.TypeInt32) {
			w.dst = binary.LittleEndian.AppendUint32(w.dst, uint32(int32(v)))
		}
	} else if w.sinkKey(key, bsoncore.TypeInt64) {
		w.dst = binary.LittleEndian.AppendUint64(w.dst, uint64(v))
	}
}

func (w *writer) Float(key string, v float64) {
	if k, ok := w.lineKind(key); ok && k == KindTime {
		if t, ok := floatSecondsTime(v); ok {
			w.Time(key, t)
			return
		}
	}
	if !w.dropping() && w.sinkKey(key, bsoncore.TypeDouble) {
		w.dst = binary.LittleEndian.AppendUint64(w.dst, math.Float64bits(v))
	}
}

func (w *writer) Bool(key string, v bool) {
	if !w.dropping() && w.sinkKey(key, bsoncore.TypeBoolean) {
		w.dst = append(w.dst, boolByte(v))
	}
}

func (w *writer) Null(key string) {
	if !w.dropping() {
		w.sinkKey(key, bsoncore.TypeNull)
	}
}

func (w *writer) Time(key string, t time.Time) {
	if w.dropping() {
		return
	}
	if len(w.frames) == 0 && w.d.opt.TimeFromLog && key == w.d.lineTimeKey && key != "" {
		// The log's own time becomes the entry time instead of a field.
		w.logTime, w.hasLogTime = t, true
		return
	}
	if w.sinkKey(key, bsoncore.TypeDateTime) {
		w.dst = binary.LittleEndian.AppendUint64(w.dst, uint64(t.UnixMilli()))
	}
}

func (w *writer) BeginMap(key string)   { w.begin(key, bsoncore.TypeEmbeddedDocument) }
func (w *writer) BeginArray(key string) { w.begin(key, bsoncore.TypeArray) }

func (w *writer) begin(key string, t bsoncore.Type) {
	if w.dropping() || len(w.frames) >= MaxDepth || !w.sinkKey(key, t) {
		// A dropped container: remember it so End matches, write nothing.
		w.frames = append(w.frames, frame{start: -1})
		return
	}
	var at int32
	at, w.dst = bsoncore.ReserveLength(w.dst)
	w.frames = append(w.frames, frame{start: at, array: t == bsoncore.TypeArray})
}

func (w *writer) End() {
	if len(w.frames) == 0 {
		return
	}
	f := w.frames[len(w.frames)-1]
	w.frames = w.frames[:len(w.frames)-1]
	if f.start >= 0 {
		w.dst = closeDoc(w.dst, f.start)
	}
}

// ScalarText is a scalar value as a user writes it (a string as it is,
// numbers in decimal, true or false), and whether v is one of those.
func ScalarText(v bsoncore.Value) (string, bool) {
	switch v.Type {
	case bsoncore.TypeString:
		return v.StringValue(), true
	case bsoncore.TypeInt32:
		return strconv.Itoa(int(v.Int32())), true
	case bsoncore.TypeInt64:
		return strconv.FormatInt(v.Int64(), 10), true
	case bsoncore.TypeDouble:
		return strconv.FormatFloat(v.Double(), 'g', -1, 64), true
	case bsoncore.TypeBoolean:
		return strconv.FormatBool(v.Boolean()), true
	}
	return "", false
}
