package server

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// bucketUp is a write of bucket id holding count entries, pushing one: an
// upsert when count is 0, as the writer sends it.
func bucketUp(t testing.TB, id string, count int32) writer.Upsert {
	return writer.Upsert{
		Filter: raw(t, bson.D{{Key: "_id", Value: id}, {Key: "count", Value: count}}),
		Update: raw(t, bson.D{{Key: "$push", Value: bson.D{{Key: "logs", Value: "x"}}}, {Key: "$inc", Value: bson.D{{Key: "count", Value: int32(1)}}}}),
		Insert: count == 0,
	}
}

// refuseMarked refuses, with BadValue, statements holding the string
// "refuse me".
func refuseMarked(_ string, stmt bson.Raw) (int, string) {
	if strings.Contains(string(stmt), "refuse me") {
		return 2, "refused: content"
	}
	return 0, ""
}

// An unordered batch of upserts: each statement applies or fails on its
// own, each seeing the ones before it, and the reply goes through
// writer.Outcomes as MongoStore's does.
func TestUnorderedUpsertBatch(t *testing.T) {
	s := New()
	s.Refuse = refuseMarked
	if errs := s.Apply(Op{Kind: Upserts, Coll: "c", Ups: []writer.Upsert{bucketUp(t, "g-1", 0)}}).Errs; errs[0] != nil {
		t.Fatal(errs[0])
	}
	refused := bucketUp(t, "g-2", 0)
	refused.Update = raw(t, bson.D{{Key: "$set", Value: bson.D{{Key: "m", Value: "refuse me"}}}})
	ups := []writer.Upsert{
		bucketUp(t, "g-0", 0), // inserts
		bucketUp(t, "g-1", 1), // matches and pushes
		refused,
		bucketUp(t, "g-4", 0),
	}
	errs := s.Apply(Op{Kind: Upserts, Coll: "c", Ups: ups}).Errs
	// The inserts again: those that applied collide now.
	again := s.Apply(Op{Kind: Upserts, Coll: "c", Ups: []writer.Upsert{ups[0], ups[2], ups[3]}}).Errs
	for i, want := range []errkind.Kind{errkind.None, errkind.None, errkind.Poison, errkind.None,
		errkind.Duplicate, errkind.Poison, errkind.Duplicate} {
		err := append(errs, again...)[i]
		if errkind.Of(err) != want {
			t.Errorf("statement %d: %v (%s), want %s", i, err, errkind.Of(err), want)
		}
		var unconfirmed *writer.Unconfirmed
		if errors.As(err, &unconfirmed) {
			t.Errorf("statement %d: unconfirmed: the model's reply accounts for every statement", i)
		}
	}
	counts := map[string]int32{}
	for _, d := range s.Docs("c") {
		counts[d.Lookup("_id").StringValue()] = d.Lookup("count").Int32()
	}
	if !reflect.DeepEqual(counts, map[string]int32{"g-0": 1, "g-1": 2, "g-4": 1}) {
		t.Errorf("counts %v", counts)
	}

	// An update that may not insert and finds no bucket misses: alone,
	// it says so; in a command, the counts fall short and no statement
	// of it is confirmed but the upserts the reply names.
	if errs := s.Apply(Op{Kind: Upserts, Coll: "c", Ups: []writer.Upsert{bucketUp(t, "g-3", 2)}}).Errs; !errors.Is(errs[0], errkind.Missed) {
		t.Errorf("a top-up of no bucket, alone: %v, want Missed", errs[0])
	}
	errs = s.Apply(Op{Kind: Upserts, Coll: "c", Ups: []writer.Upsert{bucketUp(t, "g-3", 2), bucketUp(t, "g-1", 2), bucketUp(t, "g-5", 0)}}).Errs
	var unconfirmed *writer.Unconfirmed
	if !errors.As(errs[0], &unconfirmed) || !errors.As(errs[1], &unconfirmed) || errs[2] != nil {
		t.Errorf("a top-up of no bucket in a command: %v, want the others unconfirmed but the upsert", errs)
	}
	if len(s.Docs("c")) != 4 {
		t.Errorf("%d buckets, want g-0, g-1, g-4 and g-5: no bucket inserted by a top-up", len(s.Docs("c")))
	}

	// Statements of one command apply in order, each seeing the ones
	// before (writer.Outcomes does not trust such a reply: the writer
	// sends distinct documents in one command).
	ups = []writer.Upsert{bucketUp(t, "h", 0), bucketUp(t, "h", 1), bucketUp(t, "h", 1)}
	errs = s.Apply(Op{Kind: Upserts, Coll: "c", Ups: ups}).Errs
	if got := s.Docs("c")[4]; got.Lookup("count").Int32() != 2 || !errors.As(errs[2], &unconfirmed) {
		t.Errorf("serial statements: %s, %v", ext(got), errs)
	}

	// The BulkWrite's result and error, as the driver gives them.
	c := New()
	c.Refuse = refuseMarked
	cl := c.coll("c", true)
	ups = []writer.Upsert{bucketUp(t, "g-0", 0), bucketUp(t, "g-0", 1), bucketUp(t, "g-0", 0), refused}
	outs := make([]outcome, len(ups))
	for i, u := range ups {
		outs[i] = c.upsert(cl, "c", u)
	}
	res, err := bulkResult(ups, outs)
	wantRes := &mongo.BulkWriteResult{MatchedCount: 1, ModifiedCount: 1, UpsertedCount: 1, UpsertedIDs: map[int64]any{0: "g-0"}, Acknowledged: true}
	if !reflect.DeepEqual(res, wantRes) {
		t.Errorf("result %+v, want %+v", res, wantRes)
	}
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 2 {
		t.Fatalf("error %v, want a BulkWriteException of 2 write errors", err)
	}
	for k, w := range []struct{ index, code int }{{2, 11000}, {3, 2}} {
		we := bwe.WriteErrors[k]
		if we.Index != w.index || we.Code != w.code || we.Request == nil {
			t.Errorf("write error %d: index %d code %d request %v, want index %d code %d", k, we.Index, we.Code, we.Request, w.index, w.code)
		}
	}
	if got := bson.Raw(bwe.WriteErrors[0].Raw).Lookup("keyValue", "_id").StringValue(); got != "g-0" {
		t.Errorf("DuplicateKey keyValue %q, want g-0", got)
	}
}

