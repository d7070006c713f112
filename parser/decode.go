package parser

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// MaxDepth is how deep maps and arrays may nest inside a record body. MongoDB
// refuses documents nested deeper than 100 levels; a record nested deeper than
// MaxDepth is reported as bad rather than half stored.
const MaxDepth = 64

// Options configure a Decoder. The zero value of each field means "off".
type Options struct {
	TimeKey       string // name of the entry time field, e.g. "ts"
	ReplaceDot    string // replaces "." in field names
	ReplaceDollar string // replaces a leading "$" in field names
	KeepMetadata  bool   // store record metadata under "_meta"
	// Reserved are further top-level names the caller writes itself (for
	// example "_id" and the tag field in flat mode); a record field with one
	// of these names, or with TimeKey, is stored with a "_" prefix.
	Reserved []string

	Line        LineParser // nil: no line parsing
	ParseKey    string     // field holding the raw line
	TimeFromLog bool       // the log line's own time becomes the entry time
	Types       map[string]Kind

	Include []string // dotted paths; empty: everything
	Exclude []string // dotted paths

	// MaxRecordBytes bounds one encoded record; a larger one is reported
	// as bad. Zero means the BSON limit of 16 MiB.
	MaxRecordBytes int
}

// Record is one decoded record, encoded as the BSON entry document the
// writer stores.
type Record struct {
	Index       int       // position in the chunk
	Time        time.Time // entry time
	Doc         bsoncore.Document
	ParseFailed bool // the line parser did not match; the raw line was kept
}

// BadRecord is a record that cannot be stored as an entry. Raw holds its
// msgpack bytes, so it can be parked with its reason.
type BadRecord struct {
	Index  int
	Offset int
	Time   time.Time // zero when the time itself was unreadable
	Raw    []byte
	Reason string
}

