package parser

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// fixtureNames are the chunk fixtures in test/testdata.
var fixtureNames = []string{
	"chunk-app-json-5000.msgpack",
	"chunk-apache2-5000.msgpack",
	"chunk-raw-access-5000.msgpack",
	"chunk-apache2-8.msgpack",
	"chunk-nginx-8.msgpack",
	"chunk-dummy-3.msgpack",
	"chunk-dummy-metadata-2.msgpack",
}

// fixture reads a chunk fixture from test/testdata.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "test", "testdata", name))
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return b
}

func mustDecoder(t testing.TB, o Options) *Decoder {
	t.Helper()
	if o.TimeKey == "" {
		o.TimeKey = "ts"
	}
	d, err := NewDecoder(o)
	if err != nil {
		t.Fatalf("NewDecoder: %v", err)
	}
	return d
}

// Building chunks with vmihailenco/msgpack.

// kv is an ordered msgpack map: key, value, key, value...
type kv []any

func (m kv) EncodeMsgpack(enc *msgpack.Encoder) error {
	if err := enc.EncodeMapLen(len(m) / 2); err != nil {
		return err
	}
	for _, x := range m {
		if err := enc.Encode(x); err != nil {
			return err
		}
	}
	return nil
}

// rawMP is msgpack written as is.
type rawMP []byte

func (r rawMP) EncodeMsgpack(enc *msgpack.Encoder) error {
	_, err := enc.Writer().Write(r)
	return err
}

// evt is a Fluent Bit EventTime as fixext8 of type 0.
func evt(sec, nsec uint32) rawMP {
	b := []byte{0xd7, 0}
	b = binary.BigEndian.AppendUint32(b, sec)
	return rawMP(binary.BigEndian.AppendUint32(b, nsec))
}

// evtExt8 is an EventTime written as ext8 with length 8.
func evtExt8(sec, nsec uint32) rawMP {
	return rawMP(append([]byte{0xc7, 8}, evt(sec, nsec)[1:]...))
}

// rec is a Fluent Bit >= 2.1 record: [[time, meta], body].
func rec(t testing.TB, tm any, meta any, body any) []byte {
	return mpBytes(t, []any{[]any{tm, meta}, body})
}

// recV1 is an old-style record: [time, body].
func recV1(t testing.TB, tm any, body any) []byte {
	return mpBytes(t, []any{tm, body})
}

// decode decodes chunk and fails on anything but good records.
func decode(t testing.TB, d *Decoder, chunk []byte) *Batch {
	t.Helper()
	var b Batch
	d.Decode(chunk, nil, &b)
	if b.Corrupt != nil {
		t.Fatalf("corrupt: %v", b.Corrupt)
	}
	for _, bad := range b.Bad {
		t.Errorf("bad record %d: %s", bad.Index, bad.Reason)
	}
	for _, r := range b.Records {
		if err := r.Doc.Validate(); err != nil {
			t.Fatalf("record %d: invalid BSON: %v", r.Index, err)
		}
	}
	return &b
}

// toD unmarshals a record document.
func toD(t testing.TB, doc bsoncore.Document) bson.D {
	t.Helper()
	var d bson.D
	if err := bson.Unmarshal(doc, &d); err != nil {
		t.Fatalf("unmarshal %v: %v", doc, err)
	}
	return d
}

// body decodes a one-record chunk with d and returns its document without
// the time element.
func body(t testing.TB, d *Decoder, chunk []byte) bson.D {
	t.Helper()
	b := decode(t, d, chunk)
	if len(b.Records) != 1 {
		t.Fatalf("%d records, want 1", len(b.Records))
	}
	doc := toD(t, b.Records[0].Doc)
	if len(doc) == 0 || doc[0].Key != d.opt.TimeKey {
		t.Fatalf("document %v does not start with the time key", doc)
	}
	return doc[1:]
}

func TestDecodeRecordForms(t *testing.T) {
	const sec = 1717236000 // 2024-06-01T10:00:00Z
	want := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		chunk []byte
		want  time.Time
	}{
		{"v2 fixext8", rec(t, evt(sec, 123456789), kv{}, kv{"a", 1}), want.Add(123456789)},
		{"v2 ext8", rec(t, evtExt8(sec, 5e8), kv{}, kv{"a", 1}), want.Add(5e8)},
		{"v2 int", rec(t, sec, kv{}, kv{"a", 1}), want},
		{"v2 uint32", rec(t, uint32(sec), kv{}, kv{"a", 1}), want},
		{"v2 float", rec(t, float64(sec)+0.25, kv{}, kv{"a", 1}), want.Add(250 * time.Millisecond)},
		{"v2 float ms", rec(t, float64(sec)+0.123, kv{}, kv{"a", 1}), want.Add(123 * time.Millisecond)},
		{"v2 float32", rec(t, float32(1<<24), kv{}, kv{"a", 1}), time.Unix(1<<24, 0).UTC()},
		{"v2 header with one element", mpBytes(t, []any{[]any{evt(sec, 0)}, kv{"a", 1}}), want},
		{"v1 fixext8", recV1(t, evt(sec, 1e6), kv{"a", 1}), want.Add(time.Millisecond)},
		{"v1 ext8", recV1(t, evtExt8(sec, 0), kv{"a", 1}), want},
		{"v1 int", recV1(t, sec, kv{"a", 1}), want},
		{"v1 int64", recV1(t, rawMP(cat([]byte{0xd3}, be(8, sec))), kv{"a", 1}), want},
		{"v1 negative int", recV1(t, -1, kv{"a", 1}), time.Unix(-1, 0).UTC()},
		{"v1 float", recV1(t, float64(sec)+0.999, kv{"a", 1}), want.Add(999 * time.Millisecond)},
		{"v1 negative float", recV1(t, -1.5, kv{"a", 1}), time.Unix(-2, 5e8).UTC()},
	}
	d := mustDecoder(t, Options{TimeKey: "ts"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := decode(t, d, c.chunk)
			if len(b.Records) != 1 {
				t.Fatalf("%d records", len(b.Records))
			}
			r := b.Records[0]
			if !r.Time.Equal(c.want) {
				t.Errorf("Time = %v, want %v", r.Time.Format(time.RFC3339Nano), c.want.Format(time.RFC3339Nano))
			}
			got := toD(t, r.Doc)
			wantDoc := D("ts", bson.NewDateTimeFromTime(c.want), "a", int32(1))
			if !reflect.DeepEqual(got, wantDoc) {
				t.Errorf("doc = %v, want %v", got, wantDoc)
			}
		})
	}
}

