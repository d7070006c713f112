package writer

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// scriptStore is a Store whose upserts fail as scripted and whose reads of
// one bucket return a scripted document. It records every upsert.
type scriptStore struct {
	mu      sync.Mutex
	errs    []error // the outcome of upsert i; nil beyond
	upserts []upsertCall
	bucket  func(id string) bson.Raw // read of one bucket; nil: none
	finds   int
	written map[string]bool // buckets an upsert created
}

type upsertCall struct {
	filter, update bson.Raw
}

func (s *scriptStore) Upsert(_ context.Context, _ string, filter, update bson.Raw) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := len(s.upserts)
	s.upserts = append(s.upserts, upsertCall{filter, update})
	if i < len(s.errs) && s.errs[i] != nil {
		return false, s.errs[i]
	}
	id := filter.Lookup("_id").StringValue()
	created := !s.written[id] && (s.bucket == nil || s.bucket(id) == nil)
	if s.written == nil {
		s.written = map[string]bool{}
	}
	s.written[id] = true
	return created, nil
}

func (s *scriptStore) Find(_ context.Context, _ string, filter, _ bson.Raw) ([]bson.Raw, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finds++
	id, ok := filter.Lookup("_id").StringValueOK()
	if !ok || s.bucket == nil {
		return nil, nil
	}
	if d := s.bucket(id); d != nil {
		return []bson.Raw{d}, nil
	}
	return nil, nil
}

func (s *scriptStore) InsertMany(context.Context, string, []bson.Raw) error { return nil }

// bucketDoc is a stored bucket as a read returns it; each op is written
// "chunk:index:records".
func bucketDoc(id string, count, size int, ops ...string) bson.Raw {
	keys, ns := bsoncore.NewArrayBuilder(), bsoncore.NewArrayBuilder()
	for _, op := range ops {
		i := strings.LastIndexByte(op, ':')
		n, _ := strconv.Atoi(op[i+1:])
		keys.AppendString(op[:i])
		ns.AppendInt32(int32(n))
	}
	return bson.Raw(bsoncore.NewDocumentBuilder().AppendString("_id", id).AppendInt32("count", int32(count)).
		AppendInt64("bytes", int64(size)).AppendArray("ops", keys.Build()).AppendArray("opn", ns.Build()).Build())
}

// testGroup is one group of n small records in one window.
func testGroup(t *testing.T, n int) (*bucketer.Config, *bucketer.Group) {
	t.Helper()
	base := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
	recs := make([]parser.Record, n)
	for i := range recs {
		ts := base.Add(time.Duration(i) * time.Millisecond)
		recs[i] = parser.Record{Index: i, Time: ts, Doc: bsoncore.NewDocumentBuilder().
			AppendDateTime("ts", ts.UnixMilli()).AppendString("level", "info").AppendInt32("cost", int32(i)).Build()}
	}
	cfg := &bucketer.Config{TagKey: "tag", Window: time.Minute, Stats: []string{"cost"}, CountBy: []string{"level"}}
	groups := cfg.Group("app", recs)
	if len(groups) != 1 {
		t.Fatalf("%d groups", len(groups))
	}
	return cfg, groups[0]
}

// noWait retries at once, until the context ends.
var noWait = Retry{Base: time.Millisecond, Cap: time.Millisecond,
	Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}

// upsertShape is what a test checks of one upsert: its bucket, how many
// records it pushes and its operation, "chunk:index:records".
type upsertShape struct {
	bucket string
	n      int
	op     string
}

func shapeOf(t *testing.T, c upsertCall) upsertShape {
	t.Helper()
	vals, err := c.update.Lookup("$push", "logs", "$each").Array().Values()
	if err != nil {
		t.Fatal(err)
	}
	id := c.filter.Lookup("_id").StringValue()
	op := c.update.Lookup("$push", "ops").StringValue() + ":" + strconv.Itoa(int(c.update.Lookup("$push", "opn").Int32()))
	return upsertShape{bucket: id[strings.LastIndexByte(id, '-')+1:], n: len(vals), op: op}
}

