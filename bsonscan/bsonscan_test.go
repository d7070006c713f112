package bsonscan

import (
	"bytes"
	"encoding/binary"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Element reads every type as bsoncore does, and a cut document as not
// holding what it lost.
func TestElementEveryType(t *testing.T) {
	raw, err := bson.Marshal(bson.D{
		{Key: "d", Value: 1.5}, {Key: "s", Value: "x"}, {Key: "o", Value: bson.D{{Key: "a", Value: 1}}},
		{Key: "a", Value: bson.A{1, "b"}}, {Key: "bin", Value: bson.Binary{Subtype: 0, Data: []byte{1, 2}}},
		{Key: "u", Value: bson.Undefined{}}, {Key: "oid", Value: bson.NewObjectID()}, {Key: "b", Value: true},
		{Key: "dt", Value: bson.DateTime(7)}, {Key: "n", Value: nil}, {Key: "re", Value: bson.Regex{Pattern: "p", Options: "i"}},
		{Key: "js", Value: bson.JavaScript("f()")}, {Key: "sym", Value: bson.Symbol("y")},
		{Key: "i32", Value: int32(3)}, {Key: "ts", Value: bson.Timestamp{T: 1, I: 2}}, {Key: "i64", Value: int64(4)},
		{Key: "dec", Value: bson.NewDecimal128(1, 2)}, {Key: "min", Value: bson.MinKey{}}, {Key: "max", Value: bson.MaxKey{}},
		{Key: "last", Value: "z"},
	})
	if err != nil {
		t.Fatal(err)
	}
	elems, err := bsoncore.Document(raw).Elements()
	if err != nil {
		t.Fatal(err)
	}
	for _, el := range elems {
		got, ok := Element(raw, el.Key())
		if want := el.Value(); !ok || got.Type != want.Type || !bytes.Equal(got.Data, want.Data) {
			t.Errorf("%s: Element gives %v %v, want %v", el.Key(), got, ok, want)
		}
	}
	for n := range len(raw) {
		cut := append([]byte(nil), raw[:n]...)
		if len(cut) >= 4 {
			binary.LittleEndian.PutUint32(cut, uint32(n)) // a length that fits, a body that ends early
		}
		if v, ok := Element(cut, "last"); ok {
			t.Errorf("a document cut at %d holds last: %v", n, v)
		}
	}
}
