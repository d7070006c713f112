package writer_test

import (
	"bytes"
	"context"
	"hash/fnv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sim/server"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// A record an earlier process recorded parked in a placeholder (its dead
// letter's insert may still be on its way) is found by the look of a
// writer that knows nothing of it: handed to jobs as parked, with the
// reason, and no entry of its bytes is taken for it.
func TestLookFindsRecordParkedInPlaceholder(t *testing.T) {
	ctx := context.Background()
	s := server.New()
	store := server.Direct{Server: s}
	grouper := &bucketer.Config{TagKey: "tag"}
	recs := make([]parser.Record, 3)
	for i := range recs {
		recs[i] = parser.Record{Index: i, Time: time.Unix(1700000000, 0),
			Doc: bsoncore.NewDocumentBuilder().AppendString("msg", "same line").Build()}
	}
	groups := grouper.Group("app", recs)
	const chunk = "0123456789abcdef"
	tag := writer.ChunkTag(chunk)
	// Bucket 0 holds one entry of the chunk's (identical) records; bucket 1
	// is a placeholder recording record 0 parked.
	g := groups[0]
	entry := recs[2].Doc
	bucket := bsoncore.NewDocumentBuilder().AppendString(model.ID, bucketer.BucketID(g.ID, 0)).
		AppendDocument(model.Key, g.Key).AppendInt32(model.Seq, 0).AppendInt32(model.Count, 1).
		AppendArray(model.Logs, bsoncore.NewArrayBuilder().AppendDocument(entry).Build()).
		AppendArray(model.Ops, bsoncore.NewArrayBuilder().AppendInt32(int32(tag<<4|1)).Build()).Build()
	placeholder := func(seq, i int, h uint64) bson.Raw {
		return bson.Raw(bsoncore.NewDocumentBuilder().AppendString(model.ID, bucketer.BucketID(g.ID, seq)).
			AppendDocument(model.Key, g.Key).AppendInt32(model.Seq, int32(seq)).AppendInt32(model.Count, 0).
			AppendBoolean(model.Sealed, true).
			AppendDocument(model.Parked, bsoncore.NewDocumentBuilder().AppendInt32(model.ParkedOp, int32(tag<<4|1)).
				AppendInt32(model.ParkedIndex, int32(i)).AppendInt64(model.ParkedHash, int64(h)).
				AppendString(model.ParkedReason, "refused by MongoDB: dropped").Build()).Build())
	}
	sum := fnv.New64a()
	sum.Write(entry)
	// Bucket 2 records record 2 parked, but by another entry's hash: a
	// chunk whose tag this one shares by chance; it names no record.
	docs := []bson.Raw{bson.Raw(bucket), placeholder(1, 0, sum.Sum64()), placeholder(2, 2, sum.Sum64()+1)}
	if err := store.InsertMany(ctx, "logs", docs); err != nil {
		t.Fatal(err)
	}
	b := writer.NewBuckets(store, writer.BucketConfig{Collection: "logs", MaxRecords: 10, MaxBytes: 1 << 20, Idempotent: true},
		grouper, writer.Retry{Base: time.Millisecond, Cap: time.Millisecond})
	var gotStored map[int]bool
	var gotParked map[int]string
	_, err := b.Write(ctx, chunk, groups, false, nil, func(stored map[int]bool, parked map[int]string) []writer.Job {
		gotStored, gotParked = stored, parked
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(gotParked) != 1 || gotParked[0] != "refused by MongoDB: dropped" {
		t.Errorf("parked %v, want record 0 with its reason", gotParked)
	}
	// The entry is record 1's: record 0 was parked after its writes were
	// fenced off, so none of them is stored.
	if len(gotStored) != 1 || !gotStored[1] {
		t.Errorf("stored %v, want record 1 alone", gotStored)
	}
}

// dropping is a store whose connection closes on every write holding a
// record of marked bytes; everything else goes through.
type dropping struct {
	writer.Store
	marked []byte
}

func (d dropping) Upserts(ctx context.Context, coll string, ups []writer.Upsert) []error {
	for _, u := range ups {
		if bytes.Contains(u.Update, d.marked) {
			errs := make([]error, len(ups))
			for i := range errs {
				errs[i] = mongo.CommandError{Labels: []string{"NetworkError"}, Name: "NetworkError", Message: "connection closed: EOF"}
			}
			return errs
		}
	}
	return d.Store.Upserts(ctx, coll, ups)
}

// A record written alone whose connection keeps closing is parked only
// once its writes are fenced off and the fence's placeholder records it
// parked: a writer that knows nothing of it (a new process, its dead
// letter's insert still on its way) finds it there and parks it again.
func TestParkRecordedInPlaceholder(t *testing.T) {
	ctx := context.Background()
	s := server.New()
	grouper := &bucketer.Config{TagKey: "tag"}
	recs := []parser.Record{
		{Index: 0, Time: time.Unix(1700000000, 0), Doc: bsoncore.NewDocumentBuilder().AppendString("msg", "fine").Build()},
		{Index: 1, Time: time.Unix(1700000001, 0), Doc: bsoncore.NewDocumentBuilder().AppendString("msg", "DROPPED").Build()},
	}
	groups := grouper.Group("app", recs)
	const chunk = "89abcdef01234567"
	store := dropping{Store: server.Direct{Server: s}, marked: []byte("DROPPED")}
	cfg := writer.BucketConfig{Collection: "logs", MaxRecords: 10, MaxBytes: 1 << 20, Idempotent: true}
	retry := writer.Retry{Base: time.Millisecond, Cap: time.Millisecond}
	all := func(stored map[int]bool, parked map[int]string) []writer.Job {
		var todo []*parser.Record
		for _, r := range groups[0].Records {
			if !stored[r.Index] && parked[r.Index] == "" {
				todo = append(todo, r)
			}
		}
		// Record 1 has lost its connection 7 times in a row before: the
		// eighth loss parks it.
		return []writer.Job{{Group: groups[0], Recs: todo, Limit: 1, Drops: map[int]int{1: 7}}}
	}
	outs, err := writer.NewBuckets(store, cfg, grouper, retry).Write(ctx, chunk, groups, false, nil, all)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 || outs[0].Stored != 1 || len(outs[0].Poison) != 1 || outs[0].Poison[0].Index != 1 {
		t.Fatalf("outcome %+v, want record 0 stored and record 1 parked", outs)
	}
	var gotParked map[int]string
	_, err = writer.NewBuckets(server.Direct{Server: s}, cfg, grouper, retry).Write(ctx, chunk, groups, false, nil,
		func(stored map[int]bool, parked map[int]string) []writer.Job {
			gotParked = parked
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(gotParked) != 1 || !strings.Contains(gotParked[1], "closed the connection") {
		t.Errorf("a new writer's look finds parked %v, want record 1 with the reason it was parked for", gotParked)
	}
}

// A retry's fence seals a placeholder still open to a record of a park
// (sealed 1) for good: a record of a park still on its way can no longer
// apply after the retry's look.
func TestFenceSealsPlaceholders(t *testing.T) {
	ctx := context.Background()
	s := server.New()
	grouper := &bucketer.Config{TagKey: "tag"}
	recs := []parser.Record{{Index: 0, Time: time.Unix(1700000000, 0), Doc: bsoncore.NewDocumentBuilder().AppendString("msg", "x").Build()}}
	groups := grouper.Group("app", recs)
	g := groups[0]
	placeholder := bsoncore.NewDocumentBuilder().AppendString(model.ID, bucketer.BucketID(g.ID, 0)).
		AppendDocument(model.Key, g.Key).AppendInt32(model.Seq, 0).AppendInt32(model.Count, 0).
		AppendInt32(model.Sealed, 1).Build()
	store := server.Direct{Server: s}
	if err := store.InsertMany(ctx, "logs", []bson.Raw{bson.Raw(placeholder)}); err != nil {
		t.Fatal(err)
	}
	b := writer.NewBuckets(store, writer.BucketConfig{Collection: "logs", MaxRecords: 10, MaxBytes: 1 << 20, Idempotent: true},
		grouper, writer.Retry{Base: time.Millisecond, Cap: time.Millisecond})
	if _, err := b.Write(ctx, "0123456789abcdef", groups, true, nil, func(map[int]bool, map[int]string) []writer.Job { return nil }); err != nil {
		t.Fatal(err)
	}
	docs := s.Docs("logs")
	if len(docs) != 1 {
		t.Fatalf("%d documents, want the placeholder", len(docs))
	}
	if v, ok := docs[0].Lookup(model.Sealed).BooleanOK(); !ok || !v {
		t.Errorf("after the fence the placeholder holds sealed %v, want true", docs[0].Lookup(model.Sealed))
	}
}

// Records of parks in placeholders of two collections are both found: the
// look keeps one set of records not to match across collections, and
// never writes into the caller's.
func TestLookFindsParksInTwoCollections(t *testing.T) {
	ctx := context.Background()
	s := server.New()
	store := server.Direct{Server: s}
	grouper := &bucketer.Config{TagKey: "tag"}
	const chunk = "fedcba9876543210"
	tag := writer.ChunkTag(chunk)
	var groups []*bucketer.Group
	for i, coll := range []string{"logs_a", "logs_b"} {
		rec := parser.Record{Index: i, Time: time.Unix(1700000000, 0), Doc: bsoncore.NewDocumentBuilder().AppendString("msg", coll).Build()}
		g := grouper.Group("app", []parser.Record{rec})[0]
		g.Collection = coll
		groups = append(groups, g)
		sum := fnv.New64a()
		sum.Write(rec.Doc)
		ph := bsoncore.NewDocumentBuilder().AppendString(model.ID, bucketer.BucketID(g.ID, 0)).
			AppendDocument(model.Key, g.Key).AppendInt32(model.Seq, 0).AppendInt32(model.Count, 0).AppendBoolean(model.Sealed, true).
			AppendDocument(model.Parked, bsoncore.NewDocumentBuilder().AppendInt32(model.ParkedOp, int32(tag<<4|1)).
				AppendInt32(model.ParkedIndex, int32(i)).AppendInt64(model.ParkedHash, int64(sum.Sum64())).
				AppendString(model.ParkedReason, "dropped").Build()).Build()
		if err := store.InsertMany(ctx, coll, []bson.Raw{bson.Raw(ph)}); err != nil {
			t.Fatal(err)
		}
	}
	b := writer.NewBuckets(store, writer.BucketConfig{Collection: "logs", MaxRecords: 10, MaxBytes: 1 << 20, Idempotent: true},
		grouper, writer.Retry{Base: time.Millisecond, Cap: time.Millisecond})
	var got map[int]string
	if _, err := b.Write(ctx, chunk, groups, false, nil, func(_ map[int]bool, parked map[int]string) []writer.Job {
		got = parked
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Errorf("parked %v, want records 0 and 1", got)
	}
}
