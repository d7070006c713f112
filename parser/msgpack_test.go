package parser

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// mpBytes encodes v with vmihailenco/msgpack, the reference encoder.
func mpBytes(t testing.TB, vs ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	enc.UseCompactFloats(false)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			t.Fatalf("encode %v: %v", v, err)
		}
	}
	return buf.Bytes()
}

// be returns the big-endian bytes of u in size bytes.
func be(size int, u uint64) []byte {
	b := binary.BigEndian.AppendUint64(nil, u)
	return b[8-size:]
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestReaderNext(t *testing.T) {
	str := func(n int) string { return strings.Repeat("s", n) }
	cases := []struct {
		name string
		in   []byte
		want value
	}{
		{"fixint 0", []byte{0x00}, value{kind: kInt, i: 0}},
		{"fixint 127", []byte{0x7f}, value{kind: kInt, i: 127}},
		{"neg fixint -1", []byte{0xff}, value{kind: kInt, i: -1}},
		{"neg fixint -32", []byte{0xe0}, value{kind: kInt, i: -32}},
		{"uint8", []byte{0xcc, 0xff}, value{kind: kInt, i: 255}},
		{"uint16", cat([]byte{0xcd}, be(2, 65535)), value{kind: kInt, i: 65535}},
		{"uint32", cat([]byte{0xce}, be(4, math.MaxUint32)), value{kind: kInt, i: math.MaxUint32}},
		{"uint64 small", cat([]byte{0xcf}, be(8, 5)), value{kind: kInt, i: 5}},
		{"uint64 max int64", cat([]byte{0xcf}, be(8, math.MaxInt64)), value{kind: kInt, i: math.MaxInt64}},
		{"uint64 above int64", cat([]byte{0xcf}, be(8, math.MaxInt64+1)), value{kind: kUint, u: math.MaxInt64 + 1}},
		{"uint64 max", cat([]byte{0xcf}, be(8, math.MaxUint64)), value{kind: kUint, u: math.MaxUint64}},
		{"int8", []byte{0xd0, 0x80}, value{kind: kInt, i: -128}},
		{"int16", cat([]byte{0xd1}, be(2, 0x8000)), value{kind: kInt, i: math.MinInt16}},
		{"int32", cat([]byte{0xd2}, be(4, 0x80000000)), value{kind: kInt, i: math.MinInt32}},
		{"int64", cat([]byte{0xd3}, be(8, 1<<63)), value{kind: kInt, i: math.MinInt64}},
		{"float32", cat([]byte{0xca}, be(4, uint64(math.Float32bits(1.5)))), value{kind: kFloat, f: 1.5}},
		{"float64", cat([]byte{0xcb}, be(8, math.Float64bits(-2.25))), value{kind: kFloat, f: -2.25}},
		{"nil", []byte{0xc0}, value{kind: kNil}},
		{"false", []byte{0xc2}, value{kind: kBool}},
		{"true", []byte{0xc3}, value{kind: kBool, b: true}},
		{"fixstr", mpBytes(t, "abc"), value{kind: kStr, raw: []byte("abc")}},
		{"str8", mpBytes(t, str(40)), value{kind: kStr, raw: []byte(str(40))}},
		{"str16", mpBytes(t, str(300)), value{kind: kStr, raw: []byte(str(300))}},
		{"str32", mpBytes(t, str(70000)), value{kind: kStr, raw: []byte(str(70000))}},
		{"bin8", mpBytes(t, []byte("ab")), value{kind: kBin, raw: []byte("ab")}},
		{"bin16", cat([]byte{0xc5}, be(2, 3), []byte("xyz")), value{kind: kBin, raw: []byte("xyz")}},
		{"bin32", cat([]byte{0xc6}, be(4, 1), []byte("x")), value{kind: kBin, raw: []byte("x")}},
		{"fixarray", []byte{0x92, 1, 2}, value{kind: kArray, n: 2}},
		{"array16", cat([]byte{0xdc}, be(2, 1), []byte{1}), value{kind: kArray, n: 1}},
		{"array32", cat([]byte{0xdd}, be(4, 2), []byte{1, 2}), value{kind: kArray, n: 2}},
		{"fixmap", []byte{0x81, 1, 2}, value{kind: kMap, n: 1}},
		{"map16", cat([]byte{0xde}, be(2, 1), []byte{1, 2}), value{kind: kMap, n: 1}},
		{"map32", cat([]byte{0xdf}, be(4, 0)), value{kind: kMap, n: 0}},
		{"fixext1", []byte{0xd4, 5, 9}, value{kind: kExt, ext: 5, raw: []byte{9}}},
		{"fixext2", []byte{0xd5, 0xff, 1, 2}, value{kind: kExt, ext: -1, raw: []byte{1, 2}}},
		{"fixext4", []byte{0xd6, 1, 1, 2, 3, 4}, value{kind: kExt, ext: 1, raw: []byte{1, 2, 3, 4}}},
		{"fixext8", cat([]byte{0xd7, 0}, be(8, 7)), value{kind: kExt, raw: be(8, 7)}},
		{"fixext16", cat([]byte{0xd8, 2}, make([]byte, 16)), value{kind: kExt, ext: 2, raw: make([]byte, 16)}},
		{"ext8", []byte{0xc7, 1, 3, 7}, value{kind: kExt, ext: 3, raw: []byte{7}}},
		{"ext8 empty", []byte{0xc7, 0, 3}, value{kind: kExt, ext: 3, raw: []byte{}}},
		{"ext16", cat([]byte{0xc8}, be(2, 2), []byte{4, 1, 2}), value{kind: kExt, ext: 4, raw: []byte{1, 2}}},
		{"ext32", cat([]byte{0xc9}, be(4, 1), []byte{4, 1}), value{kind: kExt, ext: 4, raw: []byte{1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := reader{buf: c.in}
			got, err := r.next()
			if err != nil {
				t.Fatalf("next: %v", err)
			}
			if got.kind != c.want.kind || got.b != c.want.b || got.i != c.want.i || got.u != c.want.u ||
				got.f != c.want.f || got.n != c.want.n || got.ext != c.want.ext || !bytes.Equal(got.raw, c.want.raw) {
				t.Errorf("next(% x) = %+v, want %+v", c.in[:min(len(c.in), 12)], got, c.want)
			}
			// skip consumes exactly the whole encoding, containers included.
			r = reader{buf: c.in}
			if err := r.skip(); err != nil || r.pos != len(c.in) {
				t.Errorf("skip: pos %d err %v, want pos %d", r.pos, err, len(c.in))
			}
			// Every proper prefix is truncated, never a panic or a wrong success.
			for cut := 0; cut < len(c.in); cut++ {
				r := reader{buf: c.in[:cut]}
				if err := r.skip(); !errors.Is(err, errTruncated) {
					t.Fatalf("skip of %d of %d bytes: %v, want errTruncated", cut, len(c.in), err)
				}
			}
		})
	}
}

func TestReaderZeroCopy(t *testing.T) {
	in := mpBytes(t, "hello")
	r := reader{buf: in}
	v, _ := r.next()
	if &v.raw[0] != &in[1] {
		t.Error("string value is a copy, want a sub-slice of the input")
	}
	if n := testing.AllocsPerRun(100, func() {
		r := reader{buf: in}
		_ = r.skip()
	}); n != 0 {
		t.Errorf("skip allocates %v times", n)
	}
}

func TestReaderInvalidCode(t *testing.T) {
	r := reader{buf: []byte{0xc1}}
	if _, err := r.next(); err == nil || !strings.Contains(err.Error(), "0xc1") {
		t.Errorf("next(0xc1) = %v, want invalid code error", err)
	}
	// Inside a container too.
	r = reader{buf: []byte{0x92, 0x01, 0xc1}}
	if err := r.skip(); err == nil {
		t.Error("skip of [1, 0xc1] succeeded")
	}
}

// A length field that claims more elements than bytes remain is refused at
// once: no allocation, no long loop.
func TestReaderHugeLengths(t *testing.T) {
	for _, in := range [][]byte{
		cat([]byte{0xdd}, be(4, math.MaxUint32), []byte{1, 2, 3}),
		cat([]byte{0xdf}, be(4, math.MaxUint32), []byte{1, 2, 3}),
		cat([]byte{0xdf}, be(4, 2), []byte{1, 2, 3}), // 2 pairs need 4 bytes
		cat([]byte{0xdb}, be(4, math.MaxUint32), []byte{1}),
		cat([]byte{0xc6}, be(4, math.MaxUint32), []byte{1}),
		cat([]byte{0xc9}, be(4, math.MaxUint32), []byte{1}),
		{0x9f, 1, 2},
		{0x8f, 1, 2},
	} {
		r := reader{buf: in}
		if err := r.skip(); !errors.Is(err, errTruncated) {
			t.Errorf("skip(% x) = %v, want errTruncated", in, err)
		}
	}
}

// recordEnds returns the end offset of every top-level value of chunk as the
// reference decoder sees it.
func recordEnds(t testing.TB, chunk []byte) []int {
	t.Helper()
	br := bytes.NewReader(chunk)
	dec := msgpack.NewDecoder(br)
	var ends []int
	for br.Len() > 0 {
		if err := dec.Skip(); err != nil {
			t.Fatalf("reference Skip at %d: %v", len(chunk)-br.Len(), err)
		}
		ends = append(ends, len(chunk)-br.Len())
	}
	return ends
}

// skip finds the same value boundaries as vmihailenco/msgpack on every
// fixture chunk.
func TestReaderSkipFixtures(t *testing.T) {
	for _, name := range fixtureNames {
		chunk := fixture(t, name)
		want := recordEnds(t, chunk)
		r := reader{buf: chunk}
		for i, end := range want {
			if err := r.skip(); err != nil || r.pos != end {
				t.Fatalf("%s: record %d: skip pos %d err %v, want end %d", name, i, r.pos, err, end)
			}
		}
	}
}