// An upsert whose filter matches nothing inserts a document of the _id it
// names; when that _id is stored already, it fails with DuplicateKey, as
// UpdateOne's WriteException.
func TestDuplicateKey(t *testing.T) {
	s := New()
	if err := upsertOne(t, s, "c", bson.D{{Key: "_id", Value: int32(7)}, {Key: "count", Value: int32(0)}},
		bson.D{{Key: "$inc", Value: bson.D{{Key: "count", Value: int32(1)}}}}); err != nil {
		t.Fatal(err)
	}
	// 7.0 is the same _id as 7 in the _id index.
	err := upsertOne(t, s, "c", bson.D{{Key: "_id", Value: 7.0}, {Key: "count", Value: int32(0)}},
		bson.D{{Key: "$inc", Value: bson.D{{Key: "count", Value: int32(1)}}}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 11000 || we.WriteErrors[0].Index != 0 {
		t.Fatalf("error %#v, want a WriteException with one DuplicateKey", err)
	}
	if !mongo.IsDuplicateKeyError(err) || errkind.Of(err) != errkind.Duplicate {
		t.Errorf("not a duplicate key: %v", err)
	}
	if got := only(t, s, "c").Lookup("count").Int32(); got != 1 {
		t.Errorf("count %d, want 1", got)
	}
}

// InsertMany is unordered: each document is stored or fails on its own,
// and the error names the failed ones by index, as the driver's does.
func TestInsertManyUnordered(t *testing.T) {
	s := New()
	s.Refuse = refuseMarked
	docs := []bson.Raw{
		raw(t, bson.D{{Key: "_id", Value: int32(1)}, {Key: "m", Value: "a"}}),
		raw(t, bson.D{{Key: "m", Value: "b"}, {Key: "_id", Value: int32(2)}}), // stored with _id first
		raw(t, bson.D{{Key: "_id", Value: int64(1)}, {Key: "m", Value: "c"}}), // the _id of the first
		raw(t, bson.D{{Key: "_id", Value: "x"}, {Key: "m", Value: "refuse me"}}),
		raw(t, bson.D{{Key: "_id", Value: "y"}}),
	}
	err := s.Apply(Op{Kind: InsertMany, Coll: "c", Docs: docs}).Err
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 2 {
		t.Fatalf("error %v, want a BulkWriteException of 2", err)
	}
	if we := bwe.WriteErrors[0]; we.Index != 2 || we.Code != 11000 || we.Request != nil {
		t.Errorf("first write error %+v, want index 2 code 11000 without request", we)
	}
	if we := bwe.WriteErrors[1]; we.Index != 3 || we.Code != 2 {
		t.Errorf("second write error %+v, want index 3 code 2", we)
	}
	if !mongo.IsDuplicateKeyError(err) || errkind.Of(err) != errkind.Duplicate {
		t.Errorf("%v: kind %s, want duplicate key", err, errkind.Of(err))
	}
	got := s.Docs("c")
	want := []bson.Raw{docs[0], raw(t, bson.D{{Key: "_id", Value: int32(2)}, {Key: "m", Value: "b"}}), docs[4]}
	if len(got) != len(want) {
		t.Fatalf("%d documents stored, want %d", len(got), len(want))
	}
	for i := range want {
		if ext(got[i]) != ext(want[i]) {
			t.Errorf("document %d: %s, want %s", i, ext(got[i]), ext(want[i]))
		}
	}
	if err := s.Apply(Op{Kind: InsertMany, Coll: "c", Docs: docs[4:]}).Err; errkind.Of(err) != errkind.Duplicate {
		t.Errorf("insert of one stored document: %v", err)
	}
}

// Replace upserts by _id: the stored document is replaced whole, or the
// replacement inserted; a refused one is named with its request.
func TestReplace(t *testing.T) {
	s := New()
	s.Refuse = refuseMarked
	if err := s.Apply(Op{Kind: InsertMany, Coll: "c", Docs: []bson.Raw{raw(t, bson.D{{Key: "_id", Value: "a"}, {Key: "old", Value: true}})}}).Err; err != nil {
		t.Fatal(err)
	}
	docs := []bson.Raw{
		raw(t, bson.D{{Key: "new", Value: int32(1)}, {Key: "_id", Value: "a"}}),
		raw(t, bson.D{{Key: "_id", Value: "b"}, {Key: "m", Value: "refuse me"}}),
		raw(t, bson.D{{Key: "_id", Value: "c"}}),
	}
	err := s.Apply(Op{Kind: Replace, Coll: "c", Docs: docs}).Err
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 1 || bwe.WriteErrors[0].Index != 1 || bwe.WriteErrors[0].Code != 2 {
		t.Fatalf("error %v, want a BulkWriteException naming statement 1", err)
	}
	if _, ok := bwe.WriteErrors[0].Request.(*mongo.ReplaceOneModel); !ok || errkind.Of(err) != errkind.Poison {
		t.Errorf("request %T, kind %s", bwe.WriteErrors[0].Request, errkind.Of(err))
	}
	got := s.Docs("c")
	if len(got) != 2 || ext(got[0]) != ext(raw(t, bson.D{{Key: "_id", Value: "a"}, {Key: "new", Value: int32(1)}})) ||
		ext(got[1]) != ext(docs[2]) {
		t.Errorf("stored %v", got)
	}
}

// Refuse is asked about each statement; a refused one applies nothing.
func TestRefuse(t *testing.T) {
	s := New()
	var asked []string
	s.Refuse = func(coll string, stmt bson.Raw) (int, string) {
		asked = append(asked, coll+" "+ext(stmt))
		if _, err := stmt.LookupErr("$set"); err == nil {
			return 10334, "BSONObjectTooLarge"
		}
		return 0, ""
	}
	up := writer.Upsert{Filter: raw(t, bson.D{{Key: "_id", Value: "a"}}), Update: raw(t, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: int32(1)}}}}), Insert: true}
	errs := s.Apply(Op{Kind: Upserts, Coll: "db.c", Ups: []writer.Upsert{up}}).Errs
	if codeOf(t, errs[0]) != 10334 || errkind.Of(errs[0]) != errkind.Poison {
		t.Errorf("refused upsert: %v", errs[0])
	}
	if len(asked) != 1 || !strings.HasPrefix(asked[0], `db.c {"$set"`) {
		t.Errorf("asked %q", asked)
	}
	if len(s.Docs("db.c")) != 0 {
		t.Errorf("a refused upsert stored %v", s.Docs("db.c"))
	}
	if got := s.Collections(); !slices.Equal(got, []string{"db.c"}) {
		t.Errorf("collections %v: an upsert creates its collection", got)
	}
}

