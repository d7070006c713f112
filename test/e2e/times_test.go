package e2e

import (
	"math"
	"testing"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
)

// Record times that are no date of years 1 to 9999 (a time in nanoseconds
// or milliseconds sent as seconds, a huge negative one, NaN, infinities)
// are parked with the reason "time out of range" before any grouping, in
// both modes, with ttl and day partitions on: never stored as a wrapped
// date whose expireAt MongoDB's TTL monitor would act on at once.
func TestDeliveryTimeOutOfRange(t *testing.T) {
	bad := []any{
		int64(1748736000000000000), // 2025-06-01 in ns
		int64(1748736000000),       // in ms
		int64(math.MinInt64),
		uint64(math.MaxUint64),
		1748736000000000000.0,
		math.NaN(),
		math.Inf(1),
		math.Inf(-1),
	}
	good := time.Now().UTC().Truncate(time.Second)
	for _, mode := range deliveryModes {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t)
			recs := [][]byte{idRecord(t, good, "G", 10)}
			for i, ts := range bad {
				recs = append(recs, recordAt(t, ts, kv{"id", string(rune('a' + i))}))
			}
			chunk := chunkFile(t, t.TempDir(), "times", recs...)
			e.init("a", e.props("mode", mode, "ttl", "30d", "partition", "day", "partition_keep", "7"))
			if rc := e.flush("a", "app", chunk); rc != harness.FLBOK {
				t.Fatalf("flush: rc %d\n%s", rc, e.host.Stderr())
			}
			e.exit("a")
			coll := "logs_" + good.Format("20060102")
			count, _ := e.storedIDs(coll)
			checkOnce(t, count, "G")
			for _, d := range e.all(coll) {
				if exp, ok := d.Lookup("expireAt").TimeOK(); ok && (exp.Year() < 1 || exp.Year() > 9999) {
					t.Errorf("expireAt %v stored", exp)
				}
			}
			if n := e.deadCount("logs_dead", "time out of range"); n != len(bad) {
				t.Errorf("%d records parked as out of range, want %d", n, len(bad))
			}
			if n := len(e.all("logs_dead")); n != len(bad) {
				t.Errorf("%d dead letters, want %d", n, len(bad))
			}
		})
	}
}
