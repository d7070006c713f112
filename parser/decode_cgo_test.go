//go:build cgo

package parser

import (
	"fmt"
	"math"
	"reflect"
	"testing"
	"unsafe"

	"github.com/fluent/fluent-bit-go/output"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// This file needs cgo only because fluent-bit-go's output package does; the
// parser itself builds with CGO_ENABLED=0.

// refValue normalises a value decoded by fluent-bit-go (ugorji codec) to
// string / int64 / float64 / bool / nil / map[string]any / []any.
func refValue(t *testing.T, v any) any {
	switch x := v.(type) {
	case nil, bool, string, float64:
		return x
	case []byte:
		return validString(x)
	case float32:
		return float64(x)
	case int8, int16, int32, int64, int, uint8, uint16, uint32, uint, uint64:
		if u, ok := x.(uint64); ok && u > math.MaxInt64 {
			return fmt.Sprint(u)
		}
		i, _ := asInt(x)
		return i
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			var ks string
			switch k := k.(type) {
			case string:
				ks = k
			case []byte:
				ks = string(k)
			default:
				ks = fmt.Sprint(k)
			}
			m[ks] = refValue(t, e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = refValue(t, e)
		}
		return a
	case output.FLBTime:
		return x.UnixMilli()
	}
	t.Fatalf("fluent-bit-go gave a %T", v)
	return nil
}

// ourValue normalises a value of a decoded BSON document the same way.
func ourValue(t *testing.T, v any) any {
	switch x := v.(type) {
	case nil, bool, string, float64, int64:
		return x
	case int32:
		return int64(x)
	case bson.Decimal128:
		return x.String()
	case bson.DateTime:
		return int64(x)
	case bson.D:
		m := make(map[string]any, len(x))
		for _, e := range x {
			if _, dup := m[e.Key]; dup {
				t.Fatalf("duplicate field %q", e.Key)
			}
			m[e.Key] = ourValue(t, e.Value)
		}
		return m
	case bson.A:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = ourValue(t, e)
		}
		return a
	}
	t.Fatalf("our document holds a %T", v)
	return nil
}

// Every fixture chunk decodes to the same records as fluent-bit-go's own
// decoder: same times (to the nanosecond on Record.Time, to the millisecond
// in the document), same field names, same values, strings as strings.
func TestDecodeMatchesFluentBitGo(t *testing.T) {
	const timeKey = "__entry_time" // not a field of any fixture
	d := mustDecoder(t, Options{TimeKey: timeKey, ReplaceDot: "_", ReplaceDollar: "_"})
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			chunk := fixture(t, name)
			var b Batch
			d.Decode(chunk, nil, &b)
			if b.Corrupt != nil || len(b.Bad) != 0 {
				t.Fatalf("corrupt %v, %d bad", b.Corrupt, len(b.Bad))
			}
			ref := output.NewDecoder(unsafe.Pointer(&chunk[0]), len(chunk))
			n := 0
			for ; ; n++ {
				ret, ts, rec := output.GetRecord(ref)
				if ret != 0 {
					break
				}
				if n >= len(b.Records) {
					t.Fatalf("fluent-bit-go has more than our %d records", len(b.Records))
				}
				r := b.Records[n]
				ft, ok := ts.(output.FLBTime)
				if !ok {
					t.Fatalf("record %d: fluent-bit-go time is a %T", n, ts)
				}
				if !r.Time.Equal(ft.Time) {
					t.Errorf("record %d: time %v, fluent-bit-go %v", n, r.Time, ft.Time)
				}
				doc := toD(t, r.Doc)
				if doc[0].Key != timeKey || doc[0].Value.(bson.DateTime) != bson.DateTime(ft.UnixMilli()) {
					t.Errorf("record %d: time element %v, want %d ms", n, doc[0], ft.UnixMilli())
				}
				got := ourValue(t, doc[1:])
				want := refValue(t, map[any]any(rec))
				if len(rec) == 0 {
					t.Errorf("record %d: fluent-bit-go gave an empty record", n)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("record %d:\n got %v\nwant %v", n, got, want)
				}
			}
			if n != len(b.Records) {
				t.Errorf("fluent-bit-go read %d records, we %d", n, len(b.Records))
			}
			if n == 0 {
				t.Error("no records")
			}
		})
	}
}