// CorruptError says where a chunk stopped being valid msgpack. The records
// before it were decoded normally.
type CorruptError struct {
	Index  int // index of the record that could not be read
	Offset int // byte offset of that record in the chunk
	Err    error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("corrupt chunk at record %d (byte offset %d): %v", e.Index, e.Offset, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Batch holds the outcome of decoding one chunk. Record documents point into
// an arena owned by the batch; reuse a Batch only after its documents are no
// longer needed.
type Batch struct {
	Records []Record
	Bad     []BadRecord
	// Corrupt is set when the chunk is not valid msgpack from Corrupt.Offset
	// on; Rest holds those bytes.
	Corrupt *CorruptError
	Rest    []byte
	// ParseFailures counts records whose line did not parse.
	ParseFailures int
	arena         []byte
	w             writer // reused for every record, so it is not allocated per record
}

// Reset empties the batch, keeping its memory.
func (b *Batch) Reset() {
	b.Records = b.Records[:0]
	b.Bad = b.Bad[:0]
	b.Corrupt = nil
	b.Rest = nil
	b.ParseFailures = 0
	b.arena = b.arena[:0]
}

// Prefix appends elements that go first in each record document (after the
// time), for example a flat document's _id. idx is the record's index and
// t its event time.
type Prefix func(dst []byte, idx int, t time.Time) []byte

// Decoder turns Fluent Bit chunks into BSON entry documents in one pass,
// without building an intermediate map per record. It is safe for
// concurrent use: Decode keeps its state on the stack.
type Decoder struct {
	opt      Options
	reserved smallSet[bool]
	types    smallSet[Kind]
	// lineTypes are the user's types, which also apply to the top-level
	// fields a line parser emits; the parser's own Types are for records
	// Fluent Bit already split.
	lineTypes    smallSet[Kind]
	hasLineTypes bool
	// lineTimeKey is the field the line parser gives the line's time
	// under; noTimeReason the _parse_error of a line without one when
	// TimeFromLog is set.
	lineTimeKey  string
	noTimeReason string
	include      *pathNode
	exclude      *pathNode
	maxBytes     int
}

// NewDecoder checks and compiles opts.
func NewDecoder(opts Options) (*Decoder, error) {
	if opts.TimeKey == "" {
		return nil, errors.New("time key must not be empty")
	}
	if strings.ContainsAny(opts.ReplaceDot, ".\x00") || strings.HasPrefix(opts.ReplaceDot, "$") {
		return nil, fmt.Errorf("dot replacement %q must not contain '.' or NUL nor start with '$'", opts.ReplaceDot)
	}
	if strings.ContainsAny(opts.ReplaceDollar, ".\x00") || strings.HasPrefix(opts.ReplaceDollar, "$") {
		return nil, fmt.Errorf("dollar replacement %q must not contain '.' or NUL nor start with '$'", opts.ReplaceDollar)
	}
	d := &Decoder{opt: opts, maxBytes: opts.MaxRecordBytes}
	if d.maxBytes <= 0 {
		d.maxBytes = 16 * 1024 * 1024
	}
	d.reserved.put(opts.TimeKey, true)
	if opts.KeepMetadata {
		d.reserved.put("_meta", true)
	}
	for _, r := range opts.Reserved {
		d.reserved.put(r, true)
	}
	if opts.Line != nil {
		for k, v := range opts.Line.Types() {
			d.types.put(k, v)
		}
		d.lineTimeKey = opts.Line.TimeKey()
		d.noTimeReason = "time_from_log: the line has no " + strconv.Quote(d.lineTimeKey) +
			" field that reads as a time; the record keeps Fluent Bit's time"
	}
	for k, v := range opts.Types {
		d.types.put(k, v)
		d.lineTypes.put(k, v)
		d.hasLineTypes = true
	}
	d.include = buildPaths(opts.Include)
	d.exclude = buildPaths(opts.Exclude)
	return d, nil
}

// smallSet maps a few field names to values. Looked up for every field of
// every record, it compares lengths first and bytes second, which beats
// hashing for the handful of names it holds; past 16 names a map takes over.
type smallSet[V any] struct {
	names  []string
	values []V
	big    map[string]V
}

func (s *smallSet[V]) put(name string, v V) {
	if i := slices.Index(s.names, name); i >= 0 {
		s.values[i] = v
	} else {
		s.names, s.values = append(s.names, name), append(s.values, v)
	}
	if len(s.names) > 16 {
		s.big = map[string]V{}
		for i, n := range s.names {
			s.big[n] = s.values[i]
		}
	}
}

func (s *smallSet[V]) get(key []byte) (V, bool) {
	if s.big != nil {
		v, ok := s.big[string(key)]
		return v, ok
	}
	for i, n := range s.names {
		if len(n) == len(key) && n == string(key) {
			return s.values[i], true
		}
	}
	var zero V
	return zero, false
}

// pathNode is one level of a set of dotted field paths.
type pathNode struct {
	leaf     bool
	children map[string]*pathNode
}

func buildPaths(paths []string) *pathNode {
	if len(paths) == 0 {
		return nil
	}
	root := &pathNode{children: map[string]*pathNode{}}
	for _, p := range paths {
		n := root
		for _, seg := range strings.Split(p, ".") {
			c := n.children[seg]
			if c == nil {
				c = &pathNode{children: map[string]*pathNode{}}
				n.children[seg] = c
			}
			n = c
		}
		n.leaf = true
	}
	return root
}

// selectKey decides whether the field key under the filters inc and exc is
// stored, and which filters apply below it.
func selectKey(key []byte, inc, exc *pathNode) (keep bool, incNext, excNext *pathNode) {
	if exc != nil {
		if excNext = exc.children[string(key)]; excNext != nil && excNext.leaf {
			return false, nil, nil
		}
	}
	if inc != nil {
		c := inc.children[string(key)]
		if c == nil {
			return false, nil, nil
		}
		if !c.leaf {
			incNext = c
		}
	}
	return true, incNext, excNext
}

var errTooDeep = fmt.Errorf("nested deeper than %d levels", MaxDepth)

// Decode decodes every record of chunk into b (after resetting it). It
// returns only when the chunk has been read to its end or to the first
// corrupt byte (then b.Corrupt is set).
func (d *Decoder) Decode(chunk []byte, prefix Prefix, b *Batch) {
	b.Reset()
	if cap(b.arena) < len(chunk)*2 {
		b.arena = make([]byte, 0, len(chunk)*2+1024)
	}
	r := reader{buf: chunk}
	for idx := 0; r.pos < len(chunk); idx++ {
		start := r.pos
		bad, err := d.record(&r, idx, prefix, b)
		if err != nil {
			b.Corrupt = &CorruptError{Index: idx, Offset: start, Err: err}
			b.Rest = chunk[start:]
			return
		}
		if bad != nil {
			bad.Index, bad.Offset, bad.Raw = idx, start, chunk[start:r.pos]
			b.Bad = append(b.Bad, *bad)
		}
	}
}

// record decodes one record. A record that is valid msgpack but cannot be
// stored is returned as bad (with r moved past it); an error means r cannot
// find the record's end.
func (d *Decoder) record(r *reader, idx int, prefix Prefix, b *Batch) (*BadRecord, error) {
	start := r.pos
	v, err := r.next()
	if err != nil {
		return nil, err
	}
	if v.kind != kArray || v.n != 2 {
		r.pos = start
		if err := r.skip(); err != nil {
			return nil, err
		}
		return &BadRecord{Reason: "record is not a [header, body] array"}, nil
	}
	// The header is [time, metadata] (Fluent Bit >= 2.1) or a bare time.
	hdrStart := r.pos
	h, err := r.next()
	if err != nil {
		return nil, err
	}
	var meta []byte
	tv := h
	if h.kind == kArray {
		if h.n < 1 {
			r.pos = hdrStart
			return d.skipBad(r, start, "empty record header", time.Time{})
		}
		if tv, err = r.next(); err != nil {
			return nil, err
		}
		for i := 1; i < h.n; i++ {
			ms := r.pos
			if err := r.skip(); err != nil {
				return nil, err
			}
			if i == 1 {
				meta = r.buf[ms:r.pos]
			}
		}
	}
	if tv.kind == kArray || tv.kind == kMap {
		// Only the container's header was read: skip the record from its
		// start, or the reader would lose its place in the chunk.
		return d.skipBad(r, start, "record time is not an EventTime, integer or float", time.Time{})
	}
	ts, reason := eventTime(tv)
	if reason != "" {
		return d.skipBody(r, reason, time.Time{})
	}
	bodyStart := r.pos
	body, err := r.next()
	if err != nil {
		return nil, err
	}
	if body.kind != kMap {
		r.pos = bodyStart
		return d.skipBody(r, "record body is not a map", ts)
	}

	mark := len(b.arena)
	rec, reason, err := d.entry(r, body.n, ts, meta, prefix, idx, b)
	if err != nil {
		return nil, err
	}
	if reason != "" {
		b.arena = b.arena[:mark]
		return &BadRecord{Reason: reason, Time: ts}, nil
	}
	rec.Index = idx
	b.Records = append(b.Records, rec)
	if rec.ParseFailed {
		b.ParseFailures++
	}
	return nil, nil
}

func (d *Decoder) skipBad(r *reader, start int, reason string, ts time.Time) (*BadRecord, error) {
	r.pos = start
	if err := r.skip(); err != nil {
		return nil, err
	}
	return &BadRecord{Reason: reason, Time: ts}, nil
}

// skipBody skips the record body that follows the header.
func (d *Decoder) skipBody(r *reader, reason string, ts time.Time) (*BadRecord, error) {
	if err := r.skip(); err != nil {
		return nil, err
	}
	return &BadRecord{Reason: reason, Time: ts}, nil
}

// The record times stored: a BSON date holds any millisecond of ±292
// million years, but window, partition and expiry arithmetic, partition
// names and every tool that prints a date need a four-digit year.
var (
	MinTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

// TimeOutOfRange starts the reason of a record whose time is outside
// [MinTime, MaxTime], NaN or infinite.
const TimeOutOfRange = "time out of range"

// outOfRange is the reason of a record whose time is v.
func outOfRange(v any) string {
	return fmt.Sprintf("%s: %v is not a time between years 1 and 9999 (a time in milliseconds or nanoseconds sent as seconds?)", TimeOutOfRange, v)
}

// eventTime converts a Fluent Bit record time: EventTime (ext 0: uint32
// seconds, uint32 nanoseconds, big-endian), integer seconds or float
// seconds. A time it cannot convert, or outside [MinTime, MaxTime], comes
// with the reason.
func eventTime(v value) (time.Time, string) {
	const notATime = "record time is not an EventTime, integer or float"
	minSec, maxSec := MinTime.Unix(), MaxTime.Unix()
	switch v.kind {
	case kExt:
		if v.ext != 0 || len(v.raw) != 8 {
			return time.Time{}, notATime
		}
		sec := binary.BigEndian.Uint32(v.raw)
		nsec := binary.BigEndian.Uint32(v.raw[4:])
		return time.Unix(int64(sec), int64(nsec)).UTC(), ""
	case kInt:
		if v.i < minSec || v.i > maxSec {
			return time.Time{}, outOfRange(v.i)
		}
		return time.Unix(v.i, 0).UTC(), ""
	case kUint:
		// Only values above MaxInt64 are kUint: always out of range.
		return time.Time{}, outOfRange(v.u)
	case kFloat:
		t, ok := floatSecondsTime(v.f)
		if !ok {
			return time.Time{}, outOfRange(v.f)
		}
		return t, ""
	}
	return time.Time{}, notATime
}

// numberTime converts a number typed as a time: integer or float seconds
// since 1970. A number outside years 1 to 9999 is not converted.
func numberTime(v value, k Kind) (time.Time, bool) {
	switch {
	case k != KindTime:
	case v.kind == kInt:
		return intSecondsTime(v.i)
	case v.kind == kFloat:
		return floatSecondsTime(v.f)
	}
	return time.Time{}, false
}

// InRange reports whether t is a record time that can be stored.
func InRange(t time.Time) bool { return !t.Before(MinTime) && !t.After(MaxTime) }

// entry writes the entry document of one record whose body map (n pairs)
// starts at r. A non-empty reason means the record is bad; r is then past it.
// The loop over the fields and the document's end stay in this one function,
// without a call per record: only rarer steps are functions of their own.
func (d *Decoder) entry(r *reader, n int, ts time.Time, meta []byte, prefix Prefix, idx int, b *Batch) (Record, string, error) {
	rec := Record{Time: ts}
	docStart, dst := bsoncore.ReserveLength(b.arena)
	dst = bsoncore.AppendHeader(dst, bsoncore.TypeDateTime, d.opt.TimeKey)
	timeAt := len(dst)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(ts.UnixMilli()))
	if prefix != nil {
		dst = prefix(dst, idx, ts)
	}
	w := &b.w
	*w = writer{d: d, dst: dst, frames: w.frames[:0]}
	for i := 0; i < n; i++ {
		key, err := w.readKey(r)
		if err != nil {
			return rec, "", err
		}
		if d.opt.Line != nil && string(key) == d.opt.ParseKey {
			handled, err := w.parseLine(r, key, &rec)
			if err != nil {
				return rec, "", err
			}
			if handled {
				continue
			}
		}
		keep, inc, exc := selectKey(key, d.include, d.exclude)
		if !keep {
			if err := r.skip(); err != nil {
				return rec, "", err
			}
			continue
		}
		if kind, ok := d.types.get(key); ok && kind != KindString {
			typed, err := w.typedField(r, key, kind)
			if err != nil {
				return rec, "", err
			}
			if typed {
				continue
			}
		}
		typeAt := w.element(key, true)
		if err := w.value(r, typeAt, inc, exc, 1); err != nil {
			if !errors.Is(err, errTooDeep) {
				return rec, "", err
			}
			// Read on to the record's end.
			if serr := w.skipFields(r, n-i-1); serr != nil {
				return rec, "", serr
			}
			return rec, "record body is " + err.Error(), nil
		}
	}
	w.yieldToLine(timeAt + 8)
	if d.opt.KeepMetadata && meta != nil {
		if reason := w.metadata(meta); reason != "" {
			return rec, reason, nil
		}
	}
	dst = append(w.dst, 0)
	size := len(dst) - int(docStart)
	if size > d.maxBytes {
		return rec, fmt.Sprintf("record of %d bytes exceeds the %d-byte limit", size, d.maxBytes), nil
	}
	dst = bsoncore.UpdateLength(dst, docStart, int32(size))
	if w.hasLogTime && d.opt.TimeFromLog {
		if !InRange(w.logTime) {
			return rec, outOfRange(w.logTime.Format(time.RFC3339Nano)), nil
		}
		rec.Time = w.logTime.UTC()
		binary.LittleEndian.PutUint64(dst[timeAt:], uint64(rec.Time.UnixMilli()))
	}
	b.arena = dst
	// Cap the slice at the document's end, so an append to one record's
	// document cannot overwrite the next one in the arena.
	rec.Doc = bsoncore.Document(dst[docStart:len(dst):len(dst)])
	return rec, "", nil
}

// typedField writes the field key converted to kind when its value at r is
// a string, or a number kind reads as a time. Otherwise it reports false
// with r where it was, for the value to be written as it is.
func (w *writer) typedField(r *reader, key []byte, kind Kind) (bool, error) {
	vs := r.pos
	v, err := r.next()
	if err != nil {
		return false, err
	}
	if v.kind == kStr || v.kind == kBin {
		EmitTyped(w, bytesString(key), bytesString(v.raw), kind)
		return true, nil
	}
	if t, ok := numberTime(v, kind); ok {
		w.Time(bytesString(key), t)
		return true, nil
	}
	r.pos = vs
	return false, nil
}

// skipFields reads past the next n key-value pairs of a map.
func (w *writer) skipFields(r *reader, n int) error {
	for ; n > 0; n-- {
		if _, err := w.readKey(r); err != nil {
			return err
		}
		if err := r.skip(); err != nil {
			return err
		}
	}
	return nil
}

// metadata writes the record's metadata under _meta; a non-empty reason
// means it cannot be stored.
func (w *writer) metadata(meta []byte) string {
	mr := reader{buf: meta}
	typeAt := w.element([]byte("_meta"), false)
	if err := w.value(&mr, typeAt, nil, nil, 1); err != nil {
		return "record metadata is " + err.Error()
	}
	return ""
}

// keyBytes returns the bytes of a map key. Keys that are not strings are
// formatted as text (scratch may be used for that).
func keyBytes(k value, scratch []byte) []byte {
	switch k.kind {
	case kStr, kBin:
		return k.raw
	case kInt:
		return fmt.Appendf(scratch, "%d", k.i)
	case kUint:
		return fmt.Appendf(scratch, "%d", k.u)
	case kFloat:
		return fmt.Appendf(scratch, "%g", k.f)
	case kBool:
		return fmt.Appendf(scratch, "%t", k.b)
	case kNil:
		return append(scratch, "null"...)
	}
	return append(scratch, "key"...)
}