// Finds: projections of included fields (and _id unless excluded), in
// the document's order; sorts; limits; any order without a sort.
func TestFindShapes(t *testing.T) {
	s := New()
	var docs []bson.Raw
	for i := range 6 {
		docs = append(docs, raw(t, bson.D{{Key: "_id", Value: "g-" + string(rune('0'+i))}, {Key: "key", Value: "k"},
			{Key: "seq", Value: int32(i % 3)}, {Key: "count", Value: int32(i)}, {Key: "logs", Value: bson.A{}}}))
	}
	if err := s.Apply(Op{Kind: InsertMany, Coll: "c", Docs: docs}).Err; err != nil {
		t.Fatal(err)
	}
	find := func(filter, projection, sort bson.D, limit int64) []string {
		q := writer.Query{Limit: limit}
		if projection != nil {
			q.Projection = raw(t, projection)
		}
		if sort != nil {
			q.Sort = raw(t, sort)
		}
		var out []string
		for _, d := range s.Apply(Op{Kind: Find, Coll: "c", Filter: raw(t, filter), Query: q}).Docs {
			out = append(out, ext(d))
		}
		return out
	}
	all := bson.D{{Key: "key", Value: "k"}}
	// The projection's order does not matter: the document's does.
	got := find(bson.D{{Key: "_id", Value: "g-4"}}, bson.D{{Key: "count", Value: int32(1)}, {Key: "seq", Value: int32(1)}}, nil, 0)
	if want := []string{`{"_id":"g-4","seq":{"$numberInt":"1"},"count":{"$numberInt":"4"}}`}; !slices.Equal(got, want) {
		t.Errorf("inclusion: %v, want %v", got, want)
	}
	got = find(bson.D{{Key: "_id", Value: "g-4"}}, bson.D{{Key: "_id", Value: int32(0)}, {Key: "seq", Value: true}}, nil, 0)
	if want := []string{`{"seq":{"$numberInt":"1"}}`}; !slices.Equal(got, want) {
		t.Errorf("inclusion without _id: %v, want %v", got, want)
	}
	got = find(bson.D{{Key: "_id", Value: "g-4"}}, bson.D{{Key: "logs", Value: int32(0)}, {Key: "key", Value: int32(0)}}, nil, 0)
	if want := []string{`{"_id":"g-4","seq":{"$numberInt":"1"},"count":{"$numberInt":"4"}}`}; !slices.Equal(got, want) {
		t.Errorf("exclusion: %v, want %v", got, want)
	}
	got = find(all, bson.D{{Key: "_id", Value: int32(1)}}, bson.D{{Key: "seq", Value: int32(-1)}, {Key: "count", Value: int32(1)}}, 3)
	want := []string{`{"_id":"g-2"}`, `{"_id":"g-5"}`, `{"_id":"g-1"}`}
	if !slices.Equal(got, want) {
		t.Errorf("sort and limit: %v, want %v", got, want)
	}
	got = find(all, bson.D{{Key: "_id", Value: int32(1)}}, nil, 2)
	if want := []string{`{"_id":"g-0"}`, `{"_id":"g-1"}`}; !slices.Equal(got, want) {
		t.Errorf("by _id: %v, want %v", got, want)
	}
	// With Order, any order; a sort still decides, and keeps the order of
	// documents it ties.
	rng := rand.New(rand.NewPCG(1, 2))
	s.Order = rng.Shuffle
	shuffled := find(all, bson.D{{Key: "_id", Value: int32(1)}}, nil, 0)
	sorted := slices.Clone(shuffled)
	slices.Sort(sorted)
	if slices.Equal(shuffled, sorted) || len(shuffled) != 6 {
		t.Errorf("Order did not reorder: %v", shuffled)
	}
	got = find(all, bson.D{{Key: "count", Value: int32(1)}, {Key: "_id", Value: int32(0)}}, bson.D{{Key: "count", Value: int32(-1)}}, 2)
	if want := []string{`{"count":{"$numberInt":"5"}}`, `{"count":{"$numberInt":"4"}}`}; !slices.Equal(got, want) {
		t.Errorf("sorted under Order: %v, want %v", got, want)
	}
	if got := find(bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{bson.Binary{Data: []byte("pad")}}}}}}, bson.D{{Key: "_id", Value: int32(1)}}, nil, 1); got != nil {
		t.Errorf("control find: %v", got)
	}
	if got := s.Apply(Op{Kind: Find, Coll: "none", Filter: raw(t, bson.D{})}).Docs; len(got) != 0 {
		t.Errorf("find in a missing collection: %v", got)
	}
}

