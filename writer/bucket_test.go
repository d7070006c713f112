package writer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// nullStore applies every write and finds nothing, without I/O.
type nullStore struct{}

func (nullStore) Upserts(_ context.Context, _ string, ups []Upsert) []error {
	return make([]error, len(ups))
}
func (nullStore) Find(context.Context, string, bson.Raw, Query) ([]bson.Raw, error) { return nil, nil }
func (nullStore) InsertMany(context.Context, string, []bson.Raw) error              { return nil }
func (nullStore) Replace(context.Context, string, []bson.Raw) error                 { return nil }
func (nullStore) Ping(context.Context) error                                        { return nil }
func (nullStore) UpdateMany(context.Context, string, bson.Raw, bson.Raw) error      { return nil }

// A chunk of many more groups than the states kept between flushes holds
// them all while it writes: none can be dropped, and looking for states to
// drop at every new group made its cost grow with the square of its
// groups. The states are walked once per doubling, and given back when the
// chunk ends.
func TestManyGroupsWalkedPerDoubling(t *testing.T) {
	const limit, n = 64, 5000
	grouper := &bucketer.Config{KeyPaths: []string{"trace"}, TagKey: "tag"}
	recs := make([]parser.Record, n)
	for i := range recs {
		recs[i] = parser.Record{Index: i, Time: time.Unix(int64(i), 0),
			Doc: bsoncore.NewDocumentBuilder().AppendString("trace", fmt.Sprintf("t%05d", i)).Build()}
	}
	groups := grouper.Group("app", recs)
	b := NewBuckets(nullStore{}, BucketConfig{Collection: "logs", MaxRecords: 10, MaxBytes: 1 << 20, MaxGroups: limit}, grouper, Retry{Base: time.Millisecond, Cap: time.Millisecond})
	outs, err := b.Write(context.Background(), "0123456789abcdef", groups, false, nil, func(map[int]bool, map[int]string) []Job {
		jobs := make([]Job, len(groups))
		for i, g := range groups {
			jobs[i] = Job{Group: g, Recs: g.Records}
		}
		return jobs
	})
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	for _, o := range outs {
		stored += o.Stored
	}
	if stored != n {
		t.Fatalf("stored %d of %d records", stored, n)
	}
	// 64 to 5000 states: 7 doublings, and the walk that gives them back.
	if b.scans > 10 {
		t.Errorf("the group states were walked %d times for %d groups, want at most 10", b.scans, n)
	}
	if len(b.groups) > limit {
		t.Errorf("%d group states kept after the chunk, want at most %d", len(b.groups), limit)
	}
}
