package server

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// MongoDB's comparison order of BSON values: what equality, $in, ranges,
// $min, $max, $addToSet, sorts and the _id index use. Values of different
// kinds order by their canonical type; numbers of any type compare by value
// (int32 1, int64 1 and double 1.0 are equal); documents compare element by
// element, type, then field name, then value, so field order matters.

// canonical is MongoDB's canonical type of t (canonicalizeBSONType): the
// kinds that compare with each other share one.
func canonical(t bsoncore.Type) int {
	switch t {
	case bsoncore.TypeMinKey:
		return -1
	case bsoncore.TypeUndefined:
		return 0
	case bsoncore.TypeNull:
		return 5
	case bsoncore.TypeDouble, bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDecimal128:
		return 10
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		return 15
	case bsoncore.TypeEmbeddedDocument:
		return 20
	case bsoncore.TypeArray:
		return 25
	case bsoncore.TypeBinary:
		return 30
	case bsoncore.TypeObjectID:
		return 35
	case bsoncore.TypeBoolean:
		return 40
	case bsoncore.TypeDateTime:
		return 45
	case bsoncore.TypeTimestamp:
		return 47
	case bsoncore.TypeRegex:
		return 50
	case bsoncore.TypeDBPointer:
		return 55
	case bsoncore.TypeJavaScript:
		return 60
	case bsoncore.TypeCodeWithScope:
		return 65
	case bsoncore.TypeMaxKey:
		return 127
	}
	panic(notModelled("BSON type %#x", byte(t)))
}

// compare orders a and b as MongoDB does: negative, 0 or positive.
func compare(a, b bsoncore.Value) int {
	if ca, cb := canonical(a.Type), canonical(b.Type); ca != cb {
		return sign(ca - cb)
	}
	switch a.Type {
	case bsoncore.TypeMinKey, bsoncore.TypeMaxKey, bsoncore.TypeUndefined, bsoncore.TypeNull:
		return 0
	case bsoncore.TypeDouble, bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDecimal128:
		return compareNumbers(a, b)
	case bsoncore.TypeString, bsoncore.TypeSymbol, bsoncore.TypeJavaScript:
		return strings.Compare(stringOf(a), stringOf(b))
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		return compareDocuments(a.Data, b.Data)
	case bsoncore.TypeBinary:
		// Length first, then subtype, then the bytes.
		la, lb := len(a.Data), len(b.Data)
		if la != lb {
			return sign(la - lb)
		}
		return bytes.Compare(a.Data[4:], b.Data[4:])
	case bsoncore.TypeObjectID:
		return bytes.Compare(a.Data, b.Data)
	case bsoncore.TypeBoolean:
		return sign(int(a.Data[0]) - int(b.Data[0]))
	case bsoncore.TypeDateTime:
		return cmp64(a.DateTime(), b.DateTime())
	case bsoncore.TypeTimestamp:
		ta, ia := a.Timestamp()
		tb, ib := b.Timestamp()
		return cmpU64(uint64(ta)<<32|uint64(ia), uint64(tb)<<32|uint64(ib))
	case bsoncore.TypeRegex:
		pa, oa := a.Regex()
		pb, ob := b.Regex()
		if c := strings.Compare(pa, pb); c != 0 {
			return c
		}
		return strings.Compare(oa, ob)
	}
	panic(notModelled("comparing values of BSON type %s", a.Type))
}

// equal reports whether a and b are equal in MongoDB's comparison order.
func equal(a, b bsoncore.Value) bool { return compare(a, b) == 0 }

func stringOf(v bsoncore.Value) string {
	switch v.Type {
	case bsoncore.TypeSymbol:
		return v.Symbol()
	case bsoncore.TypeJavaScript:
		return v.JavaScript()
	}
	return v.StringValue()
}

