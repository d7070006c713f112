package sink

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Memory depends on the chunk, not on history: after 1000 flushes of the
// 5000-record chunk the heap is where it was after 100. Each flush has its
// own tag, so it is a new chunk to the writer, and its records go to the
// same module buckets, which keep filling and rolling over.
func TestMemoryDoesNotGrowWithFlushes(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("1000 flushes of 5000 records: skipped in -short mode and under the race detector (make unit runs it without)")
	}
	chunk, err := os.ReadFile("../test/testdata/chunk-app-json-5000.msgpack")
	if err != nil {
		t.Fatal(err)
	}
	opt := Options{
		Mode: model.ModeBucket, Collection: "logs", DeadLetter: "logs_dead", TagKey: "tag", Idempotent: true,
		MaxInflight: 4, WriteBatch: 100, FlushTimeout: time.Minute, MaxRecords: 1000, MaxBytes: 1 << 20,
		Decoder: parser.Options{TimeKey: "ts", ReplaceDot: "_", ReplaceDollar: "_"},
		Grouper: bucketer.Config{KeyPaths: []string{"module"}, TagKey: "tag", Window: time.Minute, ReplaceDot: "_", ReplaceDollar: "_",
			Stats: []string{"cost"}, CountBy: []string{"level"}},
	}
	s, err := New(opt, nullStore{}, writer.DefaultRetry, quietLog{})
	if err != nil {
		t.Fatal(err)
	}
	var at100 uint64
	for i := 1; i <= 1000; i++ {
		res := s.Flush(context.Background(), fmt.Sprintf("app.%d", i), chunk)
		if res.Status != Done || res.Stored != 5000 {
			t.Fatalf("flush %d: %v, %d stored", i, res.Err, res.Stored)
		}
		if i == 100 {
			at100 = heapAfterGC()
		}
	}
	at1000 := heapAfterGC()
	t.Logf("heap after 100 flushes %d KiB, after 1000 %d KiB", at100>>10, at1000>>10)
	if at1000 > at100+1<<20 {
		t.Errorf("heap grew from %d KiB to %d KiB between flush 100 and 1000", at100>>10, at1000>>10)
	}
}