// Drop removes a collection; Delete removes the documents a filter
// matches and counts them.
func TestDropAndDelete(t *testing.T) {
	s := New()
	for _, coll := range []string{"b", "a"} {
		docs := []bson.Raw{raw(t, bson.D{{Key: "_id", Value: int32(1)}, {Key: "count", Value: int32(1)}, {Key: "ops", Value: bson.A{int32(5)}}}),
			raw(t, bson.D{{Key: "_id", Value: int32(2)}, {Key: "count", Value: int32(2)}, {Key: "ops", Value: bson.A{int32(5), int32(6)}}})}
		if err := s.Apply(Op{Kind: InsertMany, Coll: coll, Docs: docs}).Err; err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Collections(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("collections %v", got)
	}
	s.Apply(Op{Kind: Drop, Coll: "b"})
	if got := s.Collections(); !slices.Equal(got, []string{"a"}) {
		t.Errorf("collections after the drop %v", got)
	}
	// The prune's shape: _id, count and the whole ops array.
	filter := raw(t, bson.D{{Key: "$or", Value: bson.A{
		bson.D{{Key: "_id", Value: int32(1)}, {Key: "count", Value: int32(1)}, {Key: "ops", Value: bson.A{int32(5)}}},
		bson.D{{Key: "_id", Value: int32(2)}, {Key: "count", Value: int32(2)}, {Key: "ops", Value: bson.A{int32(5)}}},
	}}})
	if n := s.Apply(Op{Kind: Delete, Coll: "a", Filter: filter}).N; n != 1 {
		t.Errorf("deleted %d, want 1", n)
	}
	if n := s.Apply(Op{Kind: Delete, Coll: "b", Filter: filter}).N; n != 0 {
		t.Errorf("deleted %d from a dropped collection", n)
	}
	if got := s.Docs("a"); len(got) != 1 || got[0].Lookup("_id").Int32() != 2 {
		t.Errorf("left %v", got)
	}
}

// errkind classifies every error the model returns as it classifies the
// driver's own error of the same failure: DuplicateKey, and each code a
// statement can fail with (from the update's content or Refuse).
func TestErrkindOfReplies(t *testing.T) {
	marked := func(id string) writer.Upsert {
		return writer.Upsert{Filter: raw(t, bson.D{{Key: "_id", Value: id}, {Key: "count", Value: int32(0)}}),
			Update: raw(t, bson.D{{Key: "$set", Value: bson.D{{Key: "m", Value: "refuse me"}}}}), Insert: true}
	}
	markedDoc := []bson.Raw{raw(t, bson.D{{Key: "_id", Value: "d"}, {Key: "m", Value: "refuse me"}})}
	for _, code := range []int{codeDuplicateKey, codeBadValue, codeTypeMismatch, codePathNotViable, codeConflictingPaths,
		codeEmptyFieldName, 10334, 17419, 112, 91, 50, 13} {
		s := New()
		up, docs := marked("d"), markedDoc
		if code == codeDuplicateKey {
			// The filter misses the stored bucket d: the upsert collides.
			s.coll("c", true).put(bsoncore.Document(raw(t, bson.D{{Key: "_id", Value: "d"}, {Key: "count", Value: int32(5)}})))
			up = bucketUp(t, "d", 0)
		} else {
			s.Refuse = func(coll string, stmt bson.Raw) (int, string) {
				if c, _ := refuseMarked(coll, stmt); c != 0 {
					return code, "refused"
				}
				return 0, ""
			}
		}
		driver := mongo.WriteError{Code: code, Message: "E11000 duplicate key error"}
		wantWrite := errkind.Of(mongo.WriteException{WriteErrors: []mongo.WriteError{driver}})
		wantBulk := errkind.Of(mongo.BulkWriteException{WriteErrors: []mongo.BulkWriteError{{WriteError: driver}}})

		one := s.Apply(Op{Kind: Upserts, Coll: "c", Ups: []writer.Upsert{up}}).Errs[0]
		several := s.Apply(Op{Kind: Upserts, Coll: "c", Ups: []writer.Upsert{up, bucketUp(t, "e", 0)}}).Errs
		inserted := s.Apply(Op{Kind: InsertMany, Coll: "c", Docs: docs}).Err
		cases := map[string]struct {
			err  error
			want errkind.Kind
		}{"update one": {one, wantWrite}, "update of several": {several[0], wantWrite}, "insert": {inserted, wantBulk}}
		if code != codeDuplicateKey { // a replace by _id cannot collide
			cases["replace"] = struct {
				err  error
				want errkind.Kind
			}{s.Apply(Op{Kind: Replace, Coll: "c", Docs: docs}).Err, wantBulk}
		}
		for name, c := range cases {
			if k := errkind.Of(c.err); k != c.want || c.err == nil {
				t.Errorf("code %d, %s: %v is %s, the driver's %s", code, name, c.err, k, c.want)
			}
		}
		if several[1] != nil {
			t.Errorf("code %d: the other statement of the batch: %v", code, several[1])
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (Direct{New()}).Ping(ctx); errkind.Of(err) != errkind.Stopped {
		t.Errorf("a canceled command: %v is %s, want stopped", err, errkind.Of(err))
	}
}

// Clone is a deep copy: what one does the other does not see.
func TestClone(t *testing.T) {
	s := New()
	s.Record = true
	if err := upsertOne(t, s, "c", bson.D{{Key: "_id", Value: "a"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int32(1)}}}}); err != nil {
		t.Fatal(err)
	}
	c := s.Clone()
	if err := upsertOne(t, c, "c", bson.D{{Key: "_id", Value: "a"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int32(1)}}}}); err != nil {
		t.Fatal(err)
	}
	c.Apply(Op{Kind: Drop, Coll: "other"})
	if got := only(t, s, "c").Lookup("n").Int32(); got != 1 {
		t.Errorf("the original sees the clone's update: n = %d", got)
	}
	if got := only(t, c, "c").Lookup("n").Int32(); got != 2 {
		t.Errorf("clone: n = %d", got)
	}
	if len(s.Log()) != 1 || len(c.Log()) != 3 {
		t.Errorf("logs of %d and %d ops, want 1 and 3", len(s.Log()), len(c.Log()))
	}
}

