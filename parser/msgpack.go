package parser

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// errTruncated is returned when the input ends inside a value.
var errTruncated = errors.New("unexpected end of data")

// reader is a zero-copy msgpack reader over one buffer. Strings and binary
// values are returned as sub-slices of the buffer; nothing is allocated.
type reader struct {
	buf []byte
	pos int
}

// valueKind is the class of the next msgpack value.
type valueKind uint8

const (
	kNil valueKind = iota
	kBool
	kInt
	kUint
	kFloat
	kStr
	kBin
	kArray
	kMap
	kExt
)

// value is one scalar msgpack value, or the header of a container.
type value struct {
	kind valueKind
	b    bool
	i    int64
	u    uint64
	f    float64
	raw  []byte // str, bin and ext payload
	n    int    // array or map length
	ext  int8   // ext type
}

func (r *reader) need(n int) ([]byte, error) {
	if n < 0 || len(r.buf)-r.pos < n {
		return nil, errTruncated
	}
	b := r.buf[r.pos : r.pos+n]
	r.pos += n
	return b, nil
}

func (r *reader) uint(size int) (uint64, error) {
	b, err := r.need(size)
	if err != nil {
		return 0, err
	}
	switch size {
	case 1:
		return uint64(b[0]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(b)), nil
	case 4:
		return uint64(binary.BigEndian.Uint32(b)), nil
	default:
		return binary.BigEndian.Uint64(b), nil
	}
}

// length reads a length field of size bytes and checks that it cannot
// describe more elements than bytes remain (every element takes at least one
// byte), which bounds memory by the input size.
func (r *reader) length(size int, minBytes int) (int, error) {
	u, err := r.uint(size)
	if err != nil {
		return 0, err
	}
	if u > uint64(len(r.buf)-r.pos)/uint64(minBytes) {
		return 0, errTruncated
	}
	return int(u), nil
}

func (r *reader) bytesOf(size int) ([]byte, error) {
	n, err := r.length(size, 1)
	if err != nil {
		return nil, err
	}
	return r.need(n)
}

func (r *reader) extOf(n int) (value, error) {
	t, err := r.need(1)
	if err != nil {
		return value{}, err
	}
	b, err := r.need(n)
	if err != nil {
		return value{}, err
	}
	return value{kind: kExt, ext: int8(t[0]), raw: b}, nil
}

// next reads the next value. For arrays and maps only the header is read.
func (r *reader) next() (value, error) {
	if r.pos >= len(r.buf) {
		return value{}, errTruncated
	}
	c := r.buf[r.pos]
	r.pos++
	switch {
	case msgpcode.IsFixedNum(c):
		return value{kind: kInt, i: int64(int8(c))}, nil
	case msgpcode.IsFixedMap(c):
		n := int(c & msgpcode.FixedMapMask)
		return value{kind: kMap, n: n}, r.checkLen(n, 2)
	case msgpcode.IsFixedArray(c):
		n := int(c & msgpcode.FixedArrayMask)
		return value{kind: kArray, n: n}, r.checkLen(n, 1)
	case msgpcode.IsFixedString(c):
		b, err := r.need(int(c & msgpcode.FixedStrMask))
		return value{kind: kStr, raw: b}, err
	}
	var v value
	var err error
	switch c {
	case msgpcode.Nil:
		v.kind = kNil
	case msgpcode.False, msgpcode.True:
		v = value{kind: kBool, b: c == msgpcode.True}
	case msgpcode.Uint8, msgpcode.Uint16, msgpcode.Uint32, msgpcode.Uint64:
		v.kind = kUint
		v.u, err = r.uint(1 << (c - msgpcode.Uint8))
		if err == nil && v.u <= math.MaxInt64 {
			v = value{kind: kInt, i: int64(v.u)}
		}
	case msgpcode.Int8, msgpcode.Int16, msgpcode.Int32, msgpcode.Int64:
		var u uint64
		size := 1 << (c - msgpcode.Int8)
		u, err = r.uint(size)
		v.kind = kInt
		switch size {
		case 1:
			v.i = int64(int8(u))
		case 2:
			v.i = int64(int16(u))
		case 4:
			v.i = int64(int32(u))
		default:
			v.i = int64(u)
		}
	case msgpcode.Float:
		var u uint64
		u, err = r.uint(4)
		v = value{kind: kFloat, f: float64(math.Float32frombits(uint32(u)))}
	case msgpcode.Double:
		var u uint64
		u, err = r.uint(8)
		v = value{kind: kFloat, f: math.Float64frombits(u)}
	case msgpcode.Str8, msgpcode.Str16, msgpcode.Str32:
		v.kind = kStr
		v.raw, err = r.bytesOf(lenSize(c, msgpcode.Str8))
	case msgpcode.Bin8, msgpcode.Bin16, msgpcode.Bin32:
		v.kind = kBin
		v.raw, err = r.bytesOf(lenSize(c, msgpcode.Bin8))
	case msgpcode.Array16, msgpcode.Array32:
		v.kind = kArray
		v.n, err = r.length(lenSize(c, msgpcode.Array16)*2, 1)
	case msgpcode.Map16, msgpcode.Map32:
		v.kind = kMap
		v.n, err = r.length(lenSize(c, msgpcode.Map16)*2, 2)
	case msgpcode.FixExt1, msgpcode.FixExt2, msgpcode.FixExt4, msgpcode.FixExt8, msgpcode.FixExt16:
		return r.extOf(1 << (c - msgpcode.FixExt1))
	case msgpcode.Ext8, msgpcode.Ext16, msgpcode.Ext32:
		var n int
		n, err = r.length(lenSize(c, msgpcode.Ext8), 1)
		if err == nil {
			return r.extOf(n)
		}
	default:
		return value{}, fmt.Errorf("invalid msgpack code 0x%02x", c)
	}
	return v, err
}

// shortString reads the next value when it is a string of up to 255 bytes
// (fixstr or str8), the common case for keys and values, without the
// general decoding of next. Otherwise it reads nothing.
func (r *reader) shortString() ([]byte, bool) {
	if r.pos >= len(r.buf) {
		return nil, false
	}
	c, at := r.buf[r.pos], r.pos+1
	var n int
	switch {
	case msgpcode.IsFixedString(c):
		n = int(c & msgpcode.FixedStrMask)
	case c == msgpcode.Str8 && at < len(r.buf):
		n, at = int(r.buf[at]), at+1
	default:
		return nil, false
	}
	if n > len(r.buf)-at {
		return nil, false // truncated: next reports it
	}
	r.pos = at + n
	return r.buf[at:r.pos], true
}

// lenSize maps the three codes of a str/bin/ext family (8, 16, 32 bits) to
// the byte size of their length field: 1, 2, 4. Array and map families start
// at 16 bits, so their callers double the result.
func lenSize(c, first byte) int {
	return 1 << (c - first)
}

func (r *reader) checkLen(n, minBytes int) error {
	if n*minBytes > len(r.buf)-r.pos {
		return errTruncated
	}
	return nil
}

// skip skips one whole value, containers included, without materialising it.
func (r *reader) skip() error {
	pending := 1
	for pending > 0 {
		v, err := r.next()
		if err != nil {
			return err
		}
		pending--
		switch v.kind {
		case kArray:
			pending += v.n
		case kMap:
			pending += 2 * v.n
		}
	}
	return nil
}

// CountRecords counts the records of a chunk by skipping over them without
// materialising any value: the least work any decoder can do.
func CountRecords(chunk []byte) (int, error) {
	r := reader{buf: chunk}
	n := 0
	for r.pos < len(r.buf) {
		if err := r.skip(); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
