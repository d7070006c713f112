package writer_test

import (
	"context"
	"hash/fnv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
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