// The recorded log keeps copies of what was sent (the writer reuses its
// buffers) and survives EncodeOps and DecodeOps unchanged.
func TestLogRoundTrip(t *testing.T) {
	s := New()
	s.Record = true
	up := bucketUp(t, "g-0", 0)
	s.Apply(Op{Kind: Upserts, Coll: "db.logs", Ups: []writer.Upsert{up, bucketUp(t, "g-1", 0)}})
	up.Update[len(up.Update)-2] = 'X' // the caller's buffer, reused
	s.Apply(Op{Kind: Find, Coll: "db.logs", Filter: raw(t, bson.D{{Key: "key", Value: bson.D{{Key: "$in", Value: bson.A{bson.D{{Key: "m", Value: "<&>"}}}}}}}),
		Query: writer.Query{Projection: writer.IDProjection, Sort: raw(t, bson.D{{Key: "seq", Value: int32(-1)}}), Limit: 1}})
	s.Apply(Op{Kind: InsertMany, Coll: "flat", Docs: []bson.Raw{raw(t, bson.D{{Key: "_id", Value: bson.ObjectID{1}}, {Key: "t", Value: bson.DateTime(3)},
		{Key: "n", Value: int64(1)}, {Key: "f", Value: 0.5}, {Key: "b", Value: bson.Binary{Subtype: 0, Data: []byte{0, 1}}}})}})
	s.Apply(Op{Kind: Replace, Coll: "flat", Docs: []bson.Raw{raw(t, bson.D{{Key: "_id", Value: int32(7)}})}})
	s.Apply(Op{Kind: Ping})
	s.Apply(Op{Kind: Delete, Coll: "flat", Filter: raw(t, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{int32(7)}}}}})})
	s.Apply(Op{Kind: Drop, Coll: "flat"})
	s.Apply(Op{Kind: Find, Coll: "db.logs", Filter: raw(t, bson.D{}), Query: writer.Query{Projection: raw(t, bson.D{})}})
	ops := s.Log()
	if len(ops) != 8 || ops[0].Ups[0].Update.Lookup("$inc", "count").Int32() != 1 {
		t.Fatalf("log of %d ops: %v", len(ops), ops)
	}
	text, err := EncodeOps(ops)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(text), "\n"); n != len(ops) || !strings.Contains(string(text), `"m":"<&>"`) {
		t.Errorf("%d lines, want one per op; text:\n%s", n, text)
	}
	back, err := DecodeOps(append([]byte("# a comment\n\n"), text...))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, ops) {
		t.Errorf("decoded ops differ:\n%v\nwant\n%v", back, ops)
	}
	again, err := EncodeOps(back)
	if err != nil || string(again) != string(text) {
		t.Errorf("encoding is not stable: %v\n%s\nwant\n%s", err, again, text)
	}
	if _, err := DecodeOps([]byte(`{"kind":"nap"}`)); err == nil {
		t.Error("an unknown kind decoded")
	}
}

