package server

import (
	"errors"
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// codeOf is the write error code of a statement's error, 0 for nil.
func codeOf(t testing.TB, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var we mongo.WriteException
	if errors.As(err, &we) && len(we.WriteErrors) == 1 {
		return we.WriteErrors[0].Code
	}
	var bwe mongo.BulkWriteException
	if errors.As(err, &bwe) && len(bwe.WriteErrors) == 1 {
		return bwe.WriteErrors[0].Code
	}
	t.Fatalf("not a write error: %#v", err)
	return 0
}

// upsertOne sends one upsert and returns its error.
func upsertOne(t testing.TB, s *Server, coll string, filter, update bson.D) error {
	t.Helper()
	errs := s.Apply(Op{Kind: Upserts, Coll: coll, Ups: []writer.Upsert{{Filter: raw(t, filter), Update: raw(t, update), Insert: true}}}).Errs
	if len(errs) != 1 {
		t.Fatalf("%d errors for one statement", len(errs))
	}
	return errs[0]
}

// only is the one document of coll.
func only(t testing.TB, s *Server, coll string) bson.Raw {
	t.Helper()
	docs := s.Docs(coll)
	if len(docs) != 1 {
		t.Fatalf("%s holds %d documents, want 1", coll, len(docs))
	}
	return docs[0]
}

// A new bucket, upserted as the writer builds it: the filter's fields in
// the order of their paths (dotted ones nested), _id first, then the
// fields the update adds in MongoDB's order of field names, numeric names
// by number.
func TestUpsertFieldOrder(t *testing.T) {
	start, end := bson.DateTime(1_700_000_040_000), bson.DateTime(1_700_000_100_000)
	t1, t2 := bson.DateTime(1_700_000_041_000), bson.DateTime(1_700_000_042_000)
	key := bson.D{{Key: "module", Value: "pay"}, {Key: "pod", Value: nil}}
	filter := func(count int32) bson.D {
		return bson.D{{Key: "_id", Value: "g1-0"}, {Key: "key.module", Value: "pay"}, {Key: "key.pod", Value: nil},
			{Key: "start", Value: start}, {Key: "count", Value: count}}
	}
	update := func(msg string, at bson.DateTime, cost any, levels ...any) bson.D {
		return bson.D{
			{Key: "$setOnInsert", Value: bson.D{{Key: "key", Value: key}, {Key: "start", Value: start}, {Key: "end", Value: end}, {Key: "seq", Value: int32(0)}}},
			{Key: "$push", Value: bson.D{{Key: "logs", Value: bson.D{{Key: "$each", Value: bson.A{bson.D{{Key: "msg", Value: msg}}}}}},
				{Key: "ops", Value: bson.D{{Key: "$each", Value: bson.A{int32(0x1231)}}}}}},
			{Key: "$addToSet", Value: bson.D{{Key: "values.level", Value: bson.D{{Key: "$each", Value: bson.A(levels)}}}}},
			{Key: "$inc", Value: bson.D{{Key: "count", Value: int32(1)}, {Key: "bytes", Value: int64(10)},
				{Key: "stats.cost.sum", Value: cost}, {Key: "stats.cost.n", Value: int64(1)},
				{Key: "counts.status.200", Value: int32(1)}, {Key: "counts.status.1000", Value: int32(1)}}},
			{Key: "$min", Value: bson.D{{Key: "minTs", Value: at}, {Key: "stats.cost.min", Value: cost}}},
			{Key: "$max", Value: bson.D{{Key: "maxTs", Value: at}, {Key: "stats.cost.max", Value: cost}}},
		}
	}
	s := New()
	if err := upsertOne(t, s, "logs", filter(0), update("a", t2, int64(5), "info", "warn", "info")); err != nil {
		t.Fatal(err)
	}
	want := raw(t, bson.D{{Key: "_id", Value: "g1-0"}, {Key: "count", Value: int32(1)}, {Key: "key", Value: key}, {Key: "start", Value: start},
		{Key: "bytes", Value: int64(10)},
		{Key: "counts", Value: bson.D{{Key: "status", Value: bson.D{{Key: "200", Value: int32(1)}, {Key: "1000", Value: int32(1)}}}}},
		{Key: "end", Value: end},
		{Key: "logs", Value: bson.A{bson.D{{Key: "msg", Value: "a"}}}},
		{Key: "maxTs", Value: t2}, {Key: "minTs", Value: t2},
		{Key: "ops", Value: bson.A{int32(0x1231)}},
		{Key: "seq", Value: int32(0)},
		{Key: "stats", Value: bson.D{{Key: "cost", Value: bson.D{{Key: "max", Value: int64(5)}, {Key: "min", Value: int64(5)},
			{Key: "n", Value: int64(1)}, {Key: "sum", Value: int64(5)}}}}},
		{Key: "values", Value: bson.D{{Key: "level", Value: bson.A{"info", "warn"}}}},
	})
	if got := only(t, s, "logs"); ext(got) != ext(want) {
		t.Fatalf("inserted bucket\n got %s\nwant %s", ext(got), ext(want))
	}

	// The next write matches its count: it appends, adds, and leaves
	// what $setOnInsert names alone; a double cost makes the sum a double.
	if err := upsertOne(t, s, "logs", filter(1), update("b", t1, 2.5, "error", "info")); err != nil {
		t.Fatal(err)
	}
	want = raw(t, bson.D{{Key: "_id", Value: "g1-0"}, {Key: "count", Value: int32(2)}, {Key: "key", Value: key}, {Key: "start", Value: start},
		{Key: "bytes", Value: int64(20)},
		{Key: "counts", Value: bson.D{{Key: "status", Value: bson.D{{Key: "200", Value: int32(2)}, {Key: "1000", Value: int32(2)}}}}},
		{Key: "end", Value: end},
		{Key: "logs", Value: bson.A{bson.D{{Key: "msg", Value: "a"}}, bson.D{{Key: "msg", Value: "b"}}}},
		{Key: "maxTs", Value: t2}, {Key: "minTs", Value: t1},
		{Key: "ops", Value: bson.A{int32(0x1231), int32(0x1231)}},
		{Key: "seq", Value: int32(0)},
		{Key: "stats", Value: bson.D{{Key: "cost", Value: bson.D{{Key: "max", Value: int64(5)}, {Key: "min", Value: 2.5},
			{Key: "n", Value: int64(2)}, {Key: "sum", Value: 7.5}}}}},
		{Key: "values", Value: bson.D{{Key: "level", Value: bson.A{"info", "warn", "error"}}}},
	})
	if got := only(t, s, "logs"); ext(got) != ext(want) {
		t.Fatalf("updated bucket\n got %s\nwant %s", ext(got), ext(want))
	}
}

// Each update operator on an existing document {_id: "d", ...}: the
// document it leaves, or the write error code MongoDB answers with.
func TestUpdateOperators(t *testing.T) {
	d0, d1, d2 := bson.DateTime(1000), bson.DateTime(2000), bson.DateTime(3000)
	op := func(name string, fields ...bson.E) bson.E { return bson.E{Key: name, Value: bson.D(fields)} }
	each := func(vals ...any) bson.D { return bson.D{{Key: "$each", Value: append(bson.A{}, vals...)}} }
	cases := []struct {
		name   string
		doc    bson.D // without _id
		update bson.D
		want   bson.D // without _id; nil with a code
		code   int
	}{
		{"$inc int32+int32", bson.D{{Key: "n", Value: int32(1)}}, bson.D{op("$inc", bson.E{Key: "n", Value: int32(2)})},
			bson.D{{Key: "n", Value: int32(3)}}, 0},
		{"$inc int32 overflow makes an int64", bson.D{{Key: "n", Value: int32(math.MaxInt32)}}, bson.D{op("$inc", bson.E{Key: "n", Value: int32(1)})},
			bson.D{{Key: "n", Value: int64(math.MaxInt32 + 1)}}, 0},
		{"$inc int32+int64", bson.D{{Key: "n", Value: int32(1)}}, bson.D{op("$inc", bson.E{Key: "n", Value: int64(2)})},
			bson.D{{Key: "n", Value: int64(3)}}, 0},
		{"$inc int64+int32", bson.D{{Key: "n", Value: int64(1)}}, bson.D{op("$inc", bson.E{Key: "n", Value: int32(2)})},
			bson.D{{Key: "n", Value: int64(3)}}, 0},
		{"$inc int+double", bson.D{{Key: "n", Value: int32(1)}}, bson.D{op("$inc", bson.E{Key: "n", Value: 0.5})},
			bson.D{{Key: "n", Value: 1.5}}, 0},
		{"$inc double+int64", bson.D{{Key: "n", Value: 1.5}}, bson.D{op("$inc", bson.E{Key: "n", Value: int64(1)})},
			bson.D{{Key: "n", Value: 2.5}}, 0},
		{"$inc int64 overflow", bson.D{{Key: "n", Value: int64(math.MaxInt64)}}, bson.D{op("$inc", bson.E{Key: "n", Value: int32(1)})}, nil, 2},
		{"$inc creates dotted paths", bson.D{{Key: "a", Value: bson.D{{Key: "x", Value: int32(1)}}}},
			bson.D{op("$inc", bson.E{Key: "a.b.c", Value: int32(1)}, bson.E{Key: "a.b.a", Value: int64(2)})},
			bson.D{{Key: "a", Value: bson.D{{Key: "x", Value: int32(1)}, {Key: "b", Value: bson.D{{Key: "a", Value: int64(2)}, {Key: "c", Value: int32(1)}}}}}}, 0},
		{"$inc of a string", bson.D{{Key: "n", Value: "1"}}, bson.D{op("$inc", bson.E{Key: "n", Value: int32(1)})}, nil, 14},
		{"$inc by a string", bson.D{}, bson.D{op("$inc", bson.E{Key: "n", Value: "1"})}, nil, 14},
		{"$min date", bson.D{{Key: "t", Value: d1}}, bson.D{op("$min", bson.E{Key: "t", Value: d0})}, bson.D{{Key: "t", Value: d0}}, 0},
		{"$min date kept", bson.D{{Key: "t", Value: d1}}, bson.D{op("$min", bson.E{Key: "t", Value: d2})}, bson.D{{Key: "t", Value: d1}}, 0},
		{"$max date", bson.D{{Key: "t", Value: d1}}, bson.D{op("$max", bson.E{Key: "t", Value: d2})}, bson.D{{Key: "t", Value: d2}}, 0},
		{"$min across number types", bson.D{{Key: "v", Value: int64(5)}}, bson.D{op("$min", bson.E{Key: "v", Value: 4.5})},
			bson.D{{Key: "v", Value: 4.5}}, 0},
		{"$min of an equal number keeps the type", bson.D{{Key: "v", Value: int32(5)}}, bson.D{op("$min", bson.E{Key: "v", Value: int64(5)})},
			bson.D{{Key: "v", Value: int32(5)}}, 0},
		{"$max: a date is above any number", bson.D{{Key: "v", Value: 1e300}}, bson.D{op("$max", bson.E{Key: "v", Value: d0})},
			bson.D{{Key: "v", Value: d0}}, 0},
		{"$min creates", bson.D{}, bson.D{op("$min", bson.E{Key: "s.x.min", Value: int64(3)})},
			bson.D{{Key: "s", Value: bson.D{{Key: "x", Value: bson.D{{Key: "min", Value: int64(3)}}}}}}, 0},
		{"$push $each", bson.D{{Key: "l", Value: bson.A{int32(1)}}}, bson.D{op("$push", bson.E{Key: "l", Value: each(int32(2), int32(1))})},
			bson.D{{Key: "l", Value: bson.A{int32(1), int32(2), int32(1)}}}, 0},
		{"$push one", bson.D{}, bson.D{op("$push", bson.E{Key: "l", Value: "x"})}, bson.D{{Key: "l", Value: bson.A{"x"}}}, 0},
		{"$push nothing creates an empty array", bson.D{}, bson.D{op("$push", bson.E{Key: "l", Value: each()})}, bson.D{{Key: "l", Value: bson.A{}}}, 0},
		{"$push to a non-array", bson.D{{Key: "l", Value: int32(1)}}, bson.D{op("$push", bson.E{Key: "l", Value: each(int32(2))})}, nil, 2},
		{"$push $each of a non-array", bson.D{}, bson.D{op("$push", bson.E{Key: "l", Value: bson.D{{Key: "$each", Value: int32(2)}}})}, nil, 2},
		{"$addToSet $each: equal numbers are one", bson.D{{Key: "v", Value: bson.D{{Key: "f", Value: bson.A{int32(1)}}}}},
			bson.D{op("$addToSet", bson.E{Key: "v.f", Value: each(int64(1), 2.0, int32(2), "1")})},
			bson.D{{Key: "v", Value: bson.D{{Key: "f", Value: bson.A{int32(1), 2.0, "1"}}}}}, 0},
		{"$addToSet creates", bson.D{}, bson.D{op("$addToSet", bson.E{Key: "v.f", Value: each("a", "a")})},
			bson.D{{Key: "v", Value: bson.D{{Key: "f", Value: bson.A{"a"}}}}}, 0},
		{"$addToSet to a non-array", bson.D{{Key: "v", Value: "a"}}, bson.D{op("$addToSet", bson.E{Key: "v", Value: each("b")})}, nil, 2},
		{"$set dotted", bson.D{{Key: "a", Value: bson.D{{Key: "b", Value: int32(1)}}}}, bson.D{op("$set", bson.E{Key: "a.b", Value: true}, bson.E{Key: "a.c", Value: true})},
			bson.D{{Key: "a", Value: bson.D{{Key: "b", Value: true}, {Key: "c", Value: true}}}}, 0},
		{"$set through a scalar", bson.D{{Key: "a", Value: int32(1)}}, bson.D{op("$set", bson.E{Key: "a.b", Value: true})}, nil, 28},
		{"$set through an array", bson.D{{Key: "a", Value: bson.A{}}}, bson.D{op("$set", bson.E{Key: "a.b", Value: true})}, nil, 28},
		{"$setOnInsert on a match does nothing", bson.D{{Key: "a", Value: int32(1)}},
			bson.D{op("$setOnInsert", bson.E{Key: "a", Value: int32(2)}, bson.E{Key: "b.c", Value: int32(2)}), op("$inc", bson.E{Key: "n", Value: int32(1)})},
			bson.D{{Key: "a", Value: int32(1)}, {Key: "n", Value: int32(1)}}, 0},
		{"paths in the order of names, numbers by number", bson.D{},
			bson.D{op("$set", bson.E{Key: "x.10", Value: int32(1)}, bson.E{Key: "x.9", Value: int32(1)}, bson.E{Key: "x.a", Value: int32(1)},
				bson.E{Key: "x.09", Value: int32(1)}, bson.E{Key: "x.B", Value: int32(1)})},
			bson.D{{Key: "x", Value: bson.D{{Key: "09", Value: int32(1)}, {Key: "9", Value: int32(1)}, {Key: "10", Value: int32(1)},
				{Key: "B", Value: int32(1)}, {Key: "a", Value: int32(1)}}}}, 0},
		{"conflicting paths", bson.D{}, bson.D{op("$set", bson.E{Key: "a", Value: int32(1)}), op("$inc", bson.E{Key: "a.b", Value: int32(1)})}, nil, 40},
		{"conflicting operators on one path", bson.D{}, bson.D{op("$push", bson.E{Key: "l", Value: int32(1)}), op("$set", bson.E{Key: "l", Value: bson.A{}})}, nil, 40},
		{"empty field name", bson.D{}, bson.D{op("$set", bson.E{Key: "a..b", Value: int32(1)})}, nil, 56},
	}
	for _, c := range cases {
		s := New()
		doc := append(bson.D{{Key: "_id", Value: "d"}}, c.doc...)
		if err := s.Apply(Op{Kind: InsertMany, Coll: "c", Docs: []bson.Raw{raw(t, doc)}}).Err; err != nil {
			t.Fatal(err)
		}
		err := upsertOne(t, s, "c", bson.D{{Key: "_id", Value: "d"}}, c.update)
		if got := codeOf(t, err); got != c.code {
			t.Errorf("%s: code %d (%v), want %d", c.name, got, err, c.code)
			continue
		}
		want := raw(t, append(bson.D{{Key: "_id", Value: "d"}}, c.want...))
		if c.code != 0 {
			want = raw(t, doc) // nothing applied
		}
		if got := only(t, s, "c"); ext(got) != ext(want) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, ext(got), ext(want))
		}
	}
}

// An update that changes nothing counts as matched, not modified.
func TestNoOpUpdate(t *testing.T) {
	s := New()
	c := s.coll("c", true)
	c.put(bsoncore.Document(raw(t, bson.D{{Key: "_id", Value: "d"}, {Key: "t", Value: bson.DateTime(5)}})))
	u := writer.Upsert{Filter: raw(t, bson.D{{Key: "_id", Value: "d"}}),
		Update: raw(t, bson.D{{Key: "$max", Value: bson.D{{Key: "t", Value: bson.DateTime(4)}}}}), Insert: true}
	if o := s.upsert(c, "c", u); o.fail != nil || o.modified || o.upserted.Type != 0 {
		t.Errorf("no-op $max: %+v, want matched, not modified", o)
	}
	u.Update = raw(t, bson.D{{Key: "$max", Value: bson.D{{Key: "t", Value: bson.DateTime(6)}}}})
	if o := s.upsert(c, "c", u); o.fail != nil || !o.modified {
		t.Errorf("$max: %+v, want modified", o)
	}
}