func TestDecodeMetadata(t *testing.T) {
	chunk := fixture(t, "chunk-dummy-metadata-2.msgpack")
	// The reference view of the metadata of each record.
	var metas []map[string]any
	dec := msgpack.NewDecoder(bytes.NewReader(chunk))
	dec.SetMapDecoder(func(d *msgpack.Decoder) (any, error) { return d.DecodeUntypedMap() })
	for range 2 {
		n, err := dec.DecodeArrayLen()
		if err != nil || n != 2 {
			t.Fatalf("record: %d %v", n, err)
		}
		if n, err := dec.DecodeArrayLen(); err != nil || n != 2 {
			t.Fatalf("header: %d %v", n, err)
		}
		if _, err := dec.DecodeRaw(); err != nil { // EventTime
			t.Fatal(err)
		}
		m, err := dec.DecodeMap()
		if err != nil {
			t.Fatal(err)
		}
		metas = append(metas, m)
		if err := dec.Skip(); err != nil {
			t.Fatal(err)
		}
	}

	keep := decode(t, mustDecoder(t, Options{KeepMetadata: true}), chunk)
	drop := decode(t, mustDecoder(t, Options{}), chunk)
	if len(keep.Records) != 2 || len(drop.Records) != 2 {
		t.Fatalf("records: %d, %d", len(keep.Records), len(drop.Records))
	}
	for i, r := range keep.Records {
		if len(metas[i]) == 0 {
			t.Fatalf("record %d: fixture metadata is empty", i)
		}
		m, ok := r.Doc.Lookup("_meta").DocumentOK()
		if !ok {
			t.Fatalf("record %d: no _meta document in %v", i, r.Doc)
		}
		got := toD(t, m)
		if len(got) != len(metas[i]) {
			t.Errorf("record %d: _meta %v, want %v", i, got, metas[i])
		}
		for _, e := range got {
			if want, ok := metas[i][e.Key]; !ok || !sameValue(e.Value, want) {
				t.Errorf("record %d: _meta.%s = %#v, want %#v", i, e.Key, e.Value, want)
			}
		}
		// _meta goes last, after the body fields.
		elems, _ := r.Doc.Elements()
		if elems[len(elems)-1].Key() != "_meta" {
			t.Errorf("record %d: _meta is not the last field", i)
		}
		if _, err := drop.Records[i].Doc.LookupErr("_meta"); err == nil {
			t.Errorf("record %d: _meta stored without keep_metadata", i)
		}
	}

	// A body field called _meta does not collide with the stored metadata.
	d := mustDecoder(t, Options{KeepMetadata: true})
	got := body(t, d, rec(t, evt(1, 0), kv{"k", "v"}, kv{"_meta", 1}))
	want := D("__meta", int32(1), "_meta", D("k", "v"))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// sameValue compares a BSON value with a value decoded by a reference msgpack
// decoder (strings as string or []byte, any integer width).
func sameValue(b, ref any) bool {
	switch r := ref.(type) {
	case []byte:
		return b == string(r)
	case int8, int16, int32, int64, int, uint8, uint16, uint32, uint64, uint:
		bi, ok := asInt(b)
		ri, _ := asInt(r)
		return ok && bi == ri
	case float32:
		return b == float64(r)
	case map[string]any:
		d, ok := b.(bson.D)
		if !ok || len(d) != len(r) {
			return false
		}
		for _, e := range d {
			if !sameValue(e.Value, r[e.Key]) {
				return false
			}
		}
		return true
	case []any:
		a, ok := b.(bson.A)
		if !ok || len(a) != len(r) {
			return false
		}
		for i := range a {
			if !sameValue(a[i], r[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(b, ref)
}

func asInt(v any) (int64, bool) {
	switch x := reflect.ValueOf(v); x.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return x.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int64(x.Uint()), x.Uint() <= math.MaxInt64
	}
	return 0, false
}

func TestDecodeValues(t *testing.T) {
	d := mustDecoder(t, Options{ReplaceDot: "_", ReplaceDollar: "_"})
	in := kv{
		"str", "héllo 中文",
		"bin", []byte("bytes"),
		"empty", "",
		"zero", 0,
		"neg", -5,
		"i8", int8(-100),
		"u8", uint8(200),
		"i32max", int32(math.MaxInt32),
		"i32min", int32(math.MinInt32),
		"big", int64(math.MaxInt32) + 1,
		"i64min", int64(math.MinInt64),
		"u64maxint", uint64(math.MaxInt64),
		"f32", float32(0.5),
		"f64", 3.25,
		"t", true,
		"f", false,
		"nil", nil,
		"map", kv{"a", kv{"b", []any{1, "x", nil}}},
		"arr", []any{kv{"k", 1}, []any{}, kv{}},
		"ext", rawMP{0xd5, 0x07, 0xab, 0xcd},
		"ext neg", rawMP{0xc7, 0x01, 0xff, 0x01},
		"evt", evt(1717236000, 5e8),
	}
	want := D("str", "héllo 中文", "bin", "bytes", "empty", "", "zero", int32(0), "neg", int32(-5), "i8", int32(-100), "u8", int32(200), "i32max", int32(math.MaxInt32), "i32min", int32(math.MinInt32), "big", int64(math.MaxInt32)+1, "i64min", int64(math.MinInt64), "u64maxint", int64(math.MaxInt64), "f32", 0.5, "f64", 3.25, "t", true, "f", false, "nil", nil, "map", D("a", D("b", bson.A{int32(1), "x", nil})), "arr", bson.A{D("k", int32(1)), bson.A{}, D()}, "ext", D("type", int32(7), "data", bson.Binary{Data: []byte{0xab, 0xcd}}), "ext neg", D("type", int32(-1), "data", bson.Binary{Data: []byte{0x01}}), "evt", bson.NewDateTimeFromTime(time.Unix(1717236000, 5e8)))
	got := body(t, d, rec(t, evt(1, 0), kv{}, in))
	if !reflect.DeepEqual(got, want) {
		for i := range max(len(got), len(want)) {
			if i >= len(got) || i >= len(want) || !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("field %d: got %#v, want %#v", i, got[min(i, len(got)-1)], want[min(i, len(want)-1)])
			}
		}
	}
}

// Strings and binary values become valid UTF-8 strings, never BSON binary.
func TestDecodeStringsUTF8(t *testing.T) {
	d := mustDecoder(t, Options{})
	bad := "a\xffb\xc3(c\xed\xa0\x80" // invalid byte, bad continuation, surrogate
	in := kv{
		"s", bad,
		"b", []byte(bad),
		"b16", rawMP(cat([]byte{0xc5}, be(2, 2), []byte("ok"))),
		"b32", rawMP(cat([]byte{0xc6}, be(4, 1), []byte{0xfe})),
		"nested", []any{[]byte("\xc0\xaf")},
	}
	chunk := rec(t, evt(1, 0), kv{}, in)
	b := decode(t, d, chunk)
	doc := b.Records[0].Doc
	elems, err := doc.Elements()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range elems[1:] {
		v := e.Value()
		if v.Type == bsoncore.TypeArray {
			v = v.Array().Index(0)
		}
		if v.Type != bsoncore.TypeString {
			t.Errorf("%s: BSON type %v, want string", e.Key(), v.Type)
		}
	}
	want := strings.ToValidUTF8(bad, "\uFFFD")
	for _, k := range []string{"s", "b"} {
		if got := doc.Lookup(k).StringValue(); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if got := doc.Lookup("b16").StringValue(); got != "ok" {
		t.Errorf("b16 = %q", got)
	}
	if got := doc.Lookup("b32").StringValue(); got != "\uFFFD" {
		t.Errorf("b32 = %q", got)
	}
	if got := doc.Lookup("nested", "0").StringValue(); got != "\uFFFD" {
		t.Errorf("nested.0 = %q", got)
	}
}

// uint64 values above int64 are stored as Decimal128 integers, exactly.
func TestDecodeUint64Decimal128(t *testing.T) {
	d := mustDecoder(t, Options{})
	for _, u := range []uint64{math.MaxInt64 + 1, math.MaxInt64 + 12345, 1<<63 | 1<<62 | 7, math.MaxUint64 - 1, math.MaxUint64} {
		got := body(t, d, rec(t, evt(1, 0), kv{}, kv{"u", u, "nested", []any{u}}))
		dec, ok := got[0].Value.(bson.Decimal128)
		if !ok {
			t.Fatalf("%d stored as %T", u, got[0].Value)
		}
		if s := dec.String(); s != strconv.FormatUint(u, 10) {
			t.Errorf("%d stored as Decimal128 %s", u, s)
		}
		if bi, exp, err := dec.BigInt(); err != nil || exp != 0 || !bi.IsUint64() || bi.Uint64() != u {
			t.Errorf("%d: BigInt = %v e%d, %v", u, bi, exp, err)
		}
		if nd := got[1].Value.(bson.A)[0].(bson.Decimal128); nd != dec {
			t.Errorf("nested %d stored as %v", u, nd)
		}
	}
}

func TestDecodeFloatsSpecial(t *testing.T) {
	d := mustDecoder(t, Options{})
	got := body(t, d, rec(t, evt(1, 0), kv{}, kv{
		"nan", math.NaN(), "inf", math.Inf(1), "ninf", math.Inf(-1),
		"negzero", math.Copysign(0, -1), "tiny", math.SmallestNonzeroFloat64, "max", math.MaxFloat64,
		"f32nan", float32(math.NaN()), "f32inf", float32(math.Inf(1)),
	}))
	f := func(i int) float64 { return got[i].Value.(float64) }
	if !math.IsNaN(f(0)) || !math.IsInf(f(1), 1) || !math.IsInf(f(2), -1) {
		t.Errorf("nan/inf/-inf stored as %v %v %v", f(0), f(1), f(2))
	}
	if f(3) != 0 || !math.Signbit(f(3)) || f(4) != math.SmallestNonzeroFloat64 || f(5) != math.MaxFloat64 {
		t.Errorf("-0/tiny/max stored as %v %v %v", f(3), f(4), f(5))
	}
	if !math.IsNaN(f(6)) || !math.IsInf(f(7), 1) {
		t.Errorf("float32 nan/inf stored as %v %v", f(6), f(7))
	}
}

func TestDecodeKeys(t *testing.T) {
	d := mustDecoder(t, Options{TimeKey: "ts", ReplaceDot: "_", ReplaceDollar: "D_", Reserved: []string{"_id", "tag"}})
	in := kv{
		"a.b", 1,
		"$set", 2,
		"$", 3,
		"", 4,
		"nu\x00l", 5,
		"a$b", 6, // only a leading $ is rewritten
		"x.$y", 7,
		"bad\xffkey", 8,
		"ts", 9, // the time key
		"_id", 10, // reserved by the caller
		"tag", 11,
		"_ts", 12,
		42, "int key",
		-7, "negative key",
		uint64(math.MaxUint64), "uint key",
		1.5, "float key",
		true, "bool key",
		nil, "nil key",
		[]any{1, 2}, "array key",
		kv{"k", 1}, "map key",
		"nested", kv{"ts", 1, "c.d", kv{"$e", 2, "", 3}, "_id", 4},
		"arr", []any{kv{"f.g", 1}},
	}
	want := D("a_b", int32(1), "D_set", int32(2), "D_", int32(3), "_empty", int32(4), "nu_l", int32(5), "a$b", int32(6), "x_$y", int32(7), "bad\uFFFDkey", int32(8), "_ts", int32(9), "__id", int32(10), "_tag", int32(11), "_ts", int32(12), "42", "int key", "-7", "negative key", "18446744073709551615", "uint key", "1_5", "float key", "true", "bool key", "null", "nil key", "key", "array key", "key", "map key", "nested", D("ts", int32(1), "c_d", D("D_e", int32(2), "_empty", int32(3)), "_id", int32(4)), "arr", bson.A{D("f_g", int32(1))})
	got := body(t, d, rec(t, evt(1, 0), kv{}, in))
	if !reflect.DeepEqual(got, want) {
		for i := range max(len(got), len(want)) {
			if i >= len(got) || i >= len(want) || !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("field %d: got %#v, want %#v", i, got[min(i, len(got)-1)], want[min(i, len(want)-1)])
			}
		}
	}
}

// checkNames reports a field name MongoDB would refuse or misread: empty,
// containing '.' or NUL, starting with '$', or (at the top) equal to a
// reserved name (other than the time first and the metadata last).
func checkNames(doc bsoncore.Document, reserved *smallSet[bool], top bool) string {
	elems, err := doc.Elements()
	if err != nil {
		return err.Error()
	}
	for i, e := range elems {
		k := e.Key()
		switch {
		case k == "" || strings.ContainsAny(k, ".\x00") || k[0] == '$':
			return strconv.Quote(k) + " is not a safe field name"
		case top && i > 0 && isReserved(reserved, k) && (k != "_meta" || i != len(elems)-1):
			return strconv.Quote(k) + " is reserved"
		}
		switch v := e.Value(); v.Type {
		case bsoncore.TypeEmbeddedDocument:
			if s := checkNames(v.Document(), reserved, false); s != "" {
				return s
			}
		case bsoncore.TypeArray:
			if s := checkNames(bsoncore.Document(v.Array()), reserved, false); s != "" {
				return s
			}
		}
	}
	return ""
}

// Whatever the replacements (even empty ones, which conf accepts), a
// rewritten name is never empty, never starts with '$', and never becomes
// the time key.
func TestDecodeKeysEmptyReplacements(t *testing.T) {
	keys := []string{"$", "$$", "$$x", "..$x", ".", "..", "$.", ".$", "t.s", "$ts", "a\x00", "\x00$", "ts", "._id"}
	for _, opt := range []Options{
		{ReplaceDot: "", ReplaceDollar: ""},
		{ReplaceDot: "_", ReplaceDollar: ""},
		{ReplaceDot: "", ReplaceDollar: "_"},
		{ReplaceDot: "a$", ReplaceDollar: "_"},
	} {
		opt.Reserved = []string{"_id"}
		d := mustDecoder(t, opt)
		in := kv{}
		for _, k := range keys {
			in = append(in, k, 1, "n", kv{k, 1})
		}
		b := decode(t, d, rec(t, evt(1, 0), kv{}, in))
		if s := checkNames(b.Records[0].Doc, &d.reserved, true); s != "" {
			t.Errorf("dot %q dollar %q: %s in %v", opt.ReplaceDot, opt.ReplaceDollar, s, b.Records[0].Doc)
		}
	}
}

func TestDecodeFixtures(t *testing.T) {
	counts := map[string]int{
		"chunk-app-json-5000.msgpack": 5000, "chunk-apache2-5000.msgpack": 5000, "chunk-raw-access-5000.msgpack": 5000,
		"chunk-apache2-8.msgpack": 8, "chunk-nginx-8.msgpack": 8, "chunk-dummy-3.msgpack": 3, "chunk-dummy-metadata-2.msgpack": 2,
	}
	d := mustDecoder(t, Options{ReplaceDot: "_", ReplaceDollar: "_"})
	for _, name := range fixtureNames {
		b := decode(t, d, fixture(t, name))
		if len(b.Records) != counts[name] {
			t.Errorf("%s: %d records, want %d", name, len(b.Records), counts[name])
		}
		for i, r := range b.Records {
			if r.Index != i {
				t.Fatalf("%s: record %d has index %d", name, i, r.Index)
			}
			if r.Time.Year() < 2000 {
				t.Errorf("%s: record %d time %v", name, i, r.Time)
			}
		}
	}

	// The app chunk: every seq once, the record's own ts kept as _ts.
	b := decode(t, d, fixture(t, "chunk-app-json-5000.msgpack"))
	seen := make([]bool, 5000)
	for _, r := range b.Records {
		seq, ok := r.Doc.Lookup("seq").AsInt64OK()
		if !ok || seq < 0 || seq >= 5000 || seen[seq] {
			t.Fatalf("record %d: seq %v", r.Index, r.Doc.Lookup("seq"))
		}
		seen[seq] = true
		if r.Doc.Lookup("_ts").Type != bsoncore.TypeString {
			t.Fatalf("record %d: no _ts string: %v", r.Index, r.Doc)
		}
		if r.Doc.Lookup("cost").Type != bsoncore.TypeInt32 {
			t.Fatalf("record %d: cost is %v", r.Index, r.Doc.Lookup("cost").Type)
		}
	}
	first := b.Records[0]
	if ms := bsoncore.Value(first.Doc.Lookup("ts")).DateTime(); ms != first.Time.UnixMilli() {
		t.Errorf("ts %d, want %d", ms, first.Time.UnixMilli())
	}
}

func TestDecodeDummy(t *testing.T) {
	b := decode(t, mustDecoder(t, Options{}), fixture(t, "chunk-dummy-3.msgpack"))
	types := map[bsoncore.Type]bool{}
	var walk func(bsoncore.Document)
	walk = func(doc bsoncore.Document) {
		elems, _ := doc.Elements()
		for _, e := range elems {
			v := e.Value()
			types[v.Type] = true
			switch v.Type {
			case bsoncore.TypeEmbeddedDocument:
				walk(v.Document())
			case bsoncore.TypeArray:
				walk(bsoncore.Document(v.Array()))
			case bsoncore.TypeBinary:
				t.Errorf("%s stored as binary", e.Key())
			}
		}
	}
	for _, r := range b.Records {
		walk(r.Doc)
	}
	for _, typ := range []bsoncore.Type{bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray, bsoncore.TypeBoolean, bsoncore.TypeDouble, bsoncore.TypeNull, bsoncore.TypeString} {
		if !types[typ] {
			t.Errorf("no %v value in the dummy records", typ)
		}
	}
}

// recordStarts returns the start of every record of chunk and, last, its length.
func recordStarts(t testing.TB, chunk []byte) []int {
	return append([]int{0}, recordEnds(t, chunk)...)
}

// Truncating the app chunk anywhere keeps every whole record before the cut
// and reports the cut record as corrupt, with its index and offset.
func TestDecodeTruncated(t *testing.T) {
	chunk := fixture(t, "chunk-app-json-5000.msgpack")
	starts := recordStarts(t, chunk)
	d := mustDecoder(t, Options{})
	var cuts []int
	for c := 0; c < starts[3]; c++ { // every byte of the first records
		cuts = append(cuts, c)
	}
	for c := starts[3]; c < len(chunk); c += 4999 { // a prime stride lands at every position within records
		cuts = append(cuts, c)
	}
	for c := len(chunk) - 300; c <= len(chunk); c++ {
		cuts = append(cuts, c)
	}
	var b Batch
	for _, cut := range cuts {
		d.Decode(chunk[:cut], nil, &b)
		whole := 0
		for whole+1 < len(starts) && starts[whole+1] <= cut {
			whole++
		}
		if len(b.Records) != whole || len(b.Bad) != 0 {
			t.Fatalf("cut %d: %d records, %d bad, want %d records", cut, len(b.Records), len(b.Bad), whole)
		}
		if cut == starts[whole] {
			if b.Corrupt != nil {
				t.Fatalf("cut %d at a record boundary: %v", cut, b.Corrupt)
			}
			continue
		}
		if b.Corrupt == nil || b.Corrupt.Index != whole || b.Corrupt.Offset != starts[whole] {
			t.Fatalf("cut %d: Corrupt = %v, want record %d at %d", cut, b.Corrupt, whole, starts[whole])
		}
		if !bytes.Equal(b.Rest, chunk[starts[whole]:cut]) {
			t.Fatalf("cut %d: Rest is %d bytes, want %d", cut, len(b.Rest), cut-starts[whole])
		}
		for i, r := range b.Records {
			if err := r.Doc.Validate(); err != nil || r.Index != i {
				t.Fatalf("cut %d: record %d: index %d, %v", cut, i, r.Index, err)
			}
		}
	}
}

// Garbage in the middle of a chunk stops decoding there; the records before
// it are kept.
func TestDecodeGarbage(t *testing.T) {
	chunk := fixture(t, "chunk-apache2-8.msgpack")
	starts := recordStarts(t, chunk)
	d := mustDecoder(t, Options{})
	for _, g := range []struct {
		name    string
		garbage []byte
		inside  bool // written over the record rather than between records
		errText string
	}{
		{"invalid code", []byte{0xc1}, false, "0xc1"},
		{"huge array", []byte{0xdd, 0xff, 0xff, 0xff, 0xff}, false, "unexpected end"},
		{"invalid code inside", []byte{0x92, 0x92, 0xc1}, true, "0xc1"},
		{"huge map inside", []byte{0x92, 0x92, 0xd7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xdf, 0x7f, 0xff, 0xff, 0xff}, true, "unexpected end"},
	} {
		for _, at := range []int{0, 3, 7} {
			var in []byte
			in = append(in, chunk[:starts[at]]...)
			in = append(in, g.garbage...)
			rest := chunk[starts[at]:]
			if g.inside {
				rest = rest[len(g.garbage):]
			}
			in = append(in, rest...)
			var b Batch
			d.Decode(in, nil, &b)
			if len(b.Records) != at || b.Corrupt == nil || b.Corrupt.Index != at || b.Corrupt.Offset != starts[at] {
				t.Errorf("%s at record %d: %d records, corrupt %v", g.name, at, len(b.Records), b.Corrupt)
				continue
			}
			if !strings.Contains(b.Corrupt.Error(), g.errText) || !strings.Contains(b.Corrupt.Error(), "record "+strconv.Itoa(at)) {
				t.Errorf("%s: error %q", g.name, b.Corrupt)
			}
			if !bytes.Equal(b.Rest, in[starts[at]:]) {
				t.Errorf("%s: Rest does not hold the rest of the chunk", g.name)
			}
		}
	}
}

// deep returns a value nested n maps deep.
func deep(n int) any {
	var v any = "leaf"
	for range n {
		v = kv{"d", v}
	}
	return v
}

// Records that are valid msgpack but not entries are reported with their
// reason and bytes; the records around them are decoded.
func TestDecodeBadRecords(t *testing.T) {
	good := func(i int) []byte { return rec(t, evt(100, 0), kv{}, kv{"i", i}) }
	bads := []struct {
		raw    []byte
		reason string
		time   bool // the time is known
	}{
		{mpBytes(t, "just a string"), "not a [header, body]", false},
		{mpBytes(t, kv{"a", 1}), "not a [header, body]", false},
		{mpBytes(t, []any{evt(1, 0), kv{}, kv{}}), "not a [header, body]", false},
		{mpBytes(t, []any{evt(1, 0)}), "not a [header, body]", false},
		{mpBytes(t, []any{[]any{}, kv{"a", 1}}), "empty record header", false},
		{recV1(t, "2024-06-01", kv{"a", 1}), "record time", false},
		{recV1(t, nil, kv{"a", 1}), "record time", false},
		{recV1(t, rawMP{0xd6, 0, 0, 0, 0, 1}, kv{"a", 1}), "record time", false},            // ext 0, 4 bytes
		{recV1(t, rawMP(cat([]byte{0xd7, 1}, be(8, 1))), kv{"a", 1}), "record time", false}, // ext 1
		{recV1(t, uint64(math.MaxUint64), kv{"a", 1}), TimeOutOfRange, false},
		{recV1(t, math.NaN(), kv{"a", 1}), TimeOutOfRange, false},
		{recV1(t, math.Inf(1), kv{"a", 1}), TimeOutOfRange, false},
		{recV1(t, math.Inf(-1), kv{"a", 1}), TimeOutOfRange, false},
		// 2025-06-01 in nanoseconds and in milliseconds, sent as seconds.
		{recV1(t, int64(1748736000000000000), kv{"a", 1}), TimeOutOfRange, false},
		{recV1(t, int64(1748736000000), kv{"a", 1}), TimeOutOfRange, false},
		{recV1(t, int64(math.MinInt64), kv{"a", 1}), TimeOutOfRange, false},
		{recV1(t, MaxTime.Unix()+1, kv{"a", 1}), TimeOutOfRange, false},
		{recV1(t, float64(MinTime.Unix())-1, kv{"a", 1}), TimeOutOfRange, false},
		{recV1(t, 1748736000000.5, kv{"a", 1}), TimeOutOfRange, false},
		{rec(t, "str", kv{}, kv{"a", 1}), "record time", false},
		// A container where the time belongs: the reader must not lose its place.
		{recV1(t, kv{"sec", 1, "x", []any{1, 2, 3}}, kv{"a", 1}), "record time", false},
		{recV1(t, []any{[]any{evt(1, 0), kv{}}, 5}, kv{"a", 1}), "record time", false},
		{rec(t, kv{"sec", 1}, kv{"m", 1}, kv{"a", 1}), "record time", false},
		{rec(t, []any{1, 2, 3}, kv{}, kv{"a", 1}), "record time", false},
		{rec(t, evt(1, 0), kv{}, "body"), "body is not a map", true},
		{rec(t, evt(1, 0), kv{}, []any{kv{"a", 1}}), "body is not a map", true},
		{rec(t, evt(1, 0), kv{}, nil), "body is not a map", true},
		{rec(t, evt(1, 0), kv{}, kv{"a", 1, "deep", deep(MaxDepth + 1), "z", kv{"q", 1}}), "nested deeper", true},
		{rec(t, evt(1, 0), kv{}, kv{"arr", []any{[]any{deep(MaxDepth)}}, "b", 2}), "nested deeper", true},
		{rec(t, evt(1, 0), kv{"m", deep(MaxDepth)}, kv{"a", 1}), "metadata is nested deeper", true}, // _meta is a level
		{rec(t, evt(1, 0), kv{}, kv{"big", strings.Repeat("x", 2000)}), "exceeds the 1000-byte limit", true},
	}
	chunk := good(0)
	for i, bad := range bads {
		chunk = append(chunk, bad.raw...)
		chunk = append(chunk, good(i+1)...)
	}
	d := mustDecoder(t, Options{KeepMetadata: true, MaxRecordBytes: 1000})
	var b Batch
	d.Decode(chunk, nil, &b)
	if b.Corrupt != nil {
		t.Fatalf("corrupt: %v", b.Corrupt)
	}
	if len(b.Records) != len(bads)+1 || len(b.Bad) != len(bads) {
		t.Fatalf("%d records and %d bad, want %d and %d", len(b.Records), len(b.Bad), len(bads)+1, len(bads))
	}
	off := len(good(0))
	for i, r := range b.Records {
		if r.Index != 2*i {
			t.Errorf("good record %d has index %d", i, r.Index)
		}
		if got := r.Doc.Lookup("i").Int32(); got != int32(i) {
			t.Errorf("good record %d holds i=%d", i, got)
		}
	}
	for i, bad := range b.Bad {
		want := bads[i]
		if bad.Index != 2*i+1 || bad.Offset != off || !bytes.Equal(bad.Raw, want.raw) {
			t.Errorf("bad %d: index %d offset %d raw % x, want index %d offset %d raw % x",
				i, bad.Index, bad.Offset, bad.Raw[:min(len(bad.Raw), 16)], 2*i+1, off, want.raw[:min(len(want.raw), 16)])
		}
		if !strings.Contains(bad.Reason, want.reason) {
			t.Errorf("bad %d: reason %q, want %q", i, bad.Reason, want.reason)
		}
		if want.time != !bad.Time.IsZero() {
			t.Errorf("bad %d: time %v", i, bad.Time)
		}
		off += len(want.raw) + len(good(i+1))
	}
	// Nothing of a bad record is left in the documents.
	for _, r := range b.Records {
		if len(r.Doc) > 100 {
			t.Errorf("record %d: %d bytes", r.Index, len(r.Doc))
		}
	}
}

// MaxDepth levels of nesting inside the body are stored; one more is a bad
// record.
func TestDecodeDepthLimit(t *testing.T) {
	d := mustDecoder(t, Options{})
	for _, v := range []any{deep(MaxDepth), []any{deep(MaxDepth - 1)}} {
		b := decode(t, d, rec(t, evt(1, 0), kv{}, kv{"x", v}))
		if len(b.Records) != 1 {
			t.Fatal("no record")
		}
	}
	var b Batch
	for _, v := range []any{deep(MaxDepth + 1), []any{deep(MaxDepth)}, deep(200)} {
		d.Decode(rec(t, evt(1, 0), kv{}, kv{"x", v, "y", 1}), nil, &b)
		if len(b.Bad) != 1 || len(b.Records) != 0 || b.Corrupt != nil {
			t.Errorf("too deep: %d records %d bad, %v", len(b.Records), len(b.Bad), b.Corrupt)
		}
	}
}

// The document of one record cannot be overwritten through another's:
// appending to a Doc (as a writer adding a field would) leaves the next
// record intact.
func TestDecodeDocsDoNotAlias(t *testing.T) {
	d := mustDecoder(t, Options{})
	chunk := append(rec(t, evt(1, 0), kv{}, kv{"a", 1}), rec(t, evt(2, 0), kv{}, kv{"b", 2})...)
	b := decode(t, d, chunk)
	second := bytes.Clone(b.Records[1].Doc)
	_ = append(b.Records[0].Doc, "overwrite the next record"...)
	if !bytes.Equal(b.Records[1].Doc, second) {
		t.Error("appending to record 0's Doc changed record 1")
	}
}

func TestDecodePrefix(t *testing.T) {
	d := mustDecoder(t, Options{Reserved: []string{"_id"}})
	prefix := func(dst []byte, idx int, tm time.Time) []byte {
		return bsoncore.AppendStringElement(dst, "_id", strconv.Itoa(idx)+"@"+strconv.FormatInt(tm.Unix(), 10))
	}
	chunk := append(rec(t, evt(7, 0), kv{}, kv{"_id", "x"}), rec(t, evt(8, 0), kv{}, kv{"a", 1})...)
	var b Batch
	d.Decode(chunk, prefix, &b)
	want := []bson.D{
		D("ts", bson.DateTime(7000), "_id", "0@7", "__id", "x"),
		D("ts", bson.DateTime(8000), "_id", "1@8", "a", int32(1)),
	}
	for i, r := range b.Records {
		if got := toD(t, r.Doc); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("record %d: %v, want %v", i, got, want[i])
		}
	}
}

func TestDecodeIncludeExclude(t *testing.T) {
	in := kv{"a", 1, "b", kv{"c", 2, "d", 3, "e", kv{"f", 4}}, "g", 5}
	chunk := rec(t, evt(1, 0), kv{}, in)
	for _, c := range []struct {
		inc, exc []string
		want     bson.D
	}{
		{nil, nil, D("a", int32(1), "b", D("c", int32(2), "d", int32(3), "e", D("f", int32(4))), "g", int32(5))},
		{[]string{"a", "b.c"}, nil, D("a", int32(1), "b", D("c", int32(2)))},
		{[]string{"b"}, []string{"b.e.f"}, D("b", D("c", int32(2), "d", int32(3), "e", D()))},
		{nil, []string{"a", "b.d", "zz"}, D("b", D("c", int32(2), "e", D("f", int32(4))), "g", int32(5))},
	} {
		d := mustDecoder(t, Options{Include: c.inc, Exclude: c.exc})
		if got := body(t, d, chunk); !reflect.DeepEqual(got, c.want) {
			t.Errorf("include %v exclude %v: %v, want %v", c.inc, c.exc, got, c.want)
		}
	}
}

func TestDecodeLineParser(t *testing.T) {
	p := mustLineParser(t, "apache_combined", "")
	d := mustDecoder(t, Options{Line: p, ParseKey: "log", TimeFromLog: true})
	b := decode(t, d, fixture(t, "chunk-raw-access-5000.msgpack"))
	if len(b.Records) != 5000 || b.ParseFailures != 0 {
		t.Fatalf("%d records, %d parse failures", len(b.Records), b.ParseFailures)
	}
	r := b.Records[0]
	if r.Doc.Lookup("code").Type != bsoncore.TypeInt32 || r.Doc.Lookup("host").Type != bsoncore.TypeString {
		t.Errorf("record 0: %v", r.Doc)
	}
	if _, err := r.Doc.LookupErr("log"); err == nil {
		t.Error("raw line kept although it parsed")
	}
	if got := bsoncore.Value(r.Doc.Lookup("ts")).DateTime(); got != r.Time.UnixMilli() || r.Time.Before(time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)) || r.Time.After(time.Date(2024, 6, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("record 0 time %v, ts %d", r.Time, got)
	}

	// A line that does not parse is kept with the reason.
	var bb Batch
	d.Decode(rec(t, evt(5, 0), kv{}, kv{"log", "not an access line", "other", 1}), nil, &bb)
	if len(bb.Records) != 1 || bb.ParseFailures != 1 || !bb.Records[0].ParseFailed {
		t.Fatalf("%d records, %d failures", len(bb.Records), bb.ParseFailures)
	}
	got := toD(t, bb.Records[0].Doc)
	if got[1].Key != "log" || got[1].Value != "not an access line" || got[2].Key != "_parse_error" || got[3].Key != "other" {
		t.Errorf("unparsed record: %v", got)
	}
	if !bb.Records[0].Time.Equal(time.Unix(5, 0)) {
		t.Errorf("unparsed record time %v", bb.Records[0].Time)
	}
	// A non-string log field is stored as it is.
	if got := body(t, d, rec(t, evt(5, 0), kv{}, kv{"log", 42})); !reflect.DeepEqual(got, D("log", int32(42))) {
		t.Errorf("non-string log: %v", got)
	}
}

func TestDecodeTypes(t *testing.T) {
	d := mustDecoder(t, Options{Types: map[string]Kind{"code": KindInt, "size": KindInt, "ok": KindBool}})
	b := decode(t, d, fixture(t, "chunk-apache2-5000.msgpack"))
	for _, r := range b.Records {
		if typ := r.Doc.Lookup("code").Type; typ != bsoncore.TypeInt32 {
			t.Fatalf("record %d: code is %v", r.Index, typ)
		}
		if typ := r.Doc.Lookup("size").Type; typ != bsoncore.TypeInt32 && typ != bsoncore.TypeNull {
			t.Fatalf("record %d: size is %v", r.Index, typ)
		}
	}
	got := body(t, d, rec(t, evt(1, 0), kv{}, kv{"code", "abc", "size", 12, "ok", []byte("yes")}))
	want := D("code", "abc", "size", int32(12), "ok", true)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// A Batch is reused across chunks without stale state.
func TestDecodeBatchReuse(t *testing.T) {
	d := mustDecoder(t, Options{})
	var b Batch
	d.Decode(fixture(t, "chunk-app-json-5000.msgpack")[:5000], nil, &b)
	if b.Corrupt == nil || len(b.Records) == 0 {
		t.Fatal("want a corrupt tail and some records")
	}
	d.Decode(fixture(t, "chunk-dummy-3.msgpack"), nil, &b)
	if b.Corrupt != nil || b.Rest != nil || len(b.Records) != 3 || len(b.Bad) != 0 {
		t.Errorf("reused batch: %d records, %v", len(b.Records), b.Corrupt)
	}
	for _, r := range b.Records {
		if err := r.Doc.Validate(); err != nil {
			t.Error(err)
		}
	}
}

func TestNewDecoderNeedsTimeKey(t *testing.T) {
	if _, err := NewDecoder(Options{}); err == nil {
		t.Error("NewDecoder without a time key succeeded")
	}
	for _, o := range []Options{
		{TimeKey: "ts", ReplaceDot: "."}, {TimeKey: "ts", ReplaceDot: "$"}, {TimeKey: "ts", ReplaceDot: "\x00"},
		{TimeKey: "ts", ReplaceDollar: "$_"}, {TimeKey: "ts", ReplaceDollar: "a.b"},
	} {
		if _, err := NewDecoder(o); err == nil {
			t.Errorf("NewDecoder(dot %q, dollar %q) succeeded", o.ReplaceDot, o.ReplaceDollar)
		}
	}
}

// Decoding a chunk into a reused Batch allocates nothing per record: the
// record writer lives in the batch, documents go into its arena.
func TestDecodeAllocs(t *testing.T) {
	for _, c := range []struct {
		name  string
		opt   Options
		limit float64
	}{
		{"chunk-app-json-5000.msgpack", Options{ReplaceDot: "_", ReplaceDollar: "_"}, 0.01},
		{"chunk-apache2-5000.msgpack", Options{Types: map[string]Kind{"code": KindInt, "size": KindInt}}, 0.01},
		{"chunk-raw-access-5000.msgpack", Options{Line: mustLineParser(t, "apache_combined", ""), ParseKey: "log"}, 0.01},
	} {
		chunk := fixture(t, c.name)
		d := mustDecoder(t, c.opt)
		var b Batch
		d.Decode(chunk, nil, &b)
		n := testing.AllocsPerRun(5, func() { d.Decode(chunk, nil, &b) })
		t.Logf("%s: %.0f allocs per chunk (%.3f per record) with a reused batch", c.name, n, n/5000)
		if n/5000 > c.limit {
			t.Errorf("%s: %.2f allocs per record, want at most %v", c.name, n/5000, c.limit)
		}
	}
}

// D builds a bson.D from key, value pairs.
func D(pairs ...any) bson.D {
	d := bson.D{}
	for i := 0; i+1 < len(pairs); i += 2 {
		d = append(d, bson.E{Key: pairs[i].(string), Value: pairs[i+1]})
	}
	return d
}

func isReserved(s *smallSet[bool], name string) bool {
	_, ok := s.get([]byte(name))
	return ok
}

// The first and last seconds of the range are record times as they are;
// a second past either end is out of range (TestDecodeBadRecords).
func TestDecodeTimeRangeEnds(t *testing.T) {
	for _, sec := range []int64{MinTime.Unix(), 0, MaxTime.Unix()} {
		d := mustDecoder(t, Options{})
		var b Batch
		d.Decode(recV1(t, sec, kv{"a", 1}), nil, &b)
		if len(b.Records) != 1 || len(b.Bad) != 0 {
			t.Fatalf("time %d: %d records, %d bad", sec, len(b.Records), len(b.Bad))
		}
		if got := b.Records[0].Time; got.Unix() != sec || !InRange(got) {
			t.Errorf("time %d: record time %v", sec, got)
		}
	}
}

// A parsed line's field named like a field of the record (a CRI record's
// time beside a JSON line's time) keeps the name, and the record's is
// kept as _<name>, whichever comes first: a document never holds a name
// twice, and nothing is dropped.
func TestDecodeLineFieldWinsTheName(t *testing.T) {
	d := mustDecoder(t, Options{Line: mustLineParser(t, "json", ""), ParseKey: "log"})
	line := `{"time":"2024-06-01T09:00:00Z","msg":"x","stream":{"n":1}}`
	at := time.Date(2024, 6, 1, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		body kv
		want bson.D
	}{
		{"record fields first (CRI)", kv{"time", "2024-06-01T10:00:00.1Z", "stream", "stdout", "logtag", "F", "log", line},
			D("_time", "2024-06-01T10:00:00.1Z", "_stream", "stdout", "logtag", "F", "time", bson.NewDateTimeFromTime(at), "msg", "x", "stream", D("n", int32(1)))},
		{"record fields after the line", kv{"log", line, "time", "2024-06-01T10:00:00.1Z", "other", int32(2)},
			D("time", bson.NewDateTimeFromTime(at), "msg", "x", "stream", D("n", int32(1)), "_time", "2024-06-01T10:00:00.1Z", "other", int32(2))},
		{"no field shared", kv{"a", int32(1), "log", `{"msg":"x"}`}, D("a", int32(1), "msg", "x")},
	} {
		if got := body(t, d, rec(t, evt(5, 0), kv{}, c.body)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// A line that does not parse renames nothing.
	if got := body(t, d, rec(t, evt(5, 0), kv{}, kv{"time", "t", "log", "not json"})); got[0].Key != "time" {
		t.Errorf("a line that does not parse: %v", got)
	}
}
