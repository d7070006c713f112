package server

import (
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// raw is d as a BSON document.
func raw(t testing.TB, d bson.D) bson.Raw {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ext is r in canonical extended JSON, types and field order shown.
func ext(r bson.Raw) string {
	if r == nil {
		return "<nil>"
	}
	b, err := bson.MarshalExtJSON(r, true, false)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// val is v as a BSON value.
func val(t testing.TB, v any) bsoncore.Value {
	t.Helper()
	return bsoncore.Document(raw(t, bson.D{{Key: "v", Value: v}})).Index(0).Value()
}

// MongoDB's comparison order: across types by canonical type, numbers by
// value whatever their type, documents field by field.
func TestCompare(t *testing.T) {
	oid := func(b byte) bson.ObjectID { return bson.ObjectID{b} }
	cases := []struct {
		name string
		a, b any
		want int
	}{
		{"int32 = int64", int32(7), int64(7), 0},
		{"int32 = double", int32(7), 7.0, 0},
		{"int64 < double fraction", int64(7), 7.5, -1},
		{"int64 max < 2^63 as double", int64(math.MaxInt64), math.Pow(2, 63), -1},
		{"int64 2^53+1 > double 2^53", int64(1<<53 + 1), float64(1 << 53), 1},
		{"NaN below numbers", math.NaN(), math.Inf(-1), -1},
		{"NaN = NaN", math.NaN(), math.NaN(), 0},
		{"decimal = int", bson.NewDecimal128(0x3040000000000000, 7), int32(7), 0},
		{"null < number", nil, int32(-5), -1},
		{"number < string", 1e9, "a", -1},
		{"string < document", "z", bson.D{}, -1},
		{"document < array", bson.D{{Key: "a", Value: 1}}, bson.A{}, -1},
		{"array < binary", bson.A{int32(1)}, bson.Binary{Data: []byte{}}, -1},
		{"binary < objectId", bson.Binary{Data: []byte{9, 9}}, oid(0), -1},
		{"objectId < bool", oid(255), false, -1},
		{"bool < date", true, bson.DateTime(0), -1},
		{"date < timestamp", bson.DateTime(math.MaxInt64), bson.Timestamp{}, -1},
		{"strings by bytes", "B", "a", -1},
		{"strings prefix", "ab", "abc", -1},
		{"binary by length first", bson.Binary{Data: []byte{9}}, bson.Binary{Data: []byte{0, 0}}, -1},
		{"binary then subtype", bson.Binary{Subtype: 5, Data: []byte{0}}, bson.Binary{Subtype: 0, Data: []byte{1}}, 1},
		{"objectIds by bytes", oid(1), oid(2), -1},
		{"dates signed", bson.DateTime(-1), bson.DateTime(1), -1},
		{"documents by field name", bson.D{{Key: "a", Value: int32(2)}}, bson.D{{Key: "b", Value: int32(1)}}, -1},
		{"documents: field order matters", bson.D{{Key: "a", Value: int32(1)}, {Key: "b", Value: int32(1)}},
			bson.D{{Key: "b", Value: int32(1)}, {Key: "a", Value: int32(1)}}, -1},
		{"documents: numbers by value", bson.D{{Key: "a", Value: int32(1)}}, bson.D{{Key: "a", Value: 1.0}}, 0},
		{"documents: type before name", bson.D{{Key: "b", Value: int32(1)}}, bson.D{{Key: "a", Value: "x"}}, -1},
		{"documents: prefix is smaller", bson.D{{Key: "a", Value: int32(1)}}, bson.D{{Key: "a", Value: int32(1)}, {Key: "b", Value: nil}}, -1},
		{"arrays element by element", bson.A{int32(1), int32(2)}, bson.A{int32(1), int32(3)}, -1},
	}
	for _, c := range cases {
		a, b := val(t, c.a), val(t, c.b)
		if got := compare(a, b); got != c.want {
			t.Errorf("%s: compare = %d, want %d", c.name, got, c.want)
		}
		if got := compare(b, a); got != -c.want {
			t.Errorf("%s: reversed compare = %d, want %d", c.name, got, -c.want)
		}
	}
}

// Filters of the shapes the plugin sends, matched as MongoDB 7 does.
func TestFilters(t *testing.T) {
	start := bson.DateTime(1_700_000_000_000)
	oid := bson.ObjectID{1, 2, 3}
	bucket := bson.D{{Key: "_id", Value: "g1-0"}, {Key: "count", Value: int32(3)},
		{Key: "key", Value: bson.D{{Key: "module", Value: "pay"}, {Key: "pod", Value: nil}}},
		{Key: "start", Value: start}, {Key: "seq", Value: int32(0)},
		{Key: "ops", Value: bson.A{int32(0x1230 | 2), int32(0x4560 | 1)}}}
	keyIn := func(keys ...bson.D) bson.D {
		a := bson.A{}
		for _, k := range keys {
			a = append(a, k)
		}
		return bson.D{{Key: "key", Value: bson.D{{Key: "$in", Value: a}}}}
	}
	pay := bson.D{{Key: "module", Value: "pay"}, {Key: "pod", Value: nil}}
	cases := []struct {
		name   string
		doc    bson.D
		filter bson.D
		want   bool
	}{
		{"_id", bucket, bson.D{{Key: "_id", Value: "g1-0"}}, true},
		{"_id other", bucket, bson.D{{Key: "_id", Value: "g1-1"}}, false},
		{"bucket guard", bucket, bson.D{{Key: "_id", Value: "g1-0"}, {Key: "key.module", Value: "pay"}, {Key: "key.pod", Value: nil},
			{Key: "start", Value: start}, {Key: "count", Value: int32(3)}}, true},
		{"count guard stale", bucket, bson.D{{Key: "_id", Value: "g1-0"}, {Key: "count", Value: int32(2)}}, false},
		{"count guard across types", bucket, bson.D{{Key: "count", Value: 3.0}}, true},
		{"null matches missing", bucket, bson.D{{Key: "key.zone", Value: nil}}, true},
		{"null matches null", bucket, bson.D{{Key: "key.pod", Value: nil}}, true},
		{"null does not match a value", bucket, bson.D{{Key: "key.module", Value: nil}}, false},
		{"path through a scalar is missing", bucket, bson.D{{Key: "seq.x", Value: nil}}, true},
		{"date", bucket, bson.D{{Key: "start", Value: start + 1}}, false},
		{"$in on an array field", bucket, bson.D{{Key: "ops", Value: bson.D{{Key: "$in", Value: bson.A{int32(7), int32(0x4561)}}}}}, true},
		{"$in on an array field, none", bucket, bson.D{{Key: "ops", Value: bson.D{{Key: "$in", Value: bson.A{int32(0x4562)}}}}}, false},
		{"whole array equality", bucket, bson.D{{Key: "ops", Value: bson.A{int32(0x1232), int32(0x4561)}}}, true},
		{"whole array equality, order", bucket, bson.D{{Key: "ops", Value: bson.A{int32(0x4561), int32(0x1232)}}}, false},
		{"array element equality", bucket, bson.D{{Key: "ops", Value: int64(0x1232)}}, true},
		{"key $in documents", bucket, keyIn(bson.D{{Key: "module", Value: "auth"}}, pay), true},
		{"key $in: field order matters", bucket, keyIn(bson.D{{Key: "pod", Value: nil}, {Key: "module", Value: "pay"}}), false},
		{"key $in: a subset is not equal", bucket, keyIn(bson.D{{Key: "module", Value: "pay"}}), false},
		{"key equality", bucket, bson.D{{Key: "key", Value: pay}, {Key: "start", Value: start}}, true},
		{"$or", bucket, bson.D{{Key: "$or", Value: bson.A{
			bson.D{{Key: "key", Value: bson.D{{Key: "$in", Value: bson.A{pay}}}}, {Key: "start", Value: start - 60000}},
			bson.D{{Key: "key", Value: bson.D{{Key: "$in", Value: bson.A{pay}}}}, {Key: "start", Value: start}},
		}}, {Key: "ops", Value: bson.D{{Key: "$in", Value: bson.A{int32(0x4561)}}}}}, true},
		{"$or none", bucket, bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "seq", Value: int32(1)}}, bson.D{{Key: "count", Value: int32(0)}}}}}, false},
		{"$ne", bucket, bson.D{{Key: "ops", Value: bson.D{{Key: "$ne", Value: int32(0x4561)}}}}, false},
		{"$exists", bucket, bson.D{{Key: "key.pod", Value: bson.D{{Key: "$exists", Value: true}}}}, true},
		{"$lt on dates", bucket, bson.D{{Key: "start", Value: bson.D{{Key: "$lt", Value: start + 1}}}}, true},
		{"$in on _id strings", bucket, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{"x", "g1-0"}}}}}, true},
		{"$in on _id binary", bson.D{{Key: "_id", Value: bson.Binary{Data: []byte{1, 2}}}},
			bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{bson.Binary{Data: []byte{1, 2}}}}}}}, true},
		{"$in on _id binary subtype", bson.D{{Key: "_id", Value: bson.Binary{Data: []byte{1, 2}}}},
			bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{bson.Binary{Subtype: 4, Data: []byte{1, 2}}}}}}}, false},
		{"$in on _id objectId", bson.D{{Key: "_id", Value: oid}}, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{"x", oid}}}}}, true},
		{"$in on _id: int64 finds int32", bson.D{{Key: "_id", Value: int32(7)}}, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{int64(7)}}}}}, true},
		{"$in on _id: string is not a number", bson.D{{Key: "_id", Value: int32(7)}}, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{"7"}}}}}, false},
		{"_id range", bson.D{{Key: "_id", Value: "c1:3"}}, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: "c1:"}, {Key: "$lt", Value: "c1;"}}}}, true},
		{"_id range excludes", bson.D{{Key: "_id", Value: "c10:3"}}, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: "c1:"}, {Key: "$lt", Value: "c1;"}}}}, false},
		{"_id range: type bracketing", bson.D{{Key: "_id", Value: oid}}, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: ""}}}}, false},
		{"$gte null is equality", bson.D{{Key: "_id", Value: "a"}}, bson.D{{Key: "x", Value: bson.D{{Key: "$gte", Value: nil}}}}, true},
		{"empty filter", bucket, bson.D{}, true},
	}
	for _, c := range cases {
		if got := matches(bsoncore.Document(raw(t, c.doc)), bsoncore.Document(raw(t, c.filter))); got != c.want {
			t.Errorf("%s: matches = %v, want %v", c.name, got, c.want)
		}
	}
}

