package e2e

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
)

// The server stops while the real .so flushes a chunk: the flush gives up
// at flush_timeout with FLB_RETRY (no crash, no hang); once the server is
// back the same chunk is sent again and lands exactly once.
func TestFaultsServerStoppedDuringFlush(t *testing.T) {
	e := newEnv(t)
	if e.srv.Real {
		t.Skip("MONGO_URI is set: an external server cannot be stopped by the test")
	}
	const n = 2000
	chunk, _ := appSlice(t, n)
	path := writeFile(t, "chunk.msgpack", chunk)
	// 100 buckets written one statement a command, one command at a time,
	// so that the server stops mid-flush (a chunk's buckets go out in one
	// round).
	lim := limits{20, 64 << 10}
	e.init("a", e.props("bucket_max_records", "20", "bucket_max_bytes", "64K", "max_inflight", "1", "write_batch", "1",
		"flush_timeout", "3s", "connect_timeout", "1s", "stats", "cost", "count_by", "level"))

	rc := make(chan int, 1)
	go func() {
		r, err := e.host.Flush("a", "app.log", path)
		if err != nil {
			t.Errorf("flush: %v", err)
		}
		rc <- r
	}()
	// Stop the server once some buckets are written, mid-flush.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		cnt, err := e.db.Collection("logs").CountDocuments(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		if cnt >= 3 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.srv.Stop()
	if got := <-rc; got != harness.FLBRetry {
		t.Fatalf("flush with the server gone: rc %d, want FLB_RETRY (%d)", got, harness.FLBRetry)
	}
	if err := e.srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// Fluent Bit retries the chunk until it is taken; the driver needs a
	// moment to find the server again.
	for attempt := 1; ; attempt++ {
		r := e.flush("a", "app.log", path)
		if r == harness.FLBOK {
			break
		}
		if r != harness.FLBRetry || attempt == 10 {
			t.Fatalf("resend %d after restart: rc %d\n%s", attempt, r, e.host.Stderr())
		}
	}
	e.exit("a")
	entries := checkBuckets(t, e.all("logs"), lim)
	sameEntries(t, entries, decodeFixture(t, chunk, parser.Options{}))
	checkSeqs(t, entries, n)
}