// compareDocuments compares two documents (or arrays) element by element:
// canonical type, field name, value; a document that is a prefix of the
// other is the smaller.
func compareDocuments(a, b []byte) int {
	ea, err := bsoncore.Document(a).Elements()
	if err != nil {
		panic(err)
	}
	eb, err := bsoncore.Document(b).Elements()
	if err != nil {
		panic(err)
	}
	for i := 0; ; i++ {
		switch {
		case i == len(ea) && i == len(eb):
			return 0
		case i == len(ea):
			return -1
		case i == len(eb):
			return 1
		}
		va, vb := ea[i].Value(), eb[i].Value()
		if ca, cb := canonical(va.Type), canonical(vb.Type); ca != cb {
			return sign(ca - cb)
		}
		if c := strings.Compare(ea[i].Key(), eb[i].Key()); c != 0 {
			return c
		}
		if c := compare(va, vb); c != 0 {
			return c
		}
	}
}

// compareNumbers compares two numbers of any BSON numeric type exactly:
// NaN is below every other number and equal to itself.
func compareNumbers(a, b bsoncore.Value) int {
	switch {
	case isInt(a) && isInt(b):
		return cmp64(a.AsInt64(), b.AsInt64())
	case a.Type == bsoncore.TypeDouble && b.Type == bsoncore.TypeDouble:
		return cmpFloat(a.Double(), b.Double())
	case isInt(a) && b.Type == bsoncore.TypeDouble:
		return cmpIntFloat(a.AsInt64(), b.Double())
	case a.Type == bsoncore.TypeDouble && isInt(b):
		return -cmpIntFloat(b.AsInt64(), a.Double())
	}
	return compareExact(exactOf(a), exactOf(b))
}

func isInt(v bsoncore.Value) bool {
	return v.Type == bsoncore.TypeInt32 || v.Type == bsoncore.TypeInt64
}

func cmpFloat(a, b float64) int {
	switch an, bn := math.IsNaN(a), math.IsNaN(b); {
	case an && bn:
		return 0
	case an:
		return -1
	case bn:
		return 1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpIntFloat compares an integer with a double exactly, as MongoDB's
// compareLongToDouble does.
func cmpIntFloat(i int64, f float64) int {
	switch {
	case math.IsNaN(f):
		return 1
	case f >= 1<<63:
		return -1
	case f < -(1 << 63):
		return 1
	}
	t := math.Trunc(f)
	if c := cmp64(i, int64(t)); c != 0 {
		return c
	}
	return cmpFloat(0, f-t)
}

// exact is a number as an exact rational, or NaN or an infinity.
type exact struct {
	nan bool
	inf int // -1 or +1 for an infinity
	r   *big.Rat
}

func exactOf(v bsoncore.Value) exact {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return exact{r: new(big.Rat).SetInt64(v.AsInt64())}
	case bsoncore.TypeDouble:
		f := v.Double()
		switch {
		case math.IsNaN(f):
			return exact{nan: true}
		case math.IsInf(f, 0):
			return exact{inf: int(math.Copysign(1, f))}
		}
		return exact{r: new(big.Rat).SetFloat64(f)}
	}
	h, l := v.Decimal128()
	d := bson.NewDecimal128(h, l)
	switch {
	case d.IsNaN():
		return exact{nan: true}
	case d.IsInf() != 0:
		return exact{inf: d.IsInf()}
	}
	coef, exp, err := d.BigInt()
	if err != nil {
		panic(err)
	}
	r := new(big.Rat).SetInt(coef)
	p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(exp))), nil))
	if exp >= 0 {
		return exact{r: r.Mul(r, p)}
	}
	return exact{r: r.Quo(r, p)}
}

func compareExact(a, b exact) int {
	switch {
	case a.nan || b.nan:
		return cmpBool(!a.nan, !b.nan)
	case a.inf != 0 || b.inf != 0:
		return sign(a.inf - b.inf)
	}
	return a.r.Cmp(b.r)
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// notModelled is the panic value of a command shape the model does not
// know: the plugin does not send it, so the model does not guess what
// MongoDB would answer.
func notModelled(format string, args ...any) error {
	return fmt.Errorf("sim/server: not modelled: "+format, args...)
}