// The real bucket writer on the model: a chunk written, then written again
// by a restarted writer, is stored once; flat documents inserted twice are
// stored once.
func TestWriterOnModel(t *testing.T) {
	ctx := context.Background()
	s := New()
	s.Order = rand.New(rand.NewPCG(3, 4)).Shuffle
	store := Direct{s}
	grouper := &bucketer.Config{KeyPaths: []string{"module"}, TagKey: "tag", Window: time.Minute,
		Stats: []string{"cost"}, CountBy: []string{"level"}, KeepValues: []string{"level"}, ReplaceDot: "_"}
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	var recs []parser.Record
	for i := range 25 {
		doc := bsoncore.NewDocumentBuilder().AppendString("module", []string{"pay", "auth"}[i%2]).
			AppendString("level", []string{"info", "warn", "error"}[i%3]).AppendInt32("cost", int32(i)).Build()
		recs = append(recs, parser.Record{Index: i, Time: t0.Add(time.Duration(i) * 7 * time.Second), Doc: doc})
	}
	groups := grouper.Group("app", recs)
	cfg := writer.BucketConfig{Collection: "logs", MaxRecords: 4, MaxBytes: 1 << 20, Idempotent: true, WriteBatch: 8}
	write := func() int {
		b := writer.NewBuckets(store, cfg, grouper, writer.Retry{Base: time.Millisecond, Cap: time.Millisecond})
		outs, err := b.Write(ctx, "0123456789abcdef", groups, false, nil, func(stored map[int]bool, _ map[int]string) []writer.Job {
			var jobs []writer.Job
			for _, g := range groups {
				var todo []*parser.Record
				for _, r := range g.Records {
					if !stored[r.Index] {
						todo = append(todo, r)
					}
				}
				if len(todo) > 0 {
					jobs = append(jobs, writer.Job{Group: g, Recs: todo})
				}
			}
			return jobs
		})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, o := range outs {
			n += o.Stored
		}
		return n
	}
	if n := write(); n != len(recs) {
		t.Fatalf("stored %d of %d records", n, len(recs))
	}
	if n := write(); n != 0 {
		t.Errorf("the chunk again stored %d records", n)
	}
	entries := 0
	for _, d := range s.Docs("logs") {
		logs, _ := d.Lookup("logs").Array().Values()
		entries += len(logs)
		if c := d.Lookup("count").Int32(); int(c) != len(logs) {
			t.Errorf("bucket %s: count %d, %d entries", d.Lookup("_id"), c, len(logs))
		}
	}
	if entries != len(recs) {
		t.Errorf("%d entries stored, want %d", entries, len(recs))
	}

	docs := []writer.Doc{}
	for i := range 5 {
		id := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(i))}
		docs = append(docs, writer.Doc{ID: id, Raw: bson.Raw(bsoncore.NewDocumentBuilder().AppendValue("_id", id).Build())})
	}
	for attempt, want := range []int{0, 5} {
		ins, err := writer.InsertAll(ctx, store, "flat", docs, writer.Retry{}, 0, nil)
		if err != nil || ins.Existed != want || len(ins.Refused) != 0 {
			t.Errorf("insert %d: %+v %v, want %d existing", attempt, ins, err, want)
		}
	}
}
