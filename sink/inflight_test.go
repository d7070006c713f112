package sink

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// gateStore holds every write command until the test releases it, and
// counts the commands held at once.
type gateStore struct {
	nullStore
	release chan struct{}

	mu            sync.Mutex
	held, highest int
}

func (g *gateStore) hold() {
	g.mu.Lock()
	g.held++
	g.highest = max(g.highest, g.held)
	g.mu.Unlock()
	<-g.release
	g.mu.Lock()
	g.held--
	g.mu.Unlock()
}

func (g *gateStore) Upserts(ctx context.Context, coll string, ups []writer.Upsert) []error {
	g.hold()
	return make([]error, len(ups))
}

func (g *gateStore) InsertMany(context.Context, string, []bson.Raw) error {
	g.hold()
	return nil
}

func (g *gateStore) Replace(context.Context, string, []bson.Raw) error {
	g.hold()
	return nil
}

func (g *gateStore) heldNow() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

// max_inflight bounds the write commands of the whole sink, over its
// concurrent flushes, in bucket and flat mode: with 6 flushes of one write
// each and max_inflight 3, the store sees 3 writes at once, never more.
func TestMaxInflightPerSink(t *testing.T) {
	const limit, flushes = 3, 6
	chunk, err := os.ReadFile("../test/testdata/chunk-dummy-3.msgpack")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []model.Mode{model.ModeBucket, model.ModeFlat} {
		t.Run(string(mode), func(t *testing.T) {
			opt := Options{
				Mode: mode, Collection: "logs", DeadLetter: "logs_dead", TagKey: "tag", Idempotent: true,
				MaxInflight: limit, WriteBatch: 1, FlushTimeout: time.Minute, MaxRecords: 1000, MaxBytes: 1 << 20,
				Decoder: parser.Options{TimeKey: "ts", ReplaceDot: "_", ReplaceDollar: "_"},
			}
			if mode == model.ModeBucket {
				opt.Grouper = bucketer.Config{TagKey: "tag", Window: time.Minute, ReplaceDot: "_", ReplaceDollar: "_"}
			}
			store := &gateStore{release: make(chan struct{})}
			s, err := New(opt, store, writer.DefaultRetry, quietLog{})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for i := range flushes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// Distinct tags: distinct chunks and buckets.
					if res := s.Flush(context.Background(), string(rune('a'+i)), chunk); res.Status != Done {
						t.Errorf("flush %d: %v", i, res.Err)
					}
				}()
			}
			// Each time the store holds as many writes as allowed, one is
			// let go; the last ones go when the others are done.
			for released := 0; released < flushes; released++ {
				want := min(limit, flushes-released)
				deadline := time.Now().Add(10 * time.Second)
				for store.heldNow() < want {
					if time.Now().After(deadline) {
						t.Fatalf("after %d writes released, %d held, want %d", released, store.heldNow(), want)
					}
					time.Sleep(time.Millisecond)
				}
				store.release <- struct{}{}
			}
			wg.Wait()
			if store.highest != limit {
				t.Errorf("at most %d writes held at once, want max_inflight (%d)", store.highest, limit)
			}
		})
	}
}