// Buckets.Write reacts to each error class as designed: the same write is
// repeated after a write conflict or a timeout (so a write that was
// applied is recognised by its op id), a duplicate key is resolved by
// reading the bucket (already applied, full, or filled by another writer),
// and poison content is split down to the record that is parked.
func TestBucketsWriteRetries(t *testing.T) {
	const chunk, max = "c1", 10
	conflict := mongo.CommandError{Code: 112, Name: "WriteConflict"}
	timeout := context.DeadlineExceeded
	dup := mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 11000}}}
	tooLarge := mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 17419, Message: "too large"}}}
	cases := []struct {
		name   string
		n      int // records in the group
		errs   []error
		bucket func(gid string) func(id string) bson.Raw
		want   []upsertShape
		finds  int // reads of one bucket
		parked []int
	}{
		{name: "no fault", n: 15, want: []upsertShape{{"0", 10, "c1:0:10"}, {"1", 5, "c1:10:5"}}},
		{name: "write conflict repeats the write", n: 15, errs: []error{conflict, conflict},
			want: []upsertShape{{"0", 10, "c1:0:10"}, {"0", 10, "c1:0:10"}, {"0", 10, "c1:0:10"}, {"1", 5, "c1:10:5"}}},
		{name: "timeout repeats the write", n: 15, errs: []error{nil, timeout},
			want: []upsertShape{{"0", 10, "c1:0:10"}, {"1", 5, "c1:10:5"}, {"1", 5, "c1:10:5"}}},
		{name: "duplicate key, write already applied", n: 15, errs: []error{dup},
			bucket: func(gid string) func(string) bson.Raw {
				return func(id string) bson.Raw { return bucketDoc(id, 10, 900, "c1:0:10") }
			},
			want:  []upsertShape{{"0", 10, "c1:0:10"}, {"1", 5, "c1:10:5"}},
			finds: 1},
		{name: "duplicate key, bucket full", n: 15, errs: []error{dup},
			bucket: func(gid string) func(string) bson.Raw {
				return func(id string) bson.Raw {
					if !strings.HasSuffix(id, "-0") {
						return nil // only bucket 0 exists
					}
					return bucketDoc(id, 10, 900, "other:0:10")
				}
			},
			want:  []upsertShape{{"0", 10, "c1:0:10"}, {"1", 10, "c1:0:10"}, {"2", 5, "c1:10:5"}},
			finds: 1},
		{name: "duplicate key, another writer filled part", n: 15, errs: []error{dup},
			bucket: func(gid string) func(string) bson.Raw {
				return func(id string) bson.Raw { return bucketDoc(id, 4, 400, "other:0:4") }
			},
			want:  []upsertShape{{"0", 10, "c1:0:10"}, {"0", 6, "c1:0:6"}, {"1", 9, "c1:6:9"}},
			finds: 1},
		{name: "duplicate key, bucket removed meanwhile", n: 5, errs: []error{dup},
			want:  []upsertShape{{"0", 5, "c1:0:5"}, {"0", 5, "c1:0:5"}},
			finds: 1},
		{name: "poison splits to the record", n: 3, errs: []error{tooLarge, nil, tooLarge},
			want:   []upsertShape{{"0", 3, "c1:0:3"}, {"0", 1, "c1:0:1"}, {"0", 1, "c1:1:1"}, {"0", 1, "c1:2:1"}},
			parked: []int{1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, g := testGroup(t, c.n)
			st := &scriptStore{errs: c.errs}
			if c.bucket != nil {
				st.bucket = c.bucket(g.ID)
			}
			b := NewBuckets(st, BucketConfig{Collection: "logs", MaxRecords: max, MaxBytes: 1 << 20, Idempotent: true}, cfg, noWait)
			var prog Progress
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := b.Write(ctx, chunk, g, &prog); err != nil {
				t.Fatal(err)
			}
			var got []upsertShape
			for _, u := range st.upserts {
				got = append(got, shapeOf(t, u))
			}
			if !equalShapes(got, c.want) {
				t.Errorf("upserts\n got %v\nwant %v", got, c.want)
			}
			// A repeated write is byte for byte the same.
			for i := 1; i < len(st.upserts); i++ {
				if got[i] == got[i-1] && (!bytes.Equal(st.upserts[i].filter, st.upserts[i-1].filter) ||
					!bytes.Equal(st.upserts[i].update, st.upserts[i-1].update)) {
					t.Errorf("upsert %d repeats %v with different bytes", i, got[i])
				}
			}
			if st.finds != c.finds {
				t.Errorf("%d finds, want %d", st.finds, c.finds)
			}
			if prog.Done != c.n {
				t.Errorf("progress %d of %d", prog.Done, c.n)
			}
			var parked []int
			for _, p := range prog.Poison {
				parked = append(parked, p.Index)
			}
			if len(parked) != len(c.parked) || (len(parked) > 0 && parked[0] != c.parked[0]) {
				t.Errorf("parked %v, want %v", parked, c.parked)
			}
		})
	}
}

func equalShapes(a, b []upsertShape) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A write that keeps timing out ends the flush with an error and the write
// in doubt; the next attempt of the chunk repeats it byte for byte before
// going on, and a resend after it is done adds nothing.
func TestBucketsWriteResumesInDoubt(t *testing.T) {
	cfg, g := testGroup(t, 15)
	errs := make([]error, 0, 64)
	errs = append(errs, nil) // bucket 0 written
	for i := 0; i < 50; i++ {
		errs = append(errs, context.DeadlineExceeded)
	}
	st := &scriptStore{errs: errs}
	b := NewBuckets(st, BucketConfig{Collection: "logs", MaxRecords: 10, MaxBytes: 1 << 20, Idempotent: true}, cfg,
		Retry{Sleep: func(ctx context.Context, _ time.Duration) error {
			if len(st.upserts) >= len(errs) {
				return context.DeadlineExceeded
			}
			return ctx.Err()
		}})
	var prog Progress
	if err := b.Write(context.Background(), "c1", g, &prog); err == nil {
		t.Fatal("no error after the flush deadline")
	}
	if prog.Done != 10 {
		t.Fatalf("progress %d, want 10", prog.Done)
	}
	st.errs = nil // the server is back
	before := len(st.upserts)
	if err := b.Write(context.Background(), "c1", g, &prog); err != nil {
		t.Fatal(err)
	}
	if len(st.upserts) != before+1 || !bytes.Equal(st.upserts[before].update, st.upserts[before-1].update) {
		t.Errorf("the write in doubt was not repeated as it was")
	}
	// The same chunk sent again (its acknowledgement lost) adds nothing.
	n := len(st.upserts)
	var again Progress
	if err := b.Write(context.Background(), "c1", g, &again); err != nil {
		t.Fatal(err)
	}
	if len(st.upserts) != n || again.Done != 15 {
		t.Errorf("resent chunk: %d more upserts, progress %d", len(st.upserts)-n, again.Done)
	}
}