// Shapes the plugin never sends panic instead of being guessed at.
func TestNotModelledPanics(t *testing.T) {
	doc := bsoncore.Document(raw(t, bson.D{{Key: "_id", Value: "a"}, {Key: "arr", Value: bson.A{bson.D{{Key: "b", Value: 1}}}}}))
	for name, f := range map[string]func(){
		"unknown query operator": func() {
			matches(doc, bsoncore.Document(raw(t, bson.D{{Key: "x", Value: bson.D{{Key: "$regex", Value: "a"}}}})))
		},
		"$where":                func() { matches(doc, bsoncore.Document(raw(t, bson.D{{Key: "$where", Value: "1"}}))) },
		"path through an array": func() { matches(doc, bsoncore.Document(raw(t, bson.D{{Key: "arr.b", Value: 1}}))) },
		"$unset": func() {
			_, _ = parseUpdate(bsoncore.Document(raw(t, bson.D{{Key: "$unset", Value: bson.D{{Key: "a", Value: ""}}}})))
		},
		"$push $slice": func() {
			_, _ = parseUpdate(bsoncore.Document(raw(t, bson.D{{Key: "$push", Value: bson.D{{Key: "a", Value: bson.D{
				{Key: "$each", Value: bson.A{}}, {Key: "$slice", Value: 3}}}}}})))
		},
		"replacement": func() { _, _ = parseUpdate(bsoncore.Document(raw(t, bson.D{{Key: "a", Value: 1}}))) },
		"exclusion and inclusion": func() {
			project(doc, bsoncore.Document(raw(t, bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 0}})))
		},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
