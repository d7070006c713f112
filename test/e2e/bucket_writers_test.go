package e2e

import (
	"fmt"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
)

// twoWriters starts two plugin hosts (two processes: no shared memory) with
// the same output configuration and returns them with the chunks to send:
// the app fixture's first n records dealt round-robin into k chunks, so
// every chunk has the same keys and windows.
func twoWriters(t *testing.T, e *env, n, k int, props ...string) ([]*harness.Host, []string, []bson.Raw) {
	t.Helper()
	recs := chunkRecords(t, fixture("chunk-app-json-5000.msgpack"))[:n]
	var files []string
	var want []bson.Raw
	for i := 0; i < k; i++ {
		c := join(every(recs, k, i))
		files = append(files, writeFile(t, fmt.Sprintf("chunk-%d.msgpack", i), c))
		want = append(want, decodeFixture(t, c, parser.Options{})...)
	}
	hosts := []*harness.Host{e.host, startHost(t)}
	for i, h := range hosts {
		if rc, err := h.Init("w", e.props(props...)); err != nil || rc != harness.FLBOK {
			t.Fatalf("init writer %d: rc %d err %v", i, rc, err)
		}
	}
	return hosts, files, want
}

// Two writers that share no memory take turns flushing different chunks
// with the same keys and windows into one collection. Each one's idea of
// the buckets' fill is stale after the other's turn; the guarded upserts
// make it re-read and re-plan: every record lands once, no bucket exceeds a
// bound, stats and counts stay exact.
func TestBucketTwoWritersTakingTurns(t *testing.T) {
	e := newEnv(t)
	const n, k = 3000, 6
	lim := limits{100, 64 << 10}
	hosts, files, want := twoWriters(t, e, n, k, "bucket_max_records", "100", "bucket_max_bytes", "64K",
		"bucket_key", "module", "stats", "cost", "count_by", "level")
	for i, f := range files {
		if rc, err := hosts[i%2].Flush("w", "app.log", f); err != nil || rc != harness.FLBOK {
			t.Fatalf("writer %d, chunk %d: rc %d err %v\n%s", i%2, i, rc, err, hosts[i%2].Stderr())
		}
	}
	for _, h := range hosts {
		h.Exit("w")
	}
	entries := checkBuckets(t, e.all("logs"), lim)
	sameEntries(t, entries, want)
	checkSeqs(t, entries, n)
}

// Two writers flush at the same time into the same buckets. This relies on
// MongoDB's single-document atomicity, which FerretDB does not give.
func TestBucketTwoWritersSimultaneous(t *testing.T) {
	e := newEnv(t)
	if !e.srv.Real {
		t.Skip("needs a real MongoDB (MONGO_URI): FerretDB loses concurrent updates of one document " +
			"and never reports WriteConflict")
	}
	const n, k = 4000, 8
	lim := limits{100, 64 << 10}
	hosts, files, want := twoWriters(t, e, n, k, "bucket_max_records", "100", "bucket_max_bytes", "64K",
		"stats", "cost", "count_by", "level")
	var wg sync.WaitGroup
	for w, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(files); i += 2 {
				if rc, err := h.Flush("w", "app.log", files[i]); err != nil || rc != harness.FLBOK {
					t.Errorf("writer %d, chunk %d: rc %d err %v", w, i, rc, err)
				}
			}
		}()
	}
	wg.Wait()
	for _, h := range hosts {
		h.Exit("w")
	}
	entries := checkBuckets(t, e.all("logs"), lim)
	sameEntries(t, entries, want)
	checkSeqs(t, entries, n)
}
